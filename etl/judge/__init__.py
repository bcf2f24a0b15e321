"""The rule judge (PanGu-α §3.1.3): cleaning-rule variants built as corpora and ranked by the dev
perplexity of a proxy model. ``run`` (``judge_rules``), ``section`` (its config and shared
types), ``dev`` (the dev set), ``stats``, ``report`` (``judge.json``) and ``html``. It runs
corpus builds (``etl.corpus``), so it sits above them: no other ``etl`` module imports it."""
