"""Figures of one head over a corpus: its strongest examples in their sentences, its weight by offset,
its shares and badges with their spread over sentences.

Every function takes plain data (lists, numbers) and returns a ``go.Figure``; nothing here reads a model.
"""

from __future__ import annotations

import unicodedata

import plotly.graph_objects as go

from . import plain
from ._common import nothing_to_draw
from .heads import BADGE_COLORS
from .labels import safe_label
from .theme import PALETTE

QUERY_COLOR = PALETTE[0]  # blue: the token that reads
KEY_COLOR = PALETTE[5]  # vermillion: the token it reads
CONTEXT = 6  # tokens shown on each side of the query and the key
SERIES_COLORS = (PALETTE[0], PALETTE[1])  # a head, and the head it is compared with


def joined(tokens: list[str]) -> list[str]:
    """Tokens as pieces of running text: kept as they are when the tokenizer writes its own spaces (BPE);
    otherwise (WordPiece) a space before each token but a word-piece's "##" (glued to the word before) and
    punctuation (glued to what it follows)."""
    spaced = any(t[:1] in (" ", "▁", "Ġ") for t in tokens)
    out = []
    for i, token in enumerate(tokens):
        if spaced:
            out.append(token.replace("▁", " ").replace("Ġ", " "))
        elif token.startswith("##"):
            out.append(token[2:])
        elif i == 0 or all(unicodedata.category(c).startswith("P") for c in token):
            out.append(token)
        else:
            out.append(" " + token)
    return out


def context_positions(n: int, query: int, key: int, context: int = CONTEXT) -> list[int | None]:
    """The positions shown around a query and its key; None where positions are left out (…)."""
    low, high = min(query, key), max(query, key)
    if high - low <= 2 * context + 1:
        shown = list(range(max(0, low - context), min(n, high + context + 1)))
    else:
        shown = list(range(max(0, low - context), low + context + 1)) + [None] + list(range(high - context, min(n, high + context + 1)))
    if shown and shown[0] not in (0, None):
        shown = [None, *shown]
    if shown and shown[-1] is not None and shown[-1] < n - 1:
        shown = [*shown, None]
    return shown


def marked_text(tokens: list[str], query: int, key: int, *, markup: bool, context: int = CONTEXT) -> str:
    """The sentence around the query and its key, the query in [brackets] and the key in «guillemets» (plain
    text), or coloured and bold (plotly markup, every token escaped)."""
    pieces = joined(tokens)
    out = []
    for position in context_positions(len(tokens), query, key, context):
        if position is None:
            out.append(" …")
            continue
        piece = pieces[position]
        lead = piece[: len(piece) - len(piece.lstrip(" "))]
        core = piece.lstrip(" ") or piece
        if markup:
            core = safe_label(core)
            if position == key:
                core = f"<b><span style='color:{KEY_COLOR}'>{core}</span></b>"
            if position == query:
                core = (
                    f"<b><span style='color:{QUERY_COLOR}'>[{core}]</span></b>"
                    if position != key
                    else f"<b><span style='color:{QUERY_COLOR}'>[</span>{core}<span style='color:{QUERY_COLOR}'>]</span></b>"
                )
        else:
            if position == key:
                core = f"«{core}»"
            if position == query:
                core = f"[{core}]"
        out.append(lead + core)
    return "".join(out).strip()


def top_examples_figure(examples: list[dict], *, title: str) -> go.Figure:
    """The strongest query → key pairs, one row each: the weight as a bar, the sentence beside it with the query
    [in blue] and the key in vermillion. Each example is a dict with `rank`, `weight`, `tokens`, `query`, `key`;
    `customdata` holds `[rank, sentence, query, key]` (plus `sentence` when given) for a click."""
    if not examples:
        return nothing_to_draw(title, "no examples")
    ranks = [e["rank"] for e in examples]
    weights = [float(e["weight"]) for e in examples]
    bars = dict(
        type="bar",
        x=weights,
        y=ranks,
        orientation="h",
        marker=dict(color=KEY_COLOR),
        text=[f"{w:.3f}" for w in weights],
        textposition="inside",
        insidetextanchor="end",
        textfont=dict(color="white"),
        customdata=[[e["rank"], e.get("sentence", -1), e["query"], e["key"]] for e in examples],
        hovertemplate="example %{customdata[0]}: sentence %{customdata[1]}, query %{customdata[2]} → key %{customdata[3]}, weight %{x:.4f}<extra></extra>",
        name="weight",
        showlegend=False,
    )
    annotations = [
        dict(
            x=0.0,
            y=rank,
            xref="x2 domain",
            yref="y",
            xanchor="left",
            showarrow=False,
            align="left",
            text=marked_text(e["tokens"], e["query"], e["key"], markup=True),
            font=dict(size=13),
        )
        for rank, e in zip(ranks, examples)
    ]
    annotations.append(
        dict(
            x=0.0,
            y=1.0,
            xref="x2 domain",
            yref="paper",
            xanchor="left",
            yanchor="bottom",
            showarrow=False,
            text=f"<span style='color:{QUERY_COLOR}'><b>[query]</b></span> gives the weight to the <span style='color:{KEY_COLOR}'><b>key</b></span>",
            font=dict(size=13),
        )
    )
    layout = dict(
        title=plain.title(title),
        xaxis=dict(domain=[0, 0.14], range=[0, 1], title=plain.title("weight"), tickvals=[0, 0.5, 1]),
        xaxis2=dict(domain=[0.16, 1], visible=False, range=[0, 1]),
        yaxis=dict(autorange="reversed", tickmode="array", tickvals=ranks, ticktext=[f"#{r}" for r in ranks], title=plain.title("rank")),
        annotations=annotations,
        height=int(110 + 30 * len(examples)),
        margin=dict(l=60, r=20, t=60, b=50),
    )
    # an invisible trace on the second x axis keeps that axis (where the sentences are written) laid out
    anchor = dict(type="scatter", x=[0, 1], y=[ranks[0], ranks[0]], xaxis="x2", mode="markers", marker=dict(opacity=0), hoverinfo="skip", showlegend=False)
    return plain.figure([bars, anchor], layout)


def spread_bars_figure(labels: list[str], series: list[dict], *, title: str, x_title: str, y_title: str, y_max: float | None = 1.0) -> go.Figure:
    """Bars of a mean per label with whiskers over the sentences' spread, for one head or two side by side.

    Each series is a dict with `name`, `mean`, `low`, `high` (lists along `labels`; None where there is no value).
    """
    if not labels or not series:
        return nothing_to_draw(title, "no values")
    data = []
    for i, s in enumerate(series):
        colour = s.get("color", SERIES_COLORS[i % len(SERIES_COLORS)])
        mean = [None if v is None else float(v) for v in s["mean"]]
        plus = [None if v is None or h is None else max(float(h) - v, 0.0) for v, h in zip(mean, s["high"])]
        minus = [None if v is None or lo is None else max(v - float(lo), 0.0) for v, lo in zip(mean, s["low"])]
        data.append(
            dict(
                type="bar",
                x=list(labels),
                y=mean,
                name=s["name"],
                marker=dict(color=colour),
                error_y=dict(type="data", array=plus, arrayminus=minus, symmetric=False, color="#333333", thickness=1.5, width=4),
                customdata=[[lo, hi] for lo, hi in zip(s["low"], s["high"])],
                hovertemplate=f"{s['name']}<br>%{{x}}: mean %{{y:.3f}}<br>sentences from %{{customdata[0]:.3f}} to %{{customdata[1]:.3f}}<extra></extra>",
            )
        )
    layout = dict(
        title=plain.title(title),
        barmode="group",
        xaxis=dict(title=plain.title(x_title), type="category"),
        yaxis=dict(title=plain.title(y_title), range=[0, y_max] if y_max is not None else None, rangemode="tozero"),
        legend=dict(orientation="h", y=-0.25),
        height=400,
    )
    return plain.figure(data, layout)


def badge_shares_figure(badges: list[str], series: list[dict], *, title: str) -> go.Figure:
    """The share of sentences on which a head gets each badge: one bar per badge (two heads: grouped).

    Each series is a dict with `name` and `shares` (along `badges`). One head: bars in the badges' colours.
    """
    if not badges or not series:
        return nothing_to_draw(title, "no badges")
    data = []
    for i, s in enumerate(series):
        colours = [BADGE_COLORS.get(b, PALETTE[7]) for b in badges] if len(series) == 1 else SERIES_COLORS[i % len(SERIES_COLORS)]
        data.append(
            dict(
                type="bar",
                x=[float(v) for v in s["shares"]],
                y=list(badges),
                orientation="h",
                name=s["name"],
                marker=dict(color=colours, line=dict(color="#555555", width=1)),
                text=[f"{v:.0%}" if v > 0 else "" for v in s["shares"]],
                textposition="outside",
                hovertemplate=f"{s['name']}<br>%{{y}}: %{{x:.1%}} of the sentences<extra></extra>",
            )
        )
    layout = dict(
        title=plain.title(title),
        barmode="group",
        xaxis=dict(title=plain.title("share of sentences"), range=[0, 1.12], tickformat=".0%"),
        yaxis=dict(autorange="reversed", type="category"),
        showlegend=len(series) > 1,
        legend=dict(orientation="h", y=-0.2),
        height=int(140 + 34 * len(badges) * max(1, len(series) * 0.7)),
    )
    return plain.figure(data, layout)


def _grid_layout(n_layers: int, n_heads: int, title: str) -> dict:
    # a cell small enough that the grid and its legend (170 px) fit the page's column of about 950 px
    cell = int(max(26, min(64, 500 / max(n_heads, 1), 640 / max(n_layers, 1))))
    return dict(
        title=plain.title(title),
        xaxis=dict(title=plain.title("head"), tickmode="array", tickvals=list(range(n_heads)), range=[-0.5, n_heads - 0.5], constrain="domain"),
        yaxis=dict(
            title=plain.title("layer"),
            tickmode="array",
            tickvals=list(range(n_layers)),
            range=[n_layers - 0.5, -0.5],
            scaleanchor="x",
            scaleratio=1,
            constrain="domain",
        ),
        height=int(max(320, 170 + cell * n_layers)),
        width=int(max(560, 260 + cell * n_heads)),
        margin=dict(l=70, r=30, t=70, b=60),
    )


def badge_grid_figure(badges: list[list[str]], shares, hover: list[list[str]] | None = None, *, title: str) -> go.Figure:
    """Every head as a square (layer down, head across) in the colour of the badge it gets most often, with
    the share of sentences written in it (paler when the share is lower). `customdata` is `[layer, head, …]`."""
    n_layers = len(badges)
    n_heads = len(badges[0]) if n_layers else 0
    if not n_layers or not n_heads:
        return nothing_to_draw(title, "no heads")
    layout = _grid_layout(n_layers, n_heads, title)
    size = int(0.8 * (layout["height"] - 130) / n_layers)
    size = min(size, int(0.8 * (layout["width"] - 100) / n_heads))
    data = []
    for name, colour in BADGE_COLORS.items():
        cells = [(l, h) for l in range(n_layers) for h in range(n_heads) if badges[l][h] == name]
        if not cells:
            continue
        data.append(
            dict(
                type="scatter",
                x=[h for _, h in cells],
                y=[l for l, _ in cells],
                mode="markers+text",
                marker=dict(
                    symbol="square",
                    size=size,
                    color=colour,
                    opacity=[0.35 + 0.65 * float(shares[l][h]) for l, h in cells],
                    line=dict(width=1, color="#555555"),
                ),
                text=[f"{float(shares[l][h]):.0%}" for l, h in cells] if size >= 22 else None,
                textfont=dict(size=max(8, min(14, size // 3)), color="black"),
                customdata=[[l, h, hover[l][h] if hover else ""] for l, h in cells],
                hovertemplate=f"layer %{{customdata[0]}}, head %{{customdata[1]}}: {name}<br>%{{customdata[2]}}<extra></extra>",
                name=name,
                showlegend=True,
            )
        )
    layout["legend"] = dict(title=dict(text="most common badge"), orientation="v", x=1.02, y=1)
    layout["width"] = layout["width"] + 170
    return plain.figure(data, layout)


def statistic_grid_figure(values, *, title: str, value_title: str, zmax: float | None = 1.0, percent: bool = True) -> go.Figure:
    """A number per head (layer down, head across) as a heatmap with the number written in each cell."""
    import numpy as np

    from ._common import as_float32
    from .theme import SEQUENTIAL

    z = as_float32(values, ndim=2, name="values")
    if z.size == 0:
        return nothing_to_draw(title, "no heads")
    n_layers, n_heads = z.shape
    top = float(np.nanmax(z)) if zmax is None else zmax
    text = [[(f"{v:.0%}" if percent else f"{v:.2f}") for v in row] for row in z.tolist()]
    cells = dict(
        type="heatmap",
        z=z,
        x=list(range(n_heads)),
        y=list(range(n_layers)),
        colorscale=plain.colorscale(SEQUENTIAL),
        zmin=0,
        zmax=top,
        text=text,
        texttemplate="%{text}" if n_heads <= 16 else None,
        textfont=dict(size=11),
        colorbar=dict(title=dict(text=value_title, side="right"), len=0.9),  # upright: a long name stays off the ticks
        hovertemplate="layer %{y}, head %{x}<br>" + value_title + ": %{z:.4g}<extra></extra>",
        name=value_title,
    )
    return plain.figure([cells], _grid_layout(n_layers, n_heads, title))
