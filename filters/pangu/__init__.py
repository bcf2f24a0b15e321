"""The rule-based cleaning of PanGu-α §3.1.1: thresholds with their sources (``config``), the drop
rules (``rules``), and the ``Cleaner`` that composes them with the ``filters.text.chars`` transforms
(``pipeline``)."""
