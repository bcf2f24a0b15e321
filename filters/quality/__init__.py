"""The label-free quality screen: the statistics (``signals``, with ``contact``, ``repeat`` and
``words``), crawl-level template repetition (``crawl_repeat``), the fluency model (``fluency``),
the safety categories (``safety``, ``safety_prefilter``), thresholds from a reference profile
(``thresholds``), and the ``Screen`` that applies them to a batch (``screen``)."""
