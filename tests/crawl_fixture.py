"""A small hand-built crawl in which every record's fate is known in advance.

``build(dir)`` writes WARC (gzip and plain), WET, JSONL (plain and gzip), Parquet and four
unreadable files (corrupt gzip, unknown format, empty, not gzip), and returns ``expected``: record key (URL or
JSONL/Parquet id) ->
(stage, reason) with ``(None, None)`` for a kept document, plus the file-level errors.
"""

from __future__ import annotations

import functools
import gzip
import json
import random
from pathlib import Path

import opencc
import pyarrow as pa
import pyarrow.parquet as pq

P = [
    "春节前夕，北方多个城市迎来了今年入冬以来最大的一场降雪。气象部门提醒市民注意出行安全，交通部门也及时组织人员清扫主干道路上的积雪，保障公交线路正常运行。",
    "这座小镇以传统手工艺闻名，家家户户都会制作竹编和陶器。近年来，当地政府鼓励年轻人返乡创业，开设了手工艺培训班，吸引了许多外地游客前来参观学习。",
    "研究人员在实验室中培育出了一种耐旱的新品种水稻，这种水稻在缺水条件下仍能保持较高的产量。专家认为，这项成果对于干旱地区的粮食生产具有重要意义。",
    "图书馆近日推出了夜间阅读服务，每周五和周六开放至晚上十点。读者可以在安静的环境中阅读各类书籍，还能参加由志愿者组织的读书分享会，许多上班族表示欢迎。",
    "山区的孩子们第一次在新建的操场上举行了运动会。跑步、跳远、拔河等项目吸引了全校师生参与，操场上不时传来阵阵欢笑声。校长说，学校还计划增加音乐课程。",
    "随着气温回升，湖边的柳树抽出了嫩绿的新芽，成群的候鸟也陆续飞回了湿地。保护区的工作人员每天巡查记录鸟类的数量和种类，并向游客宣传保护野生动物的知识。",
    "这家老字号面馆已经经营了六十多年，每天清晨店门口都排起长队。店主坚持用骨头熬制高汤，面条全部手工制作，许多老顾客从小吃到大，说这是记忆中的味道。",
    "博物馆新开设的青铜器展厅展出了两百多件珍贵文物，其中不少是首次与公众见面。讲解员通过生动的故事介绍文物背后的历史，让观众对古代文明有了更深的了解。",
]
ENGLISH = (
    "The committee met on Tuesday to review the annual budget and agreed to increase funding for "
    "public libraries, parks and community centres across the region over the next three years. "
) * 3
KEPT, READ, CLEAN = (None, None), "read", "clean"


def doc(i: int, j: int) -> str:
    """Three distinct paragraphs (~220 characters), so the 150-character rule keeps it: P[i], and
    two People's Daily paragraphs of its own for each (i, j). A page made only of paragraphs that
    five other pages also hold is a template page (``filters.quality.crawl_repeat``), as real crawls'
    page mosaics are; the fixture's pages are meant to be ordinary documents."""
    i, j = i % len(P), j % len(P)
    own = _own_paragraphs()
    n = 2 * (i * len(P) + j)
    return P[i] + "\n" + own[n] + "\n" + own[n + 1]


COPIES = "copies.jsonl"


def write_copies(root: Path) -> Path:
    """``root/copies.jsonl``: an exact and a near copy of two kept pages, for a test whose subset
    of the crawl must hold duplicates (the fixture's own pages are distinct documents)."""
    copies = [{"id": "copy-exact", "text": doc(0, 1)}, {"id": "copy-near", "text": doc(1, 2) + "\n（完）"}]
    path = root / COPIES
    path.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in copies), "utf-8")
    return path


@functools.lru_cache(maxsize=None)
def _own_paragraphs() -> list[str]:
    """2 x 8 x 8 distinct news paragraphs of 60-120 characters, in corpus order: Han and Chinese
    punctuation only, encodable as GBK and (in Taiwan's script) as Big5 like P, and holding no
    term of the project's word lists (the fixture's rejections are planted, never incidental)."""
    from demo.sources import news_pages

    root = Path(__file__).resolve().parents[1]
    terms = {
        t.strip()
        for f in [*root.glob("sensitive_words/**/*.txt"), root / "filters/resources/ad_keywords.txt"]
        for t in f.read_text(encoding="utf-8").splitlines()
        if t.strip() and not t.startswith("#")
    }
    s2tw = opencc.OpenCC("s2tw")

    def usable(p: str) -> bool:
        if not 60 <= len(p) <= 120 or not all("\u4e00" <= c <= "\u9fff" or c in "，。、；：“”" for c in p):
            return False
        try:
            p.encode("gbk"), s2tw.convert(p).encode("big5")
        except UnicodeEncodeError:
            return False
        return not any(t in p for t in terms)

    paras = [p for _, body, _ in news_pages() for p in body if usable(p)]
    return list(dict.fromkeys(paras))[: 2 * len(P) * len(P)]


def html(title: str, body: str, meta: str = "") -> str:
    paras = "".join(f"<p>{line}</p>" for line in body.split("\n"))
    return (
        f"<html><head>{meta}<title>{title}</title><style>p{{color:red}}</style>"
        f"<script>var x = '脚本内容不应出现';</script></head><body>"
        f"<article><h1>{title}</h1>{paras}</article></body></html>"
    )


def warc_record(wtype: str, payload: bytes, uri: str = "", rid: str = "") -> bytes:
    head = [
        f"WARC-Type: {wtype}",
        f"WARC-Record-ID: <urn:uuid:{rid or uri or wtype}>",
        "WARC-Date: 2026-11-01T00:00:00Z",
    ]
    if uri:
        head.append(f"WARC-Target-URI: {uri}")
    head.append(f"Content-Length: {len(payload)}")
    return ("WARC/1.0\r\n" + "\r\n".join(head) + "\r\n\r\n").encode() + payload + b"\r\n\r\n"


def response(uri: str, body: bytes, content_type: str = "text/html", status: str = "200 OK") -> bytes:
    http = f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    return warc_record("response", http + body, uri)


def build(root: Path) -> dict:
    root.mkdir(parents=True, exist_ok=True)
    expected: dict[str, tuple] = {}
    truncated = _warc_gz(root, expected)
    malformed_headers = _plain_warc_and_wet(root, expected)
    invalid_json = _json_and_parquet(root, expected)
    (root / "broken.warc.gz").write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 6 + b"this is not deflate data" * 10)
    (root / "notes.txt").write_text("not an input format\n")
    # Whole-file failures (issue 16): each is one file error, never records, never a failed run.
    (root / "empty.jsonl").write_bytes(b"")
    (root / "fake.jsonl.gz").write_bytes(random.Random(8).randbytes(2000))
    return {
        "records": expected,
        "unkeyed": {
            ("read", "malformed_warc_header"): malformed_headers,
            ("read", "invalid_json"): invalid_json,
            ("read", "truncated_record"): truncated,
        },
        "file_errors": {
            "broken.warc.gz": "corrupt_gzip",
            "notes.txt": "unsupported_format",
            "empty.jsonl": "empty_file",
            "fake.jsonl.gz": "not_gzip",
        },
        "skipped": {"warcinfo": 2, "request": 1},
    }


def _warc_gz(root: Path, expected: dict[str, tuple]) -> int:
    """crawl-0.warc.gz: encodings, read and clean rejections, a truncated last member (returned: 1)."""
    s2tw = opencc.OpenCC("s2tw")  # Big5 needs Taiwan forms (著, 為)
    gz_records: list[bytes] = [
        warc_record("warcinfo", b"software: fixture\r\n", rid="info-1"),
        warc_record("request", b"GET / HTTP/1.1\r\n\r\n", rid="req-1"),
    ]

    def add(uri: str, record: bytes, outcome: tuple) -> None:
        gz_records.append(record)
        expected[uri] = outcome

    add(
        "http://a.cn/utf8",
        response("http://a.cn/utf8", html("降雪", doc(0, 1)).encode(), "text/html; charset=utf-8"),
        KEPT,
    )
    add(
        "http://a.cn/gbk",
        response("http://a.cn/gbk", html("小镇", doc(1, 2)).encode("gbk"), "text/html; charset=gbk"),
        KEPT,
    )
    # 镕 is in GBK but not GB2312: the gb2312 label must be decoded as GB18030.
    add(
        "http://a.cn/gb2312",
        response("http://a.cn/gb2312", html("水稻", doc(2, 3) + "朱镕基").encode("gbk"), "text/html; charset=gb2312"),
        KEPT,
    )
    add(
        "http://a.cn/meta",
        response("http://a.cn/meta", html("阅读", doc(3, 4), '<meta charset="gbk">').encode("gbk")),
        KEPT,
    )
    add(
        "http://a.cn/detect",
        response("http://a.cn/detect", html("操场", doc(4, 5) + doc(6, 7)).encode("gb18030")),
        KEPT,
    )
    add(
        "http://a.cn/big5",
        response("http://a.cn/big5", s2tw.convert(html("湿地", doc(7, 4))).encode("big5"), "text/html; charset=big5"),
        KEPT,
    )
    # Big5 bytes under a GBK label: the label decodes to mojibake, so detection recovers the page.
    add(
        "http://a.cn/mislabelled",
        response(
            "http://a.cn/mislabelled", s2tw.convert(html("面馆", doc(6, 3))).encode("big5"), "text/html; charset=gbk"
        ),
        KEPT,
    )
    garbage = random.Random(7).randbytes(3000)
    add(
        "http://a.cn/garbage",
        response("http://a.cn/garbage", garbage, "text/html; charset=utf-8"),
        (READ, "undecodable"),
    )
    mojibake = html("乱码", doc(7, 0)).encode("utf-8").decode("latin-1").encode("utf-8")
    add("http://a.cn/latin1", response("http://a.cn/latin1", mojibake, "text/html; charset=utf-8"), (READ, "mojibake"))
    add("http://a.cn/empty", response("http://a.cn/empty", b""), (READ, "empty_record"))
    add(
        "http://a.cn/404",
        response("http://a.cn/404", b"<html>not found</html>", status="404 Not Found"),
        (READ, "http_status"),
    )
    add(
        "http://a.cn/png",
        response("http://a.cn/png", b"\x89PNG\r\n\x1a\n", "image/png"),
        (READ, "unsupported_content_type"),
    )
    add(
        "http://a.cn/english",
        response("http://a.cn/english", html("Budget", ENGLISH).encode()),
        (CLEAN, "low_han_ratio"),
    )
    add(
        "http://a.cn/title",
        response("http://a.cn/title", html("一个只有标题的页面", "").encode()),
        (CLEAN, "title_only"),
    )
    add("http://a.cn/short", response("http://a.cn/short", html("短", P[0][:60]).encode()), (CLEAN, "too_short"))
    ad = doc(0, 2) + "\n欢迎咨询，加我微信领取资料，扫码关注公众号。"
    add("http://a.cn/ad", response("http://a.cn/ad", html("广告", ad).encode()), (CLEAN, "advertisement"))
    sens = doc(1, 3) + "\n据报道，有人利用网络赌场、代开发票、贩卖冰毒和开设色情网站等手段非法获利。"
    add(
        "http://a.cn/sensitive",
        response("http://a.cn/sensitive", html("敏感", sens).encode()),
        (CLEAN, "sensitive_words"),
    )
    border = doc(2, 4) + "\n警方破获网络赌场和代开发票案件。"
    add("http://a.cn/borderline", response("http://a.cn/borderline", html("案件", border).encode()), KEPT)
    noisy = (
        "首页 | 新闻 | 体育 | 娱乐 | 财经\n当前位置：首页 > 新闻中心 > 正文\n★★★★★\ue000\ue001\u200b\n"
        + P[3]
        + "\n"
        + P[3]
        + "\n"
        + P[4]
        + "\n"
        + P[5]
        + "\n上一页 下一页 返回顶部"
    )
    add("http://a.cn/noisy", response("http://a.cn/noisy", html("噪声", noisy).encode()), KEPT)
    gz_records.append(response("http://a.cn/truncated", html("截断", doc(5, 7)).encode()))
    members = [gzip.compress(r, mtime=0) for r in gz_records]
    members[-1] = members[-1][: len(members[-1]) // 2]  # the last member is cut mid-record: its header
    truncated = 1  # is lost too, so it is keyed by offset, not URL
    (root / "crawl-0.warc.gz").write_bytes(b"".join(members))
    return truncated


def _plain_warc_and_wet(root: Path, expected: dict[str, tuple]) -> int:
    """crawl-1.warc (one malformed header, returned) and crawl-2.warc.wet.gz."""
    s2t = opencc.OpenCC("s2t")
    plain = [
        response("http://b.cn/one", html("博物馆", doc(7, 1)).encode()),
        b"WARC/1.0\r\nWARC-Type: response\r\nContent-Length: abc\r\n\r\nHTTP/1.1 200 OK\r\n\r\n<p>lost</p>\r\n\r\n",
        response("http://b.cn/nul", html("空字符", doc(0, 3).replace("。", "。\x00")).encode()),
    ]
    expected.update({"http://b.cn/one": KEPT, "http://b.cn/nul": KEPT})
    (root / "crawl-1.warc").write_bytes(b"".join(plain))
    malformed_headers = 1  # the middle record above: rejected with no URL, keyed by file offset

    wet = [
        warc_record("warcinfo", b"software: fixture\r\n", rid="info-2"),
        warc_record("conversion", s2t.convert(doc(4, 6)).encode(), "http://c.cn/trad"),
        warc_record("conversion", doc(5, 0).encode(), "http://c.cn/wet"),
    ]
    expected.update({"http://c.cn/trad": KEPT, "http://c.cn/wet": KEPT})
    (root / "crawl-2.warc.wet.gz").write_bytes(b"".join(gzip.compress(r, mtime=0) for r in wet))
    return malformed_headers


def _json_and_parquet(root: Path, expected: dict[str, tuple]) -> int:
    """part-0.jsonl (a ~10 MB line, bad lines: their count returned), part-1.jsonl.gz, part-2.parquet."""
    s2t = opencc.OpenCC("s2t")
    big = "这是一个很长的单行文档。" * (10 * 1024 * 1024 // 36)  # ~10 MB of UTF-8 on one line
    lines = [
        json.dumps({"id": "j-ok", "text": doc(6, 2), "source": "news"}, ensure_ascii=False),
        "{not json",
        json.dumps({"id": "j-notext", "title": "无正文"}),
        json.dumps({"id": "j-empty", "text": ""}),
        json.dumps({"id": "j-surrogate", "text": doc(7, 3) + "\ud800\u0000"}),
        json.dumps({"id": "j-big", "text": big}, ensure_ascii=False),
        json.dumps([1, 2, 3]),
    ]
    (root / "part-0.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    expected.update(
        {
            "j-ok": KEPT,
            "j-notext": (READ, "missing_text"),
            "j-empty": (READ, "empty_record"),
            "j-surrogate": KEPT,
            "j-big": KEPT,
        }
    )
    invalid_json = 2  # "{not json" and the array: keyed by offset

    gz_lines = [
        json.dumps({"id": "g-trad", "text": s2t.convert(doc(1, 5))}, ensure_ascii=False),
        json.dumps({"id": "g-ok", "text": doc(3, 6)}, ensure_ascii=False),
    ]
    (root / "part-1.jsonl.gz").write_bytes(gzip.compress(("\n".join(gz_lines) + "\n").encode(), mtime=0))
    expected.update({"g-trad": KEPT, "g-ok": KEPT})

    table = pa.table(
        {
            "id": ["p-ok", "p-null", "p-short"],
            "text": [doc(2, 7), None, "这是一段很短的文本。"],
            "url": ["http://d.cn/1", None, None],
        }
    )
    pq.write_table(table, root / "part-2.parquet")
    expected.update({"p-ok": KEPT, "p-null": (READ, "missing_text"), "p-short": (CLEAN, "too_short")})
    return invalid_json


SIMPLIFIED = {
    "http://a.cn/big5": doc(7, 4),
    "http://a.cn/mislabelled": doc(6, 3),
    "http://c.cn/trad": doc(4, 6),
    "g-trad": doc(1, 5),
}
