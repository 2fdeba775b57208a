"""Figures of the scaling lab: the spread of q·k against d_k, and one softmax row with and without ÷√d_k."""

from __future__ import annotations

import math

from viz._common import legend_below, nothing_to_draw
from viz import plain
from viz.theme import PALETTE


LABEL_STEP_PX = 20  # the marks' labels stand one above the other, this far apart
SPREAD_PLOT_PX, SOFTMAX_PLOT_PX = 280, 240  # the plots' heights; the legend below (`legend_below`)


def dot_spread_figure(dims: list[int], spreads: list[float], *, d_k: int, model_d_k: int | None = None, title: str) -> dict:
    """Measured standard deviation of q·k per d_k (points) against √d_k (line), on log–log axes, and
    the spread after dividing by √d_k (flat at 1). The chosen d_k and the model's own are marked."""
    if not dims:
        return nothing_to_draw(title, "no dimensions")
    data = [
        dict(
            type="scatter",
            x=list(dims),
            y=list(spreads),
            mode="markers",
            name="std of q·k (measured)",
            marker=dict(color=PALETTE[0], size=8),
            hovertemplate="d_k = %{x}<br>std = %{y:.3f}<extra></extra>",
        ),
        dict(type="scatter", x=list(dims), y=[math.sqrt(d) for d in dims], mode="lines", name="√d_k", line=dict(color=PALETTE[1], dash="dash")),
        dict(
            type="scatter",
            x=list(dims),
            y=[s / math.sqrt(d) for d, s in zip(dims, spreads)],
            mode="lines+markers",
            name="std of q·k / √d_k",
            line=dict(color=PALETTE[2]),
            marker=dict(size=5),
        ),
    ]
    if model_d_k == d_k:  # one line, one label
        marks = [(d_k, "chosen d_k = the model's d_k", PALETTE[3])]
    else:
        marks = [(d_k, "chosen d_k", PALETTE[3])] + ([(model_d_k, "the model's d_k", PALETTE[4])] if model_d_k else [])
    # each mark: a vertical line in data units over the plot's height, and its label, an annotation, in log10 units on a log axis
    shapes = [dict(line=dict(color=colour, width=2), type="line", x0=value, x1=value, xref="x", y0=0, y1=1, yref="y domain") for value, _, colour in marks]
    # the labels one above the other, each on the side of its line towards the plot's middle, so that two
    # close marks never write over each other and none leaves the figure on a phone
    low, high = math.log10(min(dims)) - 0.1, math.log10(max(dims)) + 0.1
    annotations = [
        dict(
            showarrow=False,
            text=f"{label} = {value}",
            x=math.log10(value),
            xanchor="left" if math.log10(value) < (low + high) / 2 else "right",
            y=1,
            yanchor="bottom",
            yref="paper",
            yshift=LABEL_STEP_PX * row,
        )
        for row, (value, label, _) in enumerate(marks)
    ]
    powers = [2**p for p in range(0, 11, 2)]  # 1, 4, 16, … 1024
    layout = dict(
        shapes=shapes,
        annotations=annotations,
        title=plain.title(title),
        xaxis=dict(
            title=plain.title("d_k (size of one head)"),
            type="log",
            tickvals=powers,
            ticktext=[str(p) for p in powers],
            range=[low, high],
        ),
        yaxis=dict(
            title=plain.title("standard deviation of the score"),
            type="log",
            tickvals=[0.5, 1, 2, 4, 8, 16, 32],
            ticktext=["0.5", "1", "2", "4", "8", "16", "32"],
        ),
        legend=legend_below(SPREAD_PLOT_PX),
        height=SPREAD_PLOT_PX + 230 + LABEL_STEP_PX * (len(marks) - 1),
        margin=dict(t=100 + LABEL_STEP_PX * (len(marks) - 1), b=130),
    )
    return plain.figure(data, layout)


def softmax_row_figure(with_division: list[float], without_division: list[float], *, title: str) -> dict:
    """The weights of one query row over its keys, with and without ÷√d_k, side by side."""
    if not with_division:
        return nothing_to_draw(title, "no keys")
    keys = list(range(len(with_division)))  # the axis says "key": numbers alone stay short on a phone
    hover = "key %{x}: %{y:.4f}<extra></extra>"
    data = [
        dict(type="bar", x=keys, y=list(with_division), name="softmax(q·k / √d_k)", marker=dict(color=PALETTE[2]), hovertemplate=hover),
        dict(type="bar", x=keys, y=list(without_division), name="softmax(q·k), no division", marker=dict(color=PALETTE[1]), hovertemplate=hover),
    ]
    layout = dict(
        title=plain.title(title),
        barmode="group",
        xaxis=dict(title=plain.title("key"), tickmode="linear", dtick=max(1, len(keys) // 16)),
        yaxis=dict(title=plain.title("weight"), range=[0, 1.05]),
        legend=legend_below(SOFTMAX_PLOT_PX),
        height=SOFTMAX_PLOT_PX + 230,
        margin=dict(t=100, b=130),
    )
    return plain.figure(data, layout)
