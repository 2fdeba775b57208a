"""Figures for rotary position embeddings and for what a model's first layer reads (its input recipe)."""

from __future__ import annotations

import numpy as np

from viz import plain
from viz._common import as_float32, check_labels, finite_range, nothing_to_draw
from viz.labels import position_labels
from viz.positional import token_panel_row
from viz.theme import DIVERGING


def rotary_angle_heatmap(angles, *, title: str = "Rotary: rotation angle of each dimension pair at each position") -> dict:
    """`angles` `[pos, pairs]` in radians, drawn wrapped to (−π, π] (a full turn looks the same as none)."""
    values = as_float32(angles, ndim=2, name="angles")
    if values.size == 0:
        return nothing_to_draw(title, "no positions")
    wrapped = np.angle(np.exp(1j * values.astype(np.float64))).astype(np.float32)
    trace = dict(
        type="heatmap",
        z=wrapped,
        customdata=values,
        x=np.arange(values.shape[1]),
        y=np.arange(values.shape[0]),
        colorscale=plain.colorscale("Twilight"),
        zmin=-np.pi,
        zmax=np.pi,
        colorbar=dict(title=dict(text="angle (rad)"), tickvals=[-np.pi, 0, np.pi], ticktext=["−π", "0", "π"]),
        hovertemplate="position %{y}, pair %{x}<br>angle %{customdata:.3f} rad (wrapped %{z:.3f})<extra></extra>",
    )
    layout = dict(
        title=plain.title(title),
        xaxis=dict(title=plain.title("dimension pair i (slow pairs to the right)"), showgrid=False),
        yaxis=dict(title=plain.title("position"), autorange="reversed", showgrid=False),
    )
    return plain.figure([trace], layout)


def rotary_distance_figure(distances, dots, *, label: str, title: str = "Rotary: q·k against the distance between query and key") -> dict:
    """q·k of a rotated vector with itself, relative to distance 0 (1 = no change)."""
    x = as_float32(distances, ndim=1, name="distances")
    y = as_float32(dots, ndim=1, name="dots")
    trace = dict(type="scatter", x=x, y=y, mode="lines", name=label, hovertemplate="distance %{x}: %{y:.3f}<extra></extra>")
    layout = dict(
        title=plain.title(title),
        xaxis=dict(title=plain.title("distance between query and key (positions)"), rangemode="tozero"),
        yaxis=dict(title=plain.title("q·k relative to distance 0")),
        showlegend=True,
    )
    return plain.figure([trace], layout)


def input_recipe_figure(panels: list[tuple[str, object]], labels, *, title: str, separate_result: bool = False) -> dict:
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
    result = "coloraxis2" if separate_result else "coloraxis"
    named = list(zip([name for name, _ in panels], arrays))
    data, layout = token_panel_row(named, token_labels, coloraxes=["coloraxis"] * (len(panels) - 1) + [result], title=title)
    layout["coloraxis"] = dict(colorscale=plain.colorscale(DIVERGING), cmin=low, cmax=high, cmid=0.0, colorbar=dict(title=dict(text="value")))
    if separate_result:  # two colour bars, one above the other: the terms', then the input's
        result_low, result_high = finite_range(arrays[-1], symmetric=True)
        layout["coloraxis"]["colorbar"].update(title=dict(text="terms"), len=0.45, y=0.77, yanchor="middle")
        layout["coloraxis2"] = dict(
            colorscale=plain.colorscale(DIVERGING),
            cmin=result_low,
            cmax=result_high,
            cmid=0.0,
            colorbar=dict(title=dict(text="input"), len=0.45, y=0.23, yanchor="middle"),
        )
    return plain.figure(data, layout)
