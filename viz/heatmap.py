"""Heatmap primitives for attention matrices, and one matrix as a figure.

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

import base64
import functools

import numpy as np

from . import plain
from ._common import DECORATION_META, apply_mask, as_float32, check_labels, labels_meta, nothing_to_draw
from .labels import position_labels, tick_axis, ticks_for
from .theme import DIVERGING, MASK_COLOR, MASK_MARK_COLOR, SEQUENTIAL

X_TITLE = "key (attended to)"
Y_TITLE = "query (attending)"

MAX_MARKED_SIDE = 40
MAX_HOVER_CELLS = 20_000


def _hover_text(query_labels: list[str], key_labels: list[str]) -> np.ndarray:
    """Per-cell hover text naming both tokens.  # [query_pos, key_pos]

    A numpy array of strings, sent as the same nested lists: a figure holds an array as a view
    (``plain.figure``) and the JSON encoder writes it at once, where a list of lists is copied n² strings
    one by one."""
    keys = np.array([f"<br>key {k}: {label}" for k, label in enumerate(key_labels)])
    queries = np.array([f"query {q}: {q_label}" for q, q_label in enumerate(query_labels)])
    return np.char.add(queries[:, None], keys[None, :]) if len(queries) and len(keys) else np.empty((len(queries), len(keys)), dtype=str)


def heatmap_trace(
    matrix: np.ndarray,
    query_labels: list[str],
    key_labels: list[str],
    *,
    value_name: str,
    colorscale=None,
    zmin=None,
    zmax=None,
    zmid=None,
    colorbar: dict | None = None,
    coloraxis: str | None = None,
    with_tokens: bool = True,
    name: str | None = None,
    cells: dict | None = None,
    positions: tuple | None = None,
) -> dict:
    """A heatmap trace (plotly JSON, see ``viz.plain``) on numeric axes; NaN cells stay gaps without hover.

    ``cells`` (e.g. ``{"stage": "pattern", "layer": 0, "head": 2}``) and ``positions`` (the token
    positions of the rows and columns, ``(query_positions, key_positions)``, when the matrix is a
    window or block means of a longer input) go into the trace's ``meta`` for the CSV export.
    """
    n_query, n_key = matrix.shape
    meta = labels_meta(key_labels, query_labels)
    if cells is not None:
        meta.update(kind="attention", stage=None, layer=None, head=None)
        meta.update(cells)
        query_positions, key_positions = positions or (range(n_query), range(n_key))
        meta.update(query_positions=[int(p) for p in query_positions], key_positions=[int(p) for p in key_positions])
    trace = dict(
        z=matrix,
        x=np.arange(n_key),
        y=np.arange(n_query),
        hoverongaps=False,
        name=name,
        meta=meta,
    )
    if coloraxis is not None:
        trace["coloraxis"] = coloraxis
    else:
        trace.update(colorscale=plain.colorscale(colorscale), zmin=zmin, zmax=zmax, zmid=zmid, colorbar=colorbar)
    if with_tokens:
        trace["text"] = _hover_text(query_labels, key_labels)
        trace["hovertemplate"] = f"%{{text}}<br>{value_name}: %{{z:.4g}}<extra></extra>"
    else:
        trace["hovertemplate"] = f"query %{{y}}<br>key %{{x}}<br>{value_name}: %{{z:.4g}}<extra></extra>"
    return {"type": "heatmap", **{key: value for key, value in trace.items() if value is not None}}


TRANSPARENT = "rgba(0,0,0,0)"


def mask_marks(masked: np.ndarray | None, *, xaxis: str = "x", yaxis: str = "y", panel_px: float = 420) -> tuple[dict, dict] | None:
    """The masked cells of a matrix of at most 40 per side, as plotly JSON: (a heatmap trace, a layout image).

    The image is an SVG over the whole panel with a cross on every masked cell, sized to about a quarter of
    a cell of a panel about ``panel_px`` pixels wide, so neighbouring crosses never touch. The trace is
    transparent and has values only on the masked cells (a gap elsewhere): hovering a masked cell says it
    is masked, and a click on it is read as a click on that cell (``viz.clickable``). Markers did both, but
    the browser styles markers one by one on every redraw: the stages chart at 16 tokens redrew in 40 ms
    with them, 31 ms with these (chromium, 36 redraws each). Both are decoration: no CSV, no print theme.
    """
    if masked is None or max(masked.shape) > MAX_MARKED_SIDE or not masked.any():
        return None
    n_query, n_key = masked.shape
    source = _mask_marks_source(np.packbits(np.asarray(masked, dtype=bool)).tobytes(), masked.shape, panel_px)
    image = dict(
        source=source,
        xref=f"{xaxis} domain",
        yref=f"{yaxis} domain",
        x=0,
        y=1,
        sizex=1,
        sizey=1,
        xanchor="left",
        yanchor="top",
        sizing="stretch",
        layer="above",
    )
    trace = dict(
        type="heatmap",
        z=np.where(masked, np.float32(1), np.float32(np.nan)).astype(np.float32),
        x=np.arange(n_key),
        y=np.arange(n_query),
        colorscale=[[0.0, TRANSPARENT], [1.0, TRANSPARENT]],
        zmin=0,
        zmax=1,
        showscale=False,
        hoverongaps=False,
        hovertemplate="masked: query %{y} may not attend to key %{x}<extra></extra>",
        name="masked cells",
        showlegend=False,
        meta=dict(DECORATION_META),
        xaxis=xaxis,
        yaxis=yaxis,
    )
    return trace, image


@functools.lru_cache(maxsize=256)
def _mask_marks_source(packed: bytes, shape: tuple[int, int], panel_px: float) -> str:
    """The crosses' SVG of `mask_marks` as a data URL, for the mask packed by `np.packbits`: made once per
    mask and panel size (a toggle of scaling, temperature or heads keeps the mask; 4 ms a panel at 16 tokens).
    ui/components/chart/live.js draws the same string in the browser."""
    n_query, n_key = shape
    masked = np.unpackbits(np.frombuffer(packed, dtype=np.uint8), count=n_query * n_key).reshape(shape).astype(bool)
    cell_px = panel_px / max(shape)
    cross_px = max(3, round(0.5 * max(6, min(18, 0.55 * cell_px))))
    half = min(0.3, cross_px / 2 / cell_px)  # in cells
    # each coordinate formatted once, not once per cell
    x_low, x_high = ([f"{k + 0.5 + side:.3f}" for k in range(n_key)] for side in (-half, half))
    y_low, y_high = ([f"{q + 0.5 + side:.3f}" for q in range(n_query)] for side in (-half, half))
    strokes = "".join(f"M{x_low[k]} {y_low[q]}L{x_high[k]} {y_high[q]}M{x_high[k]} {y_low[q]}L{x_low[k]} {y_high[q]}" for q, k in zip(*np.nonzero(masked)))
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {n_key} {n_query}" preserveAspectRatio="none">'
        f'<path d="{strokes}" fill="none" stroke="{MASK_MARK_COLOR}" stroke-width="1" vector-effect="non-scaling-stroke"/></svg>'
    )
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("ascii")).decode("ascii")


def matrix_axes(
    n_query: int,
    n_key: int,
    query_labels,
    key_labels,
    *,
    show_query_ticks=True,
    max_ticks: int = 40,
    keep: tuple[int | None, int | None] = (None, None),
):
    """x/y axis settings of one attention matrix panel (query 0 on top).

    At most about ``max_ticks`` labels per axis; ``keep`` = (query, key) positions whose labels
    always show (the chosen token). Key labels stand upright (rotated 90°) so they never overlap.
    """
    xaxis = dict(
        title=plain.title(X_TITLE),
        range=[-0.5, n_key - 0.5],
        showgrid=False,
        zeroline=False,
        tickangle=-90,
        automargin=True,
        **tick_axis(key_labels, max_ticks=max_ticks, keep=keep[1]),
    )
    yaxis = dict(
        range=[n_query - 0.5, -0.5],
        showgrid=False,
        zeroline=False,
        automargin=True,
        **tick_axis(query_labels, max_ticks=max_ticks, keep=keep[0]),
    )
    if show_query_ticks:
        yaxis["title"] = plain.title(Y_TITLE)
    else:
        yaxis["showticklabels"] = False
    return xaxis, yaxis


PATTERN_COLOURS = ("fixed", "own")


def weight_scale(*matrices, colour: str = "fixed") -> tuple[float, float, str]:
    """Colour range and colour-bar title for attention weights.

    ``"fixed"``: 0 to 1, so one colour is one weight in every figure. ``"own"``: 0 to the largest
    weight in ``matrices`` (the figure's own maximum), so a head that spreads thin weights, or puts
    most of its weight on one token, still shows its structure; the bar says so.
    """
    if colour not in PATTERN_COLOURS:
        raise ValueError(f"unknown pattern colour {colour!r}; choose from {PATTERN_COLOURS}")
    if colour == "fixed":
        return 0.0, 1.0, "weight"
    finite = [m[np.isfinite(m)] for m in (np.asarray(x, dtype=np.float64) for x in matrices)]
    top = max((float(f.max()) for f in finite if f.size), default=1.0)
    top = top if top > 0 else 1.0
    return 0.0, top, f"weight (0 to max {top:.2g})"


SINGLE_HEIGHT = 640  # a single matrix is drawn this tall: about a 500-pixel square plot at 1440 × 900


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
    cells: dict | None = None,
    positions: tuple | None = None,
    keep: tuple[int | None, int | None] = (None, None),
    height: int = SINGLE_HEIGHT,
) -> dict:
    """One attention matrix as a heatmap.

    ``matrix`` is ``[query_pos, key_pos]`` (scores or weights); ``masked`` a
    bool array of the same shape, True where the query may not see the key.
    Labels are raw token strings (they are made safe here). Give ``zmid=0``
    for signed scores: the scale becomes diverging around zero. Hover names
    both tokens unless the matrix has more than ``max_hover_cells`` cells, in
    which case it shows positions only (keeps the figure small). ``cells``,
    ``positions`` (see ``heatmap_trace``) name the cells in the CSV export;
    ``keep`` = (query, key) rows whose labels are never thinned away.
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

    trace = heatmap_trace(
        values,
        q_labels,
        k_labels,
        value_name=colorbar_title,
        colorscale=colorscale,
        zmin=zmin,
        zmax=zmax,
        zmid=zmid,
        colorbar=dict(title=dict(text=colorbar_title, side="right")),
        with_tokens=values.size <= max_hover_cells,
        cells=cells or {},
        positions=positions,
    )
    trace["meta"]["keep"] = list(keep)
    marks = mask_marks(mask, panel_px=height - 200)

    xaxis, yaxis = matrix_axes(n_query, n_key, q_labels, k_labels, max_ticks=ticks_for(height - 200), keep=keep)
    if square:
        yaxis.update(scaleanchor="x", scaleratio=1, constrain="domain")
        xaxis.update(constrain="domain")
    layout = dict(title=plain.title(title), plot_bgcolor=MASK_COLOR, xaxis=xaxis, yaxis=yaxis, height=height)
    if marks is None:
        return plain.figure([trace], layout)
    return plain.figure([trace, marks[0]], dict(layout, images=[marks[1]]))


def block_edges(n: int, max_cells: int) -> np.ndarray:
    """Start indices of at most ``max_cells`` near-equal blocks covering ``n``, plus ``n``."""
    if n <= max_cells:
        return np.arange(n + 1)
    return np.linspace(0, n, max_cells + 1).astype(np.int64)


def _block_sums(matrix, max_cells: int, masked) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``matrix`` ``[..., query_pos, key_pos]`` cut into at most ``max_cells`` blocks a side (``block_edges``):
    each block's sum of the cells left in (float64), their count, and the query blocks' edges. Left out:
    NaN cells and those True in ``masked`` ``[query_pos, key_pos]``; when the mask alone leaves cells out,
    it is counted once for every head."""
    if max_cells < 1:
        raise ValueError("max_cells must be at least 1")
    values = np.asarray(matrix)
    values = values if values.dtype.kind == "f" else values.astype(np.float64)
    if values.ndim < 2:
        raise ValueError(f"matrix needs at least 2 dimensions, got shape {values.shape}")
    left_in = np.ones(values.shape[-2:], dtype=bool) if masked is None else ~np.asarray(masked, dtype=bool)
    if left_in.shape != values.shape[-2:]:
        raise ValueError(f"masked has shape {left_in.shape}, the matrix {values.shape}")
    gaps = np.isnan(values)
    present = left_in & ~gaps if gaps.any() else left_in
    row_edges, col_edges = block_edges(values.shape[-2], max_cells), block_edges(values.shape[-1], max_cells)
    rows, cols = row_edges[:-1], col_edges[:-1]
    # along the rows of memory first (key_pos), which shrinks the array before the strided sum over query_pos:
    # 2-3× faster for 12 heads at 512 tokens than the other order
    if present.all():  # scores: nothing left out, no copy, and each block's count is its size
        totals = np.add.reduceat(np.add.reduceat(values, cols, axis=-1, dtype=np.float64), rows, axis=-2)
        return totals, np.multiply.outer(np.diff(row_edges), np.diff(col_edges)), row_edges
    kept = np.where(present, values, values.dtype.type(0))
    totals = np.add.reduceat(np.add.reduceat(kept, cols, axis=-1, dtype=np.float64), rows, axis=-2)
    counts = np.add.reduceat(np.add.reduceat(present, cols, axis=-1, dtype=np.int32), rows, axis=-2)
    return totals, counts, row_edges


def block_weights(pattern, max_cells: int, *, masked=None) -> np.ndarray:
    """Attention weights ``[..., query_pos, key_pos]`` as a pattern of at most ``max_cells`` blocks a side.

    A cell is the weight the block's queries give the block's keys: each query's weights summed over
    the keys of the block, averaged over the queries of the block. So a row of blocks sums to what a
    row of weights sums to (1), and one key that takes most of the weight (the first token, the
    previous one) stays as bright as it is, where a block mean (``downsample``) would divide it by the
    block's width: at 512 tokens in 32 blocks, a weight of 0.9 became a mean of 0.06. NaN cells and
    ``masked`` ones (``[query_pos, key_pos]``, True) weigh nothing; a block with no other cell is NaN
    (a gap). Blocks as in ``downsample``; shorter axes are left as they are.
    """
    totals, counts, row_edges = _block_sums(pattern, max_cells, masked)
    return np.where(counts > 0, totals / np.diff(row_edges)[:, None], np.nan)


def downsample(matrix, max_cells: int, *, masked=None) -> np.ndarray:
    """Average blocks so neither of the last two axes exceeds ``max_cells``.

    ``matrix`` is ``[..., query_pos, key_pos]``. An axis of length ``n >
    max_cells`` is cut into ``max_cells`` consecutive blocks whose sizes
    differ by at most one (``n`` need not be divisible), and each output
    cell is the mean of its block. NaN cells are ignored; a block that is all
    NaN gives NaN. Shorter axes are left as they are. ``masked``
    (``[query_pos, key_pos]``, True = left out) gives the same result as those
    cells set to NaN, faster for many heads: the cells counted are the mask's,
    found once for every head.

    Example: a 4×4 matrix with ``max_cells=2`` becomes the 2×2 matrix of the
    means of its four 2×2 quarters.
    """
    totals, counts, _ = _block_sums(matrix, max_cells, masked)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, totals / np.maximum(counts, 1), np.nan)
