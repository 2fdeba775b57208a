"""Figures of what heads do: the grid of every head by badge, rollout, value norms, rankings, diffs.

Every function takes plain data (lists, arrays) and returns a figure dict (``viz.plain``).
"""

from __future__ import annotations

import numpy as np

from . import plain
from ._common import as_float32, check_labels, keeps_width, legend_below, nothing_to_draw
from .heatmap import MAX_HOVER_CELLS, attention_heatmap, heatmap_trace, matrix_axes
from .labels import position_labels, safe_label
from .theme import MASK_COLOR, PALETTE, SEQUENTIAL

# One colour per badge (Okabe & Ito); "mixed" stays a light grey so the named kinds stand out.
BADGE_COLORS = {
    "previous-token": PALETTE[0],
    "self": PALETTE[1],
    "first-token sink": PALETTE[5],
    "delimiter sink": PALETTE[3],
    "local": PALETTE[2],
    "broad": PALETTE[4],
    "mixed": "#d0d0d0",
}
BADGE_SHORT = {
    "previous-token": "prev",
    "self": "self",
    "first-token sink": "first",
    "delimiter sink": "delim",
    "local": "local",
    "broad": "broad",
    "mixed": "",
}


def head_grid_figure(badges: list[list[str]], hover: list[list[str]] | None = None, *, title: str, selected: tuple[int, int] | None = None) -> dict:
    """Every head as a square, layer down and head across, coloured by its badge.

    One trace per badge (so the legend names them); each point's ``customdata`` is ``[layer, head]``,
    which a click selection returns. ``hover`` holds one line of numbers per head.
    """
    n_layers = len(badges)
    n_heads = len(badges[0]) if n_layers else 0
    if not n_layers or not n_heads:
        return nothing_to_draw(title, "no heads")
    size = int(max(14, min(44, 560 / max(n_heads, n_layers))))
    data = []
    for name, colour in BADGE_COLORS.items():
        cells = [(layer, head) for layer in range(n_layers) for head in range(n_heads) if badges[layer][head] == name]
        if not cells:
            continue
        text = [hover[l][h] if hover else "" for l, h in cells]
        data.append(
            dict(
                type="scatter",
                x=[h for _, h in cells],
                y=[l for l, _ in cells],
                mode="markers+text" if size >= 30 else "markers",
                marker=dict(symbol="square", size=size, color=colour, line=dict(width=1, color="#555555")),
                text=[BADGE_SHORT[name]] * len(cells),
                textfont=dict(size=max(8, size // 4), color="black" if name in ("mixed", "broad", "self") else "white"),
                customdata=[[l, h, t] for (l, h), t in zip(cells, text)],
                hovertemplate=f"layer %{{customdata[0]}}, head %{{customdata[1]}}: {name}<br>%{{customdata[2]}}<extra></extra>",
                name=name,
            )
        )
    if selected is not None:
        data.append(
            dict(
                type="scatter",
                x=[selected[1]],
                y=[selected[0]],
                mode="markers",
                name="open",
                marker=dict(symbol="square-open", size=size + 8, color="black", line=dict(width=3)),
                hoverinfo="skip",
                showlegend=False,
            )
        )
    layout = dict(
        title=plain.title(title),
        xaxis=dict(title=plain.title("head"), tickmode="array", tickvals=list(range(n_heads)), range=[-0.6, n_heads - 0.4], showgrid=False, zeroline=False),
        yaxis=dict(title=plain.title("layer"), tickmode="array", tickvals=list(range(n_layers)), range=[n_layers - 0.4, -0.6], showgrid=False, zeroline=False),
        legend=legend_below((size + 12) * n_layers, title=dict(text="badge")),
        height=int(190 + (size + 12) * n_layers),
        margin=dict(t=60, b=130),
        clickmode="event+select",
        dragmode=False,
    )
    return plain.figure(data, layout)


def rollout_figure(matrix, tokens: list[str], *, title: str) -> dict:
    """Rollout ``[output token, input token]``: what each token of the last layer finally draws on."""
    values = as_float32(matrix, ndim=2, name="rollout")
    if values.size == 0:
        return nothing_to_draw(title, "no tokens")
    fig = attention_heatmap(values, tokens, tokens, title=title, colorbar_title="share", zmin=0)
    fig["layout"]["xaxis"]["title"] = plain.title("input token (drawn on)")  # the figure's own layout: a new dict
    fig["layout"]["yaxis"]["title"] = plain.title("output token (last layer)")
    return fig


def flow_figure(rollout_row, flow_row, tokens: list[str], *, title: str) -> dict:
    """Rollout and flow of one output token over the input tokens, as two bar series."""
    labels = position_labels(check_labels(tokens, len(tokens), "tokens"))
    if not labels:
        return nothing_to_draw(title, "no tokens")
    data = [dict(type="bar", x=list(range(len(labels))), y=[float(v) for v in rollout_row], name="rollout", marker=dict(color=PALETTE[0]))]
    if flow_row is not None:
        data.append(dict(type="bar", x=list(range(len(labels))), y=[float(v) for v in flow_row], name="flow", marker=dict(color=PALETTE[1])))
    layout = dict(
        title=plain.title(title),
        barmode="group",
        xaxis=dict(title=plain.title("input token"), tickmode="array", tickvals=list(range(len(labels))), ticktext=labels),
        yaxis=dict(title=plain.title("share")),
        height=380,
    )
    return plain.figure(data, layout)


def value_norm_figure(pattern, weighted, tokens: list[str], *, title: str, masked=None) -> dict:
    """α_ij (left) beside ‖α_ij·f(x_j)‖ (right) for one head; each panel has its own scale.

    Hover names both tokens up to MAX_HOVER_CELLS cells a panel, positions beyond (as on the Attention
    page: a text per cell was 2 × 262,144 strings at 512 tokens)."""
    alpha = as_float32(pattern, ndim=2, name="pattern")
    norms = as_float32(weighted, ndim=2, name="weighted")
    if alpha.size == 0:
        return nothing_to_draw(title, "no tokens")
    if masked is not None:
        alpha[np.asarray(masked, dtype=bool)] = np.nan
        norms[np.asarray(masked, dtype=bool)] = np.nan
    labels = position_labels(check_labels(tokens, alpha.shape[0], "tokens"))
    named = alpha.size <= MAX_HOVER_CELLS  # hover text names the tokens
    layout, cells = plain.subplots(1, 2, titles=("weight α_ij", "what is sent ‖α_ij · f(x_j)‖"), horizontal_spacing=0.14)
    weight = heatmap_trace(
        alpha,
        labels,
        labels,
        value_name="α",
        colorscale=SEQUENTIAL,
        zmin=0,
        zmax=1,
        colorbar=dict(title=dict(text="α"), x=0.43),
        name="weight",
        with_tokens=named,
    )
    data = [
        {**weight, **cells[1, 1]},
        {
            **heatmap_trace(
                norms,
                labels,
                labels,
                value_name="‖α·f(x)‖",
                colorscale=SEQUENTIAL,
                zmin=0,
                colorbar=dict(title=dict(text="norm"), x=1.0),
                name="value-weighted norm",
                with_tokens=named,
            ),
            **cells[1, 2],
        },
    ]
    n = alpha.shape[0]
    for col in (1, 2):
        xaxis, yaxis = matrix_axes(n, n, labels, labels, show_query_ticks=col == 1)
        layout["xaxis" if col == 1 else f"xaxis{col}"].update(xaxis)
        layout["yaxis" if col == 1 else f"yaxis{col}"].update(yaxis)
    layout.update(title=plain.title(title), plot_bgcolor=MASK_COLOR, height=520)
    return plain.figure(data, keeps_width(layout))


def key_totals_figure(weight_totals, norm_totals, tokens: list[str], *, title: str) -> dict:
    """Per key, the share of all weight it receives beside its share of all norm sent (both sum to 1)."""
    labels = position_labels(check_labels(tokens, len(tokens), "tokens"))
    if not labels:
        return nothing_to_draw(title, "no tokens")
    x = list(range(len(labels)))
    data = [
        dict(type="bar", x=x, y=[float(v) for v in weight_totals], name="share of weight α", marker=dict(color=PALETTE[0])),
        dict(type="bar", x=x, y=[float(v) for v in norm_totals], name="share of ‖α·f(x)‖", marker=dict(color=PALETTE[1])),
    ]
    layout = dict(
        title=plain.title(title),
        barmode="group",
        height=360,
        xaxis=dict(title=plain.title("key token"), tickmode="array", tickvals=x, ticktext=labels),
        yaxis=dict(title=plain.title("share"), rangemode="tozero"),
    )
    return plain.figure(data, layout)


def ranking_figure(labels: list[str], values, *, title: str, value_title: str) -> dict:
    """Horizontal bars, largest on top: heads ranked by a number (effect of ablation, change in a diff)."""
    if not labels:
        return nothing_to_draw(title, "no heads")
    values = [float(v) for v in values]
    bars = dict(
        type="bar",
        x=values,
        y=list(range(len(labels))),
        orientation="h",
        marker=dict(color=PALETTE[0]),
        customdata=list(labels),
        hovertemplate="%{customdata}: %{x:.4g}<extra></extra>",
        name=value_title,
    )
    layout = dict(
        title=plain.title(title),
        xaxis=dict(title=plain.title(value_title), rangemode="tozero"),
        yaxis=dict(tickmode="array", tickvals=list(range(len(labels))), ticktext=list(labels), autorange="reversed"),
        height=max(280, 80 + 24 * len(labels)),
    )
    return plain.figure([bars], layout)


def change_grid_figure(change, *, title: str, value_title: str) -> dict:
    """A number per head as a heatmap, layer down and head across (e.g. how far a head moved)."""
    values = as_float32(change, ndim=2, name="change")
    if values.size == 0:
        return nothing_to_draw(title, "no heads")
    n_layers, n_heads = values.shape
    grid = dict(
        type="heatmap",
        z=values,
        x=list(range(n_heads)),
        y=list(range(n_layers)),
        colorscale=plain.colorscale(SEQUENTIAL),
        zmin=0,
        colorbar=dict(title=dict(text=value_title)),
        name=value_title,
        hovertemplate="layer %{y}, head %{x}<br>" + value_title + ": %{z:.4g}<extra></extra>",
    )
    layout = dict(
        title=plain.title(title),
        xaxis=dict(title=plain.title("head"), tickmode="array", tickvals=list(range(n_heads))),
        yaxis=dict(title=plain.title("layer"), tickmode="array", tickvals=list(range(n_layers)), autorange="reversed"),
        height=int(180 + max(120, 34 * n_layers)),  # a plot at least 120 px high: room for the colour bar's ticks
    )
    return plain.figure([grid], layout)


def diff_figure(difference, tokens: list[str], *, title: str) -> dict:
    """α(b) − α(a) on the aligned tokens of two sentences, diverging around 0."""
    values = as_float32(difference, ndim=2, name="difference")
    if values.size == 0:
        return nothing_to_draw(title, "no aligned tokens")
    return attention_heatmap(values, tokens, tokens, title=title, colorbar_title="α(b) − α(a)", zmid=0, zmin=-1, zmax=1)


def distribution_change_figure(tokens: list[str], before, after, *, title: str) -> dict:
    """Probabilities of the same tokens before and after an ablation, as paired bars."""
    if not tokens:
        return nothing_to_draw(title, "no tokens")
    labels = [safe_label(t) for t in tokens]
    y = list(range(len(labels)))
    data = [
        dict(type="bar", x=[float(p) for p in before], y=y, orientation="h", name="model as trained", marker=dict(color=PALETTE[0])),
        dict(type="bar", x=[float(p) for p in after], y=y, orientation="h", name="heads knocked out", marker=dict(color=PALETTE[5])),
    ]
    layout = dict(
        title=plain.title(title),
        barmode="group",
        xaxis=dict(title=plain.title("probability"), range=[0, 1]),
        yaxis=dict(tickmode="array", tickvals=y, ticktext=labels, autorange="reversed"),
        height=max(300, 80 + 40 * len(labels)),
    )
    return plain.figure(data, layout)


def cosine_by_layer_figure(cosines, *, title: str) -> dict:
    """Cosine between a token's vector before and after a change, at the input and after each layer."""
    values = [float(c) for c in cosines]
    if not values:
        return nothing_to_draw(title, "no layers")
    line = dict(
        type="scatter",
        x=list(range(len(values))),
        y=values,
        mode="lines+markers",
        line=dict(color=PALETTE[5]),
        name="cosine",
        hovertemplate="after layer %{x}: %{y:.4f}<extra></extra>",
    )
    low = min(values)
    layout = dict(
        title=plain.title(title),
        xaxis=dict(title=plain.title("layers run (0 = the input)"), tickmode="array", tickvals=list(range(len(values)))),
        yaxis=dict(title=plain.title("cosine(before, after)"), range=[min(low - 0.02, 0.9), 1.01]),
        height=340,
    )
    return plain.figure([line], layout)
