"""The steps from scores to pattern side by side, and how peaked each query row is with and without scaling."""

from __future__ import annotations

import numpy as np

from . import plain
from ._common import apply_mask, as_float32, check_labels, finite_range, keeps_width, nothing_to_draw
from .heatmap import MAX_HOVER_CELLS, heatmap_trace, mask_marks, matrix_axes, weight_scale
from .labels import position_labels, tick_axis, ticks_for
from .theme import DEFAULT_MARGIN, DIVERGING, MASK_COLOR, PALETTE, SEQUENTIAL

STAGE_TITLES = {
    "scores_raw": "raw Q·Kᵀ",
    "scores_scaled": "÷ √d_k",
    "scores_masked": "masked",
    "pattern": "softmax",
}
SCORE_STAGES = ("scores_raw", "scores_scaled", "scores_masked")

# Up to ROW_MAX_TOKENS tokens the four panels stand in one row: on the page's column at 1440 × 900
# (928 px) a panel is about ROW_PANEL_PX wide, room for a label on every token. Longer inputs get two
# rows of two, panels about GRID_PANEL_PX wide: twice the labels (every token up to 17, every 8th at
# 128), where a row of four showed every 13th and cut them at the panel's edge.
ROW_MAX_TOKENS = 7
ROW_PANEL_PX = 150
GRID_PANEL_PX = 300
STAGES_MIN_WIDTH = 900  # on a narrower screen the chart keeps this width and scrolls sideways in its box (ui/components/chart)
STAGE_TICK_PX = 11  # the token labels' font: one label per 1.6 font heights (`ticks_for`), 17 to a grid panel
# The row's domains on the paper's x axis: three score panels close together (only the first shows the
# query labels), then a gap for the shared score colour bar, then the pattern with its own bar.
DOMAINS = ((0.0, 0.205), (0.235, 0.44), (0.47, 0.675), (0.795, 1.0))
STAGES_HEIGHT = 460
# The grid's: scores raw and scaled on top (the score colour bar to their right), masked and softmax
# below (the weight bar to their right); the key labels only under the bottom row (the same keys).
GRID_X = ((0.0, 0.44), (0.52, 0.96))
GRID_Y = ((0.56, 1.0), (0.0, 0.44))
GRID_TOP, GRID_BOTTOM = 110, 100  # the margins for the titles above and the upright key labels below
GRID_HEIGHT = round(GRID_PANEL_PX / (GRID_Y[0][1] - GRID_Y[0][0])) + GRID_TOP + GRID_BOTTOM
GRID_RIGHT = 90  # the margin of the colour bars
GRID_SQUARE_PX = (GRID_HEIGHT - GRID_TOP - GRID_BOTTOM) * (GRID_Y[0][1] - GRID_Y[0][0])  # a panel's side
GRID_WIDTH = round(GRID_SQUARE_PX / (GRID_X[0][1] - GRID_X[0][0])) + DEFAULT_MARGIN["l"] + GRID_RIGHT  # columns as wide as their squares


def stages_panel_px(n_tokens: int) -> int:
    """About how wide one panel of `stages_figure` is drawn for ``n_tokens`` tokens on the page at 1440 × 900
    (its labels are thinned for it, and the mask marks' crosses are sized for it)."""
    return ROW_PANEL_PX if n_tokens <= ROW_MAX_TOKENS else GRID_PANEL_PX


def stage_titles(*, divisor: float, d_head: int, temperature: float = 1.0, mask_name: str = "none", hidden: tuple[str, ...] = ()) -> dict[str, str]:
    """Panel titles that say what was done: the divisor used (or that scaling is off), which mask and
    how many hidden keys (the figure's title names them), and the softmax temperature when it is not 1."""
    if divisor == 1.0:
        scaled = "no scaling (÷ 1)"
    else:
        scaled = f"÷ √d_k = ÷ √{d_head} = ÷ {divisor:.3g}"
    if mask_name == "none":
        masked = f"masked: {len(hidden)} hidden" if hidden else "masked: nothing"
    else:  # the hidden keys go under the title, beside the panel's range: one line stays short
        masked = f"masked: {mask_name}" + (f"<br><sup>+ {len(hidden)} hidden</sup>" if hidden else "")
    softmax = "softmax" if temperature == 1.0 else f"softmax(· ÷ T), T = {temperature:g}"
    return {"scores_raw": "raw Q·Kᵀ", "scores_scaled": scaled, "scores_masked": masked, "pattern": softmax}


def _with_spread(title: str, spread: str) -> str:
    """A panel title with its range on a small second line, after any note the title already has there."""
    head, _, note = title.partition("<br><sup>")
    note = note.removesuffix("</sup>")
    return f"{head}<br><sup>{note + ' · ' if note else ''}{spread}</sup>"


def _spread(values: np.ndarray, *, pattern: bool) -> str:
    """The values a panel holds, written under its title: "−34.1 to 33.9", or the largest weight."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return "no visible cell"
    if pattern:
        return f"largest weight {finite.max():.2f}"
    return f"{finite.min():.3g} to {finite.max():.3g}".replace("-", "−")


def stages_figure(
    stages: dict[str, np.ndarray],
    query_labels,
    key_labels,
    *,
    masked,
    title: str,
    titles: dict[str, str] | None = None,
    pattern_colour: str = "fixed",
    layer: int | None = None,
    head: int | None = None,
    positions: tuple | None = None,
    keep: tuple[int | None, int | None] = (None, None),
    max_hover_cells: int = MAX_HOVER_CELLS,
) -> dict:
    """The four steps from scores to pattern, side by side.

    ``stages`` maps ``scores_raw`` (Q·Kᵀ), ``scores_scaled`` (÷ √d_k),
    ``scores_masked`` and ``pattern`` (softmax) to ``[query_pos, key_pos]``
    arrays. The three score panels share one diverging colour scale around
    zero (one number, one colour: dividing by √d_k shows as a paler panel),
    the pattern has its own sequential scale (see ``weight_scale`` for
    ``pattern_colour``). Under each panel's title, the values it holds.
    Masked cells are gaps in the last two panels (``-inf`` in
    ``scores_masked`` is treated as masked too); the first two show every
    raw score, because masking only happens at step three.

    ``titles`` replaces the panel titles (see ``stage_titles``); ``layer``,
    ``head`` and ``positions`` name the cells in the CSV export; ``keep`` =
    (query, key) positions whose labels are never thinned away.
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

    low, high = finite_range(*(panels[k] for k in SCORE_STAGES), symmetric=True)
    weight_low, weight_high, weight_title = weight_scale(panels["pattern"], colour=pattern_colour)
    names = {**STAGE_TITLES, **(titles or {})}

    in_row = max(n_query, n_key) <= ROW_MAX_TOKENS
    panel_titles = [_with_spread(names[key], _spread(panels[key], pattern=key == "pattern")) for key in STAGE_TITLES]
    if in_row:
        layout, cells = plain.subplots(1, 4, titles=panel_titles, horizontal_spacing=0.03)
        places = [(1, col) for col in range(1, 5)]
    else:
        layout, cells = plain.subplots(2, 2, titles=panel_titles)
        places = [(1, 1), (1, 2), (2, 1), (2, 2)]
    data, images = [], []
    with_tokens = 4 * n_query * n_key <= max_hover_cells
    panel_px = stages_panel_px(max(n_query, n_key))
    max_ticks = ticks_for(panel_px, font_px=STAGE_TICK_PX)
    for index, key in enumerate(STAGE_TITLES):
        row, col = places[index]
        suffix = "" if index == 0 else str(index + 1)
        is_pattern = key == "pattern"
        trace = heatmap_trace(
            panels[key],
            q_labels,
            k_labels,
            value_name="weight" if is_pattern else "score",
            coloraxis="coloraxis2" if is_pattern else "coloraxis",
            with_tokens=with_tokens,
            name=STAGE_TITLES[key],
            cells=dict(stage=key, layer=layer, head=head),
            positions=positions,
        )
        trace["meta"]["keep"] = list(keep)
        data.append({**trace, **cells[row, col]})
        if key in ("scores_masked", "pattern"):
            marks = mask_marks(mask, xaxis=f"x{suffix}", yaxis=f"y{suffix}", panel_px=panel_px)
            if marks is not None:
                data.append(marks[0])
                images.append(marks[1])
        xaxis, yaxis = matrix_axes(n_query, n_key, q_labels, k_labels, show_query_ticks=col == 1, max_ticks=max_ticks, keep=keep)
        if col > 1:
            xaxis["title"] = plain.title("key")
        if in_row:
            xaxis["domain"] = list(DOMAINS[index])
        else:
            xaxis["domain"], yaxis["domain"] = list(GRID_X[col - 1]), list(GRID_Y[row - 1])
            if row == 1:  # the bottom row names the same keys
                xaxis["showticklabels"] = False
                xaxis.pop("title")
        yaxis.update(scaleanchor=f"x{suffix}", scaleratio=1, constrain="domain", tickfont=dict(size=STAGE_TICK_PX))
        xaxis.update(constrain="domain", tickfont=dict(size=STAGE_TICK_PX))
        layout[f"xaxis{suffix}"].update(xaxis)
        layout[f"yaxis{suffix}"].update(yaxis)
    for annotation, suffix in zip(layout["annotations"], ("", "2", "3", "4")):
        x_domain, y_domain = layout[f"xaxis{suffix}"]["domain"], layout[f"yaxis{suffix}"]["domain"]
        annotation.update(x=(x_domain[0] + x_domain[1]) / 2, y=y_domain[1])

    bar = dict(thickness=12, xanchor="left", outlinewidth=0)
    if in_row:
        score_bar = dict(x=DOMAINS[2][1] + 0.01, len=0.75, **bar)
        weight_bar = dict(x=DOMAINS[3][1] + 0.01, len=0.75, **bar)
        size = dict(height=STAGES_HEIGHT, margin=dict(r=110, t=120))
    else:  # each bar beside its row: the masked panel, bottom left, reads the score bar above it
        score_bar = dict(x=GRID_X[1][1] + 0.01, y=sum(GRID_Y[0]) / 2, len=GRID_Y[0][1] - GRID_Y[0][0], **bar)
        weight_bar = dict(x=GRID_X[1][1] + 0.01, y=sum(GRID_Y[1]) / 2, len=GRID_Y[1][1] - GRID_Y[1][0], **bar)
        # exported at the width of its two square columns (on screen the chart takes its box's width)
        size = dict(height=GRID_HEIGHT, width=GRID_WIDTH, margin=dict(r=GRID_RIGHT, t=GRID_TOP, b=GRID_BOTTOM))
    layout.update(
        title=plain.title(title),
        plot_bgcolor=MASK_COLOR,
        **size,
        coloraxis=dict(
            colorscale=plain.colorscale(DIVERGING),
            cmin=low,
            cmax=high,
            cmid=0.0,
            colorbar=dict(title=dict(text="score", side="right"), **score_bar),
        ),
        coloraxis2=dict(
            colorscale=plain.colorscale(SEQUENTIAL),
            cmin=weight_low,
            cmax=weight_high,
            colorbar=dict(title=dict(text=weight_title, side="right"), **weight_bar),
        ),
    )
    if images:
        layout["images"] = images
    return plain.figure(data, keeps_width(layout, STAGES_MIN_WIDTH))


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
) -> dict:
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

    layout, cells = plain.subplots(
        2,
        1,
        titles=("entropy per query row (bits)", "largest weight per query row"),
        shared_xaxes=True,
        vertical_spacing=0.1,
    )
    data = []
    series = (("scaled (÷ √d_k)", scaled, PALETTE[0]), ("unscaled", unscaled, PALETTE[1]))
    for name, pattern, colour in series:
        entropy = row_entropy(pattern).astype(np.float32)  # [query_pos]
        largest = pattern.max(axis=-1).astype(np.float32)  # [query_pos]
        common = dict(type="bar", name=name, marker=dict(color=colour), legendgroup=name, x=positions, hovertext=labels)
        data.append(dict(y=entropy, hovertemplate="%{hovertext}<br>%{y:.3f} bits<extra>" + name + "</extra>", **common, **cells[1, 1]))
        data.append(dict(y=largest, showlegend=False, hovertemplate="%{hovertext}<br>max %{y:.3f}<extra>" + name + "</extra>", **common, **cells[2, 1]))

    if masked is not None:
        visible = (~np.asarray(masked, dtype=bool)).sum(axis=-1).clip(min=1)  # [query_pos]
        uniform = dict(type="scatter", x=positions, mode="lines", line=dict(color="black", dash="dash", shape="hvh"), legendgroup="uniform")
        data.append(dict(y=np.log2(visible).astype(np.float32), name="uniform over visible keys", **uniform, **cells[1, 1]))
        data.append(dict(y=(1.0 / visible).astype(np.float32), showlegend=False, name="uniform over visible keys", **uniform, **cells[2, 1]))

    ticks = tick_axis(labels)
    layout["xaxis"].update(ticks)
    layout["xaxis2"].update(title=plain.title("query (attending)"), **ticks)
    layout["yaxis"].update(title=plain.title("entropy (bits)"), rangemode="tozero")
    layout["yaxis2"].update(title=plain.title("largest weight"), range=[0, 1.02])
    layout.update(title=plain.title(title), barmode="group", height=520)
    return plain.figure(data, layout)
