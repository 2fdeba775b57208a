"""Figures of attention scores and patterns.

An attention pattern is a matrix ``[query_pos, key_pos]``: row ``q`` holds how
much the token at position ``q`` (the query, "attending") takes from every
position ``k`` (the key, "attended to"). Each row of a softmax pattern sums
to 1. In a causal model a query may not look ahead, so cells with
``key_pos > query_pos`` are *masked*.

Conventions of every figure here:

* rows are queries, query 0 on top (the y axis is reversed);
* axes are numeric positions with the tokens as tick text, so two equal
  tokens keep two rows;
* masked cells are gaps (NaN in ``z``): the grey plot background shows
  through, and small matrices also get an "×" on each masked cell;
* data go to the browser as float32.
"""

from __future__ import annotations


import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ._common import DECORATION_META, apply_mask, as_float32, check_labels, finite_range, labels_meta, nothing_to_draw
from .labels import position_labels, tick_axis
from .theme import DIVERGING, MASK_COLOR, MASK_MARK_COLOR, PALETTE, SCREEN_TEMPLATE, SEQUENTIAL

X_TITLE = "key (attended to)"
Y_TITLE = "query (attending)"

MAX_MARKED_SIDE = 40
MAX_HOVER_CELLS = 20_000

STAGE_TITLES = {
    "scores_raw": "raw Q·Kᵀ",
    "scores_scaled": "÷ √d_k",
    "scores_masked": "masked",
    "pattern": "softmax",
}


def _hover_text(query_labels: list[str], key_labels: list[str]) -> list[list[str]]:
    """Per-cell hover text naming both tokens.  # [query_pos, key_pos]"""
    keys = [f"key {k}: {label}" for k, label in enumerate(key_labels)]
    return [[f"query {q}: {q_label}<br>{key}" for key in keys] for q, q_label in enumerate(query_labels)]


def _heatmap(
    matrix: np.ndarray,
    query_labels: list[str],
    key_labels: list[str],
    *,
    value_name: str,
    colorscale,
    zmin=None,
    zmax=None,
    zmid=None,
    colorbar: dict | None = None,
    with_tokens: bool = True,
    name: str | None = None,
) -> go.Heatmap:
    """A heatmap trace on numeric axes; NaN cells stay gaps without hover."""
    n_query, n_key = matrix.shape
    trace = dict(
        z=matrix,
        x=np.arange(n_key),
        y=np.arange(n_query),
        colorscale=colorscale,
        zmin=zmin,
        zmax=zmax,
        zmid=zmid,
        colorbar=colorbar,
        hoverongaps=False,
        name=name,
        meta=labels_meta(key_labels, query_labels),
    )
    if with_tokens:
        trace["text"] = _hover_text(query_labels, key_labels)
        trace["hovertemplate"] = f"%{{text}}<br>{value_name}: %{{z:.4g}}<extra></extra>"
    else:
        trace["hovertemplate"] = f"query %{{y}}<br>key %{{x}}<br>{value_name}: %{{z:.4g}}<extra></extra>"
    return go.Heatmap(**trace)


def _mask_marks(masked: np.ndarray | None, *, xaxis: str = "x", yaxis: str = "y") -> go.Scatter | None:
    """An "×" on every masked cell, for matrices of at most 40 per side."""
    if masked is None or max(masked.shape) > MAX_MARKED_SIDE or not masked.any():
        return None
    query_pos, key_pos = np.nonzero(masked)
    size = int(max(8, min(20, 320 / max(masked.shape))))
    return go.Scatter(
        x=key_pos,
        y=query_pos,
        mode="text",
        text="×",
        textfont=dict(color=MASK_MARK_COLOR, size=size),
        hovertemplate="masked: query %{y} may not attend to key %{x}<extra></extra>",
        name="masked",
        showlegend=False,
        meta=DECORATION_META,
        xaxis=xaxis,
        yaxis=yaxis,
    )


def _matrix_axes(n_query: int, n_key: int, query_labels, key_labels, *, show_query_ticks=True):
    """x/y axis settings of one attention matrix panel (query 0 on top)."""
    xaxis = dict(
        title=X_TITLE,
        range=[-0.5, n_key - 0.5],
        showgrid=False,
        zeroline=False,
        **tick_axis(key_labels),
    )
    yaxis = dict(
        range=[n_query - 0.5, -0.5],
        showgrid=False,
        zeroline=False,
        **tick_axis(query_labels),
    )
    if show_query_ticks:
        yaxis["title"] = Y_TITLE
    else:
        yaxis["showticklabels"] = False
    return xaxis, yaxis


def attention_heatmap(
    matrix,
    query_labels,
    key_labels,
    *,
    title: str,
    colorbar_title: str,
    masked=None,
    zmid=None,
    colorscale=None,
    zmin=None,
    zmax=None,
    square: bool = True,
    max_hover_cells: int = MAX_HOVER_CELLS,
) -> go.Figure:
    """One attention matrix as a heatmap.

    ``matrix`` is ``[query_pos, key_pos]`` (scores or weights); ``masked`` a
    bool array of the same shape, True where the query may not see the key.
    Labels are raw token strings (they are made safe here). Give ``zmid=0``
    for signed scores: the scale becomes diverging around zero. Hover names
    both tokens unless the matrix has more than ``max_hover_cells`` cells, in
    which case it shows positions only (keeps the figure small).
    """
    values = as_float32(matrix, ndim=2, name="matrix")  # [query_pos, key_pos]
    if values.size == 0:
        return nothing_to_draw(title, "no tokens")
    n_query, n_key = values.shape
    mask = None if masked is None else np.asarray(masked, dtype=bool)
    apply_mask(values, mask)
    q_labels = position_labels(check_labels(query_labels, n_query, "query_labels"))
    k_labels = position_labels(check_labels(key_labels, n_key, "key_labels"))
    if colorscale is None:
        colorscale = DIVERGING if zmid is not None else SEQUENTIAL

    fig = go.Figure(
        _heatmap(
            values,
            q_labels,
            k_labels,
            value_name=colorbar_title,
            colorscale=colorscale,
            zmin=zmin,
            zmax=zmax,
            zmid=zmid,
            colorbar=dict(title=dict(text=colorbar_title)),
            with_tokens=values.size <= max_hover_cells,
        )
    )
    marks = _mask_marks(mask)
    if marks is not None:
        fig.add_trace(marks)

    xaxis, yaxis = _matrix_axes(n_query, n_key, q_labels, k_labels)
    if square:
        yaxis.update(scaleanchor="x", scaleratio=1, constrain="domain")
        xaxis.update(constrain="domain")
    fig.update_layout(
        template=SCREEN_TEMPLATE,
        title=dict(text=title),
        plot_bgcolor=MASK_COLOR,
        xaxis=xaxis,
        yaxis=yaxis,
    )
    return fig


def stages_figure(
    stages: dict[str, np.ndarray],
    query_labels,
    key_labels,
    *,
    masked,
    title: str,
    share_score_range: bool = False,
    max_hover_cells: int = MAX_HOVER_CELLS,
) -> go.Figure:
    """The four steps from scores to pattern, side by side.

    ``stages`` maps ``scores_raw`` (Q·Kᵀ), ``scores_scaled`` (÷ √d_k),
    ``scores_masked`` and ``pattern`` (softmax) to ``[query_pos, key_pos]``
    arrays. Every panel has its own colour bar; scores use a diverging scale
    around zero, the pattern a sequential scale fixed to [0, 1]. Masked cells
    are gaps in the last two panels (``-inf`` in ``scores_masked`` is treated
    as masked too); the first two show every raw score, because masking only
    happens at step three.

    With ``share_score_range`` the three score panels use one colour range,
    which makes the shrinking effect of ÷ √d_k visible as a paler panel.
    """
    missing = [key for key in STAGE_TITLES if key not in stages]
    if missing:
        raise KeyError(f"stages is missing {missing}; expected keys {list(STAGE_TITLES)}")
    panels = {key: as_float32(stages[key], ndim=2, name=key) for key in STAGE_TITLES}
    shape = panels["pattern"].shape
    for key, values in panels.items():
        if values.shape != shape:
            raise ValueError(f"{key} has shape {values.shape}, pattern has {shape}")
    n_query, n_key = shape
    if n_query * n_key == 0:
        return nothing_to_draw(title, "no tokens")
    mask = None if masked is None else np.asarray(masked, dtype=bool)
    apply_mask(panels["scores_masked"], mask)
    apply_mask(panels["pattern"], mask)
    q_labels = position_labels(check_labels(query_labels, n_query, "query_labels"))
    k_labels = position_labels(check_labels(key_labels, n_key, "key_labels"))

    score_keys = ("scores_raw", "scores_scaled", "scores_masked")
    shared = finite_range(*(panels[k] for k in score_keys), symmetric=True)
    ranges = {
        key: shared if share_score_range else finite_range(panels[key], symmetric=True)
        for key in score_keys
    }
    ranges["pattern"] = (0.0, 1.0)

    fig = make_subplots(
        rows=1,
        cols=4,
        subplot_titles=list(STAGE_TITLES.values()),
        horizontal_spacing=0.09,
    )
    with_tokens = 4 * n_query * n_key <= max_hover_cells
    for index, key in enumerate(STAGE_TITLES):
        col = index + 1
        suffix = "" if col == 1 else str(col)
        domain = fig.layout[f"xaxis{suffix}"].domain
        is_pattern = key == "pattern"
        zmin, zmax = ranges[key]
        fig.add_trace(
            _heatmap(
                panels[key],
                q_labels,
                k_labels,
                value_name="weight" if is_pattern else "score",
                colorscale=SEQUENTIAL if is_pattern else DIVERGING,
                zmin=zmin,
                zmax=zmax,
                colorbar=dict(
                    title=dict(text="weight" if is_pattern else "score", side="top"),
                    x=domain[1] + 0.006,
                    xanchor="left",
                    thickness=10,
                    len=0.8,
                ),
                with_tokens=with_tokens,
                name=STAGE_TITLES[key],
            ),
            row=1,
            col=col,
        )
        if key in ("scores_masked", "pattern"):
            marks = _mask_marks(mask, xaxis=f"x{suffix}", yaxis=f"y{suffix}")
            if marks is not None:
                fig.add_trace(marks)
        xaxis, yaxis = _matrix_axes(n_query, n_key, q_labels, k_labels, show_query_ticks=col == 1)
        fig.update_xaxes(xaxis, row=1, col=col)
        fig.update_yaxes(yaxis, row=1, col=col)

    fig.update_annotations(yshift=12)  # subplot titles clear of the square panels below them
    fig.update_layout(
        template=SCREEN_TEMPLATE,
        title=dict(text=title),
        plot_bgcolor=MASK_COLOR,
        height=460,
        margin=dict(r=60, t=100),
    )
    return fig


def row_entropy(pattern) -> np.ndarray:
    """Entropy in bits of every row of an attention pattern.

    ``pattern`` is ``[..., key_pos]`` with rows of weights summing to 1;
    the result has the shape without the last axis. ``0 · log 0`` counts as
    0, and NaN (masked gaps) counts as weight 0, so a row of all zeros has
    entropy 0. A uniform row over ``n`` keys has the maximum, ``log2(n)``;
    a row putting all weight on one key has 0.
    """
    p = np.nan_to_num(np.asarray(pattern, dtype=np.float64), nan=0.0)
    p = np.clip(p, 0.0, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log2(np.where(p > 0, p, 1.0)), 0.0)
    return -terms.sum(axis=-1) + 0.0


def row_stats_figure(
    pattern_scaled,
    pattern_unscaled,
    query_labels,
    *,
    masked=None,
    title: str = "How peaked is each query row?",
) -> go.Figure:
    """Entropy and largest weight of every query row, scaled vs unscaled.

    Without the ÷ √d_k scaling, scores are larger, softmax saturates, and rows
    become nearly one-hot: low entropy, largest weight near 1. Two stacked
    panels share the query axis; each has grouped bars for the pattern with
    scaling ("scaled") and without ("unscaled"). Given ``masked``, a dashed
    line marks the uniform row over the visible keys (maximum entropy,
    smallest possible largest weight).
    """
    scaled = np.nan_to_num(as_float32(pattern_scaled, ndim=2, name="pattern_scaled"))
    unscaled = np.nan_to_num(as_float32(pattern_unscaled, ndim=2, name="pattern_unscaled"))
    if scaled.shape != unscaled.shape:
        raise ValueError(f"patterns differ in shape: {scaled.shape} vs {unscaled.shape}")
    n_query = scaled.shape[0]
    if scaled.size == 0:
        return nothing_to_draw(title, "no tokens")
    labels = position_labels(check_labels(query_labels, n_query, "query_labels"))
    positions = np.arange(n_query)

    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.1,
        subplot_titles=("entropy per query row (bits)", "largest weight per query row"),
    )
    series = (("scaled (÷ √d_k)", scaled, PALETTE[0]), ("unscaled", unscaled, PALETTE[1]))
    for name, pattern, colour in series:
        entropy = row_entropy(pattern).astype(np.float32)  # [query_pos]
        largest = pattern.max(axis=-1).astype(np.float32)  # [query_pos]
        common = dict(name=name, marker_color=colour, legendgroup=name, x=positions, hovertext=labels)
        fig.add_trace(
            go.Bar(y=entropy, hovertemplate="%{hovertext}<br>%{y:.3f} bits<extra>" + name + "</extra>", **common),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Bar(y=largest, showlegend=False, hovertemplate="%{hovertext}<br>max %{y:.3f}<extra>" + name + "</extra>", **common),
            row=2,
            col=1,
        )

    if masked is not None:
        visible = (~np.asarray(masked, dtype=bool)).sum(axis=-1).clip(min=1)  # [query_pos]
        uniform = dict(x=positions, mode="lines", line=dict(color="black", dash="dash", shape="hvh"), legendgroup="uniform")
        fig.add_trace(go.Scatter(y=np.log2(visible).astype(np.float32), name="uniform over visible keys", **uniform), row=1, col=1)
        fig.add_trace(go.Scatter(y=(1.0 / visible).astype(np.float32), showlegend=False, name="uniform over visible keys", **uniform), row=2, col=1)

    ticks = tick_axis(labels)
    fig.update_xaxes(ticks, row=1, col=1)
    fig.update_xaxes(dict(title="query (attending)", **ticks), row=2, col=1)
    fig.update_yaxes(title="entropy (bits)", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title="largest weight", range=[0, 1.02], row=2, col=1)
    fig.update_layout(template=SCREEN_TEMPLATE, title=dict(text=title), barmode="group", height=520)
    return fig


def _block_edges(n: int, max_cells: int) -> np.ndarray:
    """Start indices of at most ``max_cells`` near-equal blocks covering ``n``, plus ``n``."""
    if n <= max_cells:
        return np.arange(n + 1)
    return np.linspace(0, n, max_cells + 1).astype(np.int64)


def downsample(matrix, max_cells: int) -> np.ndarray:
    """Average blocks so neither of the last two axes exceeds ``max_cells``.

    ``matrix`` is ``[..., query_pos, key_pos]``. An axis of length ``n >
    max_cells`` is cut into ``max_cells`` consecutive blocks whose sizes
    differ by at most one (``n`` need not be divisible), and each output
    cell is the mean of its block. NaN cells are ignored; a block that is all
    NaN gives NaN. Shorter axes are left as they are.

    Example: a 4×4 matrix with ``max_cells=2`` becomes the 2×2 matrix of the
    means of its four 2×2 quarters.
    """
    if max_cells < 1:
        raise ValueError("max_cells must be at least 1")
    values = np.asarray(matrix, dtype=np.float64)
    if values.ndim < 2:
        raise ValueError(f"matrix needs at least 2 dimensions, got shape {values.shape}")
    rows = _block_edges(values.shape[-2], max_cells)[:-1]
    cols = _block_edges(values.shape[-1], max_cells)[:-1]
    present = ~np.isnan(values)
    totals = np.add.reduceat(np.add.reduceat(np.where(present, values, 0.0), rows, axis=-2), cols, axis=-1)
    counts = np.add.reduceat(np.add.reduceat(present.astype(np.int64), rows, axis=-2), cols, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, totals / np.maximum(counts, 1), np.nan)


def heads_overview(
    patterns,
    query_labels,
    key_labels,
    *,
    max_cells: int | None = None,
    layer_names=None,
    masked=None,
    title: str = "Attention patterns of every head",
) -> go.Figure:
    """Small multiples of every head's pattern: rows are layers, columns heads.

    ``patterns`` is ``[n_layers, n_heads, query_pos, key_pos]``. The panels are tiled into one
    heatmap (one trace, so a 6 × 12 grid builds and draws fast), separated by gaps, all on one
    colour scale fixed to [0, 1], so a bright cell means the same weight everywhere. Panels larger
    than ``max_cells`` per side are reduced by block averaging (see ``downsample``): 6 × 12 heads
    at 512 tokens are sent as 32 × 32 blocks each (48 × 48 for four heads or fewer). The x axis names the heads, the y axis the layers
    (``layer_names`` if given); hover gives the weight. ``masked`` (``[query_pos, key_pos]``) turns
    masked cells into gaps. ``overview_panel`` cuts one head's panel back out.
    """
    values = as_float32(patterns, ndim=4, name="patterns")  # [layer, head, query_pos, key_pos]
    n_layers, n_heads, n_query, n_key = values.shape
    if values.size == 0:
        return nothing_to_draw(title, "no tokens" if n_layers * n_heads else "no heads")
    if masked is not None:
        mask = np.asarray(masked, dtype=bool)
        if mask.shape != (n_query, n_key):
            raise ValueError(f"masked has shape {mask.shape}, patterns are {n_query}×{n_key}")
        values[:, :, mask] = np.nan
    check_labels(query_labels, n_query, "query_labels")
    check_labels(key_labels, n_key, "key_labels")
    if layer_names is not None and len(layer_names) != n_layers:
        raise ValueError(f"{len(layer_names)} layer_names for {n_layers} layers")
    if max_cells is None:  # each panel is drawn a few dozen pixels wide: more cells would not show
        max_cells = 48 if n_heads <= 4 else 32
    reduced = n_query > max_cells or n_key > max_cells
    if reduced:
        values = downsample(values, max_cells).astype(np.float32)  # [layer, head, query_block, key_block]
    rows, cols = values.shape[2], values.shape[3]
    gap = max(1, round(0.12 * max(rows, cols)))

    height, width = n_layers * (rows + gap) - gap, n_heads * (cols + gap) - gap
    row_names = [str(name) for name in layer_names] if layer_names is not None else [f"L{layer}" for layer in range(n_layers)]
    tiled = np.full((height, width), np.nan, dtype=np.float32)  # [layer·query, head·key] with gaps
    for layer in range(n_layers):
        for head in range(n_heads):
            top, left = layer * (rows + gap), head * (cols + gap)
            tiled[top : top + rows, left : left + cols] = values[layer, head]

    fig = go.Figure(
        go.Heatmap(
            z=tiled,
            coloraxis="coloraxis",
            hoverongaps=False,
            hovertemplate="weight %{z:.3f}<extra></extra>",
            name="every head",
        )
    )
    fig.update_xaxes(
        tickmode="array",
        tickvals=[head * (cols + gap) + (cols - 1) / 2 for head in range(n_heads)],
        ticktext=[f"H{head}" for head in range(n_heads)],
        side="top",
        showgrid=False,
        zeroline=False,
        constrain="domain",
        title="head",
    )
    fig.update_yaxes(
        tickmode="array",
        tickvals=[layer * (rows + gap) + (rows - 1) / 2 for layer in range(n_layers)],
        ticktext=row_names,
        autorange="reversed",
        showgrid=False,
        zeroline=False,
        scaleanchor="x",
        title="layer",
    )
    fig.update_layout(
        template=SCREEN_TEMPLATE,
        title=dict(text=title),
        plot_bgcolor="white",
        coloraxis=dict(colorscale=SEQUENTIAL, cmin=0.0, cmax=1.0, colorbar=dict(title=dict(text="weight"))),
        height=OVERVIEW_MARGIN + n_layers * _panel_height(n_heads),
        meta=dict(panel_rows=rows, panel_cols=cols, gap=gap, n_layers=n_layers, n_heads=n_heads),
    )
    return fig


def overview_panel(fig: go.Figure, layer: int, head: int) -> np.ndarray:
    """The panel of one head cut back out of a `heads_overview` figure: `[query, key]` (or blocks)."""
    meta = fig.layout.meta
    rows, cols, gap = meta["panel_rows"], meta["panel_cols"], meta["gap"]
    z = np.asarray(fig.data[0].z, dtype=np.float32)
    top, left = layer * (rows + gap), head * (cols + gap)
    return z[top : top + rows, left : left + cols]


OVERVIEW_MARGIN = 140  # title, colour bar and subplot titles, in pixels
OVERVIEW_WIDTH = 1000  # the width the grid is laid out for; panels stay about square at it


def _panel_height(n_heads: int) -> int:
    """Height of one row of small multiples so that each panel is about square."""
    return int(min(260, max(70, OVERVIEW_WIDTH / max(n_heads, 1))))
