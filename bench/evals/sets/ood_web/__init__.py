"""A third out-of-domain evaluation set (issue 32, item 3): real text of the web genres the chain
must spare, good pages only (no spam family: this set measures what the rules wrongly remove).

    python -m bench.evals.sets.ood_web --output data/ood_web   # ood.jsonl + MANIFEST.json
                                                               # (make data/ood_web/MANIFEST.json)
    python -m bench.evals.ood --ood data/ood_web/ood.jsonl ...   # make bench-ood-web

Records as ``bench.evals.sets.ood`` and ``bench.evals.sets.ood_blind`` write them (``id``, ``text``,
``title``, ``source``, ``label``, ``family``, ``script``); ids ``oodw-good-{family}-{n:04d}``; the same seed gives the
same bytes; a quarter of each genre converted to traditional script with OpenCC s2t.

From the sample in ``data/`` (cut by ``extract.py``; licences: data/LICENSES.md):

========  ===================================================  ================  =====
genre     source                                               licence           pages
========  ===================================================  ================  =====
tech_doc  Chinese READMEs of 19 PyPI wheels (Markdown, code)   MIT, Apache-2.0      86
qa        Debian FAQ in simplified Chinese (debian-faq-zh-cn)  Debian FAQ's         76
poetry    fortunes-zh 2.98 tang300 and song100                 GPL-3.0+             68
list      fortunes-zh 2.98 proverbs, Daodejing: numbered lists GPL-3.0+             54
forum     fortunes-zh 2.98 maxims and quotations as threads    GPL-3.0+             93
========  ===================================================  ================  =====

Not used, by rule: shared/RESERVED.txt, and every package the reference corpus, the seed, the demo
crawl or the first two OOD sets read.
"""
