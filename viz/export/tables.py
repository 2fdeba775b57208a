"""The numbers behind a figure as CSV text, ready for pandas or a spreadsheet."""

from __future__ import annotations

import csv
import html
import io
import re

import numpy as np
import plotly.graph_objects as go

from .._common import is_decoration, meta_labels

_NUMBER = re.compile(r"-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value) -> str:
    """A CSV cell as text: numbers in shortest form, missing values empty,
    and text that a spreadsheet would run as a formula neutralised with a
    leading apostrophe (negative numbers are left alone)."""
    if value is None:
        return ""
    if isinstance(value, (float, np.floating)):
        if not np.isfinite(value):
            return ""
        return str(value) if isinstance(value, np.floating) else repr(value)
    text = str(value)
    if text.startswith(_FORMULA_START) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


def _axis(fig: go.Figure, ref: str | None, letter: str):
    suffix = (ref or letter)[1:]
    return fig.layout[f"{letter}axis{suffix}"]


def _tick_names(axis) -> dict:
    """Map tick values to their tick text (labels unescaped for a spreadsheet)."""
    if axis.tickvals is None or axis.ticktext is None:
        return {}
    return {_key(v): html.unescape(str(t)) for v, t in zip(axis.tickvals, axis.ticktext)}


def _key(value):
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    return value


def _coords(values, n: int, start, step) -> list:
    if values is not None:
        return _as_list(values, n)
    start = 0 if start is None else start
    step = 1 if step is None else step
    return [start + i * step for i in range(n)]


def _axis_title(axis, fallback: str) -> str:
    text = axis.title.text if axis.title is not None else None
    return html.unescape(text) if text else fallback


def _row_title(fig: go.Figure, axis, letter: str) -> str:
    """The axis title, else the title of an axis beside it in the same subplot
    row (y) or column (x): side-by-side panels often title only the first."""
    own = _axis_title(axis, "")
    if own or axis.domain is None:
        return own or letter
    for name in fig.layout:
        other = fig.layout[name]
        if name.startswith(f"{letter}axis") and other.domain == axis.domain and _axis_title(other, ""):
            return _axis_title(other, "")
    return letter


def _heatmap_rows(fig: go.Figure, trace) -> list[list]:
    z = trace.z if isinstance(trace.z, np.ndarray) else np.array(trace.z, dtype=object)
    z = np.atleast_2d(z)  # [y, x]
    xaxis, yaxis = _axis(fig, trace.xaxis, "x"), _axis(fig, trace.yaxis, "y")
    xs = _coords(trace.x, z.shape[1], trace.x0, trace.dx)
    ys = _coords(trace.y, z.shape[0], trace.y0, trace.dy)
    x_labels = _labels(trace, xaxis, "x", xs)
    y_labels = _labels(trace, yaxis, "y", ys)
    corner = f"{_row_title(fig, yaxis, 'y')} \\ {_row_title(fig, xaxis, 'x')}"
    rows = [[corner, *x_labels]]
    for label, values in zip(y_labels, z):
        rows.append([label, *values])
    return rows


def _labels(trace, axis, letter: str, coords: list) -> list:
    """Names for the coordinates: full labels kept in the trace's meta, else
    the axis tick text, else the coordinates themselves."""
    stored = meta_labels(trace, letter, len(coords))
    if stored is not None:
        return [html.unescape(str(label)) for label in stored]
    names = _tick_names(axis)
    return [names.get(_key(c), c) for c in coords]


def _as_list(values, n: int) -> list:
    """Values as a list; numpy scalars are kept so float32 prints short."""
    if values is None:
        return [None] * n
    if isinstance(values, str):
        return [values] * n
    return list(values)


def _series_rows(fig: go.Figure, trace, name: str) -> list[list]:
    xs = _as_list(trace.x, 0)
    ys = _as_list(trace.y, len(xs))
    if not xs:
        xs = list(range(len(ys)))
    texts = trace.text if trace.text is not None else trace.hovertext
    texts = _as_list(texts, len(xs))
    x_names = _tick_names(_axis(fig, trace.xaxis, "x"))
    rows = [["trace", "x", "y", "text"]]
    for x, y, text in zip(xs, ys, texts):
        if x is None and y is None:
            continue
        if text is None:
            text = x_names.get(_key(x))
        rows.append([name, x, y, None if text is None else html.unescape(str(text))])
    return rows


_CSV_TYPES = ("heatmap", "scatter", "scattergl", "bar")


def _section_names(fig: go.Figure, traces: list) -> list[str]:
    """A distinct name per trace: its name, then its y axis title, then its index."""
    names = [html.unescape(str(t.name or f"{t.type} {i}")) for i, t in traces]
    repeated = {name for name in names if names.count(name) > 1}
    for position, (_, trace) in enumerate(traces):
        axis_title = _axis_title(_axis(fig, trace.yaxis, "y"), "")
        if names[position] in repeated and axis_title:
            names[position] = f"{names[position]} · {axis_title}"
    repeated = {name for name in names if names.count(name) > 1}
    for position, (index, _) in enumerate(traces):
        if names[position] in repeated:
            names[position] = f"{names[position]} ({index})"
    return [" ".join(name.split()) for name in names]


def figure_to_csv(fig: go.Figure) -> str:
    """The numbers behind ``fig`` as CSV text.

    * A heatmap becomes a matrix: the header row holds the x labels, the
      first column the y labels (tick text of numeric axes, so tokens rather
      than positions), the corner names both axes. Gaps (masked cells) are
      empty cells.
    * Scatter and bar traces become long format with columns
      ``trace, x, y, text``.
    * With several traces, each gets a section that starts with a
      ``# trace name`` line; sections are separated by a blank line
      (``pandas.read_csv(..., comment="#")`` skips those lines).

    Decorations (the "×" marks on masked cells) are left out. Cells that a
    spreadsheet would execute as a formula get a leading apostrophe.
    """
    traces = [(i, t) for i, t in enumerate(fig.data) if not is_decoration(t) and t.type in _CSV_TYPES]
    names = _section_names(fig, traces)
    sections = [(name, _heatmap_rows(fig, trace) if trace.type == "heatmap" else _series_rows(fig, trace, name)) for name, (_, trace) in zip(names, traces)]

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for number, (name, rows) in enumerate(sections):
        if len(sections) > 1:
            if number:
                buffer.write("\n")
            buffer.write(f"# {name}\n")
        writer.writerows([[_cell(v) for v in row] for row in rows])
    return buffer.getvalue()
