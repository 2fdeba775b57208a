"""The steps from scores to pattern side by side, and how peaked each query row is with and without scaling."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ._common import apply_mask, as_float32, check_labels, finite_range, nothing_to_draw
from .heatmap import MAX_HOVER_CELLS, heatmap_trace, mask_marks, matrix_axes
from .labels import position_labels, tick_axis
from .theme import DIVERGING, MASK_COLOR, PALETTE, SCREEN_TEMPLATE, SEQUENTIAL

STAGE_TITLES = {
    "scores_raw": "raw Q·Kᵀ",
    "scores_scaled": "÷ √d_k",
    "scores_masked": "masked",
    "pattern": "softmax",
}


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
    ranges = {key: shared if share_score_range else finite_range(panels[key], symmetric=True) for key in score_keys}
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
            heatmap_trace(
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
            marks = mask_marks(mask, xaxis=f"x{suffix}", yaxis=f"y{suffix}")
            if marks is not None:
                fig.add_trace(marks)
        xaxis, yaxis = matrix_axes(n_query, n_key, q_labels, k_labels, show_query_ticks=col == 1)
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
