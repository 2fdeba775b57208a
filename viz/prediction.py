"""Figures of a model's next-token prediction."""

from __future__ import annotations


from viz import plain
from viz._common import labels_meta, nothing_to_draw
from viz.labels import safe_label, tick_axis, ticks_for
from viz.theme import SEQUENTIAL


def next_token_figure(tokens: list[str], probabilities: list[float], *, title: str) -> dict:
    """Top-k next tokens as horizontal bars, most likely on top; x is the probability in [0, 1]."""
    if not tokens:
        return nothing_to_draw(title, "no tokens")
    labels = [safe_label(t) for t in tokens]
    bars = dict(
        type="bar",
        x=[float(p) for p in probabilities],
        y=list(range(len(labels))),
        orientation="h",
        text=[f"{p:.1%}" for p in probabilities],
        textposition="outside",
        constraintext="none",  # the labels keep their size on a narrow screen, drawn past the axis's end if need be
        cliponaxis=False,
        marker=dict(color=[float(p) for p in probabilities], colorscale=plain.colorscale(SEQUENTIAL), cmin=0, cmax=1),
        hovertemplate="%{customdata}: %{x:.4f}<extra></extra>",
        customdata=labels,
        name="probability",
    )
    layout = dict(
        title=plain.title(title),
        xaxis=dict(title=plain.title("probability"), range=[0, 1.08]),
        yaxis=dict(title=plain.title("next token"), tickmode="array", tickvals=list(range(len(labels))), ticktext=labels, autorange="reversed"),
        height=max(300, 60 + 28 * len(labels)),
        margin=dict(r=70),  # room for "95.0%" beyond a bar that reaches the axis's end
    )
    return plain.figure([bars], layout)


LAST_ROW_AXIS_PX = 900  # the key axis of a 1280 px export, less the margins and the colour bar


def last_row_figure(rows, key_labels: list[str], row_labels: list[str], *, title: str) -> dict:
    """What the last token attended to: one row per head, one column per key; weights in [0, 1]."""
    if not len(key_labels) or not len(row_labels):
        return nothing_to_draw(title, "no tokens" if not len(key_labels) else "no heads")
    keys, last = [safe_label(k) for k in key_labels], len(key_labels) - 1
    grid = dict(
        type="heatmap",
        z=rows,
        x=list(range(len(key_labels))),
        y=list(range(len(row_labels))),
        colorscale=plain.colorscale(SEQUENTIAL),
        zmin=0,
        zmax=1,
        colorbar=dict(title=dict(text="weight", side="right")),
        hoverongaps=False,
        name="last query",
        meta=dict(labels_meta(keys, None), keep=[None, last]),  # the print theme re-thins the ticks from these
    )
    layout = dict(
        title=plain.title(title),
        xaxis=dict(title=plain.title("key (attended to)"), **tick_axis(keys, max_ticks=ticks_for(LAST_ROW_AXIS_PX), keep=last)),
        yaxis=dict(tickmode="array", tickvals=list(range(len(row_labels))), ticktext=list(row_labels), autorange="reversed"),
        height=max(260, 90 + 26 * len(row_labels)),
    )
    return plain.figure([grid], layout)
