"""What the browser's chart component is sent for a figure: its plotly JSON in fewer bytes. chart.js
(ui/components/chart) unpacks both encodings before plotly draws; the exports keep the figure's own.

- a heatmap's text per cell that is row strings joined to column strings (`outer_parts`) goes as those
  n + m strings under `TEXT_PARTS`;
- a heatmap of at least `DECIMAL_MIN_VALUES` values whose hover shows them as `%{z:.4g}` sends them to
  4 significant digits, 3 bytes a value (`decimal_digits`) where float32 takes 4, under `DECIMAL_Z`;
- the template's trace defaults only for the trace types the figure has (`used_template`): plotly applies
  ``template.data[type]`` to traces of that type alone, so the others change nothing drawn (plotly_white:
  7.2 KB a figure, 3.2 KB for a figure of heatmaps);
- no escapes for JSON inside HTML (`_json`).
"""

from __future__ import annotations

import base64
import os

import numpy as np
from plotly.io.json import to_json_plotly

from viz import plain

TEXT_PARTS = "av_text"  # in a trace sent: {"rows", "cols"}, its text per cell as rows[i] + cols[j] (chart.js joins them)
DECIMAL_Z = "av_z"  # in a trace sent: {"shape", "bdata"}, its z to 4 significant digits (`decimal_digits`)
NAN_DIGITS = -32768  # the digits of a gap (NaN) in DECIMAL_Z
DOUBLE_POWERS = tuple(float(f"1e{k}") for k in range(80))  # the doubles nearest 10^k (exact to 10^22), as the chart component's POWERS (live.js)


def outer_parts(text) -> tuple[list[str], list[str]] | None:
    """(rows, cols) such that ``text[i][j] == rows[i] + cols[j]`` for every cell of the 2-d array of strings
    ``text``, or None when it is not such a table.

    A heatmap's hover text per cell names its row's token and its column's ("query 3: bank" +
    "<br>key 5: river"): n × m strings made of n + m. The first row's common prefix belongs to its row
    string; whatever splits the cells, every cell is checked."""
    cells = np.asarray(text)
    if cells.ndim != 2 or 0 in cells.shape:
        return None
    if cells.dtype.kind == "O" and all(isinstance(cell, str) for cell in cells.flat):  # as go.Figure keeps strings
        cells = cells.astype(str)
    if cells.dtype.kind != "U":
        return None
    first = cells[0].tolist()
    shared = len(os.path.commonprefix(first))  # once, not once per cell
    cols = [cell[shared:] for cell in first]
    rows = [cell[: len(cell) - len(cols[0])] for cell in cells[:, 0].tolist()]
    if not np.array_equal(np.char.add(np.array(rows)[:, None], np.array(cols)[None, :]), cells):
        return None
    return rows, cols


DECIMAL_MIN_VALUES = 10_000  # a heatmap with fewer values goes as plotly writes it (float32): at 16 tokens, every value as ever
POWERS = np.array(DOUBLE_POWERS)  # the doubles nearest 10^k, as the chart component's (live.js)
LOG10_2 = float(np.log10(2.0))


def decimal_digits(values) -> bytes | None:
    """``values`` (any shape) rounded to 4 significant digits, as 3 bytes each: the digits (int16, ±1000 to
    ±9999; 0 for zero, ``NAN_DIGITS`` for a gap) for every value, then each value's power of ten (int8).
    ``%{z:.4g}`` in a hover shows the same digits as for the float32 value (one in 10⁴ of the colour
    scale apart: at most one step of 255 in a cell's colour). None when a value is infinite or beyond
    about 10^±74 (a float32 never is), which the powers an int8 holds could not carry."""
    flat = np.asarray(values, dtype=np.float64).ravel()
    if np.isinf(flat).any():
        return None
    shown = np.isfinite(flat) & (flat != 0)
    every = bool(shown.all())  # no zero and no gap: no copy in and out
    value = flat if every else flat[shown]
    # the power of ten from the binary exponent (|v| = m·2^e, ½ ≤ m < 1): floor(log10 |v|) or one below it,
    # which the rounding below corrects; a quarter of log10's time (0.65 against 2.8 ms for 131,000 values)
    exponent = np.frexp(value)[1]
    shift = np.floor((exponent - 1) * LOG10_2).astype(np.int64) - 3
    if value.size and (shift.min() < -77 or shift.max() > 77):  # ±2 from here still in POWERS
        return None
    scaled = _scaled(value, shift)
    for _ in range(3):  # one power too small, then a 9999.5 that rounds up to 10000: at most two steps
        high, low = np.abs(scaled) >= 10_000, np.abs(scaled) < 1000
        wrong = high | low
        if not wrong.any():
            break
        shift[high] += 1
        shift[low] -= 1
        scaled[wrong] = _scaled(value[wrong], shift[wrong])
    if every:
        digits, power = scaled, shift
    else:
        digits, power = np.zeros(flat.shape, dtype=np.float64), np.zeros(flat.shape, dtype=np.int64)
        digits[shown], power[shown] = scaled, shift
        digits[np.isnan(flat)] = NAN_DIGITS
    return digits.astype("<i2").tobytes() + power.astype("i1").tobytes()


def _scaled(values: np.ndarray, power: np.ndarray) -> np.ndarray:
    """values ÷ 10^power (dividing or multiplying by an exact power of ten) rounded half away from zero,
    as JavaScript's toPrecision rounds (plotly's `.4g`): 0.015625 is 0.01563, where numpy's round gives 0.01562."""
    factor = POWERS[np.abs(power)]
    down = power >= 0
    if down.all():
        scaled = values / factor
    elif not down.any():  # weights and most scores: every value below 1000, multiplied
        scaled = values * factor
    else:
        scaled = np.where(down, values / factor, values * factor)
    return np.copysign(np.floor(np.abs(scaled) + 0.5), scaled)


def _decimal_z(z) -> dict | None:
    """A heatmap's z (the figure's own array) in `DECIMAL_Z` form, or None to send it as plotly writes it."""
    if not isinstance(z, np.ndarray) or z.ndim != 2 or z.dtype.kind != "f" or z.size < DECIMAL_MIN_VALUES:
        return None
    packed = decimal_digits(z)
    return None if packed is None else {"shape": list(z.shape), "bdata": base64.b64encode(packed).decode("ascii")}


def _shows_4_digits(trace: dict) -> bool:
    """Whether the trace's hover shows z to 4 significant digits (`%{z:.4g}`) and nothing else of z (a
    `%{z:.3f}` of a value rounded to 4 digits could differ in its last digit)."""
    template = trace.get("hovertemplate")
    return isinstance(template, str) and "%{z:.4g}" in template and template.count("%{z") == template.count("%{z:.4g}") and "texttemplate" not in trace


def browser_json(fig: dict) -> str:
    """The figure's plotly JSON as the chart component is sent it (see the module's docstring). The figure
    keeps its text and float32 values: the HTML and CSV exports are made from it (docs/performance.md: the
    value step at 512 tokens, 3.27 → 1.24 MB)."""
    data = []
    for own in fig["data"]:
        instead = {}  # what replaces a property, known before the rest is converted
        if own.get("type") == "heatmap":
            parts = outer_parts(own["text"]) if own.get("text") is not None else None
            if parts is not None:
                instead["text"] = (TEXT_PARTS, {"rows": parts[0], "cols": parts[1]})
            decimal = _decimal_z(own.get("z")) if _shows_4_digits(own) else None
            if decimal is not None:
                instead["z"] = (DECIMAL_Z, decimal)
        trace = plain.plotly_dict_of({name: value for name, value in own.items() if name not in instead})
        trace.pop("uid", None)
        trace.update(instead.values())
        data.append(trace)
    return _json({"data": data, "layout": used_template(plain.plotly_dict_of(fig["layout"]), data)})


def used_template(layout: dict, data: list[dict]) -> dict:
    """`layout` with its template's trace defaults (``template.data``) kept for the types in `data` only."""
    template = layout.get("template")
    if not isinstance(template, dict) or not isinstance(template.get("data"), dict):
        return layout
    types = {trace.get("type", "scatter") for trace in data}
    return layout | {"template": template | {"data": {name: value for name, value in template["data"].items() if name in types}}}


def _json(spec: dict) -> str:
    """What plotly.io.json.to_json_plotly writes, less its escapes for JSON inside HTML ("/" as "\\u002f": 5 bytes
    more for every 64th character of an array's base64): orjson as plotly calls it, without the escapes."""
    try:
        import orjson
    except ImportError:
        return to_json_plotly(spec)
    try:
        return orjson.dumps(spec, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY).decode("utf-8")
    except TypeError:  # something orjson cannot write as it is: plotly converts it first
        return to_json_plotly(spec)
