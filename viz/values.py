"""After the softmax: the value step of attention.

For each head, ``z = pattern · V``: every query row of z is the pattern's weighted average of the
value vectors of the keys. The heads' z are then laid side by side (concatenated) and multiplied by
the output projection, ``output = [z_0 | z_1 | … ] · W_O + b_O``, which is what the layer adds to
the residual stream.
"""

from __future__ import annotations

import numpy as np

from . import plain
from ._common import as_float32, check_labels, finite_range, keeps_width, nothing_to_draw
from .heatmap import MAX_HOVER_CELLS, heatmap_trace, weight_scale
from .labels import position_labels, tick_axis, ticks_for
from .theme import DIVERGING, MASK_COLOR, SEQUENTIAL

VALUE_HEIGHT = 520


def _feature_axis(n: int, name: str) -> dict:
    """A numbered axis of vector components (d_head, d_model), a few ticks only."""
    step = max(1, int(np.ceil(n / 8)))
    return dict(
        title=plain.title(name),
        tickmode="array",
        tickvals=list(range(0, n, step)),
        ticktext=[str(i) for i in range(0, n, step)],
        showgrid=False,
        zeroline=False,
        range=[-0.5, n - 0.5],
        automargin=True,
    )


def _token_axis(labels: list[str], *, title: str | None, reversed_: bool, max_ticks: int, keep=None) -> dict:
    n = len(labels)
    axis = dict(
        showgrid=False,
        zeroline=False,
        automargin=True,
        range=[n - 0.5, -0.5] if reversed_ else [-0.5, n - 0.5],
        **tick_axis(labels, max_ticks=max_ticks, keep=keep),
    )
    if title:
        axis["title"] = plain.title(title)
    return axis


def value_step_figure(
    pattern,
    v,
    z,
    labels,
    *,
    layer: int | None = None,
    head: int | None = None,
    masked=None,
    title: str,
    pattern_colour: str = "fixed",
) -> dict:
    """``pattern · V = z`` for one head, as three heatmaps side by side.

    ``pattern`` is ``[query_pos, key_pos]``, ``v`` is ``[key_pos, d_head]``, ``z`` is
    ``[query_pos, d_head]``. V and z share one diverging colour scale, so a value that is carried
    through keeps its colour; the pattern has its weight scale.
    """
    weights = as_float32(pattern, ndim=2, name="pattern")
    values = as_float32(v, ndim=2, name="v")
    out = as_float32(z, ndim=2, name="z")
    if weights.size == 0:
        return nothing_to_draw(title, "no tokens")
    n_query, n_key = weights.shape
    if values.shape[0] != n_key or out.shape != (n_query, values.shape[1]):
        raise ValueError(f"shapes do not chain: pattern {weights.shape} · V {values.shape} = z {out.shape}")
    if masked is not None:
        weights[np.asarray(masked, dtype=bool)] = np.nan
    names = position_labels(check_labels(labels, n_query, "labels"))
    d_head = values.shape[1]
    low, high = finite_range(values, out, symmetric=True)
    w_low, w_high, w_title = weight_scale(weights, colour=pattern_colour)
    cells = dict(layer=layer, head=head)

    layout, cell = plain.subplots(
        1,
        3,
        titles=["attention pattern", "· V (a row per key)", "= z (a row per query)"],
        column_widths=[0.4, 0.3, 0.3],
        horizontal_spacing=0.08,
    )
    for annotation in layout["annotations"]:
        annotation["yshift"] = 8
    # hover names both tokens up to MAX_HOVER_CELLS cells a panel, positions beyond (a text per cell: 14 MB at 512 tokens)
    pattern = heatmap_trace(
        weights,
        names,
        names,
        value_name="weight",
        coloraxis="coloraxis2",
        name="pattern",
        cells=dict(stage="pattern", **cells),
        with_tokens=weights.size <= MAX_HOVER_CELLS,
    )
    components = [str(i) for i in range(d_head)]
    small = values.size <= MAX_HOVER_CELLS
    data = [
        {**pattern, **cell[1, 1]},
        {**heatmap_trace(values, names, components, value_name="value", coloraxis="coloraxis", name="V", with_tokens=small), **cell[1, 2]},
        {**heatmap_trace(out, names, components, value_name="z", coloraxis="coloraxis", name="z", with_tokens=small), **cell[1, 3]},
    ]
    ticks = ticks_for(VALUE_HEIGHT - 220)
    layout["xaxis"].update(_token_axis(names, title="key", reversed_=False, max_ticks=ticks) | dict(tickangle=-90))
    layout["yaxis"].update(_token_axis(names, title="query", reversed_=True, max_ticks=ticks))
    layout["xaxis2"].update(_feature_axis(d_head, "d_head"))
    layout["yaxis2"].update(_token_axis(names, title=None, reversed_=True, max_ticks=ticks))
    layout["xaxis3"].update(_feature_axis(d_head, "d_head"))
    layout["yaxis3"].update(_token_axis(names, title=None, reversed_=True, max_ticks=ticks) | dict(showticklabels=False))
    layout.update(
        title=plain.title(title),
        plot_bgcolor=MASK_COLOR,
        height=VALUE_HEIGHT,
        coloraxis=dict(
            colorscale=plain.colorscale(DIVERGING),
            cmin=low,
            cmax=high,
            cmid=0.0,
            colorbar=dict(title=dict(text="value", side="right"), x=1.0, xanchor="left", len=0.75),
        ),
        coloraxis2=dict(colorscale=plain.colorscale(SEQUENTIAL), cmin=w_low, cmax=w_high, showscale=False),
    )
    return plain.figure(data, keeps_width(layout))


def output_step_figure(
    z_heads,
    w_o,
    output,
    labels,
    *,
    heads: list[int],
    layer: int | None = None,
    title: str,
) -> dict:
    """``[z_0 | z_1 | …] · W_O (+ b_O) = output`` for one layer, as three heatmaps side by side.

    ``z_heads`` is ``[head, query_pos, d_head]`` (every head of the layer, in order), ``w_o`` is
    ``[head · d_head, d_model]``, ``output`` is ``[query_pos, d_model]``. Three different quantities,
    so each panel has its own scale around zero, reaching the 99th percentile of its magnitudes (a
    few outliers would wash the rest out); its full range and that colour limit are written under its title. The columns
    of the chosen ``heads`` in the concatenation, and their rows in W_O, are outlined.
    """
    zs = as_float32(z_heads, ndim=3, name="z_heads")
    weights = as_float32(w_o, ndim=2, name="w_o")
    out = as_float32(output, ndim=2, name="output")
    if zs.size == 0:
        return nothing_to_draw(title, "no tokens")
    n_heads, n_query, d_head = zs.shape
    concatenated = np.concatenate(list(zs), axis=1)  # [query_pos, head · d_head]
    if weights.shape[0] != n_heads * d_head or out.shape != (n_query, weights.shape[1]):
        raise ValueError(f"shapes do not chain: concat {concatenated.shape} · W_O {weights.shape} = output {out.shape}")
    names = position_labels(check_labels(labels, n_query, "labels"))
    d_model = weights.shape[1]

    def robust(values: np.ndarray) -> tuple[float, float]:
        """±the 99th percentile of |values|: a few large weights would otherwise wash every other cell out."""
        top = float(np.nanpercentile(np.abs(values), 99)) or 1.0
        return -top, top

    (low, high), (w_low, w_high), (o_low, o_high) = robust(concatenated), robust(weights), robust(out)

    def spread(values: np.ndarray) -> str:
        top = robust(values)[1]
        return f"<br><sup>{values.min():.3g} to {values.max():.3g}; colours to ±{top:.2g} (99%)</sup>".replace("-", "−")

    layout, cell = plain.subplots(
        1,
        3,
        titles=[
            f"heads side by side ({n_heads} × d_head {d_head}){spread(concatenated)}",
            f"· W_O{spread(weights)}",
            f"= attention output (+ b_O){spread(out)}",
        ],
        column_widths=[0.36, 0.28, 0.36],
        horizontal_spacing=0.09,
    )
    features = [str(i) for i in range(n_heads * d_head)]
    tokens = dict(with_tokens=concatenated.size <= MAX_HOVER_CELLS)  # hover names the token up to MAX_HOVER_CELLS cells, positions beyond
    data = [{**heatmap_trace(concatenated, names, features, value_name="z", coloraxis="coloraxis", name="concatenated z", **tokens), **cell[1, 1]}]
    data.append(
        dict(type="heatmap", z=weights, coloraxis="coloraxis2", name="W_O", hovertemplate="row %{y}<br>column %{x}<br>%{z:.4g}<extra></extra>", **cell[1, 2])
    )
    model_features = [str(i) for i in range(d_model)]
    tokens = dict(with_tokens=out.size <= MAX_HOVER_CELLS)
    data.append({**heatmap_trace(out, names, model_features, value_name="output", coloraxis="coloraxis3", name="output", **tokens), **cell[1, 3]})
    ticks = ticks_for(VALUE_HEIGHT - 220)
    concat_axis = dict(
        title=plain.title("head · d_head"),
        tickmode="array",
        showgrid=False,
        zeroline=False,
        automargin=True,
        range=[-0.5, n_heads * d_head - 0.5],
        tickvals=[h * d_head + (d_head - 1) / 2 for h in range(n_heads)],
        ticktext=[f"H{h}" for h in range(n_heads)],
    )
    layout["xaxis"].update(concat_axis)
    layout["yaxis"].update(_token_axis(names, title="query", reversed_=True, max_ticks=ticks))
    layout["xaxis2"].update(_feature_axis(d_model, "d_model"))
    layout["yaxis2"].update(dict(concat_axis, range=[n_heads * d_head - 0.5, -0.5]))
    layout["xaxis3"].update(_feature_axis(d_model, "d_model"))
    layout["yaxis3"].update(_token_axis(names, title=None, reversed_=True, max_ticks=ticks) | dict(showticklabels=False))
    shapes = []
    for head in heads:
        left, right = head * d_head - 0.5, (head + 1) * d_head - 0.5
        outline = dict(type="rect", line=dict(color="#D55E00", width=2))
        shapes.append(dict(outline, x0=left, x1=right, y0=-0.5, y1=n_query - 0.5, xref="x", yref="y"))
        shapes.append(dict(outline, x0=-0.5, x1=d_model - 0.5, y0=left, y1=right, xref="x2", yref="y2"))
    layout.update(
        title=plain.title(title),
        plot_bgcolor=MASK_COLOR,
        height=VALUE_HEIGHT,
        coloraxis=dict(colorscale=plain.colorscale(DIVERGING), cmin=low, cmax=high, cmid=0.0, showscale=False),
        coloraxis2=dict(colorscale=plain.colorscale(DIVERGING), cmin=w_low, cmax=w_high, cmid=0.0, showscale=False),
        coloraxis3=dict(
            colorscale=plain.colorscale(DIVERGING),
            cmin=o_low,
            cmax=o_high,
            cmid=0.0,
            colorbar=dict(title=dict(text="output", side="right"), x=1.0, xanchor="left", len=0.75),
        ),
    )
    if shapes:
        layout["shapes"] = shapes
    return plain.figure(data, keeps_width(layout))
