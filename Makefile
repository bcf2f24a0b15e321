# Two commands set everything up on a fresh machine: `make demo` and `make test`.
# Both create .venv and install the pinned dependencies (requirements.lock) on first use.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# the compiled per-document pass (filters._docpass, C++) is built by the editable install: its
# sources are in the stamp, so a change to them rebuilds it
NATIVE_SRC := setup.py $(sort $(wildcard filters/docpass_cpp/*.cpp filters/docpass_cpp/*.h))
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml requirements.lock requirements-nodeps.txt $(NATIVE_SRC) | cksum | cut -d' ' -f1)
DEMO_CRAWL := data/demo_crawl
DEMO_OUT   := out/demo
DEMO_SEED  := data/seed
DEMO_EVALS := data/eval_sets
DEMO_INPUTS := $(DEMO_CRAWL)/warc $(DEMO_CRAWL)/wet $(DEMO_CRAWL)/jsonl

.PHONY: install lint browser demo demo-crawl demo-models bench-ood bench-ood-blind bench-lofo test test-fast bench bench-classify bench-dedup bench-corpus bench-remote-write lock clean-demo spark-package judge-demo

install: $(STAMP)

$(STAMP): pyproject.toml requirements.lock requirements-nodeps.txt $(NATIVE_SRC)
	@command -v java >/dev/null || { echo "Java 17+ is required for Spark (apt-get install openjdk-17-jre-headless)"; exit 1; }
	@command -v $${CXX:-g++} >/dev/null || command -v c++ >/dev/null || { echo "a C++17 compiler is required for filters._docpass (apt-get install g++)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c requirements.lock -e '.[demo,test]'
	$(PY) -m pip install -q --no-deps -r requirements-nodeps.txt
	rm -f $(VENV)/.installed-* && touch $@

$(DEMO_CRAWL)/MANIFEST.json: | $(STAMP)
	$(PY) -m demo.crawl --output $(DEMO_CRAWL)

demo-crawl: $(STAMP) $(DEMO_CRAWL)/MANIFEST.json

# Classifier seed data (issue 23): spam from the seed's own generator, ham = reference genres and
# crawl-like pages; quality hq = the reference corpus (70 %) and good pages of the crawl's genres
# the reference lacks (30 %: reviews, threads), lq = a sample of the raw demo crawl.
DEMO_REFERENCE := data/reference

$(DEMO_REFERENCE)/reference.jsonl: demo/reference.py $(wildcard demo/refdata/data/*.jsonl) | $(STAMP)
	$(PY) -m demo.reference --output $(DEMO_REFERENCE)

$(DEMO_SEED)/SEED.json: $(DEMO_CRAWL)/MANIFEST.json $(DEMO_REFERENCE)/reference.jsonl | $(STAMP)
	$(PY) -m demo.seed --output $(DEMO_SEED) --crawl $(DEMO_CRAWL) --reference $(DEMO_REFERENCE)/reference.jsonl \
	    --hq-crawl-like 0.3

# Both thresholds keep 99.8 % of the held-out good documents (hq / ham) instead of maximising F1 (the
# 0.2 % budget of every quality rule, docs/quality.md):
# as a hard rule the quality model's F1 threshold removes good crawl and reference text. Neither
# removes a page its model scores on the good side of 0.5 (within_boundary, docs/classifiers.md).
$(DEMO_OUT)/models/%/metadata.json: $(DEMO_SEED)/SEED.json
	$(PY) -m jobs.train_classifier --kind $* --input $(DEMO_SEED)/$*.jsonl --output $(DEMO_OUT)/models/$* \
	    --set classifier.threshold_rule=keep_reference --set classifier.keep_share=0.998 \
	    --set classifier.within_boundary=true

# The reference profile of the quality stage (issue 23): a character 5-gram fluency model of the
# reference corpus and every signal's percentiles over it, the ground of the thresholds.
$(DEMO_OUT)/models/fluency/metadata.json: $(DEMO_REFERENCE)/reference.jsonl
	$(PY) -m jobs.train_fluency --reference $(DEMO_REFERENCE)/reference.jsonl --output $(DEMO_OUT)/models/fluency

demo-models: $(DEMO_OUT)/models/spam/metadata.json $(DEMO_OUT)/models/quality/metadata.json \
             $(DEMO_OUT)/models/fluency/metadata.json

$(DEMO_EVALS)/MANIFEST.json: | $(STAMP)
	$(PY) -m demo.eval_set --output $(DEMO_EVALS)

# The demo evaluation sets are checked in report mode: counted, not dropped (docs/pii-decontamination.md).
demo: demo-crawl demo-models $(DEMO_EVALS)/MANIFEST.json
	$(PY) -m jobs.build_corpus --input $(DEMO_INPUTS) --output $(DEMO_OUT)/corpus --overwrite \
	    --set classify.spam_model=$(DEMO_OUT)/models/spam --set classify.quality_model=$(DEMO_OUT)/models/quality \
	    --set quality.profile=$(DEMO_OUT)/models/fluency --set tokenizer.vocab_size=8000 \
	    --set decontaminate.eval_sets='["$(DEMO_EVALS)/demo_news_cloze.jsonl","$(DEMO_EVALS)/demo_review_sentiment.jsonl"]' \
	    --set decontaminate.mode=report
	@echo "corpus: $(DEMO_OUT)/corpus/  (documents/ rejected/ duplicates/ shards/ tokenizer/ report.json)"
	@echo "report: $(DEMO_OUT)/corpus/report.html"
	rm -rf $(DEMO_OUT)/run
	$(PY) -m jobs.train_lm --config jobs/configs/demo.toml --data $(DEMO_OUT)/corpus/shards --output $(DEMO_OUT)/run
	@echo "metrics: $(DEMO_OUT)/run/metrics.jsonl  (tensorboard --logdir $(DEMO_OUT)/run/tensorboard)"

# Rule judge (issue 17): four cleaning-rule variants of a smaller demo crawl (2,000 source pages, so
# People's Daily articles are left over for a held-out dev set), a proxy GPT per variant and seed,
# ranked by dev perplexity. Report: out/judge-demo/judge.html. A 2,000-token vocabulary (about one
# token per character): the proxy's output layer is most of its cost on CPU.
JUDGE_CRAWL := data/judge_crawl
JUDGE_DEV   := data/judge_dev

$(JUDGE_CRAWL)/MANIFEST.json: | $(STAMP)
	$(PY) -m demo.crawl --output $(JUDGE_CRAWL) --max-docs 2000 --min-mb 0 --big-line-mb 0.5

$(JUDGE_DEV)/dev.jsonl: $(JUDGE_CRAWL)/MANIFEST.json
	$(PY) -m demo.dev_set --crawl $(JUDGE_CRAWL) --output $(JUDGE_DEV) --docs 100 --planted 10

judge-demo: $(JUDGE_DEV)/dev.jsonl demo-models
	$(PY) -m jobs.judge_rules --input $(JUDGE_CRAWL)/warc $(JUDGE_CRAWL)/wet $(JUDGE_CRAWL)/jsonl \
	    --variants demo/judge_variants.toml --dev $(JUDGE_DEV)/dev.jsonl --output out/judge-demo --overwrite \
	    --set classify.spam_model=$(DEMO_OUT)/models/spam --set classify.quality_model=$(DEMO_OUT)/models/quality \
	    --set quality.profile=$(DEMO_OUT)/models/fluency \
	    --set tokenizer.vocab_size=2000 --set tokenizer.character_coverage=0.98
	@echo "report: out/judge-demo/judge.html"

# The report.html test renders the page in headless Chromium (Debian's chromium + chromedriver).
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian chromium + chromium-driver for the report.html test"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null \
	      || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null; }; \
	  else echo "the report test needs chromium and chromedriver: sudo apt-get install chromium chromium-driver"; exit 1; fi; }

test: $(STAMP) browser lint
	$(PY) -m pytest -q

# ruff: lint and format check, line length 120 ([tool.ruff] in pyproject.toml); `ruff format .` fixes the layout
lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not slow"

bench: demo-crawl
	$(PY) -m bench.bench_clean --input $(DEMO_INPUTS)

bench-classify: demo
	$(PY) -m bench.bench_classify --documents $(DEMO_OUT)/corpus/documents \
	    --spam-model $(DEMO_OUT)/models/spam --quality-model $(DEMO_OUT)/models/quality

# For a Spark cluster: dist/zhcorpus-py.zip (--py-files) and dist/zhcorpus-env.tar.gz, a venv-pack'ed
# env with the executors' dependencies (--archives ...#env). The venv is cached under build/.
spark-package: $(STAMP)
	$(PY) deploy/spark_package.py

# The dedup stage vs a BigCode-style PySpark job, MLlib, datasketch and text-dedup 0.4.1 on 64 MiB
# (~1 h on 2 shared cores). text-dedup needs Python >= 3.12 and pins its own numpy/pandas: it gets
# its own venv under build/ (bench only, never a dependency); without a Python 3.12 it is skipped.
PY312 ?=
build/text-dedup-venv/.installed:
	@py="$(PY312)"; for c in python3.12 python3.13 $(wildcard $(HOME)/.pyenv/versions/3.1[2-9]*/bin/python); do \
	  [ -n "$$py" ] && break; "$$c" -c 'import sys; assert sys.version_info >= (3, 12)' 2>/dev/null && py="$$c"; done; \
	if [ -z "$$py" ]; then echo "no Python >= 3.12 (set PY312=...): bench-dedup skips text-dedup"; else \
	  "$$py" -m venv build/text-dedup-venv && build/text-dedup-venv/bin/pip install -q text-dedup==0.4.1 && touch $@; fi

bench-dedup: $(STAMP) build/text-dedup-venv/.installed
	$(PY) -m bench.bench_dedup --mb 64 --repeats 3 --slow-repeats 1 --shingle-sweep 3 4 5 6 7

# The whole chain on the demo-shaped crawl (1x and 8x) and on plain-text JSONL (8 and 64 MiB), with
# the compiled per-document pass and with the Python reference, interleaved (docs/docpass.md):
# per-stage s/MB per core for each and their ratio, marginal MB/s per core, plain anchors both ways
# (~40 min; BENCH_ARGS="--quick", "--only plain --plain-mb 8 32 --repeats 3 --no-split", "--engines compiled").
bench-corpus: demo-models
	$(PY) -m bench.bench_corpus $(BENCH_ARGS)

# Issue 34, item 5: the corpus outputs written to an S3 API (moto on 127.0.0.1) against local disk,
# per core, interleaved, medians of 3; the writers alone and whole builds; the writer's and the
# reader's peak RSS (~10 min at 8 MB; BENCH_ARGS="--mb 2 --no-build" for a quick look).
bench-remote-write: $(STAMP)
	$(PY) -m bench.bench_remote_write --mb 8 --repeat 3 $(BENCH_ARGS)

# Issue 23: the chain with make demo's models on an out-of-domain set (statutes, web fiction, an
# idiom glossary; six keyword-free spam families; site chrome), against the issue's targets.
data/ood/MANIFEST.json: | $(STAMP)
	$(PY) -m bench.evals.sets.ood --output data/ood

bench-ood: demo-models data/ood/MANIFEST.json
	$(PY) -m bench.evals.ood --ood data/ood/ood.jsonl --spam-model $(DEMO_OUT)/models/spam \
	    --quality-model $(DEMO_OUT)/models/quality --set quality.profile=$(DEMO_OUT)/models/fluency

# The blind second set (bench/evals/sets/ood_blind: dictionary, sayings, verse and Q&A pages; ten spam families).
data/ood_blind/MANIFEST.json: | $(STAMP)
	$(PY) -m bench.evals.sets.ood_blind --output data/ood_blind

bench-ood-blind: demo-models data/ood_blind/MANIFEST.json
	$(PY) -m bench.evals.ood --ood data/ood_blind/ood.jsonl --spam-model $(DEMO_OUT)/models/spam \
	    --quality-model $(DEMO_OUT)/models/quality --set quality.profile=$(DEMO_OUT)/models/fluency \
	    --output out/bench-ood-blind

# The third set (bench/evals/sets/ood_web: technical docs with code, Q&A, poetry, lists, forum threads; good
# pages only): what the rules wrongly remove from real text of web genres (issue 32, item 3).
data/ood_web/MANIFEST.json: | $(STAMP)
	$(PY) -m bench.evals.sets.ood_web --output data/ood_web

bench-ood-web: demo-models data/ood_web/MANIFEST.json
	$(PY) -m bench.evals.ood --ood data/ood_web/ood.jsonl --spam-model $(DEMO_OUT)/models/spam \
	    --quality-model $(DEMO_OUT)/models/quality --set quality.profile=$(DEMO_OUT)/models/fluency \
	    --output out/bench-ood-web

# Issue 32: leave-one-family-out. Every spam family of the seed and of the evaluation sets that exist
# (data/ood, data/ood_blind, data/ood_web when built) scored by a spam model that never saw it: one
# run with the whole seed's model, one retrain and run per seed family (~20 min; BENCH_ARGS=--only-full
# for a quick look). Report: out/bench/lofo.json (docs/quality.md).
bench-lofo: demo-models data/ood/MANIFEST.json data/ood_blind/MANIFEST.json data/ood_web/MANIFEST.json
	$(PY) -m bench.evals.lofo --seed-dir $(DEMO_SEED) --quality-model $(DEMO_OUT)/models/quality \
	    --profile $(DEMO_OUT)/models/fluency $(BENCH_ARGS)

# Every other benchmark as make bench-NAME: the speed benchmark bench/bench_NAME.py, else the quality
# evaluation bench/evals/NAME.py (dashes for underscores), its options in BENCH_ARGS (make bench-fluency
# BENCH_ARGS="--mb 5"); the targets above also build what theirs read. What each reads and measures:
# docs/benchmarks.md (tests/test_bench_harness.py checks that every one has a target and an entry).
bench-%: $(STAMP)
	$(PY) -m $(if $(wildcard bench/bench_$(subst -,_,$*).py),bench.bench_,bench.evals.)$(subst -,_,$*) $(BENCH_ARGS)

# Re-pin the transitive closure after changing pyproject.toml.
lock: $(STAMP)
	$(PY) -m pip freeze --exclude-editable | grep -v '^zhcorpus' > requirements.lock

clean-demo:
	rm -rf $(DEMO_CRAWL) $(DEMO_SEED) $(DEMO_EVALS) $(DEMO_OUT)
