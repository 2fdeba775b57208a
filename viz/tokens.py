"""A token strip: what the tokenizer made of a text.

Each token is a box holding its text, with its vocabulary id underneath.
Box colour tells the kind of token apart:

* ``normal``: a whole word (or word with its leading space) in the vocabulary;
* ``special``: a marker the tokenizer adds, such as ``<|endoftext|>`` or ``[CLS]``;
* ``unknown``: text the vocabulary cannot represent (``[UNK]``);
* ``subword``: a piece of a word split into several tokens.

Spaces show as ``␣`` and invisible characters as escapes (see
``viz.labels.safe_label``), so the reader sees exactly what the model sees.
"""

from __future__ import annotations

import html


from . import plain
from ._common import DECORATION_META, nothing_to_draw
from .labels import safe_label

KINDS = {
    # kind: (legend name, colour from the Okabe-Ito palette)
    "normal": ("normal token", "#56B4E9"),
    "special": ("special token", "#E69F00"),
    "unknown": ("unknown token", "#D55E00"),
    "subword": ("subword piece", "#009E73"),
}

ROW_HEIGHT = 2.4  # data units between the centres of two rows of boxes
BOX_PADDING = 1.0  # data units added to the text width of a box
MONO_PX_PER_CHAR = 9.2  # a character of the boxes' 15 px monospace font: a data unit needs this many pixels
GAP = 0.4  # data units between two boxes


def _fill(colour: str, alpha: float = 0.28) -> str:
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"


def _layout_boxes(labels: list[str], row_width: float) -> list[tuple[float, float, float]]:
    """(left, right, centre_y) of every box, wrapping rows at ``row_width``."""
    boxes = []
    x, row = 0.0, 0
    for label in labels:
        width = max(len(html.unescape(label)), 1) + BOX_PADDING
        if x > 0 and x + width > row_width:
            x, row = 0.0, row + 1
        boxes.append((x, x + width, -row * ROW_HEIGHT))
        x += width + GAP
    return boxes


def tokens_figure(
    rows: list[dict], *, row_width: float = 60.0, title: str = "Tokens", kinds: dict[str, tuple[str, str]] = KINDS, column: str = "kind", bold=()
) -> dict:
    """Draw a token sequence as coloured boxes with ids underneath.

    ``rows``: one dict per token, ``{"text": str, "id": int, "kind": str}``; ``kinds`` names each kind
    and gives its colour (the tokenizer's kinds by default; the table's column for it is ``column``).
    The kinds in ``bold`` are drawn with a thicker outline and bold text (the token written at a step).
    The legend names the kinds present (click to hide one). Long sequences
    wrap after about ``row_width`` characters.
    """
    unknown_kinds = sorted({str(r.get("kind")) for r in rows} - kinds.keys())
    if unknown_kinds:
        raise ValueError(f"unknown token kinds {unknown_kinds}; expected one of {list(kinds)}")
    if not rows:
        return nothing_to_draw(title, "no tokens")
    labels = [safe_label(r.get("text", ""), visible_spaces=True) for r in rows]
    ids = ["–" if r.get("id") is None else str(r["id"]) for r in rows]
    boxes = _layout_boxes(labels, row_width)

    data = []
    for kind, (name, colour) in kinds.items():
        members = [i for i, r in enumerate(rows) if r["kind"] == kind]
        if not members:
            continue
        strong = kind in bold
        xs: list[float | None] = []
        ys: list[float | None] = []
        for i in members:
            left, right, centre = boxes[i]
            xs += [left, right, right, left, left, None]
            ys += [centre - 0.6, centre - 0.6, centre + 0.6, centre + 0.6, centre - 0.6, None]
        data.append(
            dict(
                type="scatter",
                x=xs,
                y=ys,
                mode="lines",
                fill="toself",
                fillcolor=_fill(colour, 0.45 if strong else 0.28),
                line=dict(color=colour, width=4 if strong else 2),
                name=name,
                legendgroup=kind,
                hoverinfo="skip",
                meta=dict(DECORATION_META),
            )
        )
        data.append(
            dict(
                type="scatter",
                x=[(boxes[i][0] + boxes[i][1]) / 2 for i in members],
                y=[boxes[i][2] for i in members],
                mode="text",
                text=[f"<b>{labels[i]}</b>" if strong else labels[i] for i in members],
                textfont=dict(family="monospace", size=15, color="black"),
                hovertext=[f"position {i}: {labels[i]}<br>id {ids[i]}<br>{name}" for i in members],
                hovertemplate="%{hovertext}<extra></extra>",
                name=f"{name}: text",
                legendgroup=kind,
                showlegend=False,
            )
        )
        data.append(
            dict(
                type="scatter",
                x=[(boxes[i][0] + boxes[i][1]) / 2 for i in members],
                y=[boxes[i][2] - 1.05 for i in members],
                mode="text",
                text=[ids[i] for i in members],
                textfont=dict(family="monospace", size=11, color="#444444"),
                hoverinfo="skip",
                name=f"{name}: id",
                legendgroup=kind,
                showlegend=False,
            )
        )

    n_rows = 1 + int(round(-min((b[2] for b in boxes), default=0.0) / ROW_HEIGHT))
    right = max((b[1] for b in boxes), default=row_width)
    layout = dict(
        title=plain.title(title),
        xaxis=dict(visible=False, range=[-0.5, max(right, row_width) + 0.5]),
        yaxis=dict(visible=False, range=[-(n_rows - 1) * ROW_HEIGHT - 1.5, 0.9]),
        height=120 + 75 * n_rows,
        legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="left", x=0.0),
        margin=dict(l=10, r=10, t=80, b=10),
        meta=dict(
            min_width=int((max(right, row_width) + 1) * MONO_PX_PER_CHAR) + 20,  # narrower, the text would leave its box: scroll instead
            table=dict(
                columns=["position", "token", "id", column],
                rows=[[i, str(r.get("text", "")), r.get("id"), r["kind"]] for i, r in enumerate(rows)],
            ),
        ),
    )
    return plain.figure(data, layout)
