"""ARPA export (KenLM's ``lmplz`` output format), so KenLM's tools can read and score the model.

Characters are words; a whitespace or unprintable character is written ``<U+XXXX>``
(``arpa_words`` spells a normalised sentence the same way, for KenLM's ``score``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from filters.quality.fluency.tables import NgramTables
from filters.quality.fluency.tokens import SPECIALS


def write_arpa(t: NgramTables, vocab: np.ndarray, path: str | Path) -> None:
    """The tables as an ARPA file; ``vocab[i]`` is the code point of token id ``i + 3``."""
    names = np.array(list(SPECIALS) + [arpa_name(int(c)) for c in vocab], dtype=object)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\\data\\\n" + "".join(f"ngram {n}={len(k)}\n" for n, k in enumerate(t.keys, 1)))
        for n in range(1, t.order + 1):
            f.write(f"\n\\{n}-grams:\n")
            words = [
                names[(t.keys[n - 1] // np.uint64(t.radix ** (n - 1 - j)) % np.uint64(t.radix)).astype(np.int64)]
                for j in range(n)
            ]
            bo = t.backoff[n - 1] if n < t.order else None
            for i, logp in enumerate(t.log_prob[n - 1].tolist()):
                gram = " ".join(w[i] for w in words)
                f.write(f"{logp:.7g}\t{gram}\t{bo[i]:.7g}\n" if bo is not None else f"{logp:.7g}\t{gram}\n")
        f.write("\n\\end\\\n")


def arpa_name(code: int) -> str:
    ch = chr(code)
    return f"<U+{code:04X}>" if ch.isspace() or not ch.isprintable() else ch


def arpa_words(sentence: str) -> str:
    """A normalised sentence as the ARPA export's space-separated words (for KenLM's ``score``)."""
    return " ".join(arpa_name(ord(c)) for c in sentence)
