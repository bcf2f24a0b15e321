"""``report.html``: one self-contained page (inline SVG plots, no scripts, no external files)
drawn from a corpus build's ``report.json``.

Plots: records dropped per stage and reason (duplicates as the dedup stage), document length
and token count distributions per source (log-binned, like PanGu-α Fig. 3), duplicate-cluster
sizes and tokens per source; then the ledger table and the per-file table. Each plot is a
``<figure id="plot-...">``; a missing input (e.g. no shards) gives a figure that says so.
"""

from __future__ import annotations

import html
import io
import math
from typing import Any

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter  # noqa: E402

plt.rcParams.update({"svg.fonttype": "path", "font.size": 9, "figure.dpi": 96})
PLOTS = ("dropped", "doc_chars", "doc_tokens", "cluster_sizes", "tokens_per_source", "signals")
CSS = """body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}
figure{display:inline-block;margin:0 1em 1em 0;vertical-align:top}figcaption{font-weight:bold}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}.bad{color:#b00}"""


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]  # drop the XML prolog and doctype: inline SVG in HTML


def _figure(plot_id: str, caption: str, body: str) -> str:
    return f'<figure id="plot-{plot_id}"><figcaption>{html.escape(caption)}</figcaption>{body}</figure>'


def _empty(plot_id: str, caption: str, why: str) -> str:
    return _figure(plot_id, caption, f"<p>{html.escape(why)}</p>")


def _dropped(report: dict[str, Any]) -> str:
    labels, counts = [], []
    for stage, s in report.get("rejected_by_stage", {}).items():
        for reason, n in s["reasons"].items():
            labels.append(f"{stage}/{reason}")
            counts.append(n)
    for kind, n in report.get("duplicates_by_kind", {}).items():
        labels.append(f"dedup/{kind}")
        counts.append(n)
    caption = "Records dropped per stage and reason"
    if not counts:
        return _empty("dropped", caption, "nothing was dropped")
    order = sorted(range(len(counts)), key=lambda i: counts[i])
    fig, ax = plt.subplots(figsize=(6, 0.25 * len(counts) + 0.8))
    ax.barh([labels[i] for i in order], [counts[i] for i in order], color="#c0504d")
    ax.set_xlabel("records")
    return _figure("dropped", caption, _svg(fig))


def _histogram(plot_id: str, caption: str, hist: dict[str, Any] | None, unit: str) -> str:
    if not hist or not hist["by_source"]:
        return _empty(plot_id, caption, "not computed in this build")
    fig, _ = histogram_axes(hist, unit)
    return _figure(plot_id, caption, _svg(fig))


def histogram_axes(hist: dict[str, Any], unit: str):
    """The figure of a log-binned histogram (``report.json``'s ``bins_per_decade``, ``by_source``)."""
    per = hist["bins_per_decade"]
    fig, ax = plt.subplots(figsize=(6, 3.2))
    for source, counts in hist["by_source"].items():
        bins = sorted((int(k), v) for k, v in counts.items() if int(k) >= 0)
        if not bins:
            continue
        edges = [10 ** (k / per) for k, _ in bins] + [10 ** ((bins[-1][0] + 1) / per)]
        ax.stairs([v for _, v in bins], edges, label=source, linewidth=1.5)
    ax.set_xscale("log")
    _plain_log_ticks(ax.xaxis, ax.get_xlim())
    ax.set_xlabel(unit)
    ax.set_ylabel("documents")
    ax.legend(fontsize=8)
    return fig, ax


def _plain_log_ticks(axis, limits: tuple[float, float]) -> None:
    """Labels of a log axis as plain numbers with thousands separators (200, 5,000), no minor
    labels: matplotlib labels the minor ticks of a range under a decade or two in scientific
    notation (2×10², 3×10², …), one over another. Majors at 1-2-5 of each decade when the range
    spans under three decades, at the powers of ten beyond (every other one past five decades: a
    label of 1,000,000 is as wide as a decade)."""
    lo, hi = limits
    decades = math.log10(hi / lo) if lo > 0 else 9.0
    subs = (1.0, 2.0, 5.0) if decades < 3 else (1.0,)
    axis.set_major_locator(LogLocator(base=10, subs=subs, numticks=12 if decades <= 5 else 5))
    axis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:,.0f}" if x >= 1 else f"{x:g}"))
    axis.set_minor_locator(LogLocator(base=10, subs=tuple(range(2, 10)), numticks=12))
    axis.set_minor_formatter(NullFormatter())


def _bars(plot_id: str, caption: str, data: dict[str, int] | None, xlabel: str, ylabel: str, log_y=False) -> str:
    if not data:
        return _empty(plot_id, caption, "not computed in this build")
    fig, ax = plt.subplots(figsize=(5, 3.2))
    keys = list(data)
    ax.bar([str(k) for k in keys], [data[k] for k in keys], color="#4f81bd")
    if log_y:
        ax.set_yscale("log")
        _plain_log_ticks(ax.yaxis, ax.get_ylim())
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return _figure(plot_id, caption, _svg(fig))


def _signals(report: dict[str, Any]) -> str:
    """Small multiples: per quality signal, a box plot (5-25-50-75-95 %) for kept and for removed
    documents, with the rule's threshold as a dashed line. Drawn as SVG directly (boxes, lines and
    tick labels; the ticks from matplotlib's ``MaxNLocator``): 25 matplotlib axes took a small
    build's report 1.4 s."""
    quality = report.get("quality") or {}
    dist, thresholds = quality.get("distributions"), quality.get("thresholds") or {}
    caption = "Quality signals: kept vs removed documents (5/25/50/75/95 %), threshold dashed"
    groups = [g for g in ("kept", "removed") if dist and dist.get(g)]
    if not groups:
        return _empty("signals", caption, "no quality signals in this build")
    names = [n for n in dist[groups[0]] if n != "documents"]
    cols = 5
    w, h = PANEL
    parts = []
    for k, name in enumerate(names):
        quartiles = [(g[0], q) for g in groups if (q := dist[g].get(name))]
        threshold = thresholds[name]["value"] if name in thresholds else None
        parts.append(_box_panel(name, quartiles, threshold, (k % cols) * w, (k // cols) * h))
    width, height = cols * w, -(-len(names) // cols) * h
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif">{"".join(parts)}</svg>'
    )
    counts = ", ".join(f"{g} {dist[g]['documents']:,}" for g in groups)
    return _figure("signals", f"{caption} ({counts})", svg)


PANEL = (210, 120)  # one signal's panel in the grid, px: the plot inside these margins
_PLOT = (22, 18, 200, 92)  # left, top, right, bottom of the plot area in a panel


def _box_panel(name: str, quartiles: list[tuple[str, list[float]]], threshold: float | None, x0: int, y0: int) -> str:
    """One panel: a horizontal box per group (label, [5, 25, 50, 75, 95 %]) and the threshold."""
    left, top, right, bottom = _PLOT
    values = [v for _, q in quartiles for v in q] + ([threshold] if threshold is not None else [])
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    if hi - lo < 1e-12:
        lo, hi = lo - 0.05, hi + 0.05
    pad = (hi - lo) * 0.05
    lo, hi = lo - pad, hi + pad
    x = lambda v: x0 + left + (v - lo) / (hi - lo) * (right - left)  # noqa: E731
    out = [
        f'<text x="{x0 + (left + right) / 2:.1f}" y="{y0 + 11}" font-size="10" text-anchor="middle">'
        f"{html.escape(name)}</text>",
        f'<rect x="{x0 + left}" y="{y0 + top}" width="{right - left}" height="{bottom - top}" fill="none" '
        'stroke="#000" stroke-width="0.8"/>',
    ]
    ticks = [round(t, 10) + 0.0 for t in MaxNLocator(nbins=5).tick_values(lo, hi) if lo <= t <= hi]  # no -0
    decimals = max((len(f"{t:.10f}".rstrip("0").partition(".")[2]) for t in ticks), default=0)
    for t in ticks:
        out.append(
            f'<line x1="{x(t):.1f}" y1="{y0 + bottom}" x2="{x(t):.1f}" y2="{y0 + bottom + 3}" stroke="#000"/>'
            f'<text x="{x(t):.1f}" y="{y0 + bottom + 13}" font-size="8" text-anchor="middle">'
            f"{t:.{decimals}f}</text>"
        )
    row = (bottom - top) / max(len(quartiles), 1)
    for i, (label, (w5, q1, med, q3, w95)) in enumerate(reversed(quartiles)):  # the first group lowest
        cy = y0 + top + row * (i + 0.5)
        out.append(
            f'<text x="{x0 + left - 5}" y="{cy + 3:.1f}" font-size="8" text-anchor="end">{label}</text>'
            f'<line x1="{x(w5):.1f}" y1="{cy:.1f}" x2="{x(q1):.1f}" y2="{cy:.1f}" stroke="#000"/>'
            f'<line x1="{x(q3):.1f}" y1="{cy:.1f}" x2="{x(w95):.1f}" y2="{cy:.1f}" stroke="#000"/>'
            f'<line x1="{x(w5):.1f}" y1="{cy - 5:.1f}" x2="{x(w5):.1f}" y2="{cy + 5:.1f}" stroke="#000"/>'
            f'<line x1="{x(w95):.1f}" y1="{cy - 5:.1f}" x2="{x(w95):.1f}" y2="{cy + 5:.1f}" stroke="#000"/>'
            f'<rect x="{x(q1):.1f}" y="{cy - 8:.1f}" width="{max(x(q3) - x(q1), 0.5):.1f}" height="16" '
            'fill="none" stroke="#000"/>'
            f'<line x1="{x(med):.1f}" y1="{cy - 8:.1f}" x2="{x(med):.1f}" y2="{cy + 8:.1f}" stroke="#f80"/>'
        )
    if threshold is not None:
        out.append(
            f'<line x1="{x(threshold):.1f}" y1="{y0 + top}" x2="{x(threshold):.1f}" y2="{y0 + bottom}" '
            'stroke="#b00" stroke-dasharray="4 2"/>'
        )
    return "".join(out)


def _ledger_table(report: dict[str, Any]) -> str:
    inp = report["input"]
    rows = [
        ("input records", inp["records"]),
        ("documents", report["documents"]),
        ("rejected", report["rejected"]),
        ("duplicates", report.get("duplicates", 0)),
    ]
    for stage, s in report.get("rejected_by_stage", {}).items():
        rows += [(f"rejected: {stage}/{reason}", n) for reason, n in s["reasons"].items()]
    rows += [(f"duplicates: {kind}", n) for kind, n in report.get("duplicates_by_kind", {}).items()]
    body = "".join(f'<tr><td>{html.escape(k)}</td><td data-key="{html.escape(k)}">{v:,}</td></tr>' for k, v in rows)
    cls = "" if report["balanced"] else ' class="bad"'
    return (
        f'<table id="ledger"><tr><th>ledger</th><th>records</th></tr>{body}'
        f'<tr><td>balanced (input = documents + rejected + duplicates)</td><td{cls} data-key="balanced">'
        f'{report["balanced"]}</td></tr></table>'
    )


def _files_table(report: dict[str, Any]) -> str:
    head = "<tr><th>file</th><th>format</th><th>records</th><th>documents</th><th>rejected</th><th>duplicates</th></tr>"
    body = "".join(
        f"<tr><td>{html.escape(path)}</td><td>{html.escape(str(f.get('format')))}</td><td>{f['records']:,}</td>"
        f"<td>{f['documents']:,}</td><td>{f['rejected']:,}</td><td>{f.get('duplicates', 0):,}</td></tr>"
        for path, f in report.get("files", {}).items()
    )
    return f'<table id="files">{head}{body}</table>'


def _pii_table(report: dict[str, Any]) -> str:
    pii = report.get("pii") or {}
    if not pii.get("kinds"):
        return "<p>No personal data found (or the stage was off).</p>"
    head = (
        "<tr><th>kind</th><th>mode</th><th>documents redacted</th><th>spans redacted</th>"
        "<th>documents dropped</th></tr>"
    )
    body = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{html.escape(str(pii['modes'].get(k)))}</td><td>{v['documents']:,}</td>"
        f"<td data-key='pii.{html.escape(k)}.spans'>{v['spans']:,}</td><td>{v['documents_dropped']:,}</td></tr>"
        for k, v in pii["kinds"].items()
    )
    return f'<table id="pii">{head}{body}</table>'


def _decontamination_table(report: dict[str, Any]) -> str:
    dc = report.get("decontaminate") or {}
    if not dc.get("benchmarks"):
        return "<p>No evaluation sets given: decontamination was off.</p>"
    head = (
        "<tr><th>benchmark</th><th>items</th><th>matched by n-gram</th><th>matched whole</th>"
        "<th>too short to match</th><th>documents hit</th><th>items hit</th></tr>"
    )
    body = "".join(
        f"<tr><td>{html.escape(b)}</td><td>{v['items']:,}</td><td>{v['ngram_items']:,}</td><td>{v['whole_items']:,}</td>"
        f"<td>{v['ignored_items']:,}</td><td data-key='decontaminate.{html.escape(b)}.documents_hit'>"
        f"{v['documents_hit']:,}</td><td>{v['items_hit']:,}</td></tr>"
        for b, v in dc["benchmarks"].items()
    )
    return (
        f'<p>mode {html.escape(str(dc.get("mode")))}, character {dc.get("ngram")}-grams; '
        f'{dc.get("documents_dropped", 0):,} documents dropped</p><table id="decontamination">{head}{body}</table>'
    )


def summary_line(job: dict[str, Any], shards: dict[str, Any]) -> str:
    """The line under the title: the build's time, master and tokens."""
    total = shards.get("total_tokens")
    tokens = f"{total:,}" if isinstance(total, int) else "n/a"
    return f"<p>{job.get('elapsed_s', '?')} s on {html.escape(str(job.get('spark_master', '?')))}; tokens: {tokens}</p>"


def render(report: dict[str, Any]) -> str:
    dist = report.get("distributions", {})
    shards = report.get("shards") or {}
    sizes = dist.get("cluster_sizes")
    figures = [
        _dropped(report),
        _histogram("doc_chars", "Document length per source (characters)", dist.get("doc_chars"), "characters"),
        _histogram("doc_tokens", "Tokens per document per source", dist.get("doc_tokens"), "tokens"),
        _bars(
            "cluster_sizes",
            "Duplicate-cluster sizes",
            {int(k): v for k, v in sizes.items()} if sizes else None,
            "documents in cluster",
            "clusters",
            log_y=True,
        ),
        _bars("tokens_per_source", "Tokens per source", shards.get("tokens_per_source"), "source", "tokens"),
        _signals(report),
    ]
    job = report.get("job", {})
    title = f"Corpus build report: {report['documents']:,} documents"
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>"
        + summary_line(job, shards)
        + "".join(figures)
        + "<h2>Ledger</h2>"
        + _ledger_table(report)
        + "<h2>Personal data</h2>"
        + _pii_table(report)
        + "<h2>Benchmark decontamination</h2>"
        + _decontamination_table(report)
        + "<h2>Files</h2>"
        + _files_table(report)
        + "</body></html>"
    )
