"""docs/reasons.md names every reason the code can write (issue 35: a newcomer goes from the
``reason`` column to the rule in one step). The reasons are collected from the code, not listed
here, so a new rule without a row fails."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "reasons.md"


def _code_reasons() -> set[str]:
    from etl.classify import crawl_model, stage
    from etl.decontaminate import stage as decontaminate
    from etl.quality import crawl_repeat
    from etl.read import decode, rows, streams, warc, warc_records
    from filters.pangu import rules
    from filters.quality import safety
    from filters.quality.screen import FLUENCY, NOT_RULES
    from filters.quality.signals import SIGNALS

    out = {
        decode.UNDECODABLE, decode.MOJIBAKE, rows.INVALID_JSON, rows.MISSING_TEXT, streams.TRUNCATED,
        streams.CORRUPT_GZIP, warc.MALFORMED_HEADER, warc.TOO_LARGE, warc_records.EMPTY,
        warc_records.NON_HTML, warc_records.HTTP_STATUS, warc_records.MALFORMED_HTTP,
        warc_records.BAD_CONTENT_ENCODING, warc_records.READER_EXCEPTION,
        rules.TITLE_ONLY, rules.TOO_SHORT, rules.LOW_HAN_RATIO, rules.ADVERTISEMENT, rules.SENSITIVE_WORDS,
        crawl_repeat.REASON, stage.SPAM, stage.LOW_QUALITY, crawl_model.CRAWL_SPAM, decontaminate.CONTAMINATED,
        f"{FLUENCY}_high",
        rows.EMPTY_FILE, rows.NOT_GZIP, rows.NOT_TEXT, rows.CORRUPT_PARQUET, rows.NO_TEXT_COLUMN,
        rows.UNREADABLE, rows.FILE_TOO_LARGE, rows.UNSUPPORTED_FORMAT,
    }  # fmt: skip
    out |= {f"{s.name}_{s.bad_when}" for s in SIGNALS if s.name not in NOT_RULES}
    out |= {safety.REASON_PREFIX + c for c in safety.CATEGORIES}
    return out


def test_every_reason_has_a_row():
    text = DOC.read_text(encoding="utf-8")
    named = set(re.findall(r"`([a-z0-9_]+)`", text))
    # top2 … top4 and dup5 … dup10 are written as ranges
    for lo, hi, form in ((2, 4, "top{}_word_cov_high"), (5, 10, "dup{}_word_cov_high")):
        if form.format(lo) in named and form.format(hi) in named:
            named |= {form.format(n) for n in range(lo, hi + 1)}
    missing = sorted(_code_reasons() - named)
    assert not missing, f"docs/reasons.md has no row for {missing}"


def test_the_named_modules_exist():
    root = DOC.parents[1]
    paths = set(re.findall(r"`((?:etl|filters|base|jobs)/[a-z_/]+\.py)`", DOC.read_text(encoding="utf-8")))
    assert paths and all((root / p).is_file() for p in paths), [p for p in paths if not (root / p).is_file()]
