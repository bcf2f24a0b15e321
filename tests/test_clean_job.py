"""The Spark cleaning job on the hand-built fixture: exact ledger, every bad-input class
accounted for, traditional -> simplified, atomic output, identical re-run."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from etl.corpus import CleanConfig
from etl.corpus import clean_corpus as run
from tests import crawl_fixture

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cleaned(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("crawl")
    expected = crawl_fixture.build(root / "in")
    out = root / "out"
    report = run(CleanConfig(), [str(root / "in")], str(out), spark=spark)
    docs = spark.read.parquet(str(out / "documents")).toPandas()
    rejected = spark.read.parquet(str(out / "rejected")).toPandas()
    return {"root": root, "out": out, "expected": expected, "report": report, "docs": docs, "rejected": rejected}


def _key(row) -> str:
    return (
        row["url"]
        if isinstance(row["url"], str) and row["url"].startswith("http://") and "d.cn" not in row["url"]
        else row["doc_id"]
    )


def test_every_record_has_its_expected_fate(cleaned):
    exp = cleaned["expected"]["records"]
    got = {}
    for _, r in cleaned["docs"].iterrows():
        got[_key(r)] = (None, None)
    for _, r in cleaned["rejected"].iterrows():
        got[_key(r)] = (r["stage"], r["reason"])
    keyed = {k: v for k, v in got.items() if k in exp}
    assert keyed == exp
    # Records without a key of their own (malformed/truncated WARC headers, non-JSON lines).
    unkeyed = Counter(v for k, v in got.items() if k not in exp)
    assert unkeyed == Counter(cleaned["expected"]["unkeyed"])


def test_ledger_is_exact(cleaned):
    report, exp = cleaned["report"], cleaned["expected"]
    n_records = len(exp["records"]) + sum(exp["unkeyed"].values())
    n_kept = sum(1 for v in exp["records"].values() if v == (None, None))
    assert report["input"]["records"] == n_records
    assert report["documents"] == n_kept == len(cleaned["docs"])
    assert report["rejected"] == n_records - n_kept == len(cleaned["rejected"])
    assert report["balanced"] is True
    reasons = Counter(v for v in exp["records"].values() if v != (None, None))
    reasons.update(exp["unkeyed"])
    got = Counter(
        {(stage, reason): n for stage, s in report["rejected_by_stage"].items() for reason, n in s["reasons"].items()}
    )
    assert got == reasons
    assert report["input"]["skipped_non_document_records"] == exp["skipped"]
    file_errors = {Path(e["file"]).name: e["reason"] for e in report["input"]["file_errors"]}
    assert file_errors == exp["file_errors"]
    on_disk = json.loads((cleaned["out"] / "report.json").read_text())
    assert on_disk["documents"] == report["documents"]


def test_per_file_ledger_balances(cleaned):
    for path, f in cleaned["report"]["files"].items():
        assert f["records"] == f["documents"] + f["rejected"], path


def test_traditional_comes_out_simplified(cleaned):
    docs = cleaned["docs"]
    for key, simplified in crawl_fixture.SIMPLIFIED.items():
        row = docs[(docs["url"] == key) | (docs["doc_id"] == key)]
        assert len(row) == 1, key
        assert row.iloc[0]["text"].endswith(simplified.split("\n")[-1]), key


def test_noise_is_removed_from_kept_documents(cleaned):
    docs = cleaned["docs"]
    noisy = docs[docs["url"] == "http://a.cn/noisy"].iloc[0]["text"]
    # The <h1> title stays, paragraphs are blank-line separated; menus, symbols, the repeat go.
    assert noisy == "噪声\n\n" + "\n\n".join(crawl_fixture.P[3:6])
    nul = docs[docs["url"] == "http://b.cn/nul"].iloc[0]["text"]
    assert "\x00" not in nul and crawl_fixture.P[0] in nul
    assert "脚本内容" not in "".join(docs["text"])  # <script> never reaches the text
    big = docs[docs["doc_id"] == "j-big"].iloc[0]
    assert big["n_chars"] > 3_000_000
    border = docs[docs["url"] == "http://a.cn/borderline"].iloc[0]
    assert dict(border["sensitive_hits"]) == {"fraud": 1, "gambling": 1}


def test_rejected_rows_keep_text_for_audit(cleaned):
    rej = cleaned["rejected"]
    ad = rej[rej["url"] == "http://a.cn/ad"].iloc[0]
    assert "加我微信" in ad["text"]


def test_output_is_atomic_and_rerun_identical(cleaned, spark):
    out, root = cleaned["out"], cleaned["root"]
    assert not [p for p in root.iterdir() if ".staging-" in p.name]
    with pytest.raises(FileExistsError):
        run(CleanConfig(), [str(root / "in")], str(out), spark=spark)
    again = root / "again"
    report = run(CleanConfig(), [str(root / "in")], str(again), spark=spark)
    for name in ("documents", "rejected"):
        a = spark.read.parquet(str(out / name)).orderBy("doc_id").toPandas()
        b = spark.read.parquet(str(again / name)).orderBy("doc_id").toPandas()
        assert a.drop(columns=["sensitive_hits"], errors="ignore").equals(
            b.drop(columns=["sensitive_hits"], errors="ignore")
        )
    strip = lambda r: {k: v for k, v in r.items() if k not in ("job",)}  # noqa: E731
    assert strip(report) == strip(cleaned["report"])


def test_repeated_input_ids_are_renamed_not_merged(spark, tmp_path):
    """Two files numbered from the same ids (and 1 next to "1"): every record keeps a unique doc_id,
    the later copies say which id they had, and the ledger counts them."""
    src = tmp_path / "in"
    src.mkdir()
    for name, ids, offset in (("a.jsonl", ["x", 1, "y"], 0), ("b.jsonl", ["x", "1", "z"], 3)):
        rows = [
            json.dumps({"id": i, "text": crawl_fixture.doc(k + offset, k + offset + 2)}, ensure_ascii=False)
            for k, i in enumerate(ids)
        ]
        (src / name).write_text("\n".join(rows) + "\n", encoding="utf-8")
    report = run(CleanConfig(), [str(src)], str(tmp_path / "out"), spark=spark)
    docs = spark.read.parquet(str(tmp_path / "out" / "documents")).toPandas()
    assert len(docs) == len(set(docs.doc_id)) == 6 == report["documents"]
    renamed = docs[docs.renamed_from.notna()]
    assert sorted(renamed.renamed_from) == ["1", "x"] and set(renamed.source_file.map(lambda f: Path(f).name)) == {
        "b.jsonl"
    }
    assert all(d.startswith(f"{r}~") for d, r in zip(renamed.doc_id, renamed.renamed_from))
    assert report["input"]["duplicate_ids"]["records_renamed"] == 2
