"""The fluency model (filters/quality/fluency/, etl/quality/fluency_train.py, jobs/train_fluency.py) against
references: Kneser-Ney probabilities against a pure-Python transcription of Chen & Goodman's
equations, batch scoring against the ARPA recursion read back from the exported file (and KenLM
itself when its Python module is installed), Spark counts against a Counter."""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict

import numpy as np
import pytest

from filters.classifiers.classify import ModelError
from filters.quality.fluency.arpa import arpa_name, arpa_words
from filters.quality.fluency.kneser_ney import DISCOUNT_FALLBACK
from filters.quality.fluency.model import META_FILE, MODEL_FILE, PERCENTILES_FILE, FluencyModel, train_local
from filters.quality.fluency.normalise import _char_tables, normalise, normalised_codes
from filters.quality.fluency.tables import NgramTables
from filters.quality.fluency.tokens import BOS, EOS, UNK, Tokens, encode

ORDER = 4


@pytest.fixture(scope="module")
def news() -> list[str]:
    from demo.sources import news_pages

    return ["\n".join([title, *paras]) for title, paras, _ in news_pages()]


@pytest.fixture(scope="module")
def tiny(news):
    """Sentences small enough for the brute-force reference, large enough that every order has
    counts of counts 1..4 (no discount fallback); max_vocab leaves rare characters <unk>."""
    texts = news[:12]
    model = train_local(texts, order=ORDER, max_vocab=400)
    sentences = [[model.token_id(c) for c in line] for t in texts for line in normalise(t)]
    return model, sentences


@pytest.fixture(scope="module")
def trained(news):
    """A 5-gram on 1,000 news articles; the held-out articles come from the end of the month."""
    return train_local(news[:1000], order=5)


# ---------------------------------------------------------------- normalisation


def test_normalise_by_hand():
    # NFKC (full-width letters, digits and the ideographic space), lower case, digits -> 0,
    # \r\n a line break, whitespace runs -> one space, stripped lines, empty lines gone
    assert normalise("Ａｂ１２ 　x\r\n\n  中文９ \t字 \u3000\n") == ["ab00 x", "中文0 字"]
    assert normalise("……") == ["......"]  # NFKC expands the ellipsis


def test_batch_normalisation_equals_the_definition_on_every_code_point():
    rng = random.Random(0)
    cps = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    rng.shuffle(cps)
    tricky = ["\u0301", "\u0308", "\u1161", "\u11a8", "Σ", "\r\n", "  ", "\n\n", " \u3000 ", "…", "①", "İ", "e\u0301"]
    texts = []
    for i in range(0, len(cps), 2000):
        chunk = list(map(chr, cps[i : i + 2000]))
        texts.append("".join(chunk))  # every code point once, in random neighbourhoods
        mixed = chunk[:80] + [rng.choice(tricky) for _ in range(30)]
        rng.shuffle(mixed)
        texts.append("".join(mixed))
    simple = np.flatnonzero(_char_tables()[0]).tolist()
    rng.shuffle(simple)
    texts += ["".join(map(chr, simple[i : i + 2000])) for i in range(0, len(simple), 2000)]  # the table path
    texts += ["ΑΣ ΟΔΟΣ", "", "   \n \n", "中文\n\n第一行。\n"]
    codes, doc = normalised_codes(texts, max_chars=1500)
    want = ["".join(line + "\n" for line in normalise(t[:1500])) for t in texts]
    assert np.array_equal(codes, np.frombuffer("".join(want).encode("utf-32-le", "surrogatepass"), np.uint32))
    assert np.array_equal(doc, np.repeat(np.arange(len(texts)), [len(w) for w in want]))


# ---------------------------------------------------------------- Kneser-Ney against the equations


def kn_reference(sentences: list[list[int]], order: int, n_predictable: int):
    """Interpolated modified Kneser-Ney straight from Chen & Goodman (1998) eqs. 17, 19 and 26, with
    KenLM's adjusted counts: raw counts at the highest order and for n-grams starting with <s>,
    else the number of distinct left neighbours N1+(. w). Returns p(w | h) for token tuples."""
    raw = Counter()
    for s in sentences:
        toks = [BOS, *s, EOS]
        for t in range(1, len(toks)):
            for n in range(1, min(order, t + 1) + 1):
                raw[tuple(toks[t - n + 1 : t + 1])] += 1
    left = defaultdict(set)
    for g in raw:
        if len(g) > 1:
            left[g[1:]].add(g[0])
    adj = {g: c if len(g) == order or g[0] == BOS else len(left[g]) for g, c in raw.items()}
    disc = {}
    for n in range(1, order + 1):
        t1, t2, t3, t4 = (sum(1 for g, a in adj.items() if len(g) == n and a == k) for k in (1, 2, 3, 4))
        y = t1 / (t1 + 2 * t2)
        disc[n] = (0.0, 1 - 2 * y * t2 / t1, 2 - 3 * y * t3 / t2, 3 - 4 * y * t4 / t3)
    total, freed = defaultdict(float), defaultdict(float)  # per context h: sum of a(h.), sum of D(a(h.))
    for g, a in adj.items():
        total[g[:-1]] += a
        freed[g[:-1]] += disc[len(g)][min(a, 3)]

    def p(w: int, h: tuple[int, ...]) -> float:
        if h and not total.get(h):
            return p(w, h[1:])  # an unseen context: the lower order alone
        a = adj.get((*h, w), 0)
        d = disc[len(h) + 1][min(a, 3)]
        lower = p(w, h[1:]) if h else 1 / n_predictable
        return (a - d) / total[h] + freed[h] / total[h] * lower

    return p, disc, raw


def test_kneser_ney_equals_the_equations(tiny):
    model, sentences = tiny
    p, disc, raw = kn_reference(sentences, ORDER, model.tables.radix - 1)
    for n in range(1, ORDER + 1):
        assert model.meta["discounts"][str(n)] == pytest.approx(disc[n][1:], abs=1e-12)
    assert all(d != list(DISCOUNT_FALLBACK) for d in model.meta["discounts"].values())
    rng = random.Random(1)
    seen = list(raw)
    queries = [g for g in seen if len(g) > 1 or g[0] != BOS]
    ids = [UNK, EOS, *range(3, model.tables.radix)]
    # unseen words after seen contexts, and contexts never seen at all
    queries += [(*g[-(ORDER - 1) :], rng.choice(ids)) for g in rng.sample(seen, 300)]
    queries += [tuple(rng.choice(ids) for _ in range(rng.randint(1, ORDER))) for _ in range(300)]
    worst = max(abs(10 ** model.ngram_log10(q) - p(q[-1], q[:-1])) for q in queries)
    assert worst < 1e-6, worst
    assert len(queries) > 5000


@pytest.mark.parametrize("min_count", [1, 2])
def test_every_distribution_sums_to_one(trained, news, min_count):
    model = trained if min_count == 1 else train_local(news[:300], order=5, min_count=min_count)
    tok = model.token_id
    contexts = [
        [],
        [BOS],
        [BOS, tok("中")],
        [tok(c) for c in "中国共产"],
        [tok(c) for c in "的的的的"],
        [UNK, UNK],
        [tok(c) for c in "。我们"],
    ]
    for context in contexts:
        d = model.distribution(context)
        assert abs((10.0 ** np.delete(d, BOS)).sum() - 1) < 1e-5, context


# ---------------------------------------------------------------- scoring


def read_arpa(path):
    """{n-gram words: (log10 p, backoff)} from an ARPA file."""
    table = {}
    for line in open(path, encoding="utf-8"):
        parts = line.rstrip("\n").split("\t")
        if len(parts) >= 2:
            table[tuple(parts[1].split(" "))] = (float(parts[0]), float(parts[2]) if len(parts) > 2 else 0.0)
    return table


def slow_log10(arpa, words: list[str], order: int) -> float:
    """One sentence, one character at a time, by the ARPA backoff recursion."""

    def p(h, w):
        if (*h, w) in arpa:
            return arpa[(*h, w)][0]
        return arpa.get(h, (0, 0.0))[1] + p(h[1:], w)

    toks = ["<s>", *words, "</s>"]
    return sum(p(tuple(toks[max(0, i - order + 1) : i]), toks[i]) for i in range(1, len(toks)))


def test_batch_scoring_equals_per_character_scoring(trained, news, tmp_path):
    small = train_local(news[:200], order=5, min_count=2)  # pruned: backoffs on many paths
    bigram = train_local(news[:100], order=2)
    held = news[2800:2830] + ["", "  \n\n ", "ＡＢ１２３ 外文 and digits 2024\r\n第二行……"]
    for model in (trained, small, bigram):
        model.export_arpa(tmp_path / "m.arpa")
        arpa = read_arpa(tmp_path / "m.arpa")
        vocab = set(arpa_name(int(c)) for c in model.vocab)
        sums, counts = model.score_batch(held)
        for text, s, n in zip(held, sums, counts):
            lines = normalise(text[: model.max_chars])
            words = [[arpa_name(ord(c)) if arpa_name(ord(c)) in vocab else "<unk>" for c in line] for line in lines]
            assert n == sum(len(line) + 1 for line in lines)  # characters and one </s> per sentence
            # the ARPA file holds 7 significant digits
            assert s == pytest.approx(sum(slow_log10(arpa, w, model.tables.order) for w in words), abs=1e-5 * (n + 1))
    assert np.isnan(trained.perplexity_batch([""])[0])


def plain_score(tables: NgramTables, tokens: Tokens) -> np.ndarray:
    """``NgramTables.score`` the plain way: every n-gram at every position looked up (no candidate
    chains, no pruning), the longest stored one's log-prob plus the context backoffs of the longer
    orders, summed in float32 from the highest order down as ``score`` sums them."""
    ids, order, radix = tokens.ids.astype(np.uint64), tables.order, tables.radix
    logp, back = np.zeros((order + 1, len(ids)), np.float32), np.zeros((order + 1, len(ids)), np.float32)
    longest, key = np.zeros(len(ids), np.int64), ids.copy()
    for n in range(1, order + 1):
        if n > 1:
            key[n - 1 :] += ids[: len(ids) - n + 1] * np.uint64(radix ** (n - 1))
        found, idx = tables.lookup(n, key)
        found &= tokens.depth >= n - 1  # the n-gram starts at or after its sentence's <s>
        logp[n, found], back[n, found] = tables.log_prob[n - 1][idx[found]], tables.backoff[n - 1][idx[found]]
        longest[found] = n
    for n in range(order - 1, 0, -1):  # back[n, t]: backoffs of the n..order-1 grams ending at t
        back[n] += back[n + 1]
    t = np.flatnonzero(tokens.scored)
    out = np.zeros(len(ids))
    out[t] = logp[longest[t], t] + back[longest[t], t - 1]
    return out


def test_batch_scoring_equals_plain_lookups_bit_for_bit(trained, news):
    small = train_local(news[:200], order=5, min_count=2)
    held = news[2800:2900] + ["", "  \n\n ", "ＡＢ１２３ 外文 and digits 2024\r\n第二行……", "Σίσυφος ﬁ ① e\u0301\n\n x"]
    for model in (trained, small):
        tokens = encode(held, model.id_of, model.max_chars)
        ours = model.tables.score(tokens)
        assert ours.dtype == np.float64 and np.array_equal(ours, plain_score(model.tables, tokens))


def test_long_documents_are_scored_on_their_opening(trained, news):
    long = news[2900] * 10
    assert len(long) > trained.max_chars == 5000
    assert trained.log_prob(long) == trained.log_prob(long[:5000])
    whole = FluencyModel(trained.tables, trained.vocab, {**trained.meta, "max_chars": None})
    assert whole.log_prob(long)[1] > 2.5 * trained.log_prob(long)[1]


def test_kenlm_reads_the_arpa_export_and_agrees(trained, news, tmp_path):
    kenlm = pytest.importorskip("kenlm", reason="kenlm (pip install kenlm==0.3.0, built from source) is optional")
    trained.export_arpa(tmp_path / "m.arpa")
    lm = kenlm.Model(str(tmp_path / "m.arpa"))
    sentences = [s for t in news[2900:2920] for s in normalise(t)]
    for s in sentences:
        ours, n = trained.log_prob(s)
        assert abs(ours - lm.score(arpa_words(s), bos=True, eos=True)) < 1e-5 * n


def test_real_text_beats_shuffled_characters_and_word_salad(trained, news):
    from filters.text.segment import get_segmenter

    rng = random.Random(2)
    cut = get_segmenter(None, False).cut

    def shuffled(parts: list[str]) -> str:
        return "".join(rng.sample(parts, len(parts)))

    held = [t for t in news[2700:2760] if len(t) > 200]
    chars = ["\n".join(shuffled(list(line)) for line in t.split("\n")) for t in held]
    salad = ["\n".join(shuffled(cut(line)) for line in t.split("\n")) for t in held]
    real, shuffled, words = (trained.perplexity_batch(x) for x in (held, chars, salad))
    assert (real < words).all() and (words < shuffled).all()
    assert np.median(words) > 2 * np.median(real)


# ---------------------------------------------------------------- the model directory


def test_save_load_and_refusals(tiny, tmp_path):
    model, _ = tiny
    meta = model.save(tmp_path)
    loaded = FluencyModel.load(tmp_path, meta["sha256"])
    text = "中国人民。\n新年好"
    assert loaded.log_prob(text) == model.log_prob(text)
    with pytest.raises(ModelError, match="the config says"):
        FluencyModel.load(tmp_path, "0" * 64)
    meta_path = tmp_path / META_FILE
    meta_path.write_text(json.dumps({**meta, "normalise_version": "0"}))
    with pytest.raises(ModelError, match="normalised by v0, this code is v1: retrain"):
        FluencyModel.load(tmp_path)
    meta_path.write_text(json.dumps({**meta, "format": "arpa"}))
    with pytest.raises(ModelError, match="holds format 'arpa'"):
        FluencyModel.load(tmp_path)
    meta_path.write_text(json.dumps(meta))
    data = bytearray((tmp_path / MODEL_FILE).read_bytes())
    data[-10] ^= 1
    (tmp_path / MODEL_FILE).write_bytes(bytes(data))
    with pytest.raises(ModelError, match="checksum mismatch"):
        FluencyModel.load(tmp_path)
    (tmp_path / MODEL_FILE).unlink()
    with pytest.raises(ModelError, match="not a fluency model directory"):
        FluencyModel.load(tmp_path)


# ---------------------------------------------------------------- Spark


def python_counts(texts: list[str], model_vocab: np.ndarray, order: int) -> Counter:
    """(n, key) -> count, one n-gram at a time."""
    ids = {chr(int(c)): i + 3 for i, c in enumerate(model_vocab)}
    radix = len(model_vocab) + 3
    out = Counter()
    for t in texts:
        for line in normalise(t):
            toks = [BOS, *(ids.get(c, UNK) for c in line), EOS]
            for i in range(1, len(toks)):
                for n in range(1, min(order, i + 1) + 1):
                    out[(n, sum(w * radix ** (n - 1 - j) for j, w in enumerate(toks[i - n + 1 : i + 1])))] += 1
    return out


@pytest.mark.slow
def test_spark_counts_equal_a_counter(spark, news):
    from etl.quality.fluency_train import collect_counts, count_ngrams, vocabulary

    texts = news[:15] + ["", "ＡＢ１２３　ｘ\r\n\n  尾  "]
    df = spark.createDataFrame([(t,) for t in texts], "text string").repartition(3)
    vocab, size = vocabulary(df, 300)
    assert len(vocab) == 300 and size["documents"] == 16
    got = collect_counts(count_ngrams(spark, df, ORDER, vocab))
    flat = {(n, int(k)): int(c) for n, (keys, counts) in got.items() for k, c in zip(keys, counts)}
    assert flat == python_counts(texts, vocab, ORDER)


@pytest.mark.slow
def test_training_lines_are_distinct_and_never_held_out(spark):
    from etl.quality.fluency_train import FluencyTrainingConfig, training_lines

    train = spark.createDataFrame([("甲\n乙１",), ("乙1 \r\n丙",), ("甲",)], "text string")
    held = spark.createDataFrame([("丙\n丁",)], "text string")
    lines = sorted(r.text for r in training_lines(train, held, FluencyTrainingConfig()).collect())
    assert lines == ["乙0", "甲"]  # normalised, each once, 丙 held out
    whole = training_lines(train, held, FluencyTrainingConfig(distinct_lines=False))
    assert whole.count() == 3


@pytest.mark.slow
def test_job_writes_a_loadable_model_and_reference_percentiles(spark, news, tmp_path):
    from jobs import train_fluency

    ref = tmp_path / "reference.jsonl"
    ref.write_text(
        "".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in enumerate(news[:400]))
    )
    out = tmp_path / "model"
    assert (
        train_fluency.main(
            [
                "--reference",
                str(ref),
                "--output",
                str(out),
                "--set",
                "fluency.order=4",
                "--set",
                "fluency.holdout_fraction=0.2",
            ]
        )
        == 0
    )
    model = FluencyModel.load(out)
    assert model.meta["order"] == 4 and model.meta["reference"]["files"][0]["bytes"] == ref.stat().st_size
    profile = json.loads((out / PERCENTILES_FILE).read_text())  # etl.quality.reference_profile's
    values = profile["signals"]["fluency_ppl"]
    assert profile["percentiles"][3:5] == [1, 2] and len(values) == len(profile["percentiles"])
    assert values == sorted(values) and 60 <= profile["fluency_documents"] <= 100 and profile["documents"] == 400
    assert profile["ccnet_buckets"]["head_below"] == values[profile["percentiles"].index(30)]
    assert set(profile["signals"]) >= {"line_punct_frac", "top2_word_cov", "contact_density", "fluency_ppl"}
    trained_on = model.meta["reference"]["trained_on"]["documents"]
    assert trained_on + profile["fluency_documents"] == 400
    # the crawl model's kept side: every reference document (fewer than 2,000), cut, checksummed
    from filters.classifiers.crawl import reference_sample

    sample, about = reference_sample(str(out), 2_000)
    assert about["documents"] == 400 and sorted(sample) == sorted(t[:3000] for t in news[:400])
    assert train_fluency.main(["--reference", str(ref), "--output", str(out), "--set", "fluency.max_vocab=9000"]) == 2
