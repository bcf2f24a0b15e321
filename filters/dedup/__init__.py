"""Near-duplicate and benchmark overlap: MinHash signatures and LSH band keys (``minhash``), and
benchmark decontamination on the same normalised character n-grams (``decontam``)."""
