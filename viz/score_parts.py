"""Figures of a score split into parts: maps of each part, a bar of the parts of one score, rotary pairs,
the score against distance, and each head's position share. Plain data in, a `go.Figure` out."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from viz import plain
from viz._common import apply_mask, as_float32, finite_range, keeps_width, nothing_to_draw
from viz.heatmap import heatmap_trace, matrix_axes
from viz.labels import position_labels, safe_label
from viz.theme import DIVERGING, PALETTE

BADGE_COLOURS = {"positional": PALETTE[0], "mixed": PALETTE[2], "content": PALETTE[1]}
MAP_COLUMNS = 3


def part_maps_figure(panels: list[tuple[str, object]], query_labels, key_labels, *, masked=None, title: str) -> go.Figure:
    """One query × key heatmap per part `[(name, [query_pos, key_pos]), …]`, on one colour scale.

    The scale is diverging and symmetric around 0, shared by every panel, so one colour is one value of
    the score everywhere. `masked` `[query_pos, key_pos]` bool, True where the query may not look: gaps.
    """
    if not panels:
        return nothing_to_draw(title, "no parts")
    arrays = [apply_mask(as_float32(matrix, ndim=2, name=name), masked) for name, matrix in panels]
    n_query, n_key = arrays[0].shape
    if n_query == 0 or n_key == 0:
        return nothing_to_draw(title, "no tokens")
    rows = math.ceil(len(panels) / MAP_COLUMNS)
    columns = min(len(panels), MAP_COLUMNS)
    layout, cells = plain.subplots(
        rows, columns, titles=[safe_label(name) for name, _ in panels], horizontal_spacing=0.06, vertical_spacing=0.16 if rows > 1 else 0.1
    )
    queries, keys = position_labels(query_labels), position_labels(key_labels)
    data = []
    for index, ((name, _), matrix) in enumerate(zip(panels, arrays)):
        row, column = divmod(index, columns)
        refs = cells[(row + 1, column + 1)]
        trace = heatmap_trace(matrix, queries, keys, value_name=name, coloraxis="coloraxis", name=name)
        data.append({**trace, "xaxis": refs["xaxis"], "yaxis": refs["yaxis"]})
        xaxis, yaxis = matrix_axes(n_query, n_key, queries, keys, show_query_ticks=column == 0, max_ticks=24)
        xaxis.pop("title", None)
        layout[_axis_key(refs["xaxis"])].update(xaxis)
        layout[_axis_key(refs["yaxis"])].update(yaxis)
    low, high = finite_range(*arrays, symmetric=True)
    layout.update(
        title=plain.title(title),
        coloraxis=dict(colorscale=plain.colorscale(DIVERGING), cmin=low, cmax=high, cmid=0.0, colorbar=dict(title=dict(text="part of q·k"))),
        height=max(420, 330 * rows + 120),
    )
    return plain.figure(data, keeps_width(layout))


def _axis_key(ref: str) -> str:
    """ "x" → "xaxis", "y3" → "yaxis3"."""
    return f"{ref[0]}axis{ref[1:]}"


def parts_bar_figure(names: list[str], values, score: float, *, title: str) -> go.Figure:
    """The parts of one score as horizontal bars, in the order given, and their sum (the score) at the bottom."""
    values = [float(v) for v in values]
    if not names:
        return nothing_to_draw(title, "no parts")
    labels = [safe_label(name) for name in names] + ["= q·k (the sum)"]
    bars = values + [float(score)]
    colours = [PALETTE[0] if v >= 0 else PALETTE[1] for v in values] + ["#444444"]
    trace = dict(
        type="bar",
        orientation="h",
        x=bars,
        y=labels,
        marker=dict(color=colours),
        text=[f"{v:+.3g}" for v in bars],
        textposition="outside",  # beside each bar at the page's font size, dark on white (plotly shrinks text inside a bar)
        constraintext="none",
        cliponaxis=False,
        hovertemplate="%{y}: %{x:.4g}<extra></extra>",
    )
    layout = dict(
        title=plain.title(title),
        xaxis=dict(title=plain.title("contribution to the raw score q·k"), zeroline=True, range=_with_room_for_labels(bars)),
        yaxis=dict(autorange="reversed", automargin=True),
        height=max(320, 26 * len(labels) + 140),
        showlegend=False,
    )
    return plain.figure([trace], layout)


LABEL_ROOM = 0.35  # of the bars' span, beyond the longest bar on each side that has one: its value's label


def _with_room_for_labels(values: list[float]) -> list[float]:
    """An axis range from the bars' extremes (and 0) with room for the value written beyond each end, so
    that a label neither leaves the plot nor runs over the axis's tick labels on a narrow screen."""
    low, high = min(0.0, *values), max(0.0, *values)
    span = (high - low) or 1.0
    return [low - LABEL_ROOM * span if low < 0 else low, high + LABEL_ROOM * span if high > 0 else high]


def pair_bar_figure(thetas, contributions, *, n_fast: int, title: str) -> go.Figure:
    """One bar per rotary pair, fastest first; the fastest `n_fast` in their own colour."""
    theta = as_float32(thetas, ndim=1, name="thetas").astype(np.float64)
    values = as_float32(contributions, ndim=1, name="contributions")
    if values.size == 0:
        return nothing_to_draw(title, "no pairs")
    wavelengths = 2 * np.pi / theta
    colours = [PALETTE[3] if p < n_fast else PALETTE[4] for p in range(len(values))]
    trace = dict(
        type="bar",
        x=np.arange(len(values)),
        y=values,
        marker=dict(color=colours),
        customdata=np.stack([theta, wavelengths], axis=1).astype(np.float32),
        hovertemplate="pair %{x}: θ = %{customdata[0]:.4g} rad/token (a turn every %{customdata[1]:.3g} tokens)<br>%{y:.4g}<extra></extra>",
    )
    layout = dict(
        title=plain.title(title),
        xaxis=dict(title=plain.title(f"dimension pair, fastest first (the {n_fast} fastest in the first colour)"), dtick=max(1, len(values) // 16)),
        yaxis=dict(title=plain.title("contribution to q·k"), zeroline=True),
        showlegend=False,
        height=420,
    )
    return plain.figure([trace], layout)


def distance_curve_figure(distances, curves: dict[str, object], *, actual_distance: int, actual_score: float, title: str) -> go.Figure:
    """The score of one query and key slid to other distances: one line per curve, the actual pair marked."""
    x = as_float32(distances, ndim=1, name="distances")
    data = []
    for index, (name, values) in enumerate(curves.items()):
        data.append(
            dict(
                type="scatter",
                x=x,
                y=as_float32(values, ndim=1, name=name),
                mode="lines",
                name=name,
                line=dict(color=PALETTE[index % len(PALETTE)], width=3 if index == 0 else 2),
                hovertemplate=f"{name}<br>distance %{{x}}: %{{y:.4g}}<extra></extra>",
            )
        )
    data.append(
        dict(
            type="scatter",
            x=[actual_distance],
            y=[actual_score],
            mode="markers",
            name="the pair as it stands",
            marker=dict(size=12, color="#222222", symbol="circle-open", line=dict(width=3)),
            hovertemplate="distance %{x}: q·k = %{y:.4g}<extra></extra>",
        )
    )
    layout = dict(
        title=plain.title(title),
        xaxis=dict(title=plain.title("distance between query and key (query position − key position)")),
        yaxis=dict(title=plain.title("raw score q·k")),
        legend=dict(orientation="h", y=-0.25),
        height=460,
    )
    return plain.figure(data, layout)


def head_shares_figure(shares, badges: list[str], *, thresholds: tuple[float, float], title: str) -> go.Figure:
    """Each head's position share as a bar coloured by its badge, with the two thresholds as lines."""
    values = as_float32(shares, ndim=1, name="shares")
    if values.size == 0:
        return nothing_to_draw(title, "no heads")
    data = []
    for badge, colour in BADGE_COLOURS.items():
        heads = [h for h, b in enumerate(badges) if b == badge]
        if heads:
            data.append(
                dict(
                    type="bar",
                    x=[f"head {h}" for h in heads],
                    y=values[heads],
                    name=badge,
                    marker=dict(color=colour),
                    text=[f"{values[h]:.0%}" for h in heads],
                    textposition="outside",
                    hovertemplate="%{x}: position makes %{y:.1%} of the lift<extra>" + badge + "</extra>",
                )
            )
    content_max, positional_min = thresholds
    low = min(0.0, float(np.nanmin(values)) - 0.12)
    high = max(1.0, float(np.nanmax(values)) + 0.1)
    layout = dict(
        title=plain.title(title),
        xaxis=dict(categoryorder="array", categoryarray=[f"head {h}" for h in range(len(values))]),
        yaxis=dict(title=plain.title("position's share of the lift"), tickformat=".0%", range=[low, high]),
        shapes=[
            dict(type="line", xref="paper", x0=0, x1=1, y0=y, y1=y, line=dict(dash="dash", color="#666666", width=1)) for y in (content_max, positional_min)
        ],
        annotations=[
            dict(xref="paper", x=1.005, y=y, text=text, showarrow=False, xanchor="left", yanchor="middle", font=dict(size=11, color="#444444"))
            for y, text in ((content_max, f"content ≤ {content_max:.0%}"), (positional_min, f"positional ≥ {positional_min:.0%}"))
        ],
        showlegend=True,
        legend=dict(orientation="h", y=-0.15, title=dict(text="badge")),
        margin=dict(r=170),  # the thresholds' labels beside the plot, in the print theme's font too
        height=420,
    )
    return plain.figure(data, layout)
