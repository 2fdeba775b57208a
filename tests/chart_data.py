"""Reading what the chart component is sent (ui.chart.chart_data) as the browser reads it: chart.js's unpacking
of a heatmap's text parts and 4-digit values, in Python, for the tests."""

from __future__ import annotations

import json

from viz.payload import DECIMAL_Z, NAN_DIGITS, TEXT_PARTS
from viz.payload import DOUBLE_POWERS as POWERS


def chart_about(data: bytes) -> dict:
    """The first line of `data` (`chart_data`): the JSON about the chart (its version, config, file, …)."""
    return json.loads(data.partition(b"\n")[0])


def read_chart_data(data: bytes) -> tuple[dict, dict]:
    """(about, figure) from what `chart_data` made: what the browser reads, a trace's text per cell joined
    again from its row and column parts (`TEXT_PARTS`) as chart.js joins it."""
    about, _, spec = data.partition(b"\n")
    about = json.loads(about)
    if about.get("file"):
        spec = spec[: len(spec) - about["file"]["length"]]
    return about, join_text(json.loads(spec))


def join_text(figure: dict) -> dict:
    """`figure` as chart.js hands it to plotly (`unpack`): each trace's `TEXT_PARTS` replaced by the text per
    cell it stands for, and its `DECIMAL_Z` by the float32 values it stands for (as plotly's {dtype, bdata, shape})."""
    for trace in figure.get("data", []):
        parts = trace.pop(TEXT_PARTS, None)
        if parts is not None:
            trace["text"] = [[row + col for col in parts["cols"]] for row in parts["rows"]]
        decimal = trace.pop(DECIMAL_Z, None)
        if decimal is not None:
            trace["z"] = decimal_values(decimal)
    return figure


def decimal_values(decimal: dict) -> dict:
    """The float32 values that a `DECIMAL_Z` stands for, as plotly's typed array: digits × 10^power (as chart.js computes them)."""
    import base64

    import numpy as np

    rows, cols = decimal["shape"]
    packed = base64.b64decode(decimal["bdata"])
    digits = np.frombuffer(packed, dtype="<i2", count=rows * cols).astype(np.float64)
    power = np.frombuffer(packed, dtype="i1", offset=2 * rows * cols).astype(np.float64)
    factor = np.array(POWERS)[np.abs(power).astype(np.int64)]
    values = np.where(power >= 0, digits * factor, digits / factor)
    values[digits == NAN_DIGITS] = np.nan
    return {"dtype": "f4", "bdata": base64.b64encode(values.astype("<f4").tobytes()).decode("ascii"), "shape": f"{rows}, {cols}"}


def read_chart_file(data: bytes) -> bytes | None:
    """The bytes of the file that `data` carries (`with_file`), or None."""
    about = chart_about(data)
    return data[len(data) - about["file"]["length"] :] if about.get("file") else None
