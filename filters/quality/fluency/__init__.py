"""Character n-gram fluency model: CCNet's perplexity signal (Wenzek et al. 2020 §3.3) for Chinese.

CCNet scores every document with a 5-gram KenLM model trained on a reference corpus and buckets
documents by the reference's perplexity percentiles. Here the tokens are characters (Chinese has
no spaces), the estimator is interpolated modified Kneser-Ney (Chen & Goodman 1998, §3; adjusted
counts as in Heafield et al. 2013 §3.1), and the model is compiled to the backoff form of an ARPA
file, queried as KenLM queries. Numpy only: executors load it once per worker.

One module per step, in the order the data goes through them:

- ``normalise``: text -> code points (``normalise``, versioned by ``NORMALISE_VERSION``, at
  training and at scoring; ``normalised_codes`` its batch form; ``nfkc_lower_tables``);
- ``tokens``: code points -> ``<s> c1 .. cn </s>`` per sentence (``encode``, ``vocab_table``);
- ``counts``: the reference's characters and n-gram counts (``batch_counts``, ``merge_counts``);
- ``kneser_ney``: counts -> interpolated modified Kneser-Ney -> backoff tables (``estimate``);
- ``tables``: the backoff tables and KenLM's query over them (``NgramTables``);
- ``model``: ``FluencyModel`` (load, save, score) and ``train_local``;
- ``arpa``: the ARPA export for KenLM's tools.

Every name below is importable from ``filters.quality.fluency`` as before the split (issue 35).
"""

from filters.quality.fluency.arpa import arpa_name, arpa_words, write_arpa
from filters.quality.fluency.counts import (
    batch_counts,
    char_counts,
    check_radix,
    choose_vocab,
    merge_counts,
    ngram_keys,
)
from filters.quality.fluency.kneser_ney import DISCOUNT_FALLBACK, adjusted_counts, discounts, estimate, pruned_masks
from filters.quality.fluency.model import (
    FORMAT,
    MAX_CHARS,
    META_FILE,
    MODEL_FILE,
    PERCENTILES_FILE,
    FluencyModel,
    train_local,
)
from filters.quality.fluency.normalise import (
    NEWLINE,
    NORMALISE_VERSION,
    SPACE,
    ZERO,
    nfkc_lower_tables,
    normalise,
    normalised_codes,
)
from filters.quality.fluency.normalise import _char_tables as _char_tables  # read by the tests
from filters.quality.fluency.normalise import _fold_table as _fold_table  # read by the tests
from filters.quality.fluency.normalise import _nfkc_lower as _nfkc_lower  # read by filters.docpass
from filters.quality.fluency.tables import DENSE_IDS, NO_PROB, NgramTables
from filters.quality.fluency.tokens import BOS, EOS, SLICE_CHARS, SPECIALS, UNK, Tokens, encode, slices, vocab_table

__all__ = [
    "BOS",
    "DENSE_IDS",
    "DISCOUNT_FALLBACK",
    "EOS",
    "FORMAT",
    "MAX_CHARS",
    "META_FILE",
    "MODEL_FILE",
    "NEWLINE",
    "NO_PROB",
    "NORMALISE_VERSION",
    "PERCENTILES_FILE",
    "SLICE_CHARS",
    "SPACE",
    "SPECIALS",
    "UNK",
    "ZERO",
    "FluencyModel",
    "NgramTables",
    "Tokens",
    "adjusted_counts",
    "arpa_name",
    "arpa_words",
    "batch_counts",
    "char_counts",
    "check_radix",
    "choose_vocab",
    "discounts",
    "encode",
    "estimate",
    "merge_counts",
    "nfkc_lower_tables",
    "ngram_keys",
    "normalise",
    "normalised_codes",
    "pruned_masks",
    "slices",
    "train_local",
    "vocab_table",
    "write_arpa",
]
