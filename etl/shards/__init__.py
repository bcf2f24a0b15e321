"""Shards: ``tokenizer_train`` (SentencePiece on a sample of the documents) and ``stage`` (token
ids -> Megatron ``.bin``/``.idx`` shards and their manifest, in the format of
``base.indexed_dataset`` and ``base.manifest``)."""
