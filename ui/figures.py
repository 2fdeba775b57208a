"""Drawing a figure in a page with its export buttons (drawn by the chart component, ui/chart.py), and the
zip of every figure of the view. A figure is a plotly dict (viz.plain)."""

from __future__ import annotations

import base64
import functools
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict
from typing import TypeVar
from urllib.parse import urlencode

import numpy as np
import streamlit as st
from plotly.io.json import to_json_plotly

from ui.chart import DECIMAL_Z, NAN_DIGITS, TEXT_PARTS, chart_data, draw_chart
from ui.chart import POWERS as DOUBLE_POWERS
from viz import apply_print_theme, plain
from viz.content.settings import to_query
from viz.export import figure_to_csv, figure_to_html, figures_zip, plotly_config, safe_filename
from viz.export.bundle import archive_name, describe
from viz.export.image import export_size
from viz.export.names import stamped_stem

REGISTRY = "figures_of_view"  # session state: {figure id: figure} drawn by this view (the zip's figures)
T = TypeVar("T")

_MADE: OrderedDict[int, tuple[dict, dict]] = OrderedDict()  # id(figure) → (the figure, {what: (variant, made)})
_MADE_LOCK = threading.Lock()
MADE_ENTRIES = 1024  # figures remembered; each entry holds its figure, so its id is not reused while remembered


def made_once(fig: dict, what: str, make: Callable[[], T], variant=None) -> T:
    """`make()`, once per figure, `what` and `variant` (only the latest variant is kept).

    A page's content is shared between runs and sessions (ui.content_cache), so the same figures come back
    on every rerun: what the page derives from them (the print-themed copy, the bytes sent to the browser,
    a copy with click targets) is made the first time only. Figures are not changed once built."""
    with _MADE_LOCK:
        entry = _MADE.get(id(fig))
        if entry is None or entry[0] is not fig:
            entry = _MADE[id(fig)] = (fig, {})
        _MADE.move_to_end(id(fig))
        while len(_MADE) > MADE_ENTRIES:
            _MADE.popitem(last=False)
        found = entry[1].get(what)
    if found is not None and found[0] == variant:
        return found[1]
    made = make()
    with _MADE_LOCK:
        entry[1][what] = (variant, made)
    return made


def sent_to_browser(fig: dict, config, *, clickable: bool, variant, export=None, live: dict | None = None) -> bytes:
    """What the chart component is sent for `fig` (its plotly JSON, how to draw it, how to export it, maybe
    how to redraw it: `live`), made once per figure and `variant`. `config` (plotly's) and `export`
    (`export_of`) may be functions that make them, called only when the bytes are made."""

    def make() -> bytes:
        made = [value() if callable(value) else value for value in (config, export)]
        spec = made_once(fig, "json", lambda: browser_json(fig))
        return chart_data(fig, spec, made[0], clickable=clickable, export=made[1], live=live)

    return made_once(fig, "chart", make, variant=variant)


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
POWERS = np.array(DOUBLE_POWERS)  # the doubles nearest 10^k, as chart.js's
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
    """The figure's plotly JSON as the chart component is sent it, for chart.js to unpack before plotly draws:

    - a heatmap's text per cell that is row strings joined to column strings (`outer_parts`) goes as those
      n + m strings under `TEXT_PARTS`;
    - a heatmap of at least `DECIMAL_MIN_VALUES` values whose hover shows them as `%{z:.4g}` sends them to
      4 significant digits, 3 bytes a value (`decimal_digits`) where float32 takes 4, under `DECIMAL_Z`;
    - no escapes for JSON inside HTML (`_json`).

    The figure keeps its text and float32 values: the HTML and CSV exports are made from it
    (docs/performance.md: the value step at 512 tokens, 3.27 → 1.24 MB)."""
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
    return _json({"data": data, "layout": plain.plotly_dict_of(fig["layout"])})


def _json(spec: dict) -> str:
    """What plotly.io.to_json_plotly writes, less its escapes for JSON inside HTML ("/" as "\\u002f": 5 bytes
    more for every 64th character of an array's base64): orjson as plotly calls it, without the escapes."""
    try:
        import orjson
    except ImportError:
        return to_json_plotly(spec)
    try:
        return orjson.dumps(spec, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY).decode("utf-8")
    except TypeError:  # something orjson cannot write as it is: plotly converts it first
        return to_json_plotly(spec)


def export_of(fig: dict, name: str, scale: float) -> dict:
    """How the chart component exports `fig`: file `name`, PNG and SVG at the size the server's export
    (and the zip) uses, PNG at `scale`."""
    width, height = export_size(fig["layout"])
    return {"name": name, "width": width, "height": height, "scale": scale}


def server_file(fig: dict, name: str, form: str) -> tuple[bytes, str, str] | None:
    """(bytes, file name, mime type) of `fig` as standalone HTML or CSV, made when its button is clicked."""
    if form == "html":
        return figure_to_html(fig, filename=name), f"{name}.html", "text/html"
    if form == "csv":
        return figure_to_csv(fig).encode("utf-8"), f"{name}.csv", "text/csv"
    return None


def start_view() -> None:
    """Forget the figures of the previous run: each run registers what it draws."""
    st.session_state[REGISTRY] = {}


def themed(fig: dict) -> dict:
    settings = st.session_state.get("settings")
    if settings is None or settings.theme != "print":
        return fig
    return made_once(fig, "print theme", lambda: apply_print_theme(fig))


def about_view() -> dict | None:
    """The model, sentences, every setting and the link of the view shown, for manifests and file names
    (the same dict for the same view: not to be changed)."""
    settings = st.session_state.get("settings")
    if settings is None:
        return None
    return _described(settings, _address(), _png_scale())


def _address() -> str:
    """The app's address in the browser, without the query string."""
    return str(getattr(st.context, "url", "") or "").split("?")[0]


@functools.lru_cache(maxsize=256)
def _described(settings, address: str, png_scale: float) -> dict:
    # once per view, not once per figure: `asdict` and the query string took 0.5 ms a figure (8 a run)
    every = asdict(settings)
    every.pop("text")
    every["png_scale"] = png_scale
    return describe(settings.model, settings.sentences, every, f"{address}?{urlencode(to_query(settings))}")


@functools.lru_cache(maxsize=1024)
def _stem(figure_id: str, settings, address: str, png_scale: float) -> str:
    # a figure's file name in a view, once: the settings' hash took 0.1 ms a figure, seven a run
    return stamped_stem(figure_id, _described(settings, address, png_scale))


LAYER = re.compile(r"-L\d+(?=-|$)")


def chart_key(figure_id: str) -> str:
    """The widget key of a figure's chart: its id without its layer ("stages-L0-H2" → "chart_stages-H2"), so
    another layer draws over the same chart (Plotly.react) rather than into a new one."""
    return f"chart_{safe_filename(LAYER.sub('', figure_id))}"


def show_figure(fig: dict, figure_id: str, *, exports: bool = True, on_click: Callable[[dict], None] | None = None, live: dict | None = None) -> None:
    """Draw `fig` and, under it, PNG / SVG / HTML / CSV buttons, named for the figure, the model and the
    settings (two views never share a file name). PNG and SVG are rendered by the browser, HTML and CSV
    made here when clicked (`server_file`).

    `on_click(selection)`: run when a point of the chart is clicked, with the selection in the shape of
    `st.plotly_chart`'s. `live`: what the browser needs to redraw a stages figure the moment the mask,
    scaling, temperature or hidden keys change (ui/components/chart/live.js); not in the print theme."""
    settings = st.session_state.get("settings")
    if live is not None and settings is not None and settings.theme == "print":
        live = None
    fig = themed(fig if isinstance(fig, dict) else fig.to_plotly_json())
    st.session_state.setdefault(REGISTRY, {})[figure_id] = fig
    scale, clickable = _png_scale(), on_click is not None
    name = _stem(figure_id, settings, _address(), scale) if settings is not None else stamped_stem(figure_id, None)
    config = lambda: plotly_config(name, scale=scale)  # noqa: E731
    export = (lambda: export_of(fig, name, scale)) if exports else None
    data = sent_to_browser(fig, config, clickable=clickable, variant=(name, scale, clickable, exports, live is not None), export=export, live=live)
    on_export = (lambda form: server_file(fig, name, form)) if exports else None
    draw_chart(data, key=chart_key(figure_id), on_click=on_click, on_export=on_export)


def _png_scale() -> float:
    return float(st.session_state.get("png_scale", 2))


def download_all(page: str) -> None:
    """One button: every figure of this view in PNG, SVG, HTML and CSV, with a manifest (model,
    sentences, every setting, the link back to this view)."""
    figures = st.session_state.get(REGISTRY, {})
    if not figures:
        return
    about, scale = about_view(), _png_scale()
    st.download_button(
        f"Download all {len(figures)} figures of this view (zip)",
        lambda: figures_zip(dict(figures), scale=scale, about=about),
        archive_name(page, about),
        "application/zip",
        key=f"zip_{safe_filename(page)}",
        on_click="ignore",
        type="primary",
    )
