"""Where the text of an exported SVG lands: estimated boxes, overlaps, text off the canvas.

Plotly writes every label as an SVG ``<text>`` (lines as ``<tspan class="line">``) placed by its
``x``/``y``, its ``text-anchor`` and the ``transform``s of the text and of every group around it
(translate, rotate, scale, matrix). A browser is not needed to know roughly where it ends up: the
box of one line is the sum of its glyphs' widths (0.52 em for most, 0.33 for narrow ones such as
"i" or ".", 0.68 to 0.8 for capitals and "m", 1 em for wide East Asian characters) by one em,
from 0.8 em above the baseline to 0.2 em below it, turned with the text.
Two boxes overlap when the quadrilaterals intersect (separating-axis test), after shrinking both by
one pixel so that labels that merely touch are not reported.
"""

from __future__ import annotations

import math
import re
import unicodedata
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass

SVG = "{http://www.w3.org/2000/svg}"
GLYPH_EM = 0.52
WIDE_GLYPH_EM = 1.0
ASCENT_EM, DESCENT_EM = 0.8, 0.2
SLACK_PX = 1.0

Matrix = tuple[float, float, float, float, float, float]  # a, b, c, d, e, f as in SVG's matrix()
IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)


def _multiply(m: Matrix, n: Matrix) -> Matrix:
    """m · n (apply n first, then m)."""
    a, b, c, d, e, f = m
    a2, b2, c2, d2, e2, f2 = n
    return (a * a2 + c * b2, b * a2 + d * b2, a * c2 + c * d2, b * c2 + d * d2, a * e2 + c * f2 + e, b * e2 + d * f2 + f)


def parse_transform(text: str | None) -> Matrix:
    """The matrix of an SVG ``transform`` attribute (translate, rotate, scale, matrix)."""
    matrix = IDENTITY
    for name, args in re.findall(r"(\w+)\s*\(([^)]*)\)", text or ""):
        values = [float(v) for v in re.split(r"[\s,]+", args.strip()) if v]
        if name == "translate":
            step = (1.0, 0.0, 0.0, 1.0, values[0], values[1] if len(values) > 1 else 0.0)
        elif name == "scale":
            sx = values[0]
            step = (sx, 0.0, 0.0, values[1] if len(values) > 1 else sx, 0.0, 0.0)
        elif name == "rotate":
            angle = math.radians(values[0])
            cos, sin = math.cos(angle), math.sin(angle)
            step = (cos, sin, -sin, cos, 0.0, 0.0)
            if len(values) == 3:
                cx, cy = values[1], values[2]
                step = _multiply(_multiply((1.0, 0.0, 0.0, 1.0, cx, cy), step), (1.0, 0.0, 0.0, 1.0, -cx, -cy))
        elif name == "matrix":
            step = tuple(values)  # type: ignore[assignment]
        else:
            continue
        matrix = _multiply(matrix, step)
    return matrix


def _apply(m: Matrix, x: float, y: float) -> tuple[float, float]:
    a, b, c, d, e, f = m
    return a * x + c * y + e, b * x + d * y + f


def _style(element, name: str) -> str | None:
    match = re.search(rf"(?:^|;)\s*{name}\s*:\s*([^;]+)", element.get("style", ""))
    return match.group(1).strip() if match else element.get(name)


def _font_px(element, inherited: float) -> float:
    size = _style(element, "font-size")
    if not size:
        return inherited
    if size.endswith("%"):
        return inherited * float(size[:-1]) / 100
    if size.endswith("em"):  # plotly's <sup> and <sub>
        return inherited * float(size[:-2])
    return float(re.sub(r"px$", "", size))


def _em(value: str | None, font_px: float) -> float:
    if not value:
        return 0.0
    if value.endswith("em"):
        return float(value[:-2]) * font_px
    return float(re.sub(r"px$", "", value))


NARROW = set(" .,:;!|'`ijlrtf()[]{}ı")
BROAD = set("mwMW@%")


def _glyph_em(ch: str) -> float:
    """Advance of one glyph in em, rounded up from Open Sans / Verdana (plotly's fonts)."""
    if unicodedata.east_asian_width(ch) in "WF":
        return WIDE_GLYPH_EM
    if ch in NARROW:
        return 0.33
    if ch in BROAD or ch.isupper():
        return 0.8 if ch in BROAD else 0.68
    return GLYPH_EM


def text_width(text: str, font_px: float) -> float:
    return font_px * sum(_glyph_em(ch) for ch in text if unicodedata.category(ch) != "Cf")  # zero-width: no room


def _segments(element, font_px: float):
    """(text, font size) of every piece of ``element``, children at their own size (e.g. <sup>)."""
    font_px = _font_px(element, font_px)
    if element.text:
        yield element.text, font_px
    for child in element:
        yield from _segments(child, font_px)
        if child.tail:
            yield child.tail, font_px


@dataclass
class TextBox:
    text: str
    corners: list[tuple[float, float]]  # four corners on the canvas, in order

    def bounds(self) -> tuple[float, float, float, float]:
        xs, ys = zip(*self.corners)
        return min(xs), min(ys), max(xs), max(ys)


def _box(text: str, x: float, y: float, font_px: float, anchor: str, matrix: Matrix, width: float | None = None) -> TextBox:
    width = text_width(text, font_px) if width is None else width
    left = {"middle": x - width / 2, "end": x - width}.get(anchor, x)
    top, bottom = y - ASCENT_EM * font_px, y + DESCENT_EM * font_px
    corners = [(left, top), (left + width, top), (left + width, bottom), (left, bottom)]
    return TextBox(text, [_apply(matrix, cx, cy) for cx, cy in corners])


def _hidden(element) -> bool:
    return _style(element, "display") == "none" or _style(element, "opacity") in ("0", "0.0") or element.get("visibility") == "hidden"


def text_boxes(svg: bytes | str) -> tuple[list[TextBox], float, float]:
    """Every visible line of text in ``svg`` as a box on the canvas, and the canvas width and height."""
    root = ElementTree.fromstring(svg)
    width, height = float(root.get("width")), float(root.get("height"))
    boxes: list[TextBox] = []

    def walk(element, matrix: Matrix, font_px: float) -> None:
        if _hidden(element):
            return
        matrix = _multiply(matrix, parse_transform(element.get("transform")))
        font_px = _font_px(element, font_px)
        tag = element.tag.replace(SVG, "")
        if tag == "defs":
            return
        if tag == "text":
            boxes.extend(_text_lines(element, matrix, font_px))
            return
        for child in element:
            walk(child, matrix, font_px)

    walk(root, IDENTITY, 12.0)
    return boxes, width, height


def _text_lines(element, matrix: Matrix, font_px: float) -> list[TextBox]:
    anchor = _style(element, "text-anchor") or "start"
    x, y = float(element.get("x", 0)), float(element.get("y", 0))
    lines = [child for child in element if child.tag.replace(SVG, "") == "tspan" and "line" in (child.get("class") or "")]
    if not lines:
        text = "".join(element.itertext()).strip()
        return [_box(text, x, y, font_px, anchor, matrix)] if text else []
    out = []
    for line in lines:  # plotly gives every line the text's y and a dy of (line index × 1.3) em
        line_y = float(line.get("y", y)) + _em(line.get("dy"), font_px)
        pieces = list(_segments(line, font_px))
        text = "".join(piece for piece, _ in pieces).strip()
        if text:
            width = sum(text_width(piece, size) for piece, size in pieces)
            height_px = max(size for piece, size in pieces if piece.strip())
            out.append(_box(text, float(line.get("x", x)), line_y, height_px, anchor, matrix, width))
    return out


def _axes(corners) -> list[tuple[float, float]]:
    axes = []
    for i in range(len(corners)):
        (x1, y1), (x2, y2) = corners[i], corners[(i + 1) % len(corners)]
        axes.append((y1 - y2, x2 - x1))
    return axes


def _shrunk(corners, by: float) -> list[tuple[float, float]]:
    cx = sum(x for x, _ in corners) / len(corners)
    cy = sum(y for _, y in corners) / len(corners)
    out = []
    for x, y in corners:
        dx, dy = x - cx, y - cy
        norm = math.hypot(dx, dy) or 1.0
        out.append((x - by * dx / norm, y - by * dy / norm))
    return out


def overlap(first: TextBox, second: TextBox, slack: float = SLACK_PX) -> bool:
    """Whether two text boxes intersect (both shrunk by ``slack`` pixels first)."""
    p, q = _shrunk(first.corners, slack), _shrunk(second.corners, slack)
    for ax, ay in _axes(p) + _axes(q):
        if ax == 0 and ay == 0:
            continue
        ps = [ax * x + ay * y for x, y in p]
        qs = [ax * x + ay * y for x, y in q]
        if max(ps) <= min(qs) or max(qs) <= min(ps):
            return False
    return True


def layout_problems(svg: bytes | str) -> list[str]:
    """Every pair of overlapping texts and every text that leaves the canvas, as readable lines."""
    boxes, width, height = text_boxes(svg)
    problems = []
    for box in boxes:
        left, top, right, bottom = box.bounds()
        if left < -SLACK_PX or top < -SLACK_PX or right > width + SLACK_PX or bottom > height + SLACK_PX:
            problems.append(f"off the canvas: {box.text!r} at ({left:.0f}, {top:.0f})–({right:.0f}, {bottom:.0f}) on {width:.0f}×{height:.0f}")
    for i, first in enumerate(boxes):
        fl, ft, fr, fb = first.bounds()
        for second in boxes[i + 1 :]:
            sl, st, sr, sb = second.bounds()
            if sl > fr or sr < fl or st > fb or sb < ft:
                continue
            if overlap(first, second):
                problems.append(f"overlap: {first.text!r} at ({fl:.0f}, {ft:.0f}) and {second.text!r} at ({sl:.0f}, {st:.0f})")
    return problems
