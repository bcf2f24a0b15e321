"""Text -> the code points the fluency model reads (version ``NORMALISE_VERSION``).

``normalise`` is the definition: NFKC, lower case, every decimal digit -> "0" (CCNet), whitespace
runs -> one space, lines stripped; the non-empty lines are the sentences. ``normalised_codes`` is
its batch form without per-character Python: per-code-point tables (``nfkc_lower_tables``, also
read by the compiled pass ``filters.docpass``) for text made of characters whose normal form does
not depend on their neighbours, Python's ``unicodedata`` for the rest.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Sequence

import numpy as np

from filters.text.table_cache import disk_cached

NORMALISE_VERSION = "1"  # bump when normalise() changes: models trained before must be retrained
NEWLINE, SPACE, ZERO = 10, 32, 48
_DIGIT = re.compile(r"\d")


def _nfkc_lower(text: str) -> str:
    if not unicodedata.is_normalized("NFKC", text):  # the quick check: most text is NFKC already
        text = unicodedata.normalize("NFKC", text)
    return text.lower()


def normalise(text: str) -> list[str]:
    """The definition (version ``NORMALISE_VERSION``): NFKC, lower case, every decimal digit (``\\d``)
    -> "0" (CCNet), ``\\r`` is a line break, whitespace runs inside a line -> one space, lines
    stripped; the non-empty lines are the sentences. ``normalised_codes`` is its batch form."""
    s = _DIGIT.sub("0", _nfkc_lower(text)).replace("\r", "\n")
    return [" ".join(line.split()) for line in s.split("\n") if line.split()]


@lru_cache(maxsize=1)
@disk_cached("fold")
def _fold_table() -> np.ndarray:
    """Code point -> code point: digits -> "0", whitespace -> " ", "\\r" and "\\n" -> "\\n"."""
    table = np.arange(0x110000, dtype=np.uint32)
    every = table.tobytes().decode("utf-32-le", "surrogatepass")  # every code point, in order
    table[[m.start() for m in re.finditer(r"\s", every)]] = SPACE  # str.split()'s whitespace
    table[[m.start() for m in re.finditer(r"\d", every)]] = ZERO
    table[[NEWLINE, 13]] = NEWLINE
    return table


def _codes(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(all code points, start offset of each string)."""
    lengths = np.fromiter(map(len, strings), np.int64, len(strings))
    codes = np.frombuffer("".join(strings).encode("utf-32-le", "surrogatepass"), np.uint32)
    return codes, np.cumsum(lengths) - lengths


def _each(form: str, codes: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(code points, start of each piece's result) of ``form`` (a normalisation, or "lower")
    applied to each piece ``codes[starts[i]:starts[i + 1]]`` on its own: one call over all of
    them with NUL after each (a starter that composes with nothing and has no case, so it cuts
    both), cut apart again in numpy."""
    spaced = np.zeros(len(codes) + len(starts), np.uint32)
    piece = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(codes)]))
    spaced[np.arange(len(codes)) + piece] = codes  # the NUL of piece i sits after its codes
    text = spaced.tobytes().decode("utf-32-le", "surrogatepass")
    text = text.lower() if form == "lower" else unicodedata.normalize(form, text)
    out = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)
    nul = np.flatnonzero(out == 0)
    if len(nul) != len(starts):
        raise AssertionError(f"{form} of a character holds NUL")
    return out[out != 0], np.r_[0, nul[:-1] + 1] - np.arange(len(starts))


@lru_cache(maxsize=1)
def _char_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``nfkc_lower_tables`` with the flat array after the digit and space fold (``_fold_table``)."""
    simple, length, offset, flat = nfkc_lower_tables()
    return simple, length, offset, _fold_table()[flat]


@lru_cache(maxsize=1)
@disk_cached("nfkc-lower")
def nfkc_lower_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per code point c: whether ``_nfkc_lower`` of any text made of such characters is the
    concatenation of theirs ("simple"), and that per-character result as (length, offset into a
    flat array, flat array). NFKC = canonical composition of the
    compatibility decomposition (NFKD); c is simple when NFKD(c) holds no non-starter (nothing to
    reorder) and no character that is the second of a canonical pair (nothing composes), so
    NFKC(text) is the concatenation of the NFKD(c); lower() is per character except for the
    final-sigma rule, so NFKD(c) holding a capital sigma makes c not simple. ~0.3 s, once a
    process (every character normalised in one call, cut apart in numpy)."""
    cps = np.array([c for c in range(1, 0x110000) if not 0xD800 <= c < 0xE000], np.uint32)
    one_each = np.arange(len(cps))
    nfd, nfd_start = _each("NFD", cps, one_each)
    nfd_first = np.zeros(len(nfd), bool)
    nfd_first[nfd_start] = True
    bad = np.zeros(0x110000, bool)
    bad[nfd[~nfd_first]] = True  # seconds of canonical pairs (and non-starters)
    # combining marks: planes 0-3 and 14 (planes 4-13 are unassigned, 15-16 private use)
    assigned = cps[(cps < 0x40000) | ((cps >= 0xE0000) & (cps < 0xE1000))]
    bad[
        assigned[np.fromiter(map(unicodedata.combining, map(chr, assigned.tolist())), np.int64, len(assigned)) != 0]
    ] = True
    bad[0x3A3] = True  # GREEK CAPITAL SIGMA: its lower case depends on its neighbours
    kd, kd_start = _each("NFKD", cps, one_each)
    simple = np.zeros(0x110000, bool)
    simple[cps] = ~np.logical_or.reduceat(bad[kd], kd_start)
    simple[0] = True
    low, low_start = _each("lower", kd, kd_start)  # each character's NFKD, lower-cased as a whole
    per_char = np.diff(np.r_[low_start, len(low)])
    length, offset = np.ones(0x110000, np.uint8), np.zeros(0x110000, np.int64)
    length[cps] = per_char
    offset[cps] = 1 + np.cumsum(per_char) - per_char  # after the NUL, which is itself
    return simple, length, offset, np.r_[0, low].astype(np.uint32)


def normalised_codes(texts: Sequence[str], max_chars: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(code points, text index) of a batch after ``normalise``: every sentence of every text
    followed by NEWLINE, i.e. ``"".join(line + "\\n" for line in normalise(t[:max_chars]))`` for each
    text in order. No per-character Python: texts made of "simple" characters (``_char_tables``;
    nearly all Chinese text) go through per-character tables; others through ``_nfkc_lower``."""
    simple, length, offset, flat = _char_tables()
    docs = [t[:max_chars] + "\n" for t in texts]
    raw, starts = _codes(docs)
    direct = np.ones(len(docs), bool)
    ok = simple[raw]
    if not ok.all():  # the texts holding a non-simple character are normalised by Python
        direct = np.logical_and.reduceat(ok, starts)
        docs = [d if keep else _nfkc_lower(d) for d, keep in zip(docs, direct.tolist())]
        raw, starts = _codes(docs)
    doc = np.repeat(np.arange(len(docs), dtype=np.int32), np.diff(np.r_[starts, len(raw)]))
    if direct.all():
        codes, n_out = flat[offset[raw]], length[raw]
    else:
        table = direct[doc]
        codes, n_out = np.where(table, flat[offset[raw]], _fold_table()[raw]), np.where(table, length[raw], 1)
    longer = np.flatnonzero(n_out > 1)  # a character whose normal form is longer ("…" -> "..."): few
    if len(longer):  # its 2nd.. characters go in after its first
        extra = n_out[longer].astype(np.int64) - 1
        first = np.repeat(offset[raw[longer]] + 1 - np.cumsum(extra) + extra, extra)
        after = np.repeat(longer + 1, extra)
        codes = np.insert(codes, after, flat[first + np.arange(len(after))])
        doc = np.insert(doc, after, doc[after - 1])
    # A space after a space, a line break or the start goes (runs and leading spaces) ...
    nl, sp = codes == NEWLINE, codes == SPACE
    keep = ~(sp & np.concatenate(([True], sp[:-1] | nl[:-1])))
    codes, doc = codes[keep], doc[keep]
    # ... then a space before a line break (trailing) and a break after a break or the start.
    nl, sp = codes == NEWLINE, codes == SPACE
    keep = ~((sp & np.concatenate((nl[1:], [True]))) | (nl & np.concatenate(([True], nl[:-1]))))
    return codes[keep], doc[keep]
