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

from . import plain
from ._common import is_decoration
from .export.image import export_size
from .labels import short_label, tick_positions, ticks_for
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


# plotly's margins where a layout sets none (layout.margin's defaults)
DEFAULT_MARGIN = dict(l=80, r=80, t=100, b=80)


def _axis_px(layout: dict, name: str) -> float:
    """Pixels along axis ``name`` in an export of ``layout`` (its own size, else the export's default).

    The plot area is the export size less the margins, times the axis's domain. A panel held to square cells
    (``scaleanchor``) gets cells of the shorter of its two sides, as plotly draws it.
    """
    width, height = export_size(layout)
    margin = DEFAULT_MARGIN | {key: value for key, value in (layout.get("margin") or {}).items() if key in DEFAULT_MARGIN}

    def length(axis_name: str) -> float:
        domain = layout.get(axis_name, {}).get("domain") or [0, 1]
        side = width - margin["l"] - margin["r"] if axis_name.startswith("x") else height - margin["t"] - margin["b"]
        return max(0.0, side * (domain[1] - domain[0]))

    def span(axis: dict) -> float | None:
        low_high = axis.get("range")
        return abs(low_high[1] - low_high[0]) if low_high and None not in low_high else None

    axis, own = layout.get(name, {}), length(name)
    if axis.get("scaleanchor"):
        partner = f"{axis['scaleanchor'][0]}axis{axis['scaleanchor'][1:]}"
    else:  # the axis another one is anchored to
        ref = f"{name[0]}{name[5:]}"
        partner = next(
            (key for key, other in layout.items() if key.startswith(("xaxis", "yaxis")) and isinstance(other, dict) and other.get("scaleanchor") == ref), None
        )
    if partner is None or span(axis) is None or span(layout.get(partner, {})) is None:
        return own
    cell = min(own / span(axis), length(partner) / span(layout[partner]))
    return cell * span(axis)


def _rethin_ticks(data: list[dict], layout: dict, font_px: float) -> None:
    """Show as many token labels as fit along each axis at ``font_px``, keeping the chosen token.

    Works on axes of heatmaps that carry their full label lists in ``meta`` (see
    ``viz._common.labels_meta``). An axis shows no more labels than on screen, and fewer only where its
    length in the export (``_axis_px``) holds fewer at the larger font (``labels.ticks_for``).
    ``data`` and ``layout`` are a figure's plotly JSON, changed in place.
    """
    done = set()
    for trace in data:
        meta = trace.get("meta") if isinstance(trace.get("meta"), dict) else None
        if trace.get("type") != "heatmap" or meta is None:
            continue
        keep = meta.get("keep") or [None, None]
        for letter, ref, kept in (("x", trace.get("xaxis"), keep[1]), ("y", trace.get("yaxis"), keep[0])):
            labels = meta.get(f"{letter}_labels")
            name = f"{letter}axis{(ref or letter)[1:]}"
            axis = layout.get(name, {})
            if name in done:
                continue
            done.add(name)
            if labels is None or axis.get("tickmode") != "array" or axis.get("tickvals") is None or len(labels) < 2:
                continue
            fit = ticks_for(_axis_px(layout, name), font_px)
            shown = len(axis["tickvals"])
            if fit >= shown:
                continue
            positions = tick_positions(len(labels), fit, kept)
            axis["tickvals"] = positions
            axis["ticktext"] = [short_label(labels[i]) for i in positions]


def _at(parent: dict, *path: str) -> dict:
    """The dict at ``parent[path[0]][path[1]]…``, made empty where it is missing."""
    for key in path:
        parent = parent.setdefault(key, {})
    return parent


TITLE_EM_PER_CHAR = 0.55  # a generous mean width of a title's glyphs (Arial: about 0.5 em)


def wrapped(text: str, width_px: float, font_px: float) -> str:
    """``text`` with ``<br>`` between words wherever a line would be wider than ``width_px`` at ``font_px``.
    A line with markup of its own (``<sup>``, ``<b>``) stays as it is."""
    room = max(8, int(width_px / (font_px * TITLE_EM_PER_CHAR)))
    lines = []
    for line in text.split("<br>"):
        if "<" in line or len(line) <= room:
            lines.append(line)
            continue
        current = ""
        for word in line.split(" "):
            if current and len(current) + 1 + len(word) > room:
                lines.append(current)
                current = word
            else:
                current = f"{current} {word}" if current else word
        lines.append(current)
    return "<br>".join(lines)


TITLE_LINE_EM = 1.3  # plotly's line height in a title
TITLE_PAD_PX = 10
TITLE_ASCENT_EM = 0.8  # from a line's top to its baseline


def _wrap_title(layout: dict) -> None:
    """The print theme's larger title in as many lines as the export's width needs, the plot moved down
    for the lines added. A title of several lines is drawn with its first line's baseline at the title's
    `y` (each line carries that `y`), whatever its anchor: `y` is where that baseline must be."""
    title = layout.get("title") or {}
    text = title.get("text")
    if not text:
        return
    lines = wrapped(text, 0.88 * export_size(layout)[0], PRINT_TITLE_SIZE)
    added = lines.count("<br>") - text.count("<br>")
    if not added:
        return
    first_baseline = TITLE_PAD_PX + TITLE_ASCENT_EM * PRINT_TITLE_SIZE
    title.update(text=lines, yref="container", yanchor="top", y=1 - first_baseline / export_size(layout)[1])
    margin = _at(layout, "margin")
    margin["t"] = int((margin.get("t") or DEFAULT_MARGIN["t"]) + added * TITLE_LINE_EM * PRINT_TITLE_SIZE)


def apply_print_theme(fig: dict) -> dict:
    """A new figure dict: ``fig`` (a figure dict of ``viz.plain``, or a ``go.Figure``) restyled for
    slides and paper. ``fig`` itself is not changed: figures are shared between sessions.

    White paper, fonts of at least 18 px, thicker lines, and colour-blind-safe
    scales: any sequential scale becomes Viridis, any diverging one (a set
    midpoint or a named diverging scale) reversed RdBu. Heatmap figures keep
    their grey plot background, because that grey is what marks masked
    cells. A fixed figure height (and width) grows by 30 % to make room for the fonts.

    The copy is restyled as plotly JSON (see ``viz.plain``): setting each font through plotly's
    validated objects took 30–60 ms a figure, paid by every new view in the print theme.
    """
    fig = plain.as_dict(fig)
    layout = {key: value for key, value in fig["layout"].items() if key != "template"}
    themed = plain.figure(fig["data"], layout, template="plotly_white")  # the figure's own copies, changed below
    data, layout = themed["data"], themed["layout"]
    if layout.get("height"):
        layout["height"] = int(layout["height"] * PRINT_HEIGHT_FACTOR)
        if layout.get("width"):  # a fixed width too, keeping the figure's shape (square panels stay as large)
            layout["width"] = int(layout["width"] * PRINT_HEIGHT_FACTOR)
    has_heatmap = any(trace["type"] == "heatmap" for trace in data)

    layout["paper_bgcolor"] = "white"
    layout["plot_bgcolor"] = MASK_COLOR if has_heatmap else "white"
    _at(layout, "font").update(size=PRINT_FONT_SIZE, color="black")
    _at(layout, "title", "font").update(size=PRINT_TITLE_SIZE)
    _wrap_title(layout)

    _rethin_ticks(data, layout, PRINT_TICK_SIZE)
    axes = dict.fromkeys(["xaxis", "yaxis", *(key for key in layout if key.startswith(("xaxis", "yaxis")))])
    for name in axes:
        axis = _at(layout, name)
        axis["tickfont"] = dict(size=PRINT_TICK_SIZE, color="black")
        _at(axis, "title")["font"] = dict(size=PRINT_FONT_SIZE, color="black")

    for trace in data:
        if is_decoration(trace):
            continue
        if trace["type"] == "heatmap" and not trace.get("coloraxis"):
            trace["colorscale"] = plain.colorscale(_print_scale(trace.get("colorscale"), trace.get("zmid")))
        mode = trace.get("mode")
        if trace["type"] == "scatter":
            if mode and "lines" in mode:
                line = _at(trace, "line")
                line["width"] = max(line.get("width") or 0, PRINT_LINE_WIDTH)
            if mode and "text" in mode:
                font = _at(trace, "textfont")
                font["size"] = _bump(font.get("size"), PRINT_FONT_SIZE)
        if trace["type"] == "bar":
            line = _at(trace, "marker", "line")
            line["width"] = max(line.get("width") or 0, 1)

    for name in dict.fromkeys(["coloraxis", *(key for key in layout if key.startswith("coloraxis"))]):
        axis = _at(layout, name)
        axis["colorscale"] = plain.colorscale(_print_scale(axis.get("colorscale"), axis.get("cmid")))
        _at(axis, "colorbar")["tickfont"] = dict(size=PRINT_TICK_SIZE, color="black")
        _at(axis, "colorbar", "title")["font"] = dict(size=PRINT_FONT_SIZE, color="black")
    for trace in data:
        if trace["type"] == "heatmap" and not trace.get("coloraxis"):
            _at(trace, "colorbar")["tickfont"] = dict(size=PRINT_TICK_SIZE, color="black")
            _at(trace, "colorbar", "title")["font"] = dict(size=PRINT_FONT_SIZE, color="black")

    for annotation in layout.get("annotations", []):
        font = _at(annotation, "font")
        font["size"] = _bump(font.get("size"), PRINT_FONT_SIZE)
        if annotation.get("showarrow"):
            annotation["arrowwidth"] = max(annotation.get("arrowwidth") or 0, 2)

    for shape in layout.get("shapes", []):
        line = _at(shape, "line")
        line["width"] = max(line.get("width") or 0, 2)

    return place_point_labels(themed, PRINT_FONT_SIZE)
