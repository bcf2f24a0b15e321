"""The demo crawl generator: byte-identical output per seed, every injected class present and
counted, and every file readable exactly up to the damage it was built with."""

from __future__ import annotations

import gzip
import json
import zlib
from collections import Counter
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from demo.crawl import AD_KEYWORDS_FILE, CHARSETS, KINDS, SENSITIVE_DIR, TermMatcher, build_demo_crawl, read_word_lists

SMALL = dict(seed=3, min_mb=0, max_docs=250, big_line_mb=0.25)
WARC_ONLY = {"binary_garbage", "empty_body", "nul_bytes", "malformed_warc_header", "truncated_record"}
JSONL_ONLY = {"invalid_json", "missing_text", "empty_text", "lone_surrogate", "nul_chars", "big_line"}


@pytest.fixture(scope="module")
def crawl(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("demo") / "crawl"
    return out, build_demo_crawl(out, **SMALL)


@pytest.fixture(scope="module")
def labels(crawl) -> list[dict[str, str]]:
    lines = (crawl[0] / "labels.tsv").read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"))) for line in lines[1:]]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_gives_identical_bytes(crawl, tmp_path):
    build_demo_crawl(tmp_path / "again", **SMALL)
    first, second = _tree(crawl[0]), _tree(tmp_path / "again")
    assert sorted(first) == sorted(second)
    assert [name for name in first if first[name] != second[name]] == []


def test_other_seed_gives_other_crawl(crawl, tmp_path):
    other = build_demo_crawl(tmp_path / "other", **{**SMALL, "seed": 4})
    assert {f["sha256"] for f in other["files"]}.isdisjoint(f["sha256"] for f in crawl[1]["files"])


def test_manifest_counts_every_class(crawl, labels):
    counts = crawl[1]["counts"]
    for kind, (group, _) in KINDS.items():
        per_format = counts[group][kind]
        assert per_format["total"] > 0, kind
        if kind not in WARC_ONLY | JSONL_ONLY:  # content classes are mixed across all formats
            assert all(per_format[fmt] > 0 for fmt in ("warc", "wet", "jsonl")), (kind, per_format)
    assert all(counts["charset"][cs] > 0 for cs in CHARSETS)
    assert counts["charset"]["big5_labelled_gbk"] == 1 and counts["charset"]["binary_garbage"] == 1
    # the counts are the labels: one kind per record, one charset per WARC response
    by_format = Counter((row["format"], row["kind"]) for row in labels)
    for fmt in ("warc", "wet", "jsonl"):
        assert counts["documents"][fmt] == sum(n for (f, _), n in by_format.items() if f == fmt)
        for kind, (group, _) in KINDS.items():
            assert counts[group][kind][fmt] == by_format[(fmt, kind)], (fmt, kind)
    assert sum(counts["charset"].values()) == counts["documents"]["warc"]
    clean = sum(counts["content"]["clean"][f] for f in ("warc", "wet", "jsonl"))
    assert clean / counts["documents"]["total"] >= 0.6


def test_manifest_files_match_disk(crawl):
    root, manifest = crawl
    for entry in manifest["files"]:
        assert (root / entry["path"]).stat().st_size == entry["bytes"]
    names = {e["path"] for e in manifest["files"]}
    assert any(n.endswith(".warc") for n in names) and any(n.endswith(".warc.gz") for n in names)
    assert any(n.endswith(".jsonl") for n in names) and any(n.endswith(".jsonl.gz") for n in names)


def _members(raw: bytes) -> list[tuple[bytes, bool]]:
    """Split concatenated gzip members: (decompressed bytes, member complete?)."""
    out = []
    while raw:
        d = zlib.decompressobj(zlib.MAX_WBITS | 16)
        data = d.decompress(raw)
        out.append((data, d.eof))
        raw = d.unused_data if d.eof else b""
    return out


def _read_warc(path: Path) -> tuple[list, Exception | None]:
    records, error = [], None
    try:
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                records.append((rec.rec_type, rec.rec_headers, rec.http_headers, rec.content_stream().read()))
    except Exception as exc:  # noqa: BLE001 - the damaged files are meant to stop warcio
        error = exc
    return records, error


def _rows(labels, path: str) -> list[dict[str, str]]:
    return [row for row in labels if row["file"] == path]


def test_warc_files_parse_up_to_their_damage(crawl, labels):
    root, manifest = crawl
    warcs = sorted(e["path"] for e in manifest["files"] if e["path"].startswith("warc/"))
    for path in warcs:
        rows, raw = _rows(labels, path), (root / path).read_bytes()
        kinds = [row["kind"] for row in rows]
        records, error = _read_warc(root / path)
        responses = [r for r in records if r[0] == "response"]
        if path == warcs[0]:  # plain: a WARC-Target-URI line without a colon stops warcio ...
            assert path.endswith(".warc") and raw.count(b"\r\nWARC-Target-URI http") == 1
            assert error is not None and len(responses) == kinds.index("malformed_warc_header")
            assert raw.count(b"WARC/1.0\r\n") == 1 + 2 * len(rows)  # ... valid records follow
        elif "malformed_warc_header" in kinds:  # Content-Length: abc inside one gzip member
            members = _members(raw)
            assert all(done for _, done in members) and len(members) == 1 + 2 * len(rows)
            assert sum(b"Content-Length: abc\r\n" in m for m, _ in members) == 1
            assert error is not None
            assert len(responses) <= kinds.index("malformed_warc_header") + 1
        elif path == warcs[-1]:  # last gzip member cut in half: warcio reads a short record
            members = _members(raw)
            assert [done for _, done in members][-2:] == [True, False]
            with pytest.raises(EOFError):
                gzip.decompress(raw)
            assert kinds[-1] == "truncated_record" and len(responses) == len(rows)
            declared = int(responses[-1][1].get_header("Content-Length"))
            assert len(responses[-1][3]) < declared
        else:
            assert error is None and len(responses) == len(rows)
        ids = [r[1].get_header("WARC-Record-ID")[len("<urn:uuid:") : -1] for r in responses]
        assert ids == [row["doc_id"] for row in rows][: len(ids)]


def test_warc_charsets_are_what_they_claim(crawl, labels):
    root, manifest = crawl
    charset_of = {row["doc_id"]: row["charset"] for row in labels if row["format"] == "warc"}
    seen = Counter()
    for entry in manifest["files"]:
        if entry["path"].startswith("warc/"):
            for rec_type, rec_headers, http, body in _read_warc(root / entry["path"])[0]:
                doc_id = rec_headers.get_header("WARC-Record-ID")[len("<urn:uuid:") : -1]
                if rec_type != "response" or not body:
                    continue
                cs = CHARSETS[charset_of[doc_id]]
                assert http.get_header("Content-Type").lower().replace(";charset=", "; charset=") == cs.content_type
                if cs.codec is None:
                    with pytest.raises(UnicodeDecodeError):
                        body.decode("utf-8")
                    continue
                page = body.decode(cs.codec)  # strict: the bytes really are in that codec
                assert (cs.meta in page) if cs.meta else ("charset" not in page)
                seen[charset_of[doc_id]] += 1
    assert len(seen) >= 8  # (records after a damaged one are out of warcio's reach)


def _texts(crawl, labels) -> dict[str, tuple[str, str]]:
    """doc_id -> (kind, text) from the WET and (parseable) JSONL records."""
    root, manifest = crawl
    kind_of = {row["doc_id"]: row["kind"] for row in labels}
    texts = {}
    for entry in manifest["files"]:
        path = root / entry["path"]
        if entry["path"].startswith("wet/"):
            for rec in ArchiveIterator(path.open("rb")):
                if rec.rec_type == "conversion":
                    doc_id = rec.rec_headers.get_header("WARC-Record-ID")[len("<urn:uuid:") : -1]
                    texts[doc_id] = (kind_of[doc_id], rec.content_stream().read().decode("utf-8"))
        elif entry["path"].startswith("jsonl/"):
            raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
            for line in raw.splitlines():
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                texts[obj["id"]] = (kind_of[obj["id"]], obj.get("text"))
    return texts


def test_injected_word_counts(crawl, labels):
    lists = read_word_lists(AD_KEYWORDS_FILE, SENSITIVE_DIR)
    ads, sensitive = TermMatcher(lists.ad_keywords), TermMatcher(lists.sensitive)
    checked = Counter()
    for kind, text in _texts(crawl, labels).values():
        if kind == "advertisement":
            assert len(ads.hits(text)) >= 3
        elif kind == "sensitive_many":
            assert len(sensitive.hits(text)) >= 4
        elif kind == "sensitive_borderline":
            assert 1 <= len(sensitive.hits(text)) <= 2
        elif kind == "short":
            assert sum(not c.isspace() for c in text) < 150
        elif kind == "title_only":
            assert "\n" not in text
        checked[kind] += 1
    assert all(checked[k] for k in ("advertisement", "sensitive_many", "sensitive_borderline"))


def test_jsonl_damage(crawl, labels):
    root = crawl[0]
    lines = (root / "jsonl/part-00000.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) - 1 == len(_rows(labels, "jsonl/part-00000.jsonl"))
    bad = [line for line in lines[:-1] if not _is_json(line)]
    assert len(bad) == 1
    assert sum(b'"\\ud800"' in line or b"\\ud800" in line for line in lines) == 1
    assert sum(b"\\u0000" in line for line in lines) == 2
    big = (root / "jsonl/part-big.jsonl").read_bytes()
    assert big.count(b"\n") == 1 and len(big) >= SMALL["big_line_mb"] * (1 << 20)
    assert json.loads(big)["text"]


def _is_json(line: bytes) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True
