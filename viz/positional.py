"""Figures about positional encodings.

A transformer sees a set of vectors, not a sequence: without extra
information "dog bites man" and "man bites dog" look the same to attention.
A positional encoding ``pe`` (``[n_positions, d_model]``) gives every
position its own vector, which is added to the token embedding.

In the sinusoidal encoding of "Attention Is All You Need", dimension ``2i``
holds ``sin(pos / 10000^(2i/d_model))`` and dimension ``2i+1`` the matching
cosine: low dimensions oscillate fast, high dimensions slowly, like the
hands of a clock. Learned encodings (GPT-2) are free parameters instead.
"""

from __future__ import annotations

import numpy as np

from . import plain
from ._common import as_float32, check_labels, finite_range, keeps_width, labels_meta, nothing_to_draw
from .labels import position_labels, safe_label, tick_axis
from .theme import DIVERGING, PALETTE


def _unit_heatmap(values: np.ndarray, colorbar_title: str, hover: str) -> dict:
    """A `[rows, cols]` heatmap of values in [-1, 1] on the diverging scale, white at 0 (plotly JSON)."""
    return dict(
        type="heatmap",
        z=values,
        x=np.arange(values.shape[1]),
        y=np.arange(values.shape[0]),
        colorscale=plain.colorscale(DIVERGING),
        zmin=-1.0,
        zmax=1.0,
        zmid=0.0,
        colorbar=dict(title=dict(text=colorbar_title, side="right")),
        hovertemplate=hover + "<extra></extra>",
    )


def _position_axis_y() -> dict:
    return dict(title=plain.title("position"), autorange="reversed", showgrid=False, zeroline=False)


def pe_heatmap(pe, *, title: str = "Positional encoding: one row per position") -> dict:
    """The encoding matrix: y = position (0 on top), x = dimension.

    A diverging scale fixed to [-1, 1] (the range of sin and cos) shows the
    stripes: fast waves on the left, slow ones on the right.
    """
    values = as_float32(pe, ndim=2, name="pe")  # [n_positions, d_model]
    n_positions, d_model = values.shape
    if values.size == 0:
        return nothing_to_draw(title, "no positions")
    layout = dict(title=plain.title(title), xaxis=dict(title=plain.title("dimension"), showgrid=False, zeroline=False), yaxis=_position_axis_y())
    return plain.figure([_unit_heatmap(values, "value", "position %{y}<br>dim %{x}<br>value %{z:.3f}")], layout)


def _dim_name(dim: int, sinusoidal: bool) -> str:
    if not sinusoidal:
        return f"dim {dim}"
    return f"dim {dim} ({'sin' if dim % 2 == 0 else 'cos'})"


def pe_curves(pe, dims: list[int], *, sinusoidal: bool = True, title: str = "Selected dimensions across positions") -> dict:
    """One line per chosen dimension, plotted against position.

    With the sinusoidal layout even dimensions are sines and odd ones
    cosines, so the legend reads "dim 4 (sin)", "dim 5 (cos)"; pass
    ``sinusoidal=False`` for a learned encoding.
    """
    values = as_float32(pe, ndim=2, name="pe")  # [n_positions, d_model]
    n_positions, d_model = values.shape
    bad = [d for d in dims if not 0 <= int(d) < d_model]
    if bad:
        raise ValueError(f"dims {bad} outside 0..{d_model - 1}")
    if n_positions == 0 or not dims:
        return nothing_to_draw(title, "no positions" if n_positions == 0 else "no dimensions chosen")
    positions = np.arange(n_positions)
    data = []
    for index, dim in enumerate(int(d) for d in dims):
        name = _dim_name(dim, sinusoidal)
        data.append(
            dict(
                type="scatter",
                x=positions,
                y=values[:, dim],  # [n_positions]
                mode="lines",
                name=name,
                line=dict(color=PALETTE[index % len(PALETTE)], width=2),
                hovertemplate=f"{name}<br>position %{{x}}<br>value %{{y:.3f}}<extra></extra>",
            )
        )
    return plain.figure(data, dict(title=plain.title(title), xaxis=dict(title=plain.title("position")), yaxis=dict(title=plain.title("value"))))


def position_similarity_heatmap(sim, *, title: str = "Cosine similarity between position vectors") -> dict:
    """``[n_positions, n_positions]`` cosine similarities on a [-1, 1] scale.

    Cell ``(i, j)`` compares the encodings of positions ``i`` and ``j``. For
    sinusoidal encodings the bright band along the diagonal shows that nearby
    positions look alike and similarity depends on the distance ``|i - j|``.
    """
    values = as_float32(sim, ndim=2, name="sim")  # [position_i, position_j]
    n_rows, n_cols = values.shape
    if values.size == 0:
        return nothing_to_draw(title, "no positions")
    return plain.figure(
        [_unit_heatmap(values, "cosine", "positions %{y} and %{x}<br>cosine %{z:.3f}")],
        dict(
            title=plain.title(title),
            xaxis=dict(title=plain.title("position"), showgrid=False, zeroline=False, constrain="domain"),
            yaxis=dict(
                title=plain.title("position"),
                autorange="reversed",
                showgrid=False,
                zeroline=False,
                scaleanchor="x",
                scaleratio=1,
                constrain="domain",
            ),
        ),
    )


def similarity_by_distance_figure(
    distances,
    similarity,
    *,
    label: str,
    series: dict[str, tuple] | None = None,
    title: str = "Similarity of two positions by their distance",
) -> dict:
    """Mean cosine similarity of position pairs against their distance.

    The first line is ``(distances, similarity)`` named ``label``; ``series``
    adds more lines as ``{label: (distances, similarities)}``, for example a
    learned encoding next to the sinusoidal one.
    """
    lines = {label: (distances, similarity), **(series or {})}
    if all(np.asarray(ys).size == 0 for _, ys in lines.values()):
        return nothing_to_draw(title, "no pairs of positions")
    data = []
    for index, (name, (xs, ys)) in enumerate(lines.items()):
        xs = np.asarray(xs)
        ys = as_float32(ys, ndim=1, name=f"similarity of {name!r}")
        if xs.shape != ys.shape:
            raise ValueError(f"series {name!r}: {xs.shape[0]} distances, {ys.shape[0]} similarities")
        data.append(
            dict(
                type="scatter",
                x=xs,
                y=ys,
                mode="lines+markers",
                name=safe_label(name),
                line=dict(color=PALETTE[index % len(PALETTE)], width=2),
                marker=dict(size=5),
                hovertemplate="%{fullData.name}<br>distance %{x}<br>cosine %{y:.3f}<extra></extra>",
            )
        )
    layout = dict(
        title=plain.title(title), xaxis=dict(title=plain.title("distance |i − j|"), rangemode="tozero"), yaxis=dict(title=plain.title("mean cosine similarity"))
    )
    return plain.figure(data, layout)


def input_composition_figure(
    token_embedding,
    positional,
    labels,
    *,
    title: str = "What the first layer receives",
) -> dict:
    """Token embedding + positional encoding = model input, as three heatmaps.

    ``token_embedding`` is ``[seq, d_model]``; ``positional`` is
    ``[seq, d_model]`` or longer (its first ``seq`` rows are used). Rows are
    tokens in all three panels. One diverging colour scale, symmetric around
    zero, is shared by the panels so a colour means the same number in each.
    """
    tokens = as_float32(token_embedding, ndim=2, name="token_embedding")  # [seq, d_model]
    n_tokens, d_model = tokens.shape
    position = as_float32(positional, ndim=2, name="positional")  # [n_positions, d_model]
    if position.shape[0] < n_tokens or position.shape[1] != d_model:
        raise ValueError(f"positional has shape {position.shape}, need at least ({n_tokens}, {d_model})")
    if tokens.size == 0:
        return nothing_to_draw(title, "no tokens")
    position = position[:n_tokens]  # [seq, d_model]
    total = tokens + position  # [seq, d_model]
    token_labels = position_labels(check_labels(labels, n_tokens, "labels"))
    low, high = finite_range(tokens, position, total, symmetric=True)
    colours = dict(colorscale=plain.colorscale(DIVERGING), cmin=low, cmax=high, cmid=0.0, colorbar=dict(title=dict(text="value", side="right")))

    panels = (("token embedding", tokens), ("+ positional encoding", position), ("= model input", total))
    data, layout = token_panel_row(panels, token_labels, coloraxes=["coloraxis"] * 3, title=title)
    return plain.figure(data, {**layout, "coloraxis": colours})


def token_panel_row(panels, token_labels: list[str], *, coloraxes: list[str], title: str) -> tuple[list[dict], dict]:
    """Heatmaps of `[seq, d_model]` arrays side by side, rows the tokens (named on the first panel only),
    as `make_subplots(1, len(panels))` would lay them out: (traces, layout)."""
    layout, cells = plain.subplots(1, len(panels), titles=[name for name, _ in panels], horizontal_spacing=0.04)
    n_tokens, d_model = panels[-1][1].shape
    text = [[label] * d_model for label in token_labels]
    data = []
    for col, ((name, values), coloraxis) in enumerate(zip(panels, coloraxes), start=1):
        data.append(
            dict(
                type="heatmap",
                z=values[:n_tokens],
                x=np.arange(d_model),
                y=np.arange(n_tokens),
                text=text,
                coloraxis=coloraxis,
                name=name,
                meta=labels_meta(None, token_labels),
                hovertemplate=f"{name}<br>%{{text}} (position %{{y}})<br>dim %{{x}}: %{{z:.3f}}<extra></extra>",
                **cells[1, col],
            )
        )
        suffix = "" if col == 1 else str(col)
        layout[f"yaxis{suffix}"].update(autorange="reversed", showgrid=False, zeroline=False, showticklabels=col == 1, **tick_axis(token_labels))
        layout[f"xaxis{suffix}"].update(title=plain.title("dimension"), showgrid=False, zeroline=False)
    layout["yaxis"]["title"] = plain.title("token")
    layout["title"] = plain.title(title)
    return data, keeps_width(layout)  # side-by-side panels: scroll on a phone rather than squeeze
