"""The numbers behind a figure as CSV text, ready for pandas or a spreadsheet.

A page builds each figure from arrays (a trace's stages, a positional encoding, a prediction) and keeps,
beside it, what builds the tidy table of those same numbers (``PageContent.figure_tables``): named
columns, one row per number the figure shows. ``figure_to_csv(fig, table)`` writes that table
(``frame_to_csv``); a figure without one (made outside the pages) is written from its traces, as a
generic table.
"""

from __future__ import annotations

import csv
import html
import io
import re
from typing import TYPE_CHECKING

import numpy as np

from .. import plain
from .._common import is_decoration, meta_labels

if TYPE_CHECKING:  # pandas is imported where a table is written: the command line's --help needs it not
    import pandas as pd

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


def _axis(fig: dict, ref: str | None, letter: str) -> dict:
    suffix = (ref or letter)[1:]
    return fig["layout"].get(f"{letter}axis{suffix}") or {}


def _tick_names(axis) -> dict:
    """Map tick values to their tick text (labels unescaped for a spreadsheet)."""
    if axis.get("tickvals") is None or axis.get("ticktext") is None:
        return {}
    return {_key(v): html.unescape(str(t)) for v, t in zip(axis["tickvals"], axis["ticktext"])}


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


def title_text(title) -> str | None:
    """The text of a title as plotly JSON writes it ({"text": …}), or of one written as a bare string."""
    return title.get("text") if isinstance(title, dict) else title


def _axis_title(axis: dict, fallback: str) -> str:
    text = title_text(axis.get("title"))
    return html.unescape(text) if text else fallback


ATTENTION_COLUMNS = ["stage", "layer", "head", "query_position", "query_token", "key_position", "key_token", "value"]
MATRIX_COLUMNS = ["panel", "row", "row_label", "column", "column_label", "value"]
SERIES_COLUMNS = ["series", "x", "x_label", "y"]


def _heatmap_rows(fig: dict, trace: dict, name: str) -> list[list]:
    """One row per cell: ``panel, row, row_label, column, column_label, value``."""
    z = trace["z"] if isinstance(trace["z"], np.ndarray) else np.array(trace["z"], dtype=object)
    z = np.atleast_2d(z)  # [y, x]
    xaxis, yaxis = _axis(fig, trace.get("xaxis"), "x"), _axis(fig, trace.get("yaxis"), "y")
    xs = _coords(trace.get("x"), z.shape[1], trace.get("x0"), trace.get("dx"))
    ys = _coords(trace.get("y"), z.shape[0], trace.get("y0"), trace.get("dy"))
    x_labels = _labels(trace, xaxis, "x", xs)
    y_labels = _labels(trace, yaxis, "y", ys)
    return [[name, y, y_label, x, x_label, value] for y, y_label, values in zip(ys, y_labels, z) for x, x_label, value in zip(xs, x_labels, values)]


def _attention_rows(trace: dict) -> list[list]:
    """One row per cell of an attention matrix: stage, layer, head, both positions and tokens, value."""
    meta = trace["meta"]
    z = np.atleast_2d(np.asarray(trace["z"], dtype=np.float32))  # [query, key]
    queries = [html.unescape(str(t)) for t in meta["y_labels"]]
    keys = [html.unescape(str(t)) for t in meta["x_labels"]]
    return [
        [meta.get("stage"), meta.get("layer"), meta.get("head"), q_pos, q_token, k_pos, k_token, value]
        for q_pos, q_token, values in zip(meta["query_positions"], queries, z)
        for k_pos, k_token, value in zip(meta["key_positions"], keys, values)
    ]


def _grid_rows(trace: dict) -> list[list]:
    """The panels of a tiled every-head overview, cut apart: one row per cell of every head."""
    meta = trace["meta"]
    z = np.asarray(trace["z"], dtype=np.float32)  # [layer · query (+ gaps), head · key (+ gaps)]
    rows, cols, gap = meta["panel_rows"], meta["panel_cols"], meta["gap"]
    queries = [html.unescape(str(t)) for t in meta["query_labels"]]
    keys = [html.unescape(str(t)) for t in meta["key_labels"]]
    out = []
    for layer in range(meta["n_layers"]):
        for head in range(meta["n_heads"]):
            top, left = layer * (rows + gap), head * (cols + gap)
            panel = z[top : top + rows, left : left + cols]
            for q_pos, q_token, values in zip(meta["query_positions"], queries, panel):
                for k_pos, k_token, value in zip(meta["key_positions"], keys, values):
                    out.append(["pattern", layer, head, q_pos, q_token, k_pos, k_token, value])
    return out


def _labels(trace: dict, axis: dict, letter: str, coords: list) -> list:
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


def _series_rows(fig: dict, trace: dict, name: str) -> list[list]:
    """One row per point: ``series, x, x_label, y`` (the label: the point's text, else the x tick text)."""
    xs = _as_list(trace.get("x"), 0)
    ys = _as_list(trace.get("y"), len(xs))
    if not xs:
        xs = list(range(len(ys)))
    texts = trace.get("text") if trace.get("text") is not None else trace.get("hovertext")
    texts = _as_list(texts, len(xs))
    x_names = _tick_names(_axis(fig, trace.get("xaxis"), "x"))
    rows = []
    for x, y, text in zip(xs, ys, texts):
        if x is None and y is None:
            continue
        if text is None:
            text = x_names.get(_key(x))
        rows.append([name, x, None if text is None else html.unescape(str(text)), y])
    return rows


_CSV_TYPES = ("heatmap", "scatter", "scattergl", "bar")


def _section_names(fig: dict, traces: list) -> list[str]:
    """A distinct name per trace: its name, then its y axis title, then its index."""
    names = [html.unescape(str(t.get("name") or f"{t['type']} {i}")) for i, t in traces]
    repeated = {name for name in names if names.count(name) > 1}
    for position, (_, trace) in enumerate(traces):
        axis_title = _axis_title(_axis(fig, trace.get("yaxis"), "y"), "")
        if names[position] in repeated and axis_title:
            names[position] = f"{names[position]} · {axis_title}"
    repeated = {name for name in names if names.count(name) > 1}
    for position, (index, _) in enumerate(traces):
        if names[position] in repeated:
            names[position] = f"{names[position]} ({index})"
    return [" ".join(name.split()) for name in names]


def _kind(trace: dict) -> str:
    meta = trace.get("meta") if isinstance(trace.get("meta"), dict) else {}
    if trace["type"] == "heatmap":
        return {"attention": "attention", "attention-grid": "grid"}.get(meta.get("kind"), "matrix")
    return "series"


def figure_to_csv(fig: dict, table: pd.DataFrame | None = None) -> str:
    """The numbers behind ``fig`` (a figure dict, or a ``go.Figure``) as one tidy table: one header row,
    one row per cell or point.

    * With ``table`` (the figure's tidy table, built by the page from the arrays it drew the figure
      from: ``PageContent.figure_tables``): that table, as ``frame_to_csv`` writes it. The figure is
      not read.

    Without it, the table is read back out of the figure:

    * A figure may carry its own table (``layout.meta["table"]``, ``columns`` and ``rows``), as the
      tokens figure does (position, token, id, kind): it is written as it is.
    * Attention matrices (their traces carry ``meta`` naming stage, layer and head, see
      ``viz.heatmap.heatmap_trace``), the every-head overview included: columns
      ``stage, layer, head, query_position, query_token, key_position, key_token, value``.
    * Other heatmaps: ``panel, row, row_label, column, column_label, value``.
    * Scatter and bar traces: ``series, x, x_label, y``; beside heatmaps they take the matrix
      columns (series as panel, x as column, y as value).

    Masked cells are rows with an empty value. Decorations (the "×" marks) are left out. Text that
    a spreadsheet would run as a formula gets a leading apostrophe. ``pandas.read_csv`` and a
    spreadsheet open it without options.
    """
    if table is not None:
        return frame_to_csv(table)
    fig = plain.as_dict(fig)
    meta = fig["layout"].get("meta")
    own = meta.get("table") if isinstance(meta, dict) else None
    traces = [(i, t) for i, t in enumerate(fig["data"]) if not is_decoration(t) and t.get("type") in _CSV_TYPES]
    names = _section_names(fig, traces)
    kinds = {_kind(t) for _, t in traces}
    if own is not None:
        header, rows = own["columns"], own["rows"]
    elif kinds and kinds <= {"attention", "grid"}:
        header = ATTENTION_COLUMNS
        rows = [row for _, t in traces for row in (_attention_rows(t) if _kind(t) == "attention" else _grid_rows(t))]
    elif kinds == {"series"}:
        header = SERIES_COLUMNS
        rows = [row for name, (_, t) in zip(names, traces) for row in _series_rows(fig, t, name)]
    else:
        header = MATRIX_COLUMNS
        rows = []
        for name, (_, trace) in zip(names, traces):
            if trace["type"] == "heatmap":
                rows.extend(_heatmap_rows(fig, trace, name))
            else:
                rows.extend([series, None, None, x, label, y] for series, x, label, y in _series_rows(fig, trace, name))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([[_cell(v) for v in row] for row in rows])
    return buffer.getvalue()


def table_to_csv(columns: list[str], rows: list[list]) -> str:
    """A table (a header and rows of cells) as CSV, with the same cells as ``figure_to_csv``: numbers in
    shortest form, missing values empty, text a spreadsheet would run as a formula behind an apostrophe."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([[_cell(v) for v in row] for row in rows])
    return buffer.getvalue()


def frame_to_csv(table: pd.DataFrame) -> str:
    """A tidy ``pandas.DataFrame`` as CSV text: its columns as the header, no index, missing values
    (NaN, None, ``pd.NA``) empty, floats in shortest form (float32 as float32), and text a spreadsheet
    would run as a formula behind an apostrophe (as ``figure_to_csv``'s cells)."""
    import pandas as pd

    table = table.copy()
    for name in table.columns:
        column = table[name]
        if column.dtype == object or pd.api.types.is_string_dtype(column.dtype):
            table[name] = [None if pd.isna(value) else _cell(value) for value in column]
    return table.to_csv(index=False, lineterminator="\n")
