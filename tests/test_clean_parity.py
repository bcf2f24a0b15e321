"""The Cleaner gives, document for document, what it gave before the cleaning path was made fast
(issue 14: no change in what comes out). The expected outputs in tests/data/clean_parity.jsonl.gz
were computed by the earlier implementation (tests/data/make_clean_parity.py) on a varied sample:
demo-crawl records of every labelled kind, synthetic documents and code-point fuzz."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from filters.config import RulesConfig
from filters.pipeline import Cleaner
from tests.data.make_clean_parity import expected

DATA = Path(__file__).resolve().parent / "data" / "clean_parity.jsonl.gz"


@pytest.fixture(scope="module")
def sample() -> list[dict]:
    with gzip.open(DATA, "rt", encoding="utf-8", errors="surrogatepass") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def cleaner() -> Cleaner:
    return Cleaner(RulesConfig())


def _mismatches(got: list[dict], sample: list[dict]) -> list[str]:
    out = []
    for i, (g, row) in enumerate(zip(got, sample)):
        diff = {k: (v, g[k]) for k, v in row["expected"].items() if g[k] != v}
        if diff:
            out.append(f"#{i} {row['origin']}: (expected, got) {diff}")
    return out


def test_sample_covers_every_outcome(sample):
    """Guards the sample itself: each reason and each transform occurs in it."""
    exp = [r["expected"] for r in sample]
    reasons = {e["reason"] for e in exp}
    assert reasons == {None, "advertisement", "low_han_ratio", "sensitive_words", "too_short", "title_only"}
    for field in ("symbols_removed", "nav_lines_removed", "dup_paragraphs_removed", "converted", "sensitive_hits"):
        assert sum(bool(e[field]) for e in exp) >= 100, field


def test_cleaner_matches_the_pinned_outputs(sample, cleaner):
    got = [expected(cleaner(row["text"], row["title"])) for row in sample]
    bad = _mismatches(got, sample)
    assert not bad, f"{len(bad)} of {len(sample)} documents differ:\n" + "\n".join(bad[:20])
