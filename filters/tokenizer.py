"""The corpus tokenizer: jieba pre-segmentation + SentencePiece BPE, PanGu-α / CPM style.

Pre-segmentation rule (version ``PRESEGMENT_VERSION``, stored with every model):

1. ``jieba.lcut(text, HMM=False)``, run by ``filters.text.segment`` (rjieba by default, the same words
   as jieba): dictionary-only segmentation (the default dictionary ships inside the package, so
   no download). HMM is off: it is slower, and its guesses at unknown words moved chars/token by
   ~1 % on People's Daily text; BPE learns frequent new words anyway. The choice is recorded
   (``presegment.jieba_hmm``) and followed on load, and so is the engine
   (``presegment.segmenter``): a tokenizer built with another engine loads only when the running
   one passes the parity check (``filters.text.segment.require_parity``).
2. In every piece, ``' '`` -> ``'\u2582'`` and ``'\n'`` -> ``'\u2583'`` (PanGu-α's
   ``str.maketrans(" \\n", "\u2582\u2583")``), so the only ASCII spaces left are ours.
3. Pieces joined by single ``' '``: SentencePiece turns each into a ``'\u2581'`` word boundary,
   so BPE never merges across a jieba boundary.

Decoding is the exact inverse: SentencePiece decode, drop every ``' '``, then ``'\u2582'`` ->
``' '`` and ``'\u2583'`` -> ``'\n'``. The SentencePiece settings make that lossless: identity
normalisation (no NFKC: full-width ``，`` and ``Ａ`` stay full-width), no dummy prefix, no
whitespace folding, and byte fallback (a character outside the vocabulary becomes its UTF-8
bytes instead of ``<unk>``). Every string round-trips except the three reserved block
characters ``RESERVED_CHARS`` (U+2581..U+2583), which decode as '' / ' ' / '\n'.

Special tokens are SentencePiece ids: ``<unk>`` 0, ``<pad>`` 1, ``<eod>`` 2 (its eos), no bos.
They are control symbols: the text ``"<eod>"`` encodes as ordinary characters, never as id 2.
``encode`` never adds ``<eod>``; the shard writer appends it after each document.

A model directory holds ``tokenizer.model`` and ``metadata.json`` (vocab size, sha256 of the
model, special ids, pre-segmentation rule and engine, SentencePiece settings, training sample size).
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from base.artifact import META_FILE, ModelError, read_metadata, sha256_file
from base.errors import Refusal
from filters import docpass
from filters.text.segment import (
    REFERENCE,
    SegmentationMismatch,
    Segmenter,
    get_segmenter,
    require_parity,
    segmenter_info,
)

log = logging.getLogger("zhcorpus")

PRESEGMENT_VERSION = "1"  # bump when presegment() changes: tokenizers trained before must be retrained
MODEL_FILE = "tokenizer.model"
SPACE, NEWLINE, SEP = "\u2582", "\u2583", " "
RESERVED_CHARS = "\u2581" + SPACE + NEWLINE
_TO_MARKS = str.maketrans({" ": SPACE, "\n": NEWLINE})
_FROM_MARKS = str.maketrans({SEP: None, SPACE: " ", NEWLINE: "\n"})
_JOIN = "\x00"  # joins the words before the marks go in; texts holding it take the word-by-word path
UNK, PAD, EOD = "<unk>", "<pad>", "<eod>"
UNK_ID, PAD_ID, EOD_ID = 0, 1, 2
# SentencePiece skips training sentences longer than max_sentence_length bytes; training lines
# are cut at jieba boundaries below this (ours).
MAX_LINE_BYTES = 8192


class TokenizerSampleError(Refusal):
    """SentencePiece refused the training sample with these settings (most often a
    ``vocab_size`` below the characters the sample must cover, or above what it holds)."""


@dataclass(frozen=True)
class TokenizerParams:
    vocab_size: int = 40_000  # PanGu-α's vocabulary size
    # Share of characters that get their own piece; the rest go to byte fallback. The
    # covered characters are pieces before any merge, so vocab_size must exceed them
    # (~3.3K characters at 0.9995 on 240K chars of news; more on a web crawl).
    character_coverage: float = 0.9995
    split_digits: bool = True  # one piece per digit (LLaMA); numbers tokenize consistently
    jieba_hmm: bool = False  # see the module docstring
    max_piece_length: int = 16  # SentencePiece's default, in characters
    # False: a sample too small for vocab_size gives a smaller vocabulary instead of an error.
    hard_vocab_limit: bool = False
    # The trained model depends on the thread count (seen: 1 vs 2 threads, different bytes);
    # the same sample, params and threads give the same bytes.
    num_threads: int = 1


class ZhTokenizer:
    """A loaded tokenizer. ``encode(text)`` ids never include ``<eod>``; ``decode(encode(t)) == t``
    for every ``t`` without ``RESERVED_CHARS``."""

    def __init__(self, model_proto: bytes, meta: dict[str, Any], engine: str | None = None):
        import sentencepiece as spm

        if meta.get("presegment_version") != PRESEGMENT_VERSION:
            raise ModelError(
                f"tokenizer uses pre-segmentation v{meta.get('presegment_version')}, "
                f"this code is v{PRESEGMENT_VERSION}: retrain it"
            )
        self.meta = meta
        self.sha256 = meta["sha256"]
        self.hmm = bool(meta["presegment"]["jieba_hmm"])
        self.segmenter = get_segmenter(engine, self.hmm)
        try:
            require_parity(recorded_segmenter(meta), self.segmenter, f"tokenizer {self.sha256[:16]}")
        except SegmentationMismatch as e:
            raise ModelError(str(e)) from e
        self.sp = spm.SentencePieceProcessor(model_proto=model_proto)
        self.vocab_size = self.sp.get_piece_size()
        self.unk_id, self.pad_id, self.eod_id = self.sp.unk_id(), self.sp.pad_id(), self.sp.eos_id()
        self._word_ids = None  # the ids of the words encoded so far (encode_arrays)

    @classmethod
    def load(
        cls, model_dir: str | Path, expected_sha256: str | None = None, engine: str | None = None
    ) -> "ZhTokenizer":
        """Load ``model_dir``; raises ``ModelError`` when the model bytes do not match the sha256
        in metadata.json (or ``expected_sha256``), the directory is incomplete, or ``engine``
        (None = the default) is not the recorded engine and fails the parity check."""
        model_dir = Path(model_dir)
        model_path = model_dir / MODEL_FILE
        meta = read_metadata(model_dir, MODEL_FILE, "tokenizer")
        if not meta.get("sha256"):
            raise ModelError(
                f"{model_dir / META_FILE} records no sha256: not a tokenizer directory written by train_sentencepiece"
            )
        proto = model_path.read_bytes()
        actual = hashlib.sha256(proto).hexdigest()
        for claimed, where in ((meta["sha256"], "metadata.json"), (expected_sha256, "the caller")):
            if claimed and claimed != actual:
                raise ModelError(
                    f"tokenizer checksum mismatch for {model_path}: sha256 {actual[:16]}... but "
                    f"{where} says {claimed[:16]}...; the file is corrupted or not this tokenizer"
                )
        return cls(proto, meta, engine)

    def presegment(self, text: str) -> str:
        return presegment(text, self.hmm, self.segmenter)

    def encode(self, text: str) -> list[int]:
        return self.sp.encode(self.presegment(text))

    def presegment_batch(self, texts: Sequence[str] | Any) -> list[str]:
        """``presegment`` of each text (Python strings, or an Arrow string array; a null is ""). With
        the native engine and no HMM the compiled pass cuts them (``filters.docpass``: jieba's
        words, as rjieba's), reading an Arrow array in place; otherwise the segmenter, text by text."""
        if not self.hmm and self.segmenter.engine != REFERENCE and docpass.enabled():
            try:
                return docpass.presegment_batch(texts)
            except (pa.ArrowException, UnicodeEncodeError):  # a lone surrogate: no UTF-8
                pass
        if not isinstance(texts, Sequence):
            texts = [t or "" for t in texts.to_pylist()]
        return [presegment(t, self.hmm, self.segmenter) for t in texts]

    def encode_arrays(self, texts: Sequence[str] | Any) -> tuple[np.ndarray, np.ndarray]:
        """Token ids of each text as Arrow's list<int32> layout: (offsets, ids), both int32. With
        the compiled pass, each distinct pre-segmented word goes through SentencePiece once per
        process (``filters.docpass.encode_batch``: the same ids, no Python object per token)."""
        if not self.hmm and self.segmenter.engine != REFERENCE and docpass.enabled():
            try:
                if self._word_ids is None:
                    self._word_ids = docpass.word_ids()
                return docpass.encode_batch(self._word_ids, texts, self._encode_words)
            except (pa.ArrowException, UnicodeEncodeError):  # a lone surrogate: no UTF-8
                pass
        ids = self.encode_batch(texts)
        lengths = np.fromiter(map(len, ids), dtype=np.int32, count=len(ids))
        offsets = np.zeros(len(ids) + 1, dtype=np.int32)
        np.cumsum(lengths, out=offsets[1:])
        return offsets, np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int32, count=int(offsets[-1]))

    def _encode_words(self, words: list[str]) -> list[list[int]]:
        return self.sp.encode(words, num_threads=1)

    def encode_batch(self, texts: Sequence[str] | Any) -> list[list[int]]:
        """One list of ids per text (``presegment_batch``, then one SentencePiece call)."""
        return self.sp.encode(self.presegment_batch(texts), num_threads=1)

    def decode(self, ids: Iterable[int]) -> str:
        """Inverse of ``encode``; control ids (``<eod>``, ``<pad>``) decode to ''."""
        return self.sp.decode([int(i) for i in ids]).translate(_FROM_MARKS)

    def id_to_piece(self, i: int) -> str:
        return self.sp.id_to_piece(int(i))


def recorded_segmenter(meta: dict[str, Any]) -> dict[str, Any]:
    """The segmenter a tokenizer was built with; metadata before the record means jieba."""
    pre = meta["presegment"]
    return pre.get("segmenter") or {
        "engine": "jieba",
        "version": meta.get("versions", {}).get("jieba"),
        "hmm": bool(pre["jieba_hmm"]),
    }


def presegment(text: str, hmm: bool = False, segmenter: Segmenter | None = None) -> str:
    """The pre-segmentation rule of the module docstring: words, ' '/'\n' marked, ' '-joined.
    ``segmenter``: default engine in ``hmm`` mode."""
    return join_words((segmenter or get_segmenter(None, hmm)).cut(text), text)


def join_words(words: list[str], text: str) -> str:
    """``text``'s words (whitespace characters are words of their own), ' '/'\n' marked, ' '-joined."""
    if _JOIN in text:
        return SEP.join(w.translate(_TO_MARKS) for w in words)
    # three C-level replaces (memchr scans), 5x faster than one str.translate over non-ASCII text;
    # the marks go in before the separators, so a separator's ' ' is never marked
    return _JOIN.join(words).replace(" ", SPACE).replace("\n", NEWLINE).replace(_JOIN, SEP)


def training_lines(
    text: str, hmm: bool = False, max_bytes: int = MAX_LINE_BYTES, segmenter: Segmenter | None = None
) -> list[str]:
    """A document as SentencePiece training lines: pre-segmented, one line per paragraph (each
    keeps its trailing newline mark, so BPE sees newlines), lines cut at word boundaries
    below ``max_bytes``. No line contains '\n'."""
    lines, current = [], []
    for piece in presegment(text, hmm, segmenter).split(SEP):
        current.append(piece)
        if piece.endswith(NEWLINE):
            lines += _cut_paragraph(current, max_bytes)
            current = []
    if current:
        lines += _cut_paragraph(current, max_bytes)
    return lines


def _cut_paragraph(pieces: list[str], max_bytes: int) -> list[str]:
    """One line, or lines cut before the piece that would take a line past ``max_bytes`` (each
    piece counts its UTF-8 bytes + 1 for its separator)."""
    line = SEP.join(pieces)
    if len(line.encode("utf-8")) + 1 <= max_bytes:  # the whole paragraph fits: no piece loop
        return [line]
    lines, current, size = [], [], 0
    for piece in pieces:
        n = len(piece.encode("utf-8")) + 1
        if current and size + n > max_bytes:
            lines.append(SEP.join(current))
            current, size = [], 0
        current.append(piece)
        size += n
    lines.append(SEP.join(current))
    return lines


def sentencepiece_settings(params: TokenizerParams) -> dict[str, Any]:
    """The SentencePiece trainer arguments (recorded in metadata.json)."""
    return {
        "model_type": "bpe",
        "vocab_size": params.vocab_size,
        "character_coverage": params.character_coverage,
        "normalization_rule_name": "identity",
        "remove_extra_whitespaces": False,
        "add_dummy_prefix": False,
        "byte_fallback": True,
        "split_digits": params.split_digits,
        "max_sentencepiece_length": params.max_piece_length,
        "max_sentence_length": MAX_LINE_BYTES + 1024,
        "hard_vocab_limit": params.hard_vocab_limit,
        "num_threads": params.num_threads,
        "unk_id": UNK_ID,
        "pad_id": PAD_ID,
        "eos_id": EOD_ID,
        "bos_id": -1,
        "unk_piece": UNK,
        "pad_piece": PAD,
        "eos_piece": EOD,
        # all lines, in the given order: the sample is bounded and ordered upstream
        "input_sentence_size": 0,
        "shuffle_input_sentence": False,
    }


def train_sentencepiece(
    lines: Iterable[str] | str | Path,
    out_dir: str | Path,
    params: TokenizerParams,
    sample: dict[str, Any] | None = None,
    extra_meta: dict[str, Any] | None = None,
    engine: str | None = None,
) -> dict[str, Any]:
    """Train on pre-segmented ``lines`` (an iterable of str, or the path of a UTF-8 file with one
    line per '\n'; see ``training_lines``) and write ``out_dir/tokenizer.model`` +
    ``metadata.json``; returns the metadata. ``sample`` (documents, chars, ...) is recorded as
    the training sample size, ``extra_meta`` merged in (inputs, config ...), ``engine`` the
    segmentation engine that made ``lines`` (None = the default, as in ``training_lines``). The model bytes
    depend only on the lines, their order and ``params``. Raises ``TokenizerSampleError`` (a
    refusal: one line, exit 2 from the jobs) when SentencePiece refuses the sample (e.g.
    vocab_size below the covered characters)."""
    import sentencepiece as spm

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    settings = sentencepiece_settings(params)
    counted = _Counted(_read_lines(lines) if isinstance(lines, (str, Path)) else iter(lines))
    writer = io.BytesIO()  # model_writer + sentence_iterator: no file paths end up in the model
    try:
        spm.SentencePieceTrainer.train(sentence_iterator=counted, model_writer=writer, minloglevel=2, **settings)
    except RuntimeError as e:  # the sample and the settings disagree: a user's fix, not a bug
        raise TokenizerSampleError(
            f"SentencePiece cannot train tokenizer.vocab_size={params.vocab_size} on this sample "
            f"({counted.n} lines): {str(e).strip().splitlines()[-1]} (set tokenizer.vocab_size within "
            "what it allows, or train on more text)"
        ) from e
    (out_dir / MODEL_FILE).write_bytes(writer.getvalue())
    proc = spm.SentencePieceProcessor(model_proto=writer.getvalue())
    meta = {
        "kind": "tokenizer",
        "vocab_size": proc.get_piece_size(),
        "requested_vocab_size": params.vocab_size,
        "sha256": sha256_file(out_dir / MODEL_FILE),
        "special_ids": {"unk": proc.unk_id(), "pad": proc.pad_id(), "eod": proc.eos_id(), "bos": proc.bos_id()},
        "special_pieces": {"unk": UNK, "pad": PAD, "eod": EOD},
        "presegment_version": PRESEGMENT_VERSION,
        "presegment": {
            "tool": "jieba.lcut",
            "jieba_hmm": params.jieba_hmm,
            "space": SPACE,
            "newline": NEWLINE,
            "separator": SEP,
            "reserved_chars": RESERVED_CHARS,
            "segmenter": segmenter_info(engine, params.jieba_hmm),
        },
        "sentencepiece": settings,
        "versions": _versions(),
        "sample": {**(sample or {}), "lines": counted.n},
        **(extra_meta or {}),
    }
    if meta["vocab_size"] < params.vocab_size:
        log.warning(
            "tokenizer vocabulary %d < requested %d: the training sample is too small",
            meta["vocab_size"],
            params.vocab_size,
        )
    (out_dir / META_FILE).write_text(json.dumps(meta, indent=2, ensure_ascii=False), encoding="utf-8")
    return meta


class _Counted:
    """An iterator that counts what SentencePiece consumed."""

    def __init__(self, it: Iterator[str]):
        self.it, self.n = it, 0

    def __iter__(self) -> "_Counted":
        return self

    def __next__(self) -> str:
        line = next(self.it)
        self.n += 1
        return line


def _read_lines(path: str | Path) -> Iterator[str]:
    # newline="\n": split on '\n' only ('\r' and U+2028 may be inside a line), no translation
    with open(path, encoding="utf-8", newline="\n") as f:
        for line in f:
            yield line[:-1] if line.endswith("\n") else line


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in ("sentencepiece", "jieba", "rjieba")}
