"""Colours, fonts and the print theme shared by every chart in ``viz``.

Two kinds of colour scale are used for heatmaps:

* **sequential** for quantities that only grow (attention weights, 0..1).
  Viridis is perceptually uniform and readable for the common kinds of
  colour blindness.
* **diverging** for quantities with a meaningful zero (raw scores,
  positional encodings, similarities). Reversed RdBu puts negative in blue,
  positive in red and zero in near-white.

Masked attention cells are never given a colour of the scale: they are left
as gaps, and the grey ``MASK_COLOR`` plot background shows through them.
"""

from __future__ import annotations

import plotly.colors as pc
import plotly.graph_objects as go

from ._common import is_decoration
from .labels import short_label, tick_positions
from .placement import place_point_labels

SEQUENTIAL = "Viridis"
DIVERGING = "RdBu_r"

# The print theme keeps Viridis rather than Cividis on purpose: Cividis passes
# through mid-grey, the colour that marks masked cells.
PRINT_SEQUENTIAL = "Viridis"
PRINT_DIVERGING = "RdBu_r"

MASK_COLOR = "#9e9e9e"
MASK_MARK_COLOR = "#222222"

# Okabe & Ito (2008), a qualitative palette distinguishable with
# protanopia, deuteranopia and tritanopia.
PALETTE = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#D55E00",  # vermillion
    "#F0E442",  # yellow
    "#000000",  # black
)

SCREEN_TEMPLATE = "plotly_white"

PRINT_FONT_SIZE = 18
PRINT_TICK_SIZE = 16
PRINT_TITLE_SIZE = 24
PRINT_LINE_WIDTH = 3
PRINT_HEIGHT_FACTOR = 1.3

_DIVERGING_NAMES = {name.lower() for name in dir(pc.diverging) if not name.startswith("_") and isinstance(getattr(pc.diverging, name), list)}


def _scale_key(colorscale) -> tuple | None:
    """A hashable form of a colour scale (a name or a list of pairs)."""
    if colorscale is None:
        return None
    if isinstance(colorscale, str):
        try:
            colorscale = pc.get_colorscale(colorscale)
        except Exception:
            return (colorscale.lower(),)
    return tuple((round(float(pos), 6), str(colour).replace(" ", "").lower()) for pos, colour in colorscale)


_DIVERGING_KEYS = {_scale_key(name) for name in (*_DIVERGING_NAMES, DIVERGING, PRINT_DIVERGING)}


def is_diverging(colorscale, mid=None) -> bool:
    """Whether a trace's colour scale encodes a signed quantity.

    A set midpoint (``zmid``/``cmid``) is taken as proof; otherwise the scale is
    compared with plotly's named diverging scales.
    """
    if mid is not None:
        return True
    return _scale_key(colorscale) in _DIVERGING_KEYS


def _print_scale(colorscale, mid) -> str:
    return PRINT_DIVERGING if is_diverging(colorscale, mid) else PRINT_SEQUENTIAL


def _bump(size, minimum: int) -> int:
    return max(int(size or 0), minimum)


def _rethin_ticks(fig: go.Figure, growth: float) -> None:
    """Show fewer token labels on axes whose font grows by ``growth``, keeping the chosen token.

    Works on axes of heatmaps that carry their full label lists in ``meta`` (see
    ``viz._common.labels_meta``): the same pixels hold ``1 / growth`` as many labels.
    """
    done = set()
    for trace in fig.data:
        meta = trace.meta if isinstance(trace.meta, dict) else None
        if trace.type != "heatmap" or meta is None:
            continue
        keep = meta.get("keep") or [None, None]
        for letter, ref, kept in (("x", trace.xaxis, keep[1]), ("y", trace.yaxis, keep[0])):
            labels = meta.get(f"{letter}_labels")
            name = f"{letter}axis{(ref or letter)[1:]}"
            axis = fig.layout[name]
            if name in done:
                continue
            done.add(name)
            if labels is None or axis.tickmode != "array" or axis.tickvals is None or len(labels) < 2:
                continue
            shown = len(axis.tickvals)
            positions = tick_positions(len(labels), max(2, int(shown / growth)), kept)
            axis.tickvals = positions
            axis.ticktext = [short_label(labels[i]) for i in positions]


def apply_print_theme(fig: go.Figure) -> go.Figure:
    """Return a copy of ``fig`` restyled for slides and paper.

    White paper, fonts of at least 18 px, thicker lines, and colour-blind-safe
    scales: any sequential scale becomes Viridis, any diverging one (a set
    midpoint or a named diverging scale) reversed RdBu. Heatmap figures keep
    their grey plot background, because that grey is what marks masked
    cells. A fixed figure height grows by 30 % to make room for the fonts.
    """
    out = go.Figure(fig)
    if out.layout.height:
        out.layout.height = int(out.layout.height * PRINT_HEIGHT_FACTOR)
    has_heatmap = any(trace.type == "heatmap" for trace in out.data)

    out.update_layout(
        template="plotly_white",
        paper_bgcolor="white",
        plot_bgcolor=MASK_COLOR if has_heatmap else "white",
        font=dict(size=PRINT_FONT_SIZE, color="black"),
        title_font=dict(size=PRINT_TITLE_SIZE),
    )

    _rethin_ticks(out, PRINT_TICK_SIZE / 12)
    for name in [key for key in out.layout if key.startswith(("xaxis", "yaxis"))]:
        axis = out.layout[name]
        axis.tickfont = dict(size=PRINT_TICK_SIZE, color="black")
        axis.title.font = dict(size=PRINT_FONT_SIZE, color="black")

    place_point_labels(out, PRINT_FONT_SIZE)
    for trace in out.data:
        if is_decoration(trace):
            continue
        if trace.type == "heatmap" and not trace.coloraxis:
            trace.colorscale = _print_scale(trace.colorscale, trace.zmid)
        if trace.type == "scatter":
            if trace.mode and "lines" in trace.mode:
                trace.line.width = max(trace.line.width or 0, PRINT_LINE_WIDTH)
            if trace.mode and "text" in trace.mode:
                trace.textfont.size = _bump(trace.textfont.size, PRINT_FONT_SIZE)
        if trace.type == "bar":
            trace.marker.line.width = max(trace.marker.line.width or 0, 1)

    for name in [key for key in out.layout if key.startswith("coloraxis")]:
        axis = out.layout[name]
        axis.colorscale = _print_scale(axis.colorscale, axis.cmid)
        axis.colorbar.tickfont = dict(size=PRINT_TICK_SIZE, color="black")
    for trace in out.data:
        if trace.type == "heatmap" and not trace.coloraxis:
            trace.colorbar.tickfont = dict(size=PRINT_TICK_SIZE, color="black")

    for annotation in out.layout.annotations:
        annotation.font.size = _bump(annotation.font.size, PRINT_FONT_SIZE)
        if annotation.showarrow:
            annotation.arrowwidth = max(annotation.arrowwidth or 0, 2)

    for shape in out.layout.shapes:
        shape.line.width = max(shape.line.width or 0, 2)

    return out
