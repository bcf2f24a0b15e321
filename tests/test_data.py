"""train/data.py: packed windows against a concatenation the test builds itself, blending
fractions against the weights, train/valid disjointness, dp-slice and resume invariance, epoch
wrap, clear errors; and the Spark shard stage's ``.src`` sidecar read end to end.

The hand-built corpus gives every document its own token ids (``1 + k``, increasing through
the corpus), so any token names the one document it came from."""

from __future__ import annotations

import json
import pickle
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from base.indexed_dataset import IndexedDatasetError
from tests import shard_fixture
from train.data import BLEND_BLOCK, DataConfig, DataError, TokenData

EOD = 0
SOURCES = ["books", "empty", "news", "tiny", "web"]  # "empty": listed, no documents
LENGTHS = {"books": (30, 90), "news": (5, 25), "web": (3, 40), "tiny": (6, 6)}  # tokens before <eod>
COUNTS = {"books": 40, "news": 90, "web": 110, "tiny": 1}


def write_corpus(root: Path, docs: list[tuple[int, str, list[int]]], num_shards: int, sources=SOURCES) -> Path:
    return shard_fixture.write_corpus(root, docs, num_shards, sources, EOD)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """(manifest path, docs): docs[(shard, index)] = (source, tokens with <eod>)."""
    rng, next_id, rows = random.Random(7), 1, []
    for source, n in COUNTS.items():
        for _ in range(n):
            length = rng.randint(*LENGTHS[source])
            rows.append((rng.randrange(3), source, list(range(next_id, next_id + length)) + [EOD]))
            next_id += length
    rng.shuffle(rows)  # sources interleaved inside each shard, as the Spark stage writes them
    manifest = write_corpus(tmp_path_factory.mktemp("data") / "shards", rows, num_shards=3)
    docs, seen = {}, Counter()
    for shard, source, tokens in rows:
        docs[(shard, seen[shard])] = (source, tokens)
        seen[shard] += 1
    return manifest, docs


def doc_of_token(docs) -> dict[int, tuple[int, int]]:
    return {t: key for key, (_, tokens) in docs.items() for t in tokens if t != EOD}


def test_windows_are_the_packed_concatenation(corpus):
    manifest, docs = corpus
    seq = 16
    data = TokenData(manifest, DataConfig(seq_len=seq, valid_fraction=0.2, seed=3))
    assert "tiny" not in data.sources  # 7 tokens < seq_len + 1: left out of the proportional mixture
    for source in ("books", "news"):
        mine = sorted(k for k, (s, _) in docs.items() if s == source)
        train = [tuple(k) for k in data.documents(source).tolist()]
        assert set(train) <= set(mine) and len(train) >= len(mine) * 0.6
        orders = [[tuple(k) for k in data.documents(source, epoch).tolist()] for epoch in (0, 1)]
        assert sorted(orders[0]) == sorted(orders[1]) == train
        if len(train) > 5:
            assert orders[0] != orders[1] and orders[0] != train, "each epoch is its own shuffle"
        spe = data.describe()["samples_per_epoch"][source]
        j = 0
        for order in orders:  # epoch 0, then the wrap into epoch 1
            stream = [t for key in order for t in docs[key][1]]
            assert spe == (len(stream) - 1) // seq
            for k in range(spe):
                want = stream[k * seq : k * seq + seq + 1]
                got = data.source_sample(source, j)
                assert got.dtype == np.int64 and got.tolist() == want, (source, j)
                j += 1


def test_samples_are_reproducible_and_seeded(corpus):
    manifest, _ = corpus
    cfg = DataConfig(seq_len=12, weights={"books": 2, "web": 1}, valid_fraction=0.1, seed=5)
    a, b = TokenData(manifest, cfg), TokenData(manifest, cfg)
    picks = [0, 1, 7, 5000, BLEND_BLOCK - 1, BLEND_BLOCK, 3 * BLEND_BLOCK + 11, 10**9]
    want = [a.sample(i) for i in picks]
    for i, w in reversed(list(zip(picks, want))):  # another instance, asked in another order
        assert np.array_equal(b.sample(i), w)
    shipped = pickle.dumps(a)  # what Ray sends to a worker: the arguments, not the memory maps
    assert len(shipped) < 4096 and np.array_equal(pickle.loads(shipped).sample(picks[-1]), want[-1])
    # the seed reorders documents and blend positions (the held-out set aside: valid_fraction=0 here)
    five, six = (
        TokenData(manifest, DataConfig(seq_len=12, weights={"books": 2, "web": 1}, valid_fraction=0, seed=seed))
        for seed in (5, 6)
    )
    assert sum(np.array_equal(five.sample(i), six.sample(i)) for i in picks) <= 1
    assert five.documents("books", 0).tolist() != six.documents("books", 0).tolist()
    assert [five.locate(i)[0] for i in range(64)] != [six.locate(i)[0] for i in range(64)]


def test_blend_tracks_the_weights(corpus):
    manifest, docs = corpus
    weights = {"books": 0.5, "news": 0.3, "web": 0.2}
    data = TokenData(manifest, DataConfig(seq_len=8, weights=weights, valid_fraction=0.0))
    assert data.sources == sorted(weights) and data.mixture == pytest.approx(weights)
    located = [data.locate(i) for i in range(2 * BLEND_BLOCK)]
    for lo, hi, tol in ((0, 4096, 0.03), (0, BLEND_BLOCK, 2 / BLEND_BLOCK), (0, 2 * BLEND_BLOCK, 2 / BLEND_BLOCK)):
        frac = Counter(s for s, _ in located[lo:hi])
        for s, w in weights.items():
            assert abs(frac[s] / (hi - lo) - w) < tol, (lo, hi, s, frac[s] / (hi - lo))
    for s in weights:  # each block takes the next run of every source's samples, none twice, none skipped
        js = [j for src, j in located if src == s]
        assert sorted(js) == list(range(len(js)))
    owner = doc_of_token(docs)
    for i in range(0, 2000, 7):  # the located source's documents are where the tokens come from
        source, j = located[i]
        tokens = data.sample(i)
        assert np.array_equal(tokens, data.source_sample(source, j))
        assert {docs[owner[t]][0] for t in tokens.tolist() if t != EOD} == {source}

    natural = TokenData(manifest, DataConfig(seq_len=8, valid_fraction=0.0))  # {} = proportional to tokens
    usable = {s: n for s, n in natural.tokens_per_source.items() if s != "tiny"}  # tiny: 7 tokens, no sample
    assert natural.mixture == pytest.approx({s: n / sum(usable.values()) for s, n in usable.items()})
    assert natural.tokens_per_source == {s: sum(len(t) for src, t in docs.values() if src == s) for s in COUNTS}


def test_train_and_valid_are_disjoint_documents(corpus):
    manifest, docs = corpus
    cfg = DataConfig(seq_len=8, valid_fraction=0.25, seed=11)
    train, valid = TokenData(manifest, cfg, "train"), TokenData(manifest, cfg, "valid")
    held = {tuple(k) for k in valid.documents().tolist()}
    seen = {tuple(k) for k in train.documents().tolist()}
    assert not held & seen and held | seen == set(docs)
    assert 0.15 < len(held) / len(docs) < 0.35
    owner = doc_of_token(docs)
    for data, allowed in ((train, seen), (valid, held)):
        for i in range(0, 3000, 3):
            assert {owner[t] for t in data.sample(i).tolist() if t != EOD} <= allowed
    assert (
        TokenData(manifest, DataConfig(seq_len=8, valid_fraction=0.25, seed=12), "valid").documents().tolist()
        != valid.documents().tolist()
    )


def test_a_source_without_held_out_documents_is_absent_from_valid(corpus):
    manifest, docs = corpus
    (tiny,) = [k for k, (s, _) in docs.items() if s == "tiny"]
    weights = {"books": 1.0, "tiny": 1.0}
    seeds = {}
    for seed in range(40):
        valid = TokenData(manifest, DataConfig(seq_len=4, weights=weights, valid_fraction=0.3, seed=seed), "valid")
        seeds[tiny in {tuple(k) for k in valid.documents().tolist()}] = seed
        if len(seeds) == 2:
            break
    valid = TokenData(manifest, DataConfig(seq_len=4, weights=weights, valid_fraction=0.3, seed=seeds[False]), "valid")
    assert valid.sources == ["books"] and valid.mixture == {"books": 1.0}
    with pytest.raises(DataError, match="'tiny' has weight 1.0 but no documents in the train split"):
        TokenData(manifest, DataConfig(seq_len=4, weights=weights, valid_fraction=0.3, seed=seeds[True]))


def test_batch_is_the_same_however_dp_slices_it_and_after_a_resume(corpus):
    manifest, _ = corpus
    cfg = DataConfig(seq_len=10, weights={"books": 1, "news": 1, "web": 2}, valid_fraction=0.05, seed=2)
    data, gb = TokenData(manifest, cfg), 8
    for step in (0, 3, BLEND_BLOCK // gb - 1, BLEND_BLOCK // gb):  # the last two straddle a block edge
        full = data.batch(step, gb)
        assert full.shape == (gb, 11) and full.dtype == torch.int64
        assert torch.equal(full, torch.from_numpy(np.stack([data.sample(step * gb + r) for r in range(gb)])))
        for dp in (1, 2, 4, 8):
            parts = [data.samples(step * gb + r * gb // dp, gb // dp) for r in range(dp)]
            assert torch.equal(torch.cat(parts), full), (step, dp)
    first_run = [data.batch(s, gb) for s in range(6)]  # ran steps 0..5 at dp=2, died; resume at step 4 at dp=4
    resumed = TokenData(manifest, cfg)
    for s in (4, 5):
        assert torch.equal(torch.cat([resumed.samples(s * gb + r * 2, 2) for r in range(4)]), first_run[s])


def test_clear_errors(corpus, tmp_path):
    manifest, _ = corpus
    with pytest.raises(DataError, match=r"unknown source\(s\) \['tv'\].*\['books', 'empty', 'news', 'tiny', 'web'\]"):
        TokenData(manifest, DataConfig(weights={"books": 1, "tv": 1}, valid_fraction=0))
    with pytest.raises(DataError, match="'empty' has weight 2.0 but no documents"):
        TokenData(manifest, DataConfig(weights={"books": 1, "empty": 2}, valid_fraction=0))
    with pytest.raises(DataError, match="'tiny' has weight 1.0 but 7 tokens"):
        TokenData(manifest, DataConfig(seq_len=8, weights={"books": 1, "tiny": 1}, valid_fraction=0))
    TokenData(manifest, DataConfig(seq_len=6, weights={"books": 1, "tiny": 1}, valid_fraction=0))  # 7 = seq_len + 1
    with pytest.raises(DataError, match=">= 0"):
        TokenData(manifest, DataConfig(weights={"books": -1.0}, valid_fraction=0))
    with pytest.raises(DataError, match="valid split has no source"):
        TokenData(manifest, DataConfig(valid_fraction=0.0), "valid")
    with pytest.raises(ValueError, match="split"):
        TokenData(manifest, DataConfig(), "test")

    import shutil

    for name, damage, message in (
        ("shard-00001.bin", "flip", "shard-00001.bin: sha256"),
        ("shard-00002.src", "flip", "shard-00002.src: sha256"),
        ("shard-00000.idx", "delete", "shard-00000.idx: missing"),
    ):
        copy = tmp_path / name
        shutil.copytree(manifest.parent, copy)
        if damage == "flip":
            data = bytearray((copy / name).read_bytes())
            data[-1] ^= 0x01
            (copy / name).write_bytes(bytes(data))
        else:
            (copy / name).unlink()
        with pytest.raises(IndexedDatasetError, match=message):
            TokenData(copy / "manifest.json", DataConfig(valid_fraction=0))
    legacy = json.loads(manifest.read_text())
    del legacy["sources"]
    for entry in legacy["shards"]:
        del entry["src"]
    shutil.copytree(manifest.parent, tmp_path / "legacy")
    (tmp_path / "legacy" / "manifest.json").write_text(json.dumps(legacy))
    with pytest.raises(IndexedDatasetError, match="no per-document sources"):
        TokenData(tmp_path / "legacy" / "manifest.json", DataConfig(valid_fraction=0))


def test_describe(corpus):
    manifest, docs = corpus
    data = TokenData(manifest, DataConfig(seq_len=16, weights={"books": 3, "news": 1}, valid_fraction=0.0))
    d = data.describe()
    assert d["sources"] == ["books", "news"] and d["weights"] == {"books": 0.75, "news": 0.25}
    assert d["documents"] == {s: n for s, n in COUNTS.items()} and json.dumps(d)
    assert d["samples_per_epoch"] == {s: (n - 1) // 16 for s, n in data.tokens_per_source.items()}
    assert d["samples_before_repeat"] == int(
        min(d["samples_per_epoch"]["books"] / 0.75, d["samples_per_epoch"]["news"] / 0.25)
    )


# --- the Spark shard stage, read by TokenData ---------------------------------------------


@pytest.mark.slow
def test_spark_shards_sidecar_drives_the_sources(spark, tmp_path):
    from demo.sources import news_pages, review_pages
    from etl.shards.stage import write_shards
    from filters.tokenizer import ZhTokenizer
    from tests.test_tokenizer import train_tiny_tokenizer

    train_tiny_tokenizer(tmp_path / "tok")
    tok = ZhTokenizer.load(tmp_path / "tok")
    pages = news_pages()[100:130] + review_pages(random.Random(3))[50:90]
    rows = [(f"d{i:04d}", "\n".join([t, *p]), s) for i, (t, p, s) in enumerate(pages)] + [("d-none", "无来源。", None)]
    df = spark.createDataFrame(rows, "doc_id string, text string, source string").repartition(2)
    manifest = write_shards(df, str(tmp_path / "tok"), str(tmp_path / "shards"), num_shards=2)
    assert manifest["sources"] == ["forum", "news", "reviews", "unknown"]

    data = TokenData(
        tmp_path / "shards" / "manifest.json", DataConfig(seq_len=4, valid_fraction=0)
    )  # "unknown": 5 tokens
    assert data.tokens_per_source == manifest["tokens_per_source"] and data.sources == manifest["sources"]
    for source in data.sources:
        texts = Counter(tok.decode(data.shards[s][i].tolist()[:-1]) for s, i in data.documents(source).tolist())
        assert texts == Counter(text for _, text, s in rows if (s or "unknown") == source), source
    source, j = data.locate(0)  # the first window: the start of its source's epoch-0 concatenation
    stream = np.concatenate([data.shards[s][i] for s, i in data.documents(source, 0).tolist()])
    k = j % data.describe()["samples_per_epoch"][source]
    assert data.sample(0).tolist() == stream[k * 4 : k * 4 + 5].tolist()


# --- the paired order (the rule judge's common random numbers) ---------------------------------


def _paired_corpora(root: Path) -> tuple[Path, Path, dict[int, int]]:
    """Two corpora of one source: 300 documents, and the same with 6 more inserted (a rule
    variant that keeps a few more pages). Token t names its document: ``owner[t]``."""
    rng, next_id, rows, owner = random.Random(11), 1, [], {}
    for k in range(306):
        n = rng.randint(20, 200)
        rows.append((0, "web", list(range(next_id, next_id + n)) + [EOD]))
        owner.update({t: k for t in range(next_id, next_id + n)})
        next_id += n
    base, more = rows[:300], rows[:300]
    for extra in rows[300:]:
        more.insert(rng.randrange(len(more)), extra)
    return write_corpus(root / "a", base, 1, ["web"]), write_corpus(root / "b", more, 2, ["web"]), owner


def _shared_at_same_step(a: TokenData, b: TokenData, steps: range) -> float:
    """Share of a's target tokens that b's batch of the same step holds too."""
    shared = []
    for step in steps:
        x, y = (set(d.batch(step, 16)[:, 1:].ravel().tolist()) - {EOD} for d in (a, b))
        shared.append(len(x & y) / len(x))
    return float(np.mean(shared))


def test_the_paired_order_puts_shared_documents_at_the_same_steps(tmp_path):
    """Common random numbers: with a permutation of positions, six inserted documents reorder
    everything (a batch shares ~2 % of its tokens with the other corpus's batch of the same step);
    in the paired order the shared windows keep their steps (> 70 %)."""
    a_path, b_path, _ = _paired_corpora(tmp_path)
    share = {}
    for order in ("shuffle", "paired"):
        cfg = DataConfig(seq_len=16, valid_fraction=0.0, seed=3, order=order)
        share[order] = _shared_at_same_step(TokenData(a_path, cfg), TokenData(b_path, cfg), range(0, 400, 7))
    assert share["shuffle"] < 0.05 and share["paired"] > 0.7, share
    other_seed = TokenData(a_path, DataConfig(seq_len=16, valid_fraction=0.0, seed=4, order="paired"))
    cfg = DataConfig(seq_len=16, valid_fraction=0.0, seed=3, order="paired")
    assert _shared_at_same_step(TokenData(a_path, cfg), other_seed, range(0, 400, 7)) < 0.05  # the seed still counts


def test_the_paired_order_is_an_epoch_of_document_aligned_windows(tmp_path):
    """Every epoch: each document's windows start at its start and every seq_len tokens after, every
    token but a document's first is a target exactly once in its own windows, the last window runs
    on into the next document (wrapping at the end), and the block order is a permutation."""
    a_path, _, owner = _paired_corpora(tmp_path)
    seq = 16
    data = TokenData(a_path, DataConfig(seq_len=seq, valid_fraction=0.0, seed=3, order="paired"))
    lengths = {}
    for t, k in owner.items():
        lengths[k] = lengths.get(k, 0) + 1
    want = sum(max(1, -(-lengths[k] // seq)) for k in range(300))  # length + <eod> - 1 targets per document
    spe = data.describe()["samples_per_epoch"]["web"]
    assert spe == want and data.describe()["order"] == "paired"
    first = {}
    for t, k in sorted(owner.items()):
        first.setdefault(k, t)
    for epoch in (0, 1):
        own = Counter()
        for j in range(epoch * spe, (epoch + 1) * spe):
            w = data.source_sample("web", j)
            doc = owner[int(w[0])]
            assert (int(w[0]) - first[doc]) % seq == 0, "a window starts at its document's start or seq_len on"
            own.update(int(t) for t in w[1:] if t != EOD and owner[int(t)] == doc)
        assert set(own) == {t for t, k in owner.items() if k < 300} - set(first.values())
        assert max(own.values()) == 1
    taken = sorted(data.locate(i)[1] for i in range(BLEND_BLOCK))
    assert taken == list(range(BLEND_BLOCK))  # a block takes each of its source samples once
