"""Text primitives every recipe shares: character classes and normalisation (``chars``),
traditional -> simplified (``convert``), keyword lists and their matcher (``keywords``), Markdown
code and prose (``markdown``), word segmentation (``segment``), the rolling hash (``rolling``),
and personal data: find, redact (``pii``)."""
