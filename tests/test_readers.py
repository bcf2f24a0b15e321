"""Charset handling, WARC framing and JSONL parsing, without Spark."""

from __future__ import annotations

import gzip
import json

import opencc
import pytest

from etl.read import decode, warc
from etl.read.records import ReaderConfig, derived_doc_id, parse_file
from tests.crawl_fixture import P, html, response, warc_record

LIMITS = ReaderConfig().limits
TEXT = P[0] + P[1]
TRAD = opencc.OpenCC("s2tw").convert(TEXT)


@pytest.mark.parametrize("label", ["gb2312", "GBK", "x-gbk", "cp936", "GB18030"])
def test_every_gb_label_decodes_as_gb18030(label):
    assert decode.canonical_charset(label) == "gb18030"
    body = (TEXT + "朱镕基").encode("gb18030")  # 镕: GBK, not GB2312
    d = decode.decode_bytes(body, [label], LIMITS)
    assert d.text == TEXT + "朱镕基" and d.charset == "gb18030"


def test_big5_and_meta_and_detection():
    assert decode.decode_bytes(TRAD.encode("big5"), ["big5"], LIMITS).text == TRAD
    page = f'<meta http-equiv="Content-Type" content="text/html; charset=gb2312"><p>{TEXT}</p>'.encode("gbk")
    assert decode.meta_charset(page) == "gb2312"
    assert decode.decode_bytes(TEXT.encode("gbk") * 3, [None], LIMITS).charset == "gb18030"  # detected


def test_mislabelled_big5_is_recovered_not_kept_garbled():
    body = (TRAD * 2).encode("big5")
    as_gbk = body.decode("gb18030", errors="replace")
    assert decode.quality_problem(as_gbk, LIMITS) == decode.MOJIBAKE
    d = decode.decode_bytes(body, ["gbk"], LIMITS)
    assert d.text == TRAD * 2 and d.charset == "big5hkscs"


def test_garbage_and_latin1_mojibake_are_rejected():
    import random

    assert decode.decode_bytes(random.Random(1).randbytes(4000), ["utf-8"], LIMITS).reason == decode.UNDECODABLE
    replaced = TEXT.encode("gbk").decode("utf-8", errors="replace")
    assert decode.quality_problem(replaced, LIMITS) == decode.UNDECODABLE
    latin = TEXT.encode("utf-8").decode("latin-1")
    assert decode.quality_problem(latin, LIMITS) == decode.MOJIBAKE
    assert decode.quality_problem(TEXT, LIMITS) is None and decode.quality_problem(TRAD, LIMITS) is None


def test_rare_han_share_is_counted_per_character():
    """The per-code-point table gives the rare-ideograph verdict of a set test per character,
    at the threshold's edge, on every Han range, with astral ideographs and a lone surrogate."""
    import random

    from filters.text.chars import HAN_RANGES

    common = sorted(decode.common_han())
    rare = [chr(c) for lo, hi in HAN_RANGES for c in range(lo, hi + 1, 97) if chr(c) not in decode.common_han()]
    rng = random.Random(14)
    limits = decode.QualityLimits(max_replacement_ratio=1.0, max_rare_han_ratio=0.25, min_han_for_rare_check=8)
    seen = set()
    for _ in range(3000):
        n_common, n_rare = rng.randint(0, 40), rng.randint(0, 14)
        chars = rng.choices(common, k=n_common) + rng.choices(rare, k=n_rare) + rng.choices("ab 1,。\ud800", k=5)
        rng.shuffle(chars)
        text = "".join(chars)
        han = n_common + n_rare
        expected = decode.MOJIBAKE if han >= 8 and n_rare > 0.25 * han else None
        assert decode.quality_problem(text, limits) == expected, (n_common, n_rare, text)
        seen.add(expected)
    assert seen == {None, decode.MOJIBAKE}


def test_html_extraction_drops_scripts_styles_and_boilerplate():
    page = html("标题", TEXT).replace("<body>", "<body><nav><a href='/'>首页</a><a href='/n'>新闻</a></nav>")
    title, text = decode.html_to_text(page, main_content=True)
    assert title == "标题" and P[0] in text
    assert "脚本内容" not in text and "color:red" not in text and "新闻" not in text


def _rows(name, content):
    rows = list(parse_file(name, content, ReaderConfig()))
    return [r for r in rows if r["kind"] == "record"], json.loads(rows[-1]["file_stats"])


def test_malformed_header_resyncs_to_next_record():
    good = response("http://x.cn/1", html("甲", TEXT).encode())
    bad = b"WARC/1.0\r\nWARC-Type: response\r\nbroken header line\r\nContent-Length: 5\r\n\r\nabcde\r\n\r\n"
    recs, stats = _rows("f.warc", good + bad + good.replace(b"x.cn/1", b"x.cn/2"))
    assert [(r["url"], r["reason"]) for r in recs] == [
        ("http://x.cn/1", None),
        (None, warc.MALFORMED_HEADER),
        ("http://x.cn/2", None),
    ]
    assert stats["records"] == 3


def test_truncated_gzip_member_keeps_the_records_before_it():
    members = [gzip.compress(response(f"http://x.cn/{i}", html("甲", TEXT).encode()), mtime=0) for i in range(3)]
    cut = b"".join(members)[:-40]
    recs, stats = _rows("f.warc.gz", cut)
    assert [r["reason"] for r in recs] == [None, None, warc.TRUNCATED]
    assert stats["records"] == 3


def test_unreadable_file_is_a_file_level_error():
    recs, stats = _rows("f.warc.gz", b"\x1f\x8b\x08\x00" + b"\xff" * 64)
    assert recs == [] and stats["errors"][0]["reason"] == warc.CORRUPT_GZIP
    recs, stats = _rows("f.warc", b"random text that is no WARC at all\n" * 3)
    assert recs == [] and stats["errors"][0]["reason"] == warc.MALFORMED_HEADER


def test_nul_bytes_empty_records_and_non_documents():
    nul = response("http://x.cn/n", html("甲", TEXT.replace("。", "。\x00")).encode())
    empty = response("http://x.cn/e", b"")
    info = warc_record("warcinfo", b"x: y\r\n", rid="i")
    recs, stats = _rows("f.warc", info + nul + empty)
    assert "\x00" not in recs[0]["text"] and recs[0]["reason"] is None
    assert recs[1]["reason"] == "empty_record"
    assert stats["skipped"] == {"warcinfo": 1}


def test_jsonl_lines_surrogates_and_ids():
    lines = ['{"id": "a", "text": "' + TEXT + '\\ud800"}', '{"text": "' + TEXT + '"}', "[]", '{"id": 7, "text": 3}']
    content = ("\n".join(lines) + "\n").encode()
    recs, stats = _rows("p.jsonl", content)
    assert recs[0]["doc_id"] == "a" and recs[0]["text"] == TEXT  # lone surrogate removed
    assert recs[1]["doc_id"] == derived_doc_id("p.jsonl", len(lines[0].encode()) + 1)  # from file + byte offset
    assert recs[2]["reason"] == "invalid_json" and recs[3]["reason"] == "missing_text" and recs[3]["doc_id"] == "7"
    assert stats["records"] == 4


def test_ten_megabyte_line_is_parsed():
    big = TEXT * (10 * 1024 * 1024 // len(TEXT.encode()))
    recs, _ = _rows("big.jsonl", json.dumps({"id": "big", "text": big}, ensure_ascii=False).encode())
    assert recs[0]["reason"] is None and len(recs[0]["text"]) == len(big)
