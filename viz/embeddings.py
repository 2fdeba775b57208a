"""2-D maps of embedding vectors (after a projection such as PCA).

A *static* embedding is the row of the embedding table: "bank" has one
vector whatever the sentence. A *contextual* embedding is the hidden state
after some layers, so "bank" in "river bank" and in "bank account" ends up
in different places. ``projection_figure`` draws both, with an arrow from
each static point to its contextual versions; ``trajectory_figure`` follows
one token through the layers.

Both figures use equal axis scales: in a PCA projection a distance along
PC 1 means the same as along PC 2, and stretching one axis would lie.
"""

from __future__ import annotations

import plotly.graph_objects as go

from ._common import nothing_to_draw
from .labels import safe_label
from .placement import LABELLED, place_point_labels
from .theme import PALETTE, SCREEN_TEMPLATE

STEP_NAMES = {"static": "static embedding", "input": "model input (before layer 0)"}
SYMBOLS = ("circle", "diamond", "square", "triangle-up", "cross", "star")


def _equal_axes(fig: go.Figure, title: str) -> go.Figure:
    fig.update_layout(
        template=SCREEN_TEMPLATE,
        title=dict(text=title),
        xaxis=dict(title="PC 1", zeroline=False),
        yaxis=dict(title="PC 2", zeroline=False, scaleanchor="x", scaleratio=1),
        legend=dict(itemsizing="constant"),
    )
    return fig


def _series_key(point: dict) -> tuple[str, int | None]:
    sentence = point.get("sentence")
    return str(point.get("group", "")), None if sentence is None else int(sentence)


def projection_figure(points: list[dict], arrows: list[dict], *, title: str) -> go.Figure:
    """Labelled points in the PC 1 / PC 2 plane, with arrows between them.

    ``points``: dicts with ``label``, ``group`` (e.g. "static",
    "contextual", "reference"), ``sentence`` (int or None), ``x``, ``y``.
    Points sharing group and sentence form one legend entry. Colour tells
    sentences apart (points without a sentence are coloured by group), the
    marker shape tells groups apart, so the chart stays readable in
    greyscale and for colour-blind readers.

    ``arrows``: dicts ``{x0, y0, x1, y1, label}``, drawn from ``(x0, y0)``
    (e.g. the static vector) to ``(x1, y1)`` (its contextual version); the
    label shows on hover over the arrow's tail.
    """
    if not points:
        return nothing_to_draw(title, "the word occurs in none of the sentences")
    series: dict[tuple[str, int | None], list[dict]] = {}
    for point in points:
        series.setdefault(_series_key(point), []).append(point)

    colours: dict[tuple[str, object], str] = {}
    symbols: dict[str, str] = {}

    def colour_for(group: str, sentence: int | None) -> str:
        key = ("sentence", sentence) if sentence is not None else ("group", group)
        if key not in colours:
            colours[key] = PALETTE[len(colours) % len(PALETTE)]
        return colours[key]

    fig = go.Figure()
    for (group, sentence), members in series.items():
        symbol = symbols.setdefault(group, SYMBOLS[len(symbols) % len(SYMBOLS)])
        name = group if sentence is None else f"{group} · sentence {sentence + 1}"
        labels = [safe_label(p.get("label", "")) for p in members]
        fig.add_trace(
            go.Scatter(
                x=[float(p["x"]) for p in members],
                y=[float(p["y"]) for p in members],
                mode="markers+text",
                name=safe_label(name),
                text=labels,
                customdata=labels,
                textposition="top center",
                textfont=dict(size=12),
                marker=dict(size=11, symbol=symbol, color=colour_for(group, sentence), line=dict(width=1, color="white")),
                hovertemplate="%{customdata}<br>%{fullData.name}<br>(%{x:.3f}, %{y:.3f})<extra></extra>",
                meta=dict(role=LABELLED, labels=labels),
            )
        )

    for arrow in arrows:
        fig.add_annotation(
            x=float(arrow["x1"]),
            y=float(arrow["y1"]),
            ax=float(arrow["x0"]),
            ay=float(arrow["y0"]),
            xref="x",
            yref="y",
            axref="x",
            ayref="y",
            text="",
            hovertext=safe_label(arrow.get("label", "")),
            showarrow=True,
            arrowhead=2,
            arrowsize=1.2,
            arrowwidth=1.5,
            arrowcolor="#555555",
            standoff=7,
            startstandoff=7,
        )
    return place_point_labels(_equal_axes(fig, title))


def trajectory_figure(tracks: dict[str, list[tuple[float, float]]], *, title: str) -> go.Figure:
    """Paths of tokens through the layers, one line per token.

    ``tracks`` maps a label to its ``(x, y)`` points: the static embedding,
    the model input, then the output of each layer. Markers are named
    "static", "input", "L0", "L1", … (layers count from 0), so the reader can
    follow where in the network a token's meaning moves.
    """
    if not tracks:
        return nothing_to_draw(title, "the word occurs in none of the sentences")
    fig = go.Figure()
    for index, (label, points) in enumerate(tracks.items()):
        steps = ["static", "input", *(f"L{layer}" for layer in range(len(points) - 2))][: len(points)]
        name = safe_label(label)
        colour = PALETTE[index % len(PALETTE)]
        fig.add_trace(
            go.Scatter(
                x=[float(x) for x, _ in points],
                y=[float(y) for _, y in points],
                mode="lines+markers+text",
                name=name,
                text=steps,
                customdata=[STEP_NAMES.get(step, f"after layer {step[1:]}") for step in steps],
                textposition="top center",
                textfont=dict(size=11, color=colour),
                line=dict(color=colour, width=2),
                marker=dict(size=9, color=colour),
                hovertemplate="%{fullData.name}<br>%{customdata}<br>(%{x:.3f}, %{y:.3f})<extra></extra>",
                meta=dict(role=LABELLED, labels=steps),
            )
        )
    return place_point_labels(_equal_axes(fig, title))
