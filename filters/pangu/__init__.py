"""The rule-based cleaning of PanGu-α §3.1.1: thresholds with their sources (``config``), the drop
rules (``rules``), the transforms that cut symbols, navigation bars and duplicated paragraphs out
of a kept document (``transforms``), and the ``Cleaner`` that composes them (``pipeline``)."""
