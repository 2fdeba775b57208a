"""Figures for rotary position embeddings and for what a model's first layer reads (its input recipe)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz._common import as_float32, check_labels, finite_range, labels_meta, nothing_to_draw
from viz.labels import position_labels, tick_axis
from viz.theme import DIVERGING, SCREEN_TEMPLATE


def rotary_angle_heatmap(angles, *, title: str = "Rotary: rotation angle of each dimension pair at each position") -> go.Figure:
    """`angles` `[pos, pairs]` in radians, drawn wrapped to (−π, π] (a full turn looks the same as none)."""
    values = as_float32(angles, ndim=2, name="angles")
    if values.size == 0:
        return nothing_to_draw(title, "no positions")
    wrapped = np.angle(np.exp(1j * values.astype(np.float64))).astype(np.float32)
    fig = go.Figure(
        go.Heatmap(
            z=wrapped,
            customdata=values,
            x=np.arange(values.shape[1]),
            y=np.arange(values.shape[0]),
            colorscale="Twilight",
            zmin=-np.pi,
            zmax=np.pi,
            colorbar=dict(title=dict(text="angle (rad)"), tickvals=[-np.pi, 0, np.pi], ticktext=["−π", "0", "π"]),
            hovertemplate="position %{y}, pair %{x}<br>angle %{customdata:.3f} rad (wrapped %{z:.3f})<extra></extra>",
        )
    )
    fig.update_layout(
        template=SCREEN_TEMPLATE,
        title=dict(text=title),
        xaxis=dict(title="dimension pair i (slow pairs to the right)", showgrid=False),
        yaxis=dict(title="position", autorange="reversed", showgrid=False),
    )
    return fig


def rotary_distance_figure(distances, dots, *, label: str, title: str = "Rotary: q·k against the distance between query and key") -> go.Figure:
    """q·k of a rotated vector with itself, relative to distance 0 (1 = no change)."""
    x = as_float32(distances, ndim=1, name="distances")
    y = as_float32(dots, ndim=1, name="dots")
    fig = go.Figure(go.Scatter(x=x, y=y, mode="lines", name=label, hovertemplate="distance %{x}: %{y:.3f}<extra></extra>"))
    fig.update_layout(
        template=SCREEN_TEMPLATE,
        title=dict(text=title),
        xaxis=dict(title="distance between query and key (positions)", rangemode="tozero"),
        yaxis=dict(title="q·k relative to distance 0"),
        showlegend=True,
    )
    return fig


def input_recipe_figure(panels: list[tuple[str, object]], labels, *, title: str, separate_result: bool = False) -> go.Figure:
    """What the first layer reads, built from its parts: one heatmap per term, then the result.

    `panels` is `[(name, [seq, d_model] values), …]`, the last one being the first layer's input.
    One diverging colour scale, symmetric around zero, is shared by every panel; with
    `separate_result` (a LayerNorm rescales the sum) the result has a colour scale of its own.
    """
    arrays = [as_float32(values, ndim=2, name=name) for name, values in panels]
    n_tokens, d_model = arrays[-1].shape
    if n_tokens == 0:
        return nothing_to_draw(title, "no tokens")
    token_labels = position_labels(check_labels(labels, n_tokens, "labels"))
    low, high = finite_range(*(arrays[:-1] if separate_result else arrays), symmetric=True)
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[name for name, _ in panels], horizontal_spacing=0.04)
    text = [[label] * d_model for label in token_labels]
    for col, ((name, _), values) in enumerate(zip(panels, arrays), start=1):
        fig.add_trace(
            go.Heatmap(
                z=values[:n_tokens],
                x=np.arange(d_model),
                y=np.arange(n_tokens),
                text=text,
                coloraxis="coloraxis2" if separate_result and col == len(panels) else "coloraxis",
                name=name,
                meta=labels_meta(None, token_labels),
                hovertemplate=f"{name}<br>%{{text}} (position %{{y}})<br>dim %{{x}}: %{{z:.3f}}<extra></extra>",
            ),
            row=1,
            col=col,
        )
        fig.update_yaxes(dict(autorange="reversed", showgrid=False, zeroline=False, showticklabels=col == 1, **tick_axis(token_labels)), row=1, col=col)
        fig.update_xaxes(title="dimension", showgrid=False, zeroline=False, row=1, col=col)
    fig.update_yaxes(title="token", row=1, col=1)
    fig.update_layout(
        template=SCREEN_TEMPLATE,
        title=dict(text=title),
        coloraxis=dict(colorscale=DIVERGING, cmin=low, cmax=high, cmid=0.0, colorbar=dict(title=dict(text="value"))),
    )
    if separate_result:
        result_low, result_high = finite_range(arrays[-1], symmetric=True)
        fig.update_layout(  # two colour bars, one above the other: the terms', then the input's
            coloraxis=dict(colorbar=dict(title=dict(text="terms"), len=0.45, y=0.77, yanchor="middle")),
            coloraxis2=dict(
                colorscale=DIVERGING, cmin=result_low, cmax=result_high, cmid=0.0, colorbar=dict(title=dict(text="input"), len=0.45, y=0.23, yanchor="middle")
            ),
        )
    return fig
