"""Every head of every layer as small multiples, tiled into one heatmap."""

from __future__ import annotations

import numpy as np

from . import plain
from ._common import as_float32, check_labels, nothing_to_draw
from .heatmap import block_edges, block_weights, weight_scale
from .labels import position_labels
from .theme import SEQUENTIAL


def heads_overview(
    patterns,
    query_labels,
    key_labels,
    *,
    max_cells: int | None = None,
    layer_names=None,
    masked=None,
    title: str = "Attention patterns of every head",
    pattern_colour: str = "fixed",
) -> dict:
    """Small multiples of every head's pattern: rows are layers, columns heads.

    ``patterns`` is ``[n_layers, n_heads, query_pos, key_pos]``: an array, or a sequence of the layers'
    ``[n_heads, query_pos, key_pos]`` read one at a time. The panels are tiled into one
    heatmap (one trace, so a 6 × 12 grid builds and draws fast), separated by gaps, all on one
    colour scale (0 to 1, or to the largest weight with ``pattern_colour="own"``), so a bright cell means the same weight everywhere. Panels larger
    than ``max_cells`` per side are drawn in blocks of tokens, each the weight its queries give its keys
    (``block_weights``: a row of blocks still sums to 1): 6 × 12 heads at 512 tokens are sent as 32 × 32
    blocks each (48 × 48 for four heads or fewer). The x axis names the heads, the y axis the layers
    (``layer_names`` if given); hover gives the weight. ``masked`` (``[query_pos, key_pos]``) turns
    masked cells into gaps. ``overview_panel`` cuts one head's panel back out.
    """
    return heads_overview_and_table(
        patterns, query_labels, key_labels, max_cells=max_cells, layer_names=layer_names, masked=masked, title=title, pattern_colour=pattern_colour
    )[0]


def heads_overview_and_table(
    patterns,
    query_labels,
    key_labels,
    *,
    max_cells: int | None = None,
    layer_names=None,
    masked=None,
    title: str = "Attention patterns of every head",
    pattern_colour: str = "fixed",
) -> tuple:
    """``heads_overview``'s figure and what builds its table from the weights it draws (``overview_table``;
    None when there is nothing to draw)."""
    if isinstance(patterns, np.ndarray) and patterns.ndim != 4:
        raise ValueError(f"patterns must have 4 dimensions, got shape {patterns.shape}")
    n_layers = len(patterns)
    first = as_float32(patterns[0], ndim=3, name="a layer of patterns") if n_layers else np.zeros((0, 0, 0), np.float32)
    n_heads, n_query, n_key = first.shape
    if first.size == 0:
        return nothing_to_draw(title, "no tokens" if n_layers * n_heads else "no heads"), None
    mask = None
    if masked is not None:
        mask = np.asarray(masked, dtype=bool)
        if mask.shape != (n_query, n_key):
            raise ValueError(f"masked has shape {mask.shape}, patterns are {n_query}×{n_key}")
    q_labels = position_labels(check_labels(query_labels, n_query, "query_labels"))
    k_labels = position_labels(check_labels(key_labels, n_key, "key_labels"))
    if layer_names is not None and len(layer_names) != n_layers:
        raise ValueError(f"{len(layer_names)} layer_names for {n_layers} layers")
    if max_cells is None:  # each panel is drawn a few dozen pixels wide: more cells would not show
        max_cells = 48 if n_heads <= 4 else 32
    reduced = n_query > max_cells or n_key > max_cells

    def panels(layer: int) -> np.ndarray:  # one layer's heads as drawn: blocks of weights if reduced, else masked cells NaN
        values = first if layer == 0 else as_float32(patterns[layer], ndim=3, name="a layer of patterns")
        if values.shape != first.shape:
            raise ValueError(f"layer {layer} of patterns has shape {values.shape}, layer 0 {first.shape}")
        if reduced:
            return block_weights(values, max_cells, masked=mask).astype(np.float32)
        if mask is not None:
            values[:, mask] = np.nan
        return values

    # layer by layer: `patterns` may compute each layer when asked (viz.content's overview), and the blocks'
    # sums are taken in float64; 30 layers of 9 heads at 512 tokens are 280 MB in float32 alone
    values = np.stack([panels(layer) for layer in range(n_layers)])  # [layer, head, query_block, key_block]
    rows, cols = values.shape[2], values.shape[3]
    query_starts = [int(p) for p in block_edges(n_query, max_cells)[:-1]]  # first position of each row block
    key_starts = [int(p) for p in block_edges(n_key, max_cells)[:-1]]
    gap = max(1, round(0.12 * max(rows, cols)))
    low, high, bar = weight_scale(values, colour=pattern_colour)

    height, width = n_layers * (rows + gap) - gap, n_heads * (cols + gap) - gap
    row_names = [str(name) for name in layer_names] if layer_names is not None else [f"L{layer}" for layer in range(n_layers)]
    tiled = np.full((height, width), np.nan, dtype=np.float32)  # [layer·query, head·key] with gaps
    for layer in range(n_layers):
        for head in range(n_heads):
            top, left = layer * (rows + gap), head * (cols + gap)
            tiled[top : top + rows, left : left + cols] = values[layer, head]

    trace = dict(
        type="heatmap",
        z=tiled,
        coloraxis="coloraxis",
        hoverongaps=False,
        hovertemplate=("weight to these keys %{z:.3f}" if reduced else "weight %{z:.3f}") + "<extra></extra>",
        name="every head",
        meta=dict(
            kind="attention-grid",
            panel_rows=rows,
            panel_cols=cols,
            gap=gap,
            n_layers=n_layers,
            n_heads=n_heads,
            query_positions=query_starts,
            key_positions=key_starts,
            query_labels=[q_labels[p] + ("…" if reduced else "") for p in query_starts],
            key_labels=[k_labels[p] + ("…" if reduced else "") for p in key_starts],
        ),
    )
    xaxis = dict(
        tickmode="array",
        tickvals=[head * (cols + gap) + (cols - 1) / 2 for head in range(n_heads)],
        ticktext=[f"H{head}" for head in range(n_heads)],
        range=[-0.5, width - 0.5],  # the grid's own extent: markers laid over the tiles (viz.clickable) do not widen it
        side="top",
        showgrid=False,
        zeroline=False,
        constrain="domain",
        title=plain.title("head"),
    )
    yaxis = dict(
        tickmode="array",
        tickvals=[layer * (rows + gap) + (rows - 1) / 2 for layer in range(n_layers)],
        ticktext=row_names,
        range=[height - 0.5, -0.5],  # layer 0 on top
        showgrid=False,
        zeroline=False,
        scaleanchor="x",
        constrain="domain",  # a grid narrower than its height leaves the room below it, not above and below
        constraintoward="top",
        title=plain.title("layer"),
    )
    layout = dict(
        xaxis=xaxis,
        yaxis=yaxis,
        title=plain.title(title),
        plot_bgcolor="white",
        margin=dict(t=140),  # the title, then the head names and their axis title on top
        coloraxis=dict(colorscale=plain.colorscale(SEQUENTIAL), cmin=low, cmax=high, colorbar=dict(title=dict(text=bar, side="right"))),
        height=OVERVIEW_MARGIN + n_layers * _panel_height(n_heads),
        meta=dict(panel_rows=rows, panel_cols=cols, gap=gap, n_layers=n_layers, n_heads=n_heads),
    )
    names = (  # the tokens as typed (the figure's labels are escaped for plotly)
        [str(query_labels[p]) + ("…" if reduced else "") for p in query_starts],
        [str(key_labels[p]) + ("…" if reduced else "") for p in key_starts],
    )
    return plain.figure([trace], layout), lambda: overview_table(values, query_starts, key_starts, *names)


def overview_table(values: np.ndarray, query_starts: list[int], key_starts: list[int], query_names: list[str], key_names: list[str], *, stage: str = "pattern"):
    """The weights ``heads_overview`` draws, ``values`` ``[layer, head, query_block, key_block]``, as a tidy
    ``pandas.DataFrame``: ``stage, layer, head, query_position, query_token, key_position, key_token, value``,
    a row per cell of every head (a block's first position and token, "the…", when drawn in blocks;
    masked cells empty)."""
    import pandas as pd

    layer, head, query, key = (index.ravel() for index in np.indices(values.shape))
    return pd.DataFrame(
        {
            "stage": stage,
            "layer": layer,
            "head": head,
            "query_position": np.asarray(query_starts)[query],
            "query_token": np.asarray(query_names, dtype=object)[query],
            "key_position": np.asarray(key_starts)[key],
            "key_token": np.asarray(key_names, dtype=object)[key],
            "value": values.ravel(),
        }
    )


def overview_panel(fig: dict, layer: int, head: int) -> np.ndarray:
    """The panel of one head cut back out of a `heads_overview` figure: `[query, key]` (or blocks)."""
    meta = fig["layout"]["meta"]
    rows, cols, gap = meta["panel_rows"], meta["panel_cols"], meta["gap"]
    z = np.asarray(fig["data"][0]["z"], dtype=np.float32)
    top, left = layer * (rows + gap), head * (cols + gap)
    return z[top : top + rows, left : left + cols]


OVERVIEW_MARGIN = 140  # title, colour bar and subplot titles, in pixels
OVERVIEW_WIDTH = 720  # the grid's own width in the page at 1440 × 900 (the column less the axes and colour bar)


def _panel_height(n_heads: int) -> int:
    """Height of one row of small multiples so that each panel is about square at OVERVIEW_WIDTH."""
    return int(min(260, max(70, OVERVIEW_WIDTH / max(n_heads, 1))))
