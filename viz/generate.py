"""Figures of generation, one step at a time: the text written so far, the pick, and the cache it read.

Each takes plain data (lists, numpy arrays) and returns a figure; nothing here knows a model.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from . import plain
from ._common import nothing_to_draw
from .labels import safe_label, tick_axis
from .theme import DIVERGING, MASK_COLOR, PALETTE

ROLES = {
    # role: (legend name, colour from the Okabe-Ito palette)
    "prompt": ("prompt", PALETTE[4]),
    "written": ("written", PALETTE[1]),
    "new": ("new at this step", PALETTE[5]),
}


STRIP_ROW_WIDTH = 40  # characters in a row of the token strip: a phone's column shows most labels at 10 px or more
STRIP_FONT_PX, STRIP_MIN_FONT_PX = 15, 10  # a label's size where its box allows, and the smallest shown


def written_strip(tokens: list[str], ids: list[int], n_prompt: int, *, title: str, row_width: float = STRIP_ROW_WIDTH) -> dict:
    """The prompt's tokens, then the tokens written so far, the last one marked as this step's new token:
    a box per token, wrapped into rows of about `row_width` characters, holding its text (spaces as ␣)
    and its id underneath.

    The boxes are horizontal bars and the labels their text inside (`textposition="inside"`), so a label
    never leaves its box: plotly.js sizes every label to the narrowest box the screen gives (at most
    STRIP_FONT_PX), and hides a label that would be smaller than STRIP_MIN_FONT_PX (`uniformtext`); the
    hover names every token. On a phone the boxes are narrow: some long tokens show only on hover."""
    labels = [safe_label(t, visible_spaces=True) for t in tokens]
    roles = ["prompt" if i < n_prompt else "written" for i in range(len(tokens))]
    if len(tokens) > n_prompt:
        roles[-1] = "new"
    boxes, x, row = [], 0.0, 0  # (left, width, row) of each box
    for label in labels:
        width = max(len(html.unescape(label)), 2) + 1.0  # room for the id under a one-character token
        if x > 0 and x + width > row_width:
            x, row = 0.0, row + 1
        boxes.append((x, width, row))
        x += width + 0.4
    data = []
    for role, (name, colour) in ROLES.items():
        members = [i for i, r in enumerate(roles) if r == role]
        if not members:
            continue
        strong = role == "new"
        red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
        data.append(
            dict(
                type="bar",
                orientation="h",
                base=[boxes[i][0] for i in members],
                x=[boxes[i][1] for i in members],
                y=[boxes[i][2] for i in members],
                width=0.8,
                marker=dict(color=f"rgba({red},{green},{blue},{0.45 if strong else 0.28})", line=dict(color=colour, width=4 if strong else 2)),
                text=[f"{'<b>' + labels[i] + '</b>' if strong else labels[i]}<br><span style='font-size:0.7em;fill:#444444'>{ids[i]}</span>" for i in members],
                textposition="inside",
                insidetextanchor="middle",
                textangle=0,
                textfont=dict(family="monospace", size=STRIP_FONT_PX, color="black"),
                hovertext=[f"position {i}: {labels[i]}<br>id {ids[i]}<br>{name}" for i in members],
                hovertemplate="%{hovertext}<extra></extra>",
                name=name,
            )
        )
    n_rows = boxes[-1][2] + 1 if boxes else 1
    layout = dict(
        title=plain.title(title),
        barmode="overlay",
        uniformtext=dict(mode="hide", minsize=STRIP_MIN_FONT_PX),
        xaxis=dict(visible=False, range=[-0.5, row_width + 0.5], fixedrange=True),
        yaxis=dict(visible=False, range=[n_rows - 0.5, -0.5], fixedrange=True),
        height=110 + 52 * n_rows,
        legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="left", x=0.0),
        margin=dict(l=10, r=10, t=80, b=10),
        meta=dict(table=dict(columns=["position", "token", "id", "role"], rows=[[i, t, int(d), r] for i, (t, d, r) in enumerate(zip(tokens, ids, roles))])),
    )
    return plain.figure(data, layout)


def percent(p: float) -> str:
    """12.3%, or two significant digits below 0.1% (0.0031%), so that a small probability does not read as 0."""
    return f"{p:.1%}" if p >= 0.001 or p == 0 else f"{p:.2g}".replace("e-0", "e-")


def candidates_figure(tokens: list[str], probabilities: list[float], kept: list[bool], chosen: int | None, *, title: str) -> go.Figure:
    """The most likely next tokens as horizontal bars, most likely on top: the tokens the cut kept in colour,
    the ones it removed in grey, the one written outlined, its name in bold and its own legend entry ("written");
    each bar's text is its probability only, so that it fits beside the bar on a phone. `chosen` is its index
    in the list (None when it is not among them)."""
    if not tokens:
        return nothing_to_draw(title, "no tokens")
    labels = [safe_label(t) for t in tokens]
    rows = list(range(len(labels)))
    data = []
    groups = (
        ("written", [chosen] if chosen is not None else [], PALETTE[0] if chosen is not None and kept[chosen] else MASK_COLOR, PALETTE[5]),
        ("kept by the cut", [i for i in rows if kept[i] and i != chosen], PALETTE[0], None),
        ("removed by the cut", [i for i in rows if not kept[i] and i != chosen], MASK_COLOR, None),
    )
    for name, members, colour, outline in groups:
        if not members:
            continue
        data.append(
            dict(
                type="bar",
                x=[float(probabilities[i]) for i in members],
                y=members,
                orientation="h",
                marker=dict(color=colour, line=dict(color=outline or colour, width=3 if outline else 0)),
                text=[percent(probabilities[i]) for i in members],
                textposition="outside",
                customdata=[labels[i] for i in members],
                hovertemplate="%{customdata}: %{x:.4f}<extra></extra>",
                name=name,
            )
        )
    right = max(float(max(probabilities)), 1e-9) * 1.35  # room for the text after the longest bar
    layout = dict(
        title=plain.title(title),
        barmode="overlay",
        xaxis=dict(
            title=plain.title("probability (before the cut)"),
            range=[0, right],
            tickmode="array",
            tickvals=[t for t in np.linspace(0, 1, 11) if t <= right],
            tickformat=".0%",
        ),
        yaxis=dict(
            title=plain.title("next token"),
            tickmode="array",
            tickvals=rows,
            ticktext=[f"<b>{label}</b>" if i == chosen else label for i, label in enumerate(labels)],
            autorange="reversed",
        ),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="left", x=0.0),
        height=max(300, 110 + 28 * len(labels)),
        margin=dict(t=90),
    )
    return plain.figure(data, layout)


def cache_growth_figure(
    n_tokens: list[int], n_bytes: list[int], *, current: int, title: str, bytes_per_head_each: list[int] | None = None, group_size: int = 1
) -> go.Figure:
    """The cache's size in bytes against the tokens it holds, one point per step, the current step marked.

    `bytes_per_head_each`: what one key/value head per query head would take (a dashed line), for a model
    whose query heads share cached heads (`group_size` of them each)."""
    if not n_tokens:
        return nothing_to_draw(title, "no steps")
    kib = [b / 1024 for b in n_bytes]
    data = []
    if bytes_per_head_each is not None:
        data.append(
            dict(
                type="scatter",
                x=list(n_tokens),
                y=[b / 1024 for b in bytes_per_head_each],
                mode="lines",
                line=dict(color=MASK_COLOR, dash="dash", width=2),
                name=f"one K/V head per query head (×{group_size})",
                hovertemplate="%{x} tokens: %{y:,.1f} KiB<extra></extra>",
            )
        )
    for name, part, opacity in (("the cache (keys and values)", slice(0, current + 1), 1.0), ("later steps", slice(current, None), 0.3)):
        if len(n_tokens[part]) < (1 if opacity == 1.0 else 2):
            continue
        data.append(
            dict(
                type="scatter",
                x=list(n_tokens[part]),
                y=kib[part],
                mode="lines+markers",
                line=dict(color=PALETTE[0], width=2),
                marker=dict(size=6),
                opacity=opacity,
                name=name,
                hovertemplate="%{x} tokens: %{y:,.1f} KiB<extra></extra>",
            )
        )
    data.append(
        dict(
            type="scatter",
            x=[n_tokens[current]],
            y=[kib[current]],
            mode="markers+text",
            marker=dict(size=13, color=PALETTE[5], symbol="circle-open", line=dict(width=3)),
            text=[f"{n_bytes[current]:,} B"],
            textposition="top left",
            name="this step",
            hovertemplate="%{x} tokens: %{y:,.1f} KiB<extra></extra>",
        )
    )
    top = max(kib + ([b / 1024 for b in bytes_per_head_each] if bytes_per_head_each else []))
    layout = dict(
        title=plain.title(title),
        xaxis=dict(title=plain.title("tokens in the cache"), rangemode="tozero", ticklabelstandoff=4),
        yaxis=dict(title=plain.title("KiB"), range=[0, top * 1.15], tickformat=",.0f", ticklabelstandoff=6),  # the 0s apart at the corner
        legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="left", x=0.0),
        height=380,
        margin=dict(t=90),
    )
    return plain.figure(data, layout)


def cache_rows_figure(keys: np.ndarray, labels: list[str], *, new_rows: int, title: str, group_names: list[str] | None = None) -> go.Figure:
    """One layer's cached keys (or values) as a grid: a row per token so far, the columns each cached head's
    d_head numbers side by side; the rows this step added are outlined.

    keys: `[n_kv_heads, n_tokens, d_head]`."""
    if keys.size == 0:
        return nothing_to_draw(title, "empty cache")
    n_kv, n_tokens, d_head = keys.shape
    grid = np.asarray(keys, dtype=np.float32).transpose(1, 0, 2).reshape(n_tokens, n_kv * d_head)  # [n_tokens, n_kv · d_head]
    bound = float(np.abs(grid).max()) or 1.0
    names = group_names or [f"K/V head {g}" for g in range(n_kv)]
    shown = [safe_label(label) for label in labels]
    heat = dict(
        type="heatmap",
        z=grid,
        colorscale=plain.colorscale(DIVERGING),
        zmin=-bound,
        zmid=0,
        zmax=bound,
        colorbar=dict(title=dict(text="value", side="right")),
        hovertemplate="row %{y}<br>column %{x}: %{z:.3f}<extra></extra>",
        name="cache",
    )
    shapes = [
        dict(type="line", x0=g * d_head - 0.5, x1=g * d_head - 0.5, y0=-0.5, y1=n_tokens - 0.5, line=dict(color="black", width=2)) for g in range(1, n_kv)
    ]
    shapes.append(dict(type="rect", x0=-0.5, x1=n_kv * d_head - 0.5, y0=n_tokens - new_rows - 0.5, y1=n_tokens - 0.5, line=dict(color=PALETTE[5], width=3)))
    layout = dict(
        title=plain.title(title),
        xaxis=dict(
            title=plain.title("d_head of each cached head"),
            tickmode="array",
            tickvals=[g * d_head + (d_head - 1) / 2 for g in range(n_kv)],
            ticktext=names,
        ),
        yaxis=dict(title=plain.title("token (row)"), autorange="reversed", **tick_axis(shown, max_ticks=30, keep=n_tokens - 1)),
        shapes=shapes,
        height=max(320, min(900, 140 + 14 * n_tokens)),
    )
    return plain.figure([heat], layout)
