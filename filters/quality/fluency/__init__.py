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

Import each name from the module that defines it (``from filters.quality.fluency.model import
FluencyModel``): this package re-exports nothing, so a name has one path.
"""
