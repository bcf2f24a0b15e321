"""The two ways dedup does each step, against each other: exact groups and candidate edges on
the driver (numpy) and in Spark windows; connected components on the driver (scipy) and on
Spark (large-star / small-star), both against a plain union-find; verification by candidate
component and by edge; and the checkpoints that make the Spark path survive a lost executor on
a cluster."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from etl.dedup.checkpoints import CheckpointConfigError, Checkpoints, is_local_master
from etl.dedup.components import components_local, components_spark

pytestmark = pytest.mark.slow


def _union_find(edges: list[tuple[str, str]]) -> dict[str, str]:
    """node -> smallest id of its component: the reference."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {x: find(x) for x in parent}


def _random_graph(seed: int) -> list[tuple[str, str]]:
    """Edges (a, b), a > b, over ids that sort differently as strings and as numbers: chains,
    stars, cliques and random sparse edges, so components have long paths and high degrees."""
    rng = random.Random(seed)
    ids = [f"d{rng.randrange(10 ** rng.randint(1, 4))}-{i}" for i in range(rng.randint(20, 400))]
    edges = set()
    for _ in range(rng.randint(1, 6)):
        members = rng.sample(ids, min(len(ids), rng.randint(2, 40)))
        shape = rng.choice(["chain", "star", "clique"])
        pairs = (
            zip(members, members[1:])
            if shape == "chain"
            else ((members[0], m) for m in members[1:])
            if shape == "star"
            else ((x, y) for i, x in enumerate(members) for y in members[i + 1 :])
        )
        edges.update(pairs)
    edges.update((rng.choice(ids), rng.choice(ids)) for _ in range(rng.randint(0, len(ids))))
    return sorted((max(a, b), min(a, b)) for a, b in edges if a != b)


def test_driver_components_match_union_find_on_random_graphs():
    for seed in range(60):
        edges = _random_graph(seed)
        table = components_local(pa.array([a for a, _ in edges]), pa.array([b for _, b in edges]))
        assert dict(zip(table.column("node").to_pylist(), table.column("component").to_pylist())) == _union_find(
            edges
        ), seed
    assert components_local(pa.array([], pa.string()), pa.array([], pa.string())).num_rows == 0


def test_spark_components_match_driver_components(spark):
    """Large-star / small-star on Spark gives the driver's answer on random graphs (and a long
    chain, its worst case for rounds)."""
    # two random graphs here (the driver's own test runs sixty): each Spark round is a checkpoint
    graphs = [_random_graph(seed) for seed in range(2)] + [[(f"c{i + 1:03d}", f"c{i:03d}") for i in range(60)]]
    with Checkpoints(spark, "", "test") as cp:
        for edges in graphs:
            df = spark.createDataFrame(edges, "a string, b string")
            comps, rounds = components_spark(df, cp)
            table = components_local(pa.array([a for a, _ in edges]), pa.array([b for _, b in edges]))
            assert {r.node: r.component for r in comps.collect()} == dict(
                zip(table.column("node").to_pylist(), table.column("component").to_pylist())
            )
            assert rounds >= 1
        assert cp.checkpoints >= len(graphs)


def test_verification_by_component_equals_verification_by_edge(spark):
    """Both ways give the exact Jaccard of every edge, null for an end without text."""
    from etl.dedup.verify import edge_jaccard, jaccard_by_component
    from filters.dedup import minhash as mh
    from tests.crawl_fixture import P

    rng = random.Random(2)
    texts = {f"t{i}": "".join(rng.sample(P, 3)) for i in range(30)}
    ids = sorted(texts)
    edges = sorted({(max(a, b), min(a, b)) for a, b in (rng.sample(ids, 2) for _ in range(40))} | {("t9", "prior-1")})
    docs = spark.createDataFrame(sorted(texts.items()), "doc_id string, text string")
    a, b = pa.array([x for x, _ in edges]), pa.array([y for _, y in edges])
    by_comp = jaccard_by_component(spark, docs, pa.table({"a": a, "b": b}), components_local(a, b), 5)
    by_edge = edge_jaccard(spark.createDataFrame(edges, "a string, b string"), docs, 5)
    want = {
        (x, y): None if y not in texts else mh.jaccard(*(mh.shingle_hashes(mh.normalise(texts[d]), 5) for d in (x, y)))
        for x, y in edges
    }
    assert {(r.a, r.b): r.jaccard for r in by_comp.collect()} == want
    assert {(r.a, r.b): r.jaccard for r in by_edge.collect()} == want


def _random_buckets(seed: int):
    """Band rows of new and indexed documents: buckets of 1 to 20 rows (all-pairs and star
    buckets, ids that sort differently as strings and as numbers), qualities with ties and nulls."""
    rng = random.Random(seed)
    new = [f"d{rng.randrange(10 ** rng.randint(1, 4))}-{i}" for i in range(rng.randint(30, 120))]
    prior = [f"p{i}" for i in range(rng.randint(0, 15))]
    quality = {d: rng.choice([None, 0.5, round(rng.random(), 2)]) for d in new}
    rows = []
    for band in range(rng.randint(1, 4)):
        for key in range(rng.randint(5, 40)):
            size = rng.choice([1, 1, 2, 3, 8, 9, 20])
            rows += [(band, key - 20, d, False) for d in rng.sample(new + prior, min(size, len(new + prior)))]
    return rows, quality


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("all_pairs_max", [2, 8])
def test_driver_candidate_edges_equal_the_spark_windows(spark, seed, all_pairs_max):
    from etl.dedup import local as dl
    from etl.dedup.stage import candidate_edges

    rows, quality = _random_buckets(seed)
    table = [(b, k, d, quality.get(d), d.startswith("p")) for b, k, d, _ in rows]
    frame = spark.createDataFrame(table, "band int, key bigint, doc_id string, quality_score double, prior boolean")
    want = {
        (r.a, r.b, r.a_node.quality_score, r.a_node.prior, r.b_node.quality_score, r.b_node.prior)
        for r in candidate_edges(frame, all_pairs_max, with_nodes=True).collect()
    }
    new = [r for r in table if not r[4]]
    got = dl.candidate_edges_local(
        pa.table(
            {
                "band": pa.array([r[0] for r in new], pa.int32()),
                "key": [r[1] for r in new],
                "doc_id": [r[2] for r in new],
            }
        ),
        pa.table({"doc_id": list(quality), "quality_score": pa.array(list(quality.values()), pa.float64())}),
        pa.table(
            {
                "band": pa.array([r[0] for r in table if r[4]], pa.int32()),
                "key": pa.array([r[1] for r in table if r[4]], pa.int64()),
                "doc_id": pa.array([r[2] for r in table if r[4]], pa.string()),
            }
        ),
        all_pairs_max,
    )
    assert len(got) == len(want) and set(zip(*[got.column(c).to_pylist() for c in dl.EDGE_COLUMNS])) == want


@pytest.mark.parametrize("seed", range(2))
def test_driver_exact_groups_equal_the_spark_window(spark, seed):
    """Keeper of each exact key: highest quality (nulls last), then smallest doc_id."""
    from etl.dedup import local as dl
    from etl.dedup.stage import _exact

    rng = random.Random(seed)
    rows = [
        (f"d{rng.randrange(1000)}-{i}", f"k{rng.randrange(12)}", rng.choice([None, 0.5, 0.25, rng.random()]))
        for i in range(rng.randint(1, 80))
    ]
    keys = spark.createDataFrame(rows, "doc_id string, exact_key string, quality_score double").withColumn(
        "prior", F.lit(False)
    )
    dups, unique = _exact(keys, None)
    exact, kept = dl.exact_local(
        pa.table(
            {
                "doc_id": [r[0] for r in rows],
                "exact_key": [r[1] for r in rows],
                "quality_score": pa.array([r[2] for r in rows], pa.float64()),
            }
        )
    )
    assert dict(zip(exact.column("doc_id").to_pylist(), exact.column("duplicate_of").to_pylist())) == {
        r.doc_id: r.duplicate_of for r in dups.collect()
    }
    assert sorted(kept.column("doc_id").to_pylist()) == sorted(r.doc_id for r in unique.collect())


class _FakeSpark:
    class sparkContext:  # noqa: N801 - stands in for SparkContext's attribute
        master = "spark://127.0.0.1:7077"


def test_cluster_without_checkpoint_dir_is_refused():
    assert is_local_master("local[2]") and is_local_master("local") and is_local_master("local[*]")
    assert not is_local_master("local-cluster[2,1,1024]") and not is_local_master("yarn")
    with pytest.raises(CheckpointConfigError, match="spark.checkpoint_dir"):
        Checkpoints(_FakeSpark(), "", "dedup")


def test_reliable_checkpoints_are_written_under_the_directory_and_removed(spark, tmp_path, monkeypatch):
    """On a cluster master, checkpoints go to files under spark.checkpoint_dir (the RDD's files
    are there while the block runs) and the run's directory is deleted at its end."""
    import etl.dedup.checkpoints as ck

    monkeypatch.setattr(ck, "is_local_master", lambda master: False)  # the session is local[2]
    df = spark.range(50).withColumnRenamed("id", "x")
    with Checkpoints(spark, str(tmp_path), "dedup") as cp:
        saved = cp.checkpoint(df.where("x % 2 = 0"))
        assert sorted(r.x for r in saved.collect()) == list(range(0, 50, 2))
        run_dir = tmp_path / cp.run_dir.rsplit("/", 1)[1]
        assert run_dir.name.startswith("dedup-") and any(p.name.startswith("part-") for p in run_dir.rglob("*"))
    assert not run_dir.exists() and list(tmp_path.iterdir()) == []


def test_duplicates_output_is_sized_by_every_duplicate_exact_copies_included(spark, tmp_path, monkeypatch):
    """duplicates/ is sized by its rows: exact copies are found before the candidate edges
    (they are never edges), so sizing by the edges counted none of them."""
    import etl.phases
    from etl.dedup.stage import DedupConfig
    from etl.runtime.publish import LocalStorage, Staging

    rng = random.Random(4)
    chars = "天地玄黄宇宙洪荒日月盈昃辰宿列张寒来暑往秋收冬藏闰余成岁律吕调阳"
    texts = ["".join(rng.choice(chars) for _ in range(300)) for _ in range(12)]
    rows = [(f"d{i:02d}", t) for i, t in enumerate(texts)] + [(f"c{i:02d}", t) for i, t in enumerate(texts[:9])]
    asked = []
    monkeypatch.setattr(etl.phases, "sized", lambda df, nbytes, output: asked.append(nbytes) or df)
    for name, cfg in (("driver", DedupConfig()), ("spark", DedupConfig(driver_max_docs=0, driver_max_edges=0))):
        docs = spark.createDataFrame(rows, "doc_id string, text string")
        summary, _ = etl.phases.dedup_phase(docs, cfg, None, Staging(LocalStorage(), str(tmp_path / name)))
        found = spark.read.parquet(str(tmp_path / name / "duplicates"))
        assert found.where("kind = 'exact'").count() == found.count() == 9, name  # nine copies, no near duplicate
        assert asked[-1] == 9 * etl.phases.DUPLICATE_ROW_BYTES, name
