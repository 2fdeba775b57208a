"""Two ways of reading a pattern that one heatmap does not show well.

* A **focus window** for long inputs: a range of tokens around a chosen one drawn at full
  resolution with readable labels, beside an overview of the whole input (in blocks of tokens) on which
  the window is outlined.
* **Hiding sink tokens and renormalising**: many pretrained heads put most of their weight on the
  first token, ``[CLS]`` or ``[SEP]``, so everything else looks dark. Dropping those keys and
  rescaling each row to sum to 1 again shows how the *rest* of the weight is spread. It is a way of
  looking, not what the model computed, and the figure says so in its title.
"""

from __future__ import annotations

import numpy as np

from . import plain
from ._common import apply_mask, as_float32, check_labels, nothing_to_draw
from .heatmap import attention_heatmap, block_edges, block_weights, heatmap_trace, matrix_axes, weight_scale
from .labels import position_labels, ticks_for
from .theme import MASK_COLOR, SEQUENTIAL

FOCUS_TOKENS = 40  # the window's default width, in tokens
OVERVIEW_CELLS = 64  # the overview beside it: at most this many blocks per side
FOCUS_HEIGHT = 640


def focus_range(n: int, centre: int, width: int = FOCUS_TOKENS) -> tuple[int, int]:
    """``(start, stop)`` of ``width`` consecutive positions around ``centre``, inside ``0 .. n``."""
    width = max(1, min(width, n))
    centre = min(max(centre, 0), n - 1)
    start = min(max(centre - width // 2, 0), n - width)
    return start, start + width


def renormalised_without(pattern, hidden: list[int]) -> tuple[np.ndarray, list[int]]:
    """The pattern without the ``hidden`` key columns, each row rescaled to sum to 1 again.

    ``pattern`` is ``[query_pos, key_pos]`` (NaN for masked cells). Returns the new matrix
    ``[query_pos, kept keys]`` and the kept key positions. A row whose remaining weight is 0
    (it attended only to hidden keys, or to nothing) stays 0.
    """
    values = np.asarray(pattern, dtype=np.float64)
    kept = [k for k in range(values.shape[1]) if k not in set(hidden)]
    rest = values[:, kept]  # [query_pos, kept key]
    total = np.nansum(rest, axis=1, keepdims=True)  # [query_pos, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, rest / np.where(total > 0, total, 1.0), rest), kept


def renormalised_figure(
    pattern,
    query_labels,
    key_labels,
    *,
    hidden: list[int],
    masked=None,
    title: str,
    pattern_colour: str = "fixed",
    cells: dict | None = None,
) -> dict:
    """The pattern with the ``hidden`` keys dropped and every row renormalised, labelled as a view."""
    values = as_float32(pattern, ndim=2, name="pattern")
    if values.size == 0:
        return nothing_to_draw(title, "no tokens")
    apply_mask(values, None if masked is None else np.asarray(masked, dtype=bool))
    shown, kept = renormalised_without(values, hidden)
    if not kept:
        return nothing_to_draw(title, "every key is hidden")
    keys = [key_labels[k] for k in kept]
    names = ", ".join(f"“{label}”" for label in position_labels([key_labels[k] for k in hidden])) or "nothing"
    low, high, bar = weight_scale(shown, colour=pattern_colour)
    return attention_heatmap(
        shown,
        query_labels,
        keys,
        title=f"{title}<br><sup>view: {names} hidden, each row renormalised to sum to 1 (not the model's own weights)</sup>",
        colorbar_title=bar.replace("weight", "share of the rest", 1),
        masked=np.isnan(shown),
        zmin=low,
        zmax=high,
        cells={"stage": "pattern renormalised", **(cells or {})},
        positions=(range(len(query_labels)), kept),
    )


def focus_figure(
    pattern,
    labels,
    *,
    centre: int,
    width: int = FOCUS_TOKENS,
    masked=None,
    title: str,
    pattern_colour: str = "fixed",
    cells: dict | None = None,
) -> dict:
    """A window of ``width`` tokens around ``centre`` at full resolution, beside the whole input.

    ``pattern`` is ``[query_pos, key_pos]`` over the whole input. Left: the overview (at most 64 × 64
    blocks, each the weight its queries give its keys: ``block_weights``; the window outlined). Right: rows and columns ``start .. stop`` of the
    pattern, every cell, its labels thinned only as far as they must be and never hiding
    ``centre``. Both panels share one colour scale.
    """
    values = as_float32(pattern, ndim=2, name="pattern")  # [query_pos, key_pos]
    if values.size == 0:
        return nothing_to_draw(title, "no tokens")
    n = values.shape[0]
    labels = position_labels(check_labels(labels, n, "labels"))
    apply_mask(values, None if masked is None else np.asarray(masked, dtype=bool))
    start, stop = focus_range(n, centre, width)
    window = values[start:stop, start:stop]
    overview = block_weights(values, OVERVIEW_CELLS).astype(np.float32)  # [query_block, key_block]
    edges = block_edges(n, OVERVIEW_CELLS)
    low, high, bar = weight_scale(values, overview, colour=pattern_colour)

    layout, cell = plain.subplots(
        1,
        2,
        titles=[
            f"whole input: {n} tokens" + (" in blocks" if n > OVERVIEW_CELLS else ""),
            f"tokens {start}–{stop - 1} around “{labels[centre]}” ({centre})",
        ],
        column_widths=[0.38, 0.62],
        horizontal_spacing=0.1,
    )
    block_labels = [labels[p] for p in edges[:-1]]
    whole = heatmap_trace(
        overview,
        block_labels,
        block_labels,
        value_name="weight",
        coloraxis="coloraxis",
        with_tokens=False,
        name="whole input",
        cells={"stage": "pattern (weights of blocks of tokens)", **(cells or {})},
        positions=(edges[:-1], edges[:-1]),
    )
    window_labels = labels[start:stop]
    trace = heatmap_trace(
        window,
        window_labels,
        window_labels,
        value_name="weight",
        coloraxis="coloraxis",
        name="focus window",
        cells={"stage": "pattern", **(cells or {})},
        positions=(range(start, stop), range(start, stop)),
    )
    trace["meta"]["keep"] = [centre - start, centre - start]
    data = [{**whole, **cell[1, 1]}, {**trace, **cell[1, 2]}]

    overview_axes = matrix_axes(len(block_labels), len(block_labels), block_labels, block_labels, max_ticks=8)
    window_axes = matrix_axes(
        stop - start, stop - start, window_labels, window_labels, max_ticks=ticks_for(FOCUS_HEIGHT - 260), keep=(centre - start, centre - start)
    )
    for col, (xaxis, yaxis) in ((1, overview_axes), (2, window_axes)):
        suffix = "" if col == 1 else str(col)
        yaxis.update(scaleanchor=f"x{suffix}", scaleratio=1, constrain="domain")
        xaxis.update(constrain="domain")
        if col == 2:
            yaxis.pop("title")  # the overview's y title serves both panels
        layout[f"xaxis{suffix}"].update(xaxis)
        layout[f"yaxis{suffix}"].update(yaxis)
    # the window, outlined on the overview (in block coordinates)
    first = int(np.searchsorted(edges, start, side="right")) - 1
    last = int(np.searchsorted(edges, stop - 1, side="right")) - 1
    layout.update(
        shapes=[dict(type="rect", x0=first - 0.5, x1=last + 0.5, y0=first - 0.5, y1=last + 0.5, xref="x", yref="y", line=dict(color="#D55E00", width=2))],
        title=plain.title(title),
        plot_bgcolor=MASK_COLOR,
        height=FOCUS_HEIGHT,
        coloraxis=dict(colorscale=plain.colorscale(SEQUENTIAL), cmin=low, cmax=high, colorbar=dict(title=dict(text=bar, side="right"))),
    )
    return plain.figure(data, layout)
