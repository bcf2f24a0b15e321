"""report.html's plots and header as a reader sees them (issue 35, item 9): the log axis of a
length histogram labels its ticks without printing one label over another, whatever the range the
documents span, and every count of the page has thousands separators."""

from __future__ import annotations

import itertools

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from etl.report import html as page


def _hist(low_bin: int, high_bin: int, per: int = 10) -> dict:
    return {"bins_per_decade": per, "by_source": {"crawl": {str(k): 5 + k for k in range(low_bin, high_bin)}}}


@pytest.mark.parametrize(
    "low,high",
    [(23, 30), (20, 40), (10, 60), (0, 70)],  # 200-1,000 (less than a decade), 1-10 million
)
def test_log_axis_labels_never_overlap(low, high):
    fig, ax = page.histogram_axes(_hist(low, high), "characters")
    canvas = FigureCanvasAgg(fig)  # the page's SVG backend has no renderer to measure text with
    canvas.draw()
    renderer = canvas.get_renderer()
    labels = [t for t in ax.get_xticklabels(minor=False) + ax.get_xticklabels(minor=True) if t.get_text()]
    lo, hi = ax.get_xlim()
    labels = [t for t in labels if lo <= t.get_position()[0] <= hi]
    assert len(labels) >= 2, [t.get_text() for t in labels]  # a reader can read the scale
    boxes = [t.get_window_extent(renderer) for t in labels]
    for (a, ta), (b, tb) in itertools.combinations(zip(boxes, labels), 2):
        assert a.x1 <= b.x0 or b.x1 <= a.x0, (ta.get_text(), tb.get_text())
    assert not any("×" in t.get_text() or "$" in t.get_text() for t in labels)
    page.plt.close(fig)


def test_header_counts_have_thousands_separators():
    line = page.summary_line({"elapsed_s": 12.5, "spark_master": "local[2]"}, {"total_tokens": 3513015})
    assert "3,513,015" in line and "3513015" not in line
    assert "n/a" in page.summary_line({}, {})


def test_signal_panels_draw_each_groups_box_and_the_threshold():
    """The signals grid (SVG written directly): a panel per signal, a box per group that has the
    signal, the threshold dashed where the rule has one, readable ticks also for a constant signal."""
    report = {
        "quality": {
            "distributions": {
                "kept": {"documents": 3, "a": [0.0, 0.1, 0.2, 0.3, 0.4], "b": [1.0] * 5},
                "removed": {"documents": 1, "a": [0.5, 0.6, 0.7, 0.8, 0.9]},
            },
            "thresholds": {"a": {"value": 0.45}},
        }
    }
    fig = page._signals(report)
    assert 'id="plot-signals"' in fig and "(kept 3, removed 1)" in fig
    assert fig.count(">a</text>") == 1 and fig.count(">b</text>") == 1
    assert fig.count('height="16"') == 3  # boxes: a kept, a removed, b kept
    assert fig.count("stroke-dasharray") == 1
    assert "nan" not in fig.lower() and "-0.0<" not in fig
    assert ">0.25<" in fig or ">0.2<" in fig  # ticks over a's range
    assert "no quality signals" in page._signals({"quality": {}})
