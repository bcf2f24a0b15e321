"""``judge.html``: the rule judge's ``judge.json`` as one self-contained page, in the style of
``report.html`` (inline SVG drawn by matplotlib, no scripts, no external files).

Plots (each a ``<figure id="plot-...">``): dev perplexity per variant (every seed a dot, the mean
a bar), dev-loss curves (one colour per variant, one line per seed), tokens kept per variant. Then
the ranking table, the per-seed table, the dev set, and per variant its overrides and the ledger
moves against the baseline. Every number cell carries ``data-key`` (``variant:field[:seed]``)
and ``data-value`` (the exact JSON number), so a test can hold the page to judge.json.
"""

from __future__ import annotations

import html
import json
from typing import Any

from etl.report.html import CSS, _empty, _figure, _svg, plt

PLOTS = ("dev_ppl", "dev_curves", "tokens")
COLOURS = plt.rcParams["axes.prop_cycle"].by_key()["color"]


def fmt(value: Any, kind: str = "") -> str:
    """How the page writes a judge.json value (the test formats judge.json the same way)."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:+.3f}" if kind == "signed" else f"{value:.3f}"
    return str(value)


def _cell(key: str, value: Any, kind: str = "") -> str:
    raw = html.escape(json.dumps(value), quote=True)
    return f'<td data-key="{html.escape(key, quote=True)}" data-value="{raw}">{html.escape(fmt(value, kind))}</td>'


def _order(report: dict[str, Any]) -> list[str]:
    return report["ranking"] + report["unranked"]


def _ppl_plot(report: dict[str, Any]) -> str:
    names = [n for n in _order(report) if report["variants"][n]["dev_ppl"]]
    caption = "Dev perplexity per variant (dots: seeds, bar: mean)"
    if not names:
        return _empty("dev_ppl", caption, "no proxy run finished")
    fig, ax = plt.subplots(figsize=(6, 0.45 * len(names) + 1.0))
    for i, name in enumerate(names):
        v = report["variants"][name]
        ax.barh(i, v["mean_dev_ppl"], color=COLOURS[i % len(COLOURS)], alpha=0.35)
        ax.plot(v["dev_ppl"], [i] * len(v["dev_ppl"]), "o", color=COLOURS[i % len(COLOURS)])
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlabel("dev perplexity (lower is better)")
    lo = min(min(report["variants"][n]["dev_ppl"]) for n in names)
    ax.set_xlim(left=0.9 * lo)
    return _figure("dev_ppl", caption, _svg(fig))


def _curves_plot(report: dict[str, Any]) -> str:
    caption = "Dev loss during training (one line per seed)"
    names = [n for n in _order(report) if report["variants"][n]["dev_curves"]]
    if not names:
        return _empty("dev_curves", caption, "no proxy run finished")
    fig, ax = plt.subplots(figsize=(6, 3.4))
    for i, name in enumerate(names):
        for k, (seed, curve) in enumerate(report["variants"][name]["dev_curves"].items()):
            steps, losses = zip(*curve)
            ax.plot(
                steps,
                losses,
                marker=".",
                color=COLOURS[i % len(COLOURS)],
                linestyle="-" if k == 0 else "--",
                label=name if k == 0 else None,
            )
    ax.set_xlabel("step")
    ax.set_ylabel("dev loss")
    ax.legend(fontsize=8)
    return _figure("dev_curves", caption, _svg(fig))


def _tokens_plot(report: dict[str, Any]) -> str:
    names = _order(report)
    fig, ax = plt.subplots(figsize=(5, 0.45 * len(names) + 1.0))
    ax.barh(names, [report["variants"][n]["tokens"] for n in names], color="#4f81bd")
    ax.axvline(report["budget"]["tokens"], color="#c0504d", linestyle="--", label="tokens per proxy run")
    ax.invert_yaxis()
    ax.set_xlabel("tokens kept")
    ax.legend(fontsize=8)
    return _figure("tokens", "Tokens kept per variant", _svg(fig))


def _ranking_table(report: dict[str, Any]) -> str:
    head = (
        "<tr><th>#</th><th>variant</th><th>mean dev ppl</th><th>dev SE</th><th>spread</th>"
        "<th>paired diff vs baseline</th><th>SE</th><th>MDD</th><th>verdict</th><th>documents</th>"
        "<th>tokens</th><th>epochs</th></tr>"
    )
    rows = []
    for i, name in enumerate(_order(report), 1):
        v = report["variants"][name]
        vs = v["vs_baseline"] or {}
        rank = str(i) if name in report["ranking"] else "–"
        cells = [_cell(f"{name}:{k}", v[k]) for k in ("mean_dev_ppl", "dev_se_ppl", "spread_dev_ppl")]
        cells += [
            _cell(f"{name}:diff", vs.get("mean"), "signed"),
            _cell(f"{name}:se", vs.get("se")),
            _cell(f"{name}:mdd", vs.get("mdd")),
            _cell(f"{name}:verdict", vs.get("verdict")),
        ]
        cells += [_cell(f"{name}:{k}", v[k]) for k in ("documents", "tokens", "epochs")]
        rows.append(f"<tr><td>{rank}</td><td>{html.escape(name)}</td>{''.join(cells)}</tr>")
    return f'<table id="ranking">{head}{"".join(rows)}</table>'


def _plan_list(plan: dict[str, Any]) -> str:
    """The plan before training and what each round decided."""
    items = [
        f"<li>before training: {plan['seeds']} seeds, planned MDD {plan['planned_mdd_rel']:.1%} of the "
        f"baseline's perplexity (prior seed sd {plan['prior_sd']:.1%}, effect {plan['effect']:.1%})</li>"
    ]
    for i, r in enumerate(plan["rounds"], 1):
        items.append(
            f"<li>round {i}: seeds {r['seeds']}, {r['budget_tokens']:,} tokens per run → "
            f"{html.escape(r['next']['action'])}: {html.escape(r['next']['reason'])}</li>"
        )
    return f'<ul id="plan">{"".join(items)}</ul>'


def _seeds_table(report: dict[str, Any]) -> str:
    head = "<tr><th>variant</th><th>seed</th><th>status</th><th>dev loss</th><th>dev ppl</th></tr>"
    rows = []
    for name in _order(report):
        v = report["variants"][name]
        ok = dict(zip(v["seeds_ok"], zip(v["dev_loss"], v["dev_ppl"])))
        for run in v["runs"]:
            s = run["seed"]
            loss, ppl = ok.get(s, (None, None))
            status = run["status"] if run["status"] == "ok" else f"failed: {run.get('error')}"
            rows.append(
                f"<tr><td>{html.escape(name)}</td><td>{s}</td><td>{html.escape(status)}</td>"
                + _cell(f"{name}:dev_loss:{s}", loss)
                + _cell(f"{name}:dev_ppl:{s}", ppl)
                + "</tr>"
            )
    return f'<table id="seeds">{head}{"".join(rows)}</table>'


def _dev_table(dev: dict[str, Any]) -> str:
    keys = (
        "records",
        "blank_dropped",
        "overlap_removed",
        "internal_duplicates_removed",
        "documents",
        "tokens",
        "eval_tokens",
    )
    body = "".join(f"<tr><td>{k.replace('_', ' ')}</td>{_cell(f'dev:{k}', dev.get(k))}</tr>" for k in keys)
    return f'<table id="dev"><tr><th>dev set</th><th></th></tr>{body}</table>'


def _variant_section(name: str, v: dict[str, Any]) -> str:
    keys = (
        "".join(
            f"<li><code>{html.escape(k)} = {html.escape(json.dumps(x, ensure_ascii=False))}</code></li>"
            for k, x in v["overrides"].items()
        )
        or "<li>(the base config)</li>"
    )
    moves = "".join(
        f"<tr><td>{html.escape(m['from'])}</td><td>{html.escape(m['to'])}</td>"
        + _cell(f"{name}:move:{m['from']}>{m['to']}", m["records"])
        + "</tr>"
        for m in v["ledger_moves"]
    )
    table = (
        f'<table id="moves-{html.escape(name, quote=True)}"><tr><th>baseline outcome</th><th>this variant</th>'
        f"<th>records</th></tr>{moves}</table>"
        if moves
        else ""
    )
    return f"<h3>{html.escape(name)}</h3><ul>{keys}</ul>{table}"


def render(report: dict[str, Any]) -> str:
    best = report["ranking"][0] if report["ranking"] else "none"
    title = f"Rule judge: {len(report['variants'])} variants, best: {best}"
    figures = [_ppl_plot(report), _curves_plot(report), _tokens_plot(report)]
    failed = "".join(
        f"<li class='bad'>{html.escape(f['variant'])} seed {f['seed']}: {html.escape(str(f['error']))}</li>"
        for f in report["failed_runs"]
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>"
        f"<p>Proxy: {report['proxy']['parameters']:,} parameters, {report['budget']['tokens']:,} tokens per run "
        f"({report['budget']['steps']} steps), seeds {report['seeds']}; dev perplexity after training, lower is "
        "better (PanGu-α §3.1.3). Each variant is compared with the baseline seed by seed on the same dev "
        "documents; a difference counts beyond its minimum detectable difference (MDD).</p>"
        + "".join(figures)
        + "<h2>Ranking</h2>"
        + _ranking_table(report)
        + "<h2>Plan and rounds</h2>"
        + _plan_list(report["plan"])
        + (f"<h2>Failed runs</h2><ul>{failed}</ul>" if failed else "")
        + "<h2>Runs</h2>"
        + _seeds_table(report)
        + "<h2>Dev set</h2>"
        + _dev_table(report["dev"])
        + "<h2>Variants and their ledger moves against the baseline</h2>"
        + "".join(_variant_section(n, report["variants"][n]) for n in report["variants"])
        + "</body></html>"
    )
