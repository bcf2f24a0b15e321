"""Megatron indexed-dataset shards: the writer against hand-packed bytes, the Spark stage read
back with base/indexed_dataset.py's reader and with an independent ``struct`` parser of the published
format, the ``.src`` source sidecar, manifest counts and checksums, and byte-identical re-runs."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import struct

import numpy as np
import pytest

from base.indexed_dataset import IndexedDataset, IndexedDatasetError, IndexedDatasetWriter, dtype_for_vocab
from base.manifest import read_manifest
from tests.test_tokenizer import train_tiny_tokenizer

MAGIC = b"MMIDIDX\x00\x00"
STRUCT_CODES = {8: ("H", 2), 4: ("i", 4)}  # Megatron dtype code -> struct format, item size


def parse_idx(data: bytes) -> dict:
    """The published .idx layout, field by field, with nothing but struct."""
    assert data[:9] == MAGIC
    (version,) = struct.unpack_from("<Q", data, 9)
    (code,) = struct.unpack_from("<B", data, 17)
    n_seq, n_doc_idx = struct.unpack_from("<QQ", data, 18)
    off = 34
    lengths = list(struct.unpack_from(f"<{n_seq}i", data, off))
    off += 4 * n_seq
    pointers = list(struct.unpack_from(f"<{n_seq}q", data, off))
    off += 8 * n_seq
    doc_indices = list(struct.unpack_from(f"<{n_doc_idx}q", data, off))
    off += 8 * n_doc_idx
    assert off == len(data), "trailing bytes after the document indices"
    return {"version": version, "code": code, "lengths": lengths, "pointers": pointers, "doc_indices": doc_indices}


def parse_bin(data: bytes, idx: dict) -> list[list[int]]:
    fmt, size = STRUCT_CODES[idx["code"]]
    return [list(struct.unpack_from(f"<{n}{fmt}", data, p)) for n, p in zip(idx["lengths"], idx["pointers"])]


def parse_src(data: bytes, names: list[str]) -> list[str]:
    """The ``.src`` sidecar: one little-endian uint16 per document, an index into ``names``."""
    assert len(data) % 2 == 0
    return [names[i] for i in struct.unpack(f"<{len(data) // 2}H", data)]


# --- the writer alone ---------------------------------------------------------------------


def test_writer_matches_hand_packed_bytes(tmp_path):
    docs = [[5, 6, 7, 2], [2], [65_000, 1, 2]]
    with IndexedDatasetWriter(tmp_path / "x", np.uint16) as w:
        for d in docs:
            w.add_document(d)
    expected_idx = (
        MAGIC
        + struct.pack("<Q", 1)
        + struct.pack("<B", 8)
        + struct.pack("<QQ", 3, 4)
        + struct.pack("<3i", 4, 1, 3)
        + struct.pack("<3q", 0, 8, 10)
        + struct.pack("<4q", 0, 1, 2, 3)
    )
    assert (tmp_path / "x.idx").read_bytes() == expected_idx
    assert (tmp_path / "x.bin").read_bytes() == struct.pack("<8H", 5, 6, 7, 2, 2, 65_000, 1, 2)
    ds = IndexedDataset(tmp_path / "x")
    assert len(ds) == 3 and ds.num_tokens == 8 and ds.dtype == np.dtype("<u2")
    assert [ds[i].tolist() for i in range(3)] == docs and ds[-1].tolist() == docs[-1]
    assert ds.get(0, offset=1, length=2).tolist() == [6, 7]
    assert ds.document_lengths.tolist() == [4, 1, 3]


def test_token_width_follows_vocabulary_size(tmp_path):
    assert dtype_for_vocab(40_000) == np.uint16 and dtype_for_vocab(65_499) == np.uint16
    assert dtype_for_vocab(65_500) == np.int32 and dtype_for_vocab(None) == np.int32
    with pytest.raises(ValueError, match="do not fit uint16"):
        with IndexedDatasetWriter(tmp_path / "y", dtype_for_vocab(8000)) as w:
            w.add_document([70_000])
    assert not (tmp_path / "y.bin").exists() and not (tmp_path / "y.idx").exists()
    with IndexedDatasetWriter(tmp_path / "z", dtype_for_vocab(100_000)) as w:
        w.add_document([70_000, 3])
    idx = parse_idx((tmp_path / "z.idx").read_bytes())
    assert idx["code"] == 4 and parse_bin((tmp_path / "z.bin").read_bytes(), idx) == [[70_000, 3]]


def test_reader_refuses_corrupt_files(tmp_path):
    with IndexedDatasetWriter(tmp_path / "c", np.uint16) as w:
        w.add_document([1, 2, 3])
    good = (tmp_path / "c.idx").read_bytes()
    for pos, what in ((0, "magic"), (9, "version"), (17, "dtype code")):
        bad = bytearray(good)
        bad[pos] ^= 0x40
        (tmp_path / "c.idx").write_bytes(bytes(bad))
        with pytest.raises(IndexedDatasetError):
            IndexedDataset(tmp_path / "c")
    (tmp_path / "c.idx").write_bytes(good)
    (tmp_path / "c.bin").write_bytes(b"\x01\x00")  # truncated
    with pytest.raises(IndexedDatasetError, match="index implies"):
        IndexedDataset(tmp_path / "c")


# --- the Spark stage ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("shards-tok") / "tokenizer"
    train_tiny_tokenizer(out)
    return out


@pytest.fixture(scope="module")
def documents():
    """(doc_id, text, source): news, reviews and forum pages, an empty text, a null source."""
    from demo.sources import news_pages, review_pages

    pages = news_pages()[300:325] + review_pages(random.Random(1))[200:235]
    rows = [(f"doc-{random.Random(i).getrandbits(32):08x}", "\n".join([t, *p]), s) for i, (t, p, s) in enumerate(pages)]
    return rows + [("doc-empty", "", "news"), ("doc-nosource", "没有来源的文档，English words 123。", None)]


@pytest.fixture(scope="module")
def written(spark, tok_dir, documents, tmp_path_factory):
    from etl.shards.stage import write_shards

    root = tmp_path_factory.mktemp("shards")
    df = spark.createDataFrame(documents, "doc_id string, text string, source string").repartition(3)
    manifest = write_shards(df, str(tok_dir), str(root / "a"), num_shards=3)
    return root / "a", manifest


def expected_shards(spark, documents, tok, num_shards: int) -> list[list[tuple[str, str, list[int]]]]:
    """Per shard, in doc_id order: (doc_id, source, encode(text) + [eod])."""
    from pyspark.sql import functions as F

    df = spark.createDataFrame([(d,) for d, _, _ in documents], "doc_id string")
    shard_of = {
        r.doc_id: r.shard
        for r in df.select("doc_id", F.pmod(F.xxhash64("doc_id"), F.lit(num_shards)).alias("shard")).collect()
    }
    out = [[] for _ in range(num_shards)]
    for doc_id, text, source in sorted(documents):
        out[shard_of[doc_id]].append((doc_id, source or "unknown", tok.encode(text) + [tok.eod_id]))
    return out


@pytest.mark.slow
def test_shards_read_back_byte_for_byte(spark, written, tok_dir, documents):
    from filters.tokenizer import ZhTokenizer

    out, manifest = written
    tok = ZhTokenizer.load(tok_dir)
    expected = expected_shards(spark, documents, tok, 3)
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json"] + [
        f"shard-{i:05d}.{k}" for i in range(3) for k in ("bin", "idx", "src")
    ]
    assert manifest["sources"] == ["forum", "news", "reviews", "unknown"]
    per_source: dict[str, int] = {}
    for i, (entry, want) in enumerate(zip(manifest["shards"], expected)):
        assert entry["name"] == f"shard-{i:05d}" and want, "every shard should hold documents here"
        idx_bytes, bin_bytes = (out / entry["idx"]).read_bytes(), (out / entry["bin"]).read_bytes()
        assert hashlib.sha256(idx_bytes).hexdigest() == entry["idx_sha256"]
        assert hashlib.sha256(bin_bytes).hexdigest() == entry["bin_sha256"]
        idx = parse_idx(idx_bytes)
        assert (idx["version"], idx["code"]) == (1, 8)  # 2,000 pieces -> uint16
        want_tokens = [t for _, _, t in want]
        assert idx["lengths"] == [len(t) for t in want_tokens]
        assert idx["pointers"] == [2 * sum(idx["lengths"][:j]) for j in range(len(want))]
        assert idx["doc_indices"] == list(range(len(want) + 1))
        assert parse_bin(bin_bytes, idx) == want_tokens
        src_bytes = (out / entry["src"]).read_bytes()
        assert hashlib.sha256(src_bytes).hexdigest() == entry["src_sha256"] and len(src_bytes) == entry["src_bytes"]
        assert parse_src(src_bytes, manifest["sources"]) == [source for _, source, _ in want]
        ds = IndexedDataset(out / entry["name"], manifest["sources"])
        assert [ds[j].tolist() for j in range(len(ds))] == want_tokens
        assert [manifest["sources"][k] for k in ds.document_sources] == [source for _, source, _ in want]
        assert ds.tokens_per_source() == entry["tokens_per_source"]
        n_tokens = sum(map(len, want_tokens))
        assert (entry["documents"], entry["tokens"]) == (len(ds), ds.num_tokens) == (len(want), n_tokens)
        for _, source, t in want:
            per_source[source] = per_source.get(source, 0) + len(t)
    assert manifest["tokens_per_source"] == per_source and set(per_source) == {"news", "reviews", "forum", "unknown"}
    assert manifest["totals"] == {
        "shards": 3,
        "documents": len(documents),
        "tokens": sum(len(t) for s in expected for _, _, t in s),
    }
    assert (manifest["tokenizer_sha256"], manifest["eod_id"], manifest["dtype"]) == (tok.sha256, 2, "uint16")
    assert json.loads((out / "manifest.json").read_text()) == manifest
    assert read_manifest(out)["totals"] == manifest["totals"]


@pytest.mark.slow
def test_rerun_is_byte_identical_and_empty_shards_are_written(spark, written, tok_dir, documents, tmp_path):
    from etl.shards.stage import write_shards

    out, _ = written
    df = spark.createDataFrame(list(reversed(documents)), "doc_id string, text string, source string").repartition(2)
    write_shards(df, str(tok_dir), str(tmp_path / "b"), num_shards=3)
    for f in sorted(out.iterdir()):
        assert (tmp_path / "b" / f.name).read_bytes() == f.read_bytes(), f.name
    with pytest.raises(FileExistsError):
        write_shards(df, str(tok_dir), str(tmp_path / "b"), num_shards=3)

    tiny = spark.createDataFrame(documents[:2], "doc_id string, text string, source string")
    manifest = write_shards(tiny, str(tok_dir), str(tmp_path / "c"), num_shards=6)
    empty = [s for s in manifest["shards"] if s["documents"] == 0]
    assert len(empty) >= 4 and manifest["totals"]["documents"] == 2
    idx = parse_idx((tmp_path / "c" / empty[0]["idx"]).read_bytes())
    assert (idx["lengths"], idx["doc_indices"]) == ([], [0])
    assert (tmp_path / "c" / empty[0]["bin"]).stat().st_size == 0
    assert (tmp_path / "c" / empty[0]["src"]).stat().st_size == 0 and empty[0]["src_bytes"] == 0
    assert len(IndexedDataset(tmp_path / "c" / empty[0]["name"])) == 0


@pytest.mark.slow
def test_manifest_checksums_catch_a_changed_shard(written, tmp_path):
    out, manifest = written
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    read_manifest(copy)  # intact: verifies
    data = bytearray((copy / manifest["shards"][0]["bin"]).read_bytes())
    data[0] ^= 0x01  # same size, one token changed
    (copy / manifest["shards"][0]["bin"]).write_bytes(bytes(data))
    with pytest.raises(IndexedDatasetError, match="sha256"):
        read_manifest(copy)


@pytest.mark.slow
def test_source_sidecar_is_verified(written, tmp_path):
    out, manifest = written
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    entry = manifest["shards"][0]
    src = bytearray((copy / entry["src"]).read_bytes())
    src[0] = (src[0] + 1) % len(manifest["sources"])  # one document relabelled
    (copy / entry["src"]).write_bytes(bytes(src))
    with pytest.raises(IndexedDatasetError, match=f"{entry['src']}: sha256"):
        read_manifest(copy)
    doctored = json.loads((copy / "manifest.json").read_text())  # the checksum updated to match: the counts catch it
    doctored["shards"][0]["src_sha256"] = hashlib.sha256(bytes(src)).hexdigest()
    (copy / "manifest.json").write_text(json.dumps(doctored))
    with pytest.raises(IndexedDatasetError, match="tokens per source"):
        read_manifest(copy)
    (copy / entry["src"]).unlink()
    with pytest.raises(IndexedDatasetError, match=f"{entry['src']}: missing"):
        read_manifest(copy, verify=False)


# --- what the shard writers count and how they order --------------------------------------


@pytest.mark.slow
def test_packed_ids_sort_as_the_id_arrays(spark):
    """The writers' sort tie-breaks equal doc_ids on the packed ids (binary): Spark must order
    them as it orders the id arrays (element by element, then the shorter first)."""
    from etl.shards.stage import pack_ids

    rng = random.Random(3)
    arrays = [[], [0], [0, 0], [1], [1, 0], [1, 300], [256], [255], [255, 65535], [65535], [2, 1], [2, 1, 0]]
    arrays += [
        [rng.choice((0, 1, 255, 256, 257, 4095, 65280, 65535)) for _ in range(rng.randrange(4))] for _ in range(60)
    ]
    for width in (2, 4):
        offsets = np.cumsum([0] + [len(a) for a in arrays]).astype(np.int32)
        packed = pack_ids(offsets, np.array([i for a in arrays for i in a], dtype=np.int32), width).to_pylist()
        df = spark.createDataFrame(
            [(i, a, p) for i, (a, p) in enumerate(zip(arrays, packed))], "i int, ids array<int>, packed binary"
        )
        by_ids = [r.i for r in df.orderBy("ids", "i").collect()]
        by_packed = [r.i for r in df.orderBy("packed", "i").collect()]
        assert by_packed == by_ids, f"width {width}"
    with pytest.raises(ValueError, match="do not fit"):
        pack_ids(np.array([0, 1], dtype=np.int32), np.array([65536], dtype=np.int32), 2)


@pytest.mark.slow
def test_equal_doc_ids_are_ordered_by_their_tokens(spark, tok_dir, documents, tmp_path):
    """A doc_id given to several documents (not in a corpus build, which renames them): in the
    shard they follow the order Spark gives their token arrays."""
    from pyspark.sql import functions as F

    from etl.shards.stage import tokenize_stage, write_shards

    rows = [("same", text, "news") for _, text, _ in documents[:12]] + [("other", "另一篇。", "news")]
    df = spark.createDataFrame(rows, "doc_id string, text string, source string").repartition(3)
    write_shards(df, str(tok_dir), str(tmp_path / "s"), num_shards=1)
    got = IndexedDataset(tmp_path / "s" / "shard-00000")
    ref = tokenize_stage(df, str(tok_dir)).orderBy("doc_id", "tokens").select(F.col("tokens")).collect()
    assert [got[j].tolist() for j in range(len(got))] == [r.tokens + [2] for r in ref]


@pytest.mark.slow
def test_log_bins_are_sparks(spark):
    """The writers' histogram of tokens per document is binned in numpy: the same bins as Spark's
    expression (``etl.report.stats.log_bin``) on every value up to 300,000 and around each
    power of ten up to 10^9."""
    from etl.report.stats import log_bin, log_bins

    values = list(range(-3, 300_000)) + [p + d for p in (10**k for k in range(5, 10)) for d in (-2, -1, 0, 1, 2)]
    values += [int(v) for v in np.random.default_rng(0).integers(300_000, 2**31 - 1, 20_000)]
    df = spark.createDataFrame([(v,) for v in values], "v long")
    spark_bins = {r.v: r.bin for r in df.select("v", log_bin("v").alias("bin")).collect()}
    assert log_bins(np.array(values)).tolist() == [spark_bins[v] for v in values]


@pytest.mark.slow
def test_counts_from_the_writers_and_one_aggregation_equal_the_separate_jobs(spark, tok_dir, documents, tmp_path):
    """``written_documents`` (one aggregation) against a count, a sum, the distinct sources and
    ``log_histogram``; the writers' tokens per document against ``log_histogram`` of the token frame."""
    from pyspark.sql import functions as F

    from etl.phases import binned, written_documents
    from etl.report.stats import histogram, log_histogram
    from etl.shards.stage import distinct_sources, packed_tokens, ship_tokenizer, tokenize_stage, write_token_shards

    df = spark.createDataFrame(documents, "doc_id string, text string, source string").withColumn(
        "n_chars", F.length("text")
    )
    written = written_documents(df)
    assert written.documents == df.count() == len(documents)
    assert written.chars == df.agg(F.sum("n_chars")).first()[0]
    assert written.sources == distinct_sources(df) == ["forum", "news", "reviews", "unknown"]
    assert written.doc_chars == log_histogram(df, "n_chars")
    shipped = ship_tokenizer(spark, str(tok_dir))
    _, doc_tokens = write_token_shards(packed_tokens(df, shipped), shipped, str(tmp_path / "t"), 2, written.sources)
    assert histogram(binned(doc_tokens)) == log_histogram(tokenize_stage(df, shipped), "n_tokens")
    assert sum(n for counts in doc_tokens.values() for n in counts.values()) == len(documents)
