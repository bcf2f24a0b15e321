"""Report: ``ledger`` (every input record in documents, rejected or duplicates, per stage and
reason), ``assemble`` (``report.json`` from the phases' summaries), ``stats`` (the distributions
it plots) and ``html`` (``report.html``)."""
