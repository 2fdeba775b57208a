"""Labels beside the points of a 2-D map that never cover one another.

Plotly draws a point's text where ``textposition`` says, whatever is already there. Before the
figure is sent, ``place_point_labels`` estimates in pixels where each point lands (from the axis
ranges it fixes and the size the figure is laid out for), tries eight places around each point in
turn, and keeps the first that touches no label placed before it and no marker. A label with no free
place is left out of the drawing; its point keeps it in the hover text and the legend. The print
theme runs it again for its larger font.
"""

from __future__ import annotations

import re

LABELLED = "labelled-points"  # trace meta role of points whose labels are placed here
_AXIS = re.compile(r"[xy]axis(\d*)")
CANDIDATES = ("top center", "bottom center", "middle right", "middle left", "top right", "top left", "bottom right", "bottom left")
MARKER_PX = 6  # half the side of the square kept free around each marker
GAP_PX = 3  # room kept between two labels
LAYOUT_WIDTH, LAYOUT_HEIGHT = 1100, 640  # the narrowest the figure is drawn (browser column, slide)
PLOT_SHARE_X, PLOT_SHARE_Y = 0.62, 0.72  # the plot's share of the figure, beside legend and titles


def _text_px(text: str, font_px: float) -> tuple[float, float]:
    return 0.6 * font_px * max(len(text), 1), 1.2 * font_px


def _box(position: str, x: float, y: float, width: float, height: float) -> tuple[float, float, float, float]:
    vertical, horizontal = position.split()
    offset = MARKER_PX + GAP_PX + 1
    if horizontal == "center":
        left = x - width / 2
    elif horizontal == "right":
        left = x + (offset if vertical == "middle" else 0)
    else:
        left = x - width - (offset if vertical == "middle" else 0)
    if vertical == "top":
        top = y - offset - height
    elif vertical == "bottom":
        top = y + offset
    else:
        top = y - height / 2
    return left, top, left + width, top + height


def _hits(box, others) -> bool:
    left, top, right, bottom = box
    return any(left < r + GAP_PX and right > l - GAP_PX and top < b + GAP_PX and bottom > t - GAP_PX for l, t, r, b in others)


def place_point_labels(fig: dict, font_px: float = 12.0) -> dict:
    """Choose a free ``textposition`` for every label of the traces marked ``LABELLED`` (in place, in a
    figure dict of ``viz.plain``: call it on a figure of one's own, never on one that may be shared).

    Such a trace keeps its full labels in ``meta["labels"]``; its ``text`` gets the placed ones
    ("" where none fits). The x axes and y axes get fixed ranges (the points plus a margin) so the
    estimate matches the drawing; with equal axis scales one range is widened by plotly, as estimated here.
    """
    data, layout = fig["data"], fig["layout"]
    traces = [t for t in data if isinstance(t.get("meta"), dict) and t["meta"].get("role") == LABELLED]
    points = [(float(x), float(y)) for t in data if t.get("type") == "scatter" and t.get("x") is not None for x, y in zip(t["x"], t["y"]) if x is not None]
    if not traces or not points:
        return fig
    xs, ys = zip(*points)
    span_x, span_y = (max(xs) - min(xs)) or 1.0, (max(ys) - min(ys)) or 1.0
    pad_x, pad_y = 0.12 * span_x, 0.12 * span_y
    x_range = [min(xs) - pad_x, max(xs) + pad_x]
    y_range = [min(ys) - pad_y, max(ys) + pad_y]
    for letter, span in (("x", x_range), ("y", y_range)):  # every axis of the letter, as plotly's update_xaxes sets
        for name in dict.fromkeys([f"{letter}axis", *(key for key in layout if _AXIS.fullmatch(key) and key[0] == letter)]):
            layout[name] = {**(layout.get(name) or {}), "range": list(span)}

    width = (layout.get("width") or LAYOUT_WIDTH) * PLOT_SHARE_X
    height = (layout.get("height") or LAYOUT_HEIGHT) * PLOT_SHARE_Y
    scale = min(width / (x_range[1] - x_range[0]), height / (y_range[1] - y_range[0]))  # equal axes
    mid_x, mid_y = sum(x_range) / 2, sum(y_range) / 2

    def pixel(x: float, y: float) -> tuple[float, float]:
        return width / 2 + (x - mid_x) * scale, height / 2 - (y - mid_y) * scale

    taken = [(px - MARKER_PX, py - MARKER_PX, px + MARKER_PX, py + MARKER_PX) for px, py in (pixel(x, y) for x, y in points)]
    bounds = (-0.1 * width, -0.05 * height, 1.1 * width, 1.05 * height)
    named = set()  # (label, point) already written: a point shared by two series is named once
    for trace in traces:
        texts, positions = [], []
        for label, x, y in zip(trace["meta"]["labels"], trace["x"], trace["y"]):
            px, py = pixel(float(x), float(y))
            w, h = _text_px(label, font_px)
            if (label, round(px), round(py)) in named:
                texts.append("")
                positions.append("top center")
                continue
            named.add((label, round(px), round(py)))
            for position in CANDIDATES:
                box = _box(position, px, py, w, h)
                inside = box[0] >= bounds[0] and box[1] >= bounds[1] and box[2] <= bounds[2] and box[3] <= bounds[3]
                if inside and not _hits(box, taken):
                    taken.append(box)
                    texts.append(label)
                    positions.append(position)
                    break
            else:
                texts.append("")
                positions.append("top center")
        trace["text"] = texts
        trace["textposition"] = positions
    return fig
