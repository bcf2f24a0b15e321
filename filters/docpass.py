"""The compiled per-document pass (issue 33): one C++ walk over each document (``filters/docpass_cpp/``,
built as ``filters._docpass`` by ``pip install``/``make install``) that gives what the quality
stage reads and the tokenizer's pre-segmentation:

- every label-free statistic of ``filters.quality.signals`` (its words cut once, jieba's HMM-off cut
  compiled from jieba's own dictionary), and which documents can hold a contact id at all
  (``filters.quality.contact`` then runs on those only, by chunk, as the reference does);
- the fluency model's log-probability (``filters.quality.fluency``: its tables, KenLM's backoff query);
- ``filters.tokenizer.presegment`` of a batch (the same words as rjieba and jieba).

The Python modules stay the reference: every value here equals theirs (float32 for float32), which
``tests/test_docpass.py`` holds on thousands of varied documents, the way ``filters.text.segment`` holds
rjieba to jieba. Texts go in as Arrow string arrays (their offset and data buffers, no Python
string per document) and results come out as numpy arrays.

Fallback: without the extension (a checkout not built: ``make install`` builds it) the callers
use the Python reference, with one WARNING per process; the outputs are the same, only slower.
``ZHCORPUS_DOCPASS=0`` in the environment forces the reference (``bench``, ``compare_builds``; on a
cluster set it with ``spark.executorEnv.ZHCORPUS_DOCPASS``).

Drift: the reference is where rules change (issue 32 moves them weekly). A ``QualityPass`` checks
itself against the reference on ``SELF_CHECK`` (hand-made texts of every statistic) when it is
built, and the ``Screen`` audits one document in ``AUDIT_EVERY`` of every batch; a difference logs
a WARNING naming the signal and the process goes on with the Python reference, so a changed rule
takes effect at once, slower, until filters/docpass_cpp/ is re-synced (tests/test_docpass.py)."""

from __future__ import annotations

import glob
import importlib.util
import logging
import os
import sys
from functools import lru_cache
from importlib.resources import files
from typing import Any, NamedTuple, Sequence

import numpy as np
import pyarrow as pa

from filters.text.table_cache import disk_cached

log = logging.getLogger("zhcorpus")

ENV = "ZHCORPUS_DOCPASS"  # "0": use the Python reference, never the compiled pass


def _load_extension():
    try:
        from filters import _docpass

        return _docpass
    except ImportError as e:
        error = e
    # filters imported from a zip (spark-submit --py-files): no extension loads from a zip, but the
    # one built beside another copy of the package on sys.path (the packed env) does
    for entry in sys.path:
        for path in sorted(glob.glob(os.path.join(entry, "filters", "_docpass*.so"))):
            spec = importlib.util.spec_from_file_location("filters._docpass", path)
            module = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(module)
            except ImportError:
                continue
            sys.modules["filters._docpass"] = module
            return module
    log.warning(
        "filters._docpass is not built (%s): the quality signals, fluency, classifier lines, template keys "
        "and tokenization run in the Python reference, slower (build it: make install, or python setup.py "
        "build_ext --inplace)",
        error,
    )
    return None


@lru_cache(maxsize=None)
def _extension():
    return _load_extension()


def enabled() -> bool:
    """Whether the compiled pass is used: built, and not turned off by ``ZHCORPUS_DOCPASS=0``."""
    return os.environ.get(ENV, "1") != "0" and _extension() is not None


def strings(texts: pa.Array | Sequence[str]) -> pa.Array:
    """``texts`` as an Arrow string array (``pa.array`` raises on a lone surrogate: no UTF-8)."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if not isinstance(texts, pa.Array):
        texts = pa.array(texts, pa.string())
    if pa.types.is_dictionary(texts.type):
        texts = texts.cast(pa.string())
    return texts


def buffers(texts: pa.Array) -> tuple[np.ndarray, Any]:
    """(int64 offsets, data buffer) of a string or large_string array; a null is an empty text."""
    if texts.null_count:
        texts = texts.fill_null("")
    wide = pa.types.is_large_string(texts.type)
    offsets = np.frombuffer(texts.buffers()[1], dtype=np.int64 if wide else np.int32)
    offsets = offsets[texts.offset : texts.offset + len(texts) + 1].astype(np.int64)
    data = texts.buffers()[2]
    return offsets, (data if data is not None else b"")


@lru_cache(maxsize=None)
def engine():
    """The per-process ``_docpass.Engine`` (jieba's dictionary, the quality tables), or None."""
    ext = _extension()
    if ext is None:
        return None
    from filters.quality import contact as qc
    from filters.quality import repeat as rep
    from filters.quality import signals as q
    from filters.quality.words import FUNCTION_WORDS
    from filters.text.markdown import _MARKUP_HINTS

    if len(NATIVE_SIGNALS) != ext.N_SIG:
        log.warning(
            "filters._docpass computes %d signals, filters.quality.signals has %d: rebuild it",
            ext.N_SIG,
            len(q.SIGNALS),
        )
        return None
    dictionary = files("jieba").joinpath("dict.txt").read_bytes().decode("utf-8")
    params = {
        "short_line_chars": q.SHORT_LINE_CHARS,
        "separator_share": q.SEPARATOR_SHARE,
        "menu_min_items": q.MENU_MIN_ITEMS,
        "menu_max_item_chars": q.MENU_MAX_ITEM_CHARS,
        "max_closers": q.MAX_CLOSERS,
        "date_max": q._DATE_MAX,
        "chunk_chars": q.CHUNK_CHARS,
        "min_id_digits": qc.MIN_ID_DIGITS,
    }
    fw = np.sort(rep.text_keys(sorted(FUNCTION_WORDS)))
    return ext.Engine(dictionary, q.char_table(), fw, qc._char_kinds(), list(_MARKUP_HINTS), params)


def _signal_names() -> tuple[str, ...]:
    from filters.quality.signals import SIGNAL_NAMES

    return tuple(n for n in SIGNAL_NAMES if n != CONTACT)


CONTACT = "contact_density"  # the one statistic Python finishes (on the candidates the pass finds)
NATIVE_SIGNALS = _signal_names()  # the compiled pass's columns, in order


def cut_lengths(texts: pa.Array | Sequence[str]) -> list[list[int]]:
    """Word lengths of each text's jieba HMM-off cut (for tests and the parity checks)."""
    offsets, data = buffers(strings(texts))
    lengths, per_text = engine().cut(offsets, data)
    bounds = np.concatenate(([0], np.cumsum(per_text)))
    return [lengths[a:b].tolist() for a, b in zip(bounds[:-1], bounds[1:])]


@lru_cache(maxsize=None)
def _classify_engine():
    """The engine with jieba's HMM (finalseg's tables) and the classifiers' text tables set."""
    from jieba.finalseg import emit_P, start_P, trans_P

    from filters.classifiers.classify import MAX_CHARS, SENTENCE_PUNCT
    from filters.quality.fluency.normalise import nfkc_lower_tables

    e = engine()
    tags, low, high, floor = "BEMS", 0x4E00, 0x9FD5, -3.14e100  # finalseg.MIN_FLOAT
    emit = np.full((4, high - low + 1), floor)
    for y, tag in enumerate(tags):
        for char, logp in emit_P[tag].items():
            if low <= ord(char) <= high:
                emit[y, ord(char) - low] = logp
    trans = np.array([[trans_P[a].get(b, floor) for b in tags] for a in tags])
    e.set_hmm(np.array([start_P[t] for t in tags]), trans, emit)
    simple, length, offset, flat = nfkc_lower_tables()
    classes = _word_classes().copy()
    classes[[ord(c) for c in SENTENCE_PUNCT]] |= 4
    e.set_classify(simple.view(np.uint8), length, offset, flat, classes, MAX_CHARS)
    return e


@disk_cached("word-classes")
def _word_classes() -> np.ndarray:
    """module.cpp's SPACE | WORD per code point (str.isspace, str.isalnum), in one walk over them."""
    n = sys.maxunicode + 1
    return np.fromiter((ch.isspace() | ch.isalnum() << 1 for ch in map(chr, range(n))), np.uint8, n)


def cut_hmm_lengths(texts: pa.Array | Sequence[str]) -> list[list[int]]:
    """Word lengths of each text's jieba HMM-on cut (for tests and the parity checks)."""
    offsets, data = buffers(strings(texts))
    lengths, per_text = _classify_engine().cut_hmm(offsets, data)
    bounds = np.concatenate(([0], np.cumsum(per_text)))
    return [lengths[a:b].tolist() for a, b in zip(bounds[:-1], bounds[1:])]


class Prose(NamedTuple):
    """A batch's texts as the statistics and classifiers read them (``filters.text.markdown.prose``):
    the Arrow array, and for the texts that hold markup their prose (``alt``, with ``alt_index``
    per text, -1 = the text itself) and table rows; ``read``: the texts read as Python strings."""

    texts: pa.Array
    offsets: np.ndarray
    data: Any
    alt_index: np.ndarray
    alt_offsets: np.ndarray
    alt_data: Any
    row_offsets: np.ndarray
    rows: np.ndarray
    read: dict[int, str]

    def text(self, i: int) -> str:
        return self.read[i] if i in self.read else self.texts[i].as_py()


def prose_of(texts: pa.Array | Sequence[str]) -> Prose:
    """``Prose`` of a batch: only the texts holding a markup hint (``_MARKUP_HINTS``, found by the
    compiled pass) become Python strings and go through ``markdown.prose_rows``."""
    from filters.text.markdown import prose_rows

    arr = strings(texts)
    offsets, data = buffers(arr)
    n = len(arr)
    alt_index = np.full(n, -1, dtype=np.int64)
    alt_texts: list[str] = []
    row_counts = np.zeros(n, dtype=np.int64)
    rows: list[int] = []
    read: dict[int, str] = {}
    for i in np.flatnonzero(engine().markup(offsets, data)).tolist():
        text = arr[i].as_py()
        prose, table_rows = prose_rows(text)
        read[i] = prose
        if prose is not text:
            alt_index[i] = len(alt_texts)
            alt_texts.append(prose)
        row_counts[i] = len(table_rows)
        rows += table_rows
    alt_offsets, alt_data = buffers(strings(alt_texts))
    row_offsets = np.concatenate(([0], np.cumsum(row_counts)))
    return Prose(arr, offsets, data, alt_index, alt_offsets, alt_data, row_offsets, np.asarray(rows, np.int64), read)


def classifier_lines(texts: pa.Array | Sequence[str]) -> list[str]:
    """``filters.classifiers.classify.preprocess(t)`` of each text (the default engine, HMM on): one compiled
    pass over its prose; a text with a character the per-character tables cannot normalise goes
    through the Python function."""
    from filters.classifiers.classify import preprocess

    p = prose_of(texts)
    lines = _classify_engine().classify_lines(p.offsets, p.data, p.alt_index, p.alt_offsets, p.alt_data)
    return [line if line is not None else preprocess(p.texts[i].as_py()) for i, line in enumerate(lines)]


@lru_cache(maxsize=None)
def _alnum_table() -> np.ndarray:
    """``filters.quality.crawl_repeat._alnum_mask`` per code point (str.isalnum below U+3000, as U+2FFF's
    above, or a Han ideograph)."""
    import sys

    from filters.quality import crawl_repeat as cr
    from filters.text.chars import HAN, char_table

    low = np.array([chr(c).isalnum() for c in range(0x3000)], dtype=bool)
    table = np.concatenate((low, np.full(sys.maxunicode + 1 - len(low), low[-1])))
    assert np.array_equal(table[:0x3000] | ((char_table()[:0x3000] & HAN) != 0), cr._alnum_mask(np.arange(0x3000)))
    return (table | ((char_table() & HAN) != 0)).astype(np.uint8)


def batch_keys(texts: pa.Array | Sequence[str], cfg):
    """``filters.quality.crawl_repeat.batch_keys(texts, cfg)`` from the compiled pass (the same keys); the
    texts its tables cannot normalise go through the Python function."""
    from filters.quality import crawl_repeat as cr

    arr = strings(texts)
    offsets, data = buffers(arr)
    doc, kind, keys, weight, ident, chars, python, context = _classify_engine().template_keys(
        offsets, data, _alnum_table(), cfg.ngram, cfg.modulus, cfg.min_clause, cfg.min_copy, cr.SENTENCE_ENDS
    )
    redo = np.flatnonzero(python)
    if len(redo):
        got = cr.batch_keys([arr[int(i)].as_py() for i in redo], cfg)
        doc = np.concatenate((doc, redo[got.doc]))
        order = np.argsort(doc, kind="stable")  # each text's keys stay in their order
        doc, kind, keys, weight, context = (
            doc[order],
            np.concatenate((kind, got.kind))[order],
            np.concatenate((keys, got.keys))[order],
            np.concatenate((weight, got.weight))[order],
            np.concatenate((context, got.context))[order],
        )
        ident[redo], chars[redo] = got.ident, got.chars
    n_spans = np.bincount(doc[kind == cr.SPAN], minlength=len(arr))
    return cr.BatchKeys(doc, kind, keys, weight, ident, chars, n_spans, context)


def presegment_batch(texts: pa.Array | Sequence[str]) -> list[str]:
    """``filters.tokenizer.presegment(t)`` (HMM off) for each text, from the compiled cut."""
    offsets, data = buffers(strings(texts))
    return engine().presegment(offsets, data)


def word_ids():
    """A tokenizer's cache of the ids of the words it has encoded (``encode_batch``)."""
    return _extension().WordIds()


def encode_batch(cache, texts: pa.Array | Sequence[str], encode) -> tuple[np.ndarray, np.ndarray]:
    """Token ids of ``presegment(t)`` for each text, as Arrow's list<int32> layout (offsets, ids).
    SentencePiece splits a pre-segmented text at its spaces and encodes each word alone, so the
    ids are the words' ids in order: ``encode`` (a list of words -> their ids) is called once
    per batch, for the words ``cache`` (``word_ids()``) has not seen."""
    offsets, data = buffers(strings(texts))
    return engine().encode(cache, offsets, data, encode)


AUDIT_EVERY = 500  # the Screen compares one document in this many of each batch with the reference
# Texts of every statistic's cases, on which a QualityPass is compared with the reference when built.
SELF_CHECK = (
    "",
    " \t\u3000\n\n  \n",
    "新闻标题一 2024-02-24\n新闻标题二 2024-02-25\n正文。\n帖子 10:20\n回复内容。\n另一条 3月5日 \n2018.3.13 ))",
    "首页 > 新闻 > 正文\n首页 | 新闻 | 体育 | 财经\n—— —— ——\n★★★★★\n===== 分割线 =====\n a | b | c | d ",
    "他说：“好。”\n她问：“真的吗？”）\n（完）\n「结束。」』\n好。 ”\n短行\n标签",
    "加微信 abc_123456 咨询\nQQ:12345678\n电话：138 0013 8000\n联系 tel 010-12345678\n"
    "www.example.com 或 http://a.b.cn/x 或 a@b.com ＠ x点com\n12345（微信同号）\nyr⑧⑨⑧⑦⑤⑧ vx（https://c.cn）",
    "重复的一行。\n重复的一行。\n\n重复的一段。\n第二行。\n\n重复的一段。\n第二行。\n",
    "的的的的的的 是是是 了了了 我们我们我们 中国人民中国人民中国人民中国人民 abc abc abc abc 之乎者也",
    "ＡＢＣ ａｂｃ １２３ Ǆǅǆ Σας ΣΑΣ ﬁ ㍿ ① ⅷ e\u0301 한국어 カタカナ 𠀀𠀁 \ufeff\u200b 😂👍🏻 \U0001d7cf",
    "2009-6-13 12:30 v1.2.3-beta 1.6G/2.4GHz ¥12.50 45%的人 c++/C#/AT&T 1998-01-01 第一百二十条\r\n结束",
    "# 安装\n\n使用 `pip install x` 安装。\n\n```bash\nmake demo\n```\n\n| 名称 | 数量 |\n|---|---|\n| 苹果 | 3 |\n"
    "- 第一章\n> 引用的话。\n---\n点击[这里](https://example.com/a)，<b>加粗</b>，**强调**。",
    "国务院总理今天在人民大会堂会见了来访的客人。双方就两国关系和共同关心的国际问题交换了意见。\n"
    "总理说，中国政府高度重视发展同各国的友好合作关系。当天北京气温２５℃，增长１３.５%。",
)


def differences(native: tuple[dict[str, np.ndarray], np.ndarray], texts: Sequence[str], fluency) -> list[str]:
    """The signals (and ``fluency_ppl``) on which ``native``, a ``QualityPass`` result for
    ``texts``, differs from the Python reference."""
    from filters.quality.signals import signals_batch
    from filters.text.markdown import prose

    values, ppl = native
    expected = signals_batch(list(texts))
    differ = [name for name in expected if not np.array_equal(values[name], expected[name])]
    if fluency is not None:
        reference = fluency.perplexity_batch([prose(t) for t in texts])
        if not np.array_equal(ppl, reference, equal_nan=True):
            differ.append("fluency_ppl")
    return differ


class QualityPass:
    """Signals and fluency of a batch through the compiled pass; ``fluency``: the profile's
    ``FluencyModel`` (None: no perplexity). Build once per worker: it copies the model's n-grams
    into its own tables, then compares itself with the reference on ``SELF_CHECK`` (``drift``:
    what differs; empty when nothing does)."""

    def __init__(self, fluency=None):
        from filters.quality.fluency.normalise import _char_tables, _fold_table

        self.engine = engine()
        self.fluency = fluency
        if fluency is not None:
            simple, length, offset, flat = _char_tables()
            t = fluency.tables
            self.engine.set_fluency(
                {
                    "simple": simple.view(np.uint8),
                    "length": length,
                    "offset": offset,
                    "flat": flat,
                    "fold": _fold_table(),
                    "id_of": fluency.id_of,
                    "radix": t.radix,
                    "order": t.order,
                    "max_chars": -1 if fluency.max_chars is None else fluency.max_chars,
                    "log_prob_1": t.log_prob[0],
                    "backoff_1": t.backoff[0],
                },
                t.keys[1:],
                t.log_prob[1:],
                [t.backoff[n] if n < t.order - 1 else None for n in range(1, t.order)],
            )
        self.drift = self.audit(list(SELF_CHECK))

    def audit(self, texts: Sequence[str]) -> list[str]:
        """What differs from the reference on ``texts`` (each side reads them as one batch); a
        difference is logged as a WARNING."""
        drift = differences(self(texts), texts, self.fluency) if texts else []
        if drift:
            log.warning(
                "the compiled quality pass differs from the Python reference on %s: re-sync "
                "filters/docpass_cpp/ (tests/test_docpass.py); this process uses the Python reference",
                ", ".join(drift),
            )
        return drift

    def __call__(self, texts: pa.Array | Sequence[str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """({signal: float32 per text} in ``filters.quality.signals.SIGNAL_NAMES`` order, the fluency
        perplexity per text (NaN: none; all NaN without a model)) of each text's prose."""
        from filters.quality.signals import SIGNAL_NAMES

        p = prose_of(texts)
        sig, visible, contact, chunk, sums, counts, python = self.engine.quality(
            p.offsets,
            p.data,
            p.alt_index,
            p.alt_offsets,
            p.alt_data,
            p.row_offsets,
            p.rows,
            self.fluency is not None,
        )
        arr, prose, n = p.texts, p.read, len(p.texts)
        values = {name: sig[:, j] for j, name in enumerate(NATIVE_SIGNALS)}
        values[CONTACT] = self._contact(arr, prose, contact, chunk, visible)
        ppl = self._perplexity(arr, prose, sums, counts, python) if self.fluency is not None else np.full(n, np.nan)
        return {name: values[name] for name in SIGNAL_NAMES}, ppl

    @staticmethod
    def _contact(arr: pa.Array, prose: dict[int, str], contact, chunk, visible) -> np.ndarray:
        """contact_density: ``quality.contact.contact_counts`` over the candidates of each chunk
        (the reference runs it on the whole chunk; what it finds lies in the candidates)."""
        from filters.quality.contact import contact_counts

        counts = np.zeros(len(arr))
        candidates = np.flatnonzero(contact)
        for c in np.unique(chunk[candidates]).tolist():
            idx = candidates[chunk[candidates] == c].tolist()
            texts = [prose[i] if i in prose else arr[i].as_py() for i in idx]
            lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
            starts = np.concatenate(([0], np.cumsum(lengths + 1)[:-1]))
            counts[idx] = contact_counts("\n".join(texts), starts)
        density = np.divide(1000.0 * counts, visible, out=np.zeros(len(arr)), where=visible > 0)
        return density.astype(np.float32)

    def _perplexity(self, arr: pa.Array, prose: dict[int, str], sums, counts, python) -> np.ndarray:
        """10 ** (-sum / tokens) (``FluencyModel.perplexity_batch``); the texts holding a character
        the per-character tables cannot normalise go through ``fluency._nfkc_lower`` first."""
        from filters.quality.fluency.normalise import _nfkc_lower

        redo = np.flatnonzero(python).tolist()
        if redo:
            limit = self.fluency.max_chars
            texts = [_nfkc_lower((prose[i] if i in prose else arr[i].as_py())[:limit] + "\n") for i in redo]
            offsets, data = buffers(strings(texts))
            s, c = self.engine.fluency_folded(offsets, data)
            sums[redo], counts[redo] = s, c
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(counts > 0, 10.0 ** (-sums / np.maximum(counts, 1)), np.nan)
