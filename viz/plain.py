"""Figures as plain plotly JSON: a figure is a dict ``{"data": [trace dicts], "layout": {…}}``.

plotly accepts such a dict everywhere a figure goes (plotly.js in the browser, kaleido, ``plotly.io``),
so the figure modules write each figure as the JSON plotly's validators would produce (traces as dicts
with their ``type``, titles as ``{"text": …}``, colour scales resolved to their colour lists, the template
as its JSON; numpy arrays as values) and never build a ``go.Figure``. plotly's object model validates and
copies every property it is given: ``update_layout(template=…)`` resolves and deep-copies the whole
template, ``make_subplots`` builds a validated figure, every ``update_xaxes`` walks the validators again.
Building the Attention page's figures that way took 0.3–0.5 s at 16 tokens (cProfile: ``update_layout``
64 %, template ``__init__`` 36 %, validators), for a model run of a millisecond.

``figure`` makes a figure from trace dicts and a layout dict; ``plotly_dict`` turns it into the JSON
plotly.js takes (numeric numpy arrays as plotly.js typed arrays); ``as_dict`` takes a dict or a
``go.Figure``, for code that may be given either. ``tests/test_plain_figures.py`` passes every page's
figures through plotly's validators (``go.Figure(fig)``) and checks that nothing sent to the browser changes.
"""

from __future__ import annotations

import base64
import re
from copy import deepcopy
from functools import lru_cache

import numpy as np
import orjson
import plotly.colors
import plotly.io as pio

SCREEN_TEMPLATE = "plotly_white"  # the template of every figure on screen (viz.theme styles the print copies)


_TEMPLATES: dict[str, dict] = {}  # name → plotly JSON, as made by template_json


# Every axis draws its tick labels where plotly places them ("allow"). plotly's default for a numeric axis
# (every matrix axis here: positions, labelled by ticktext), "hide past div", measures each tick label's box
# after every drawing to hide those that would cross the chart's edge: a forced layout per label, 28-40 % of a
# redraw of the stages (docs/performance.md). Margins grow to fit the labels (automargin), and
# tests/test_figure_layout.py checks that no text leaves the canvas.
AXIS_DEFAULTS = {"ticklabeloverflow": "allow"}


def template_json(name: str = SCREEN_TEMPLATE) -> dict:
    """A registered template as plotly JSON with `AXIS_DEFAULTS` on its x and y axes, made once (each
    figure takes a copy of it)."""
    if name not in _TEMPLATES:
        made = pio.templates[name].to_plotly_json()
        layout = made.setdefault("layout", {})
        for axis in ("xaxis", "yaxis"):
            layout[axis] = {**layout.get(axis, {}), **AXIS_DEFAULTS}
        _TEMPLATES[name] = made
    return _TEMPLATES[name]


@lru_cache(maxsize=8)
def _template_bytes(name: str) -> bytes:
    return orjson.dumps(template_json(name))


def _template_copy(name: str) -> dict:
    """A figure's own copy of a registered template: parsed from its JSON (0.06 ms), where walking the dicts
    took 0.32 ms, for each of the sixteen figures of a new view of the Attention page (the JSON has
    only dicts, lists, strings and numbers: the copy equals the template)."""
    return orjson.loads(_template_bytes(name))


@lru_cache(maxsize=64)
def _colorscale(name: str) -> tuple:
    """A named scale's colours (``plotly.colors.get_colorscale``, which spaces them evenly and reverses a
    name ending in "_r"), at the positions plotly's validators give a named scale: colour i of n at
    i / (n − 1) (get_colorscale sums the steps instead, 0.7777777777777777 for 7 / 9)."""
    colours = [colour for _, colour in plotly.colors.get_colorscale(name)]
    return tuple((i / (len(colours) - 1), colour) for i, colour in enumerate(colours))


def colorscale(scale):
    """A colour scale as plotly stores it: a name ("Viridis", "RdBu_r") becomes its ``[[position, colour], …]``."""
    if isinstance(scale, str):
        return [list(pair) for pair in _colorscale(scale)]
    return scale


def title(text: str) -> dict:
    return {"text": text}


def figure(data: list[dict], layout: dict, *, template: str = SCREEN_TEMPLATE) -> dict:
    """A new figure ``{"data": …, "layout": …}`` of trace dicts (each with its ``type``) and a layout dict.

    The inputs must already be in plotly's canonical form (see the module's docstring): nothing here
    checks a property name or converts a value, except that a subplot numbered 0 or 1 (``xaxis1``), which
    plotly would rename, is refused. The template is the registered ``template`` unless ``layout`` has one.
    The figure owns copies of the dicts and lists given (``_owned``); a numpy array becomes a read-only
    view of the caller's, so neither can write into the other's through it."""
    for name in layout:
        match = _SUBPLOT.fullmatch(name)
        if match and int(match.group(2)) < 2:
            raise ValueError(f"{name}: plotly renames a subplot numbered {match.group(2)}; write {match.group(1)} or a number from 2")
    owned = _owned(layout)
    if "template" not in owned:
        owned["template"] = _template_copy(template)
    return {"data": _owned(list(data)), "layout": owned}


# layout properties numbered per subplot (xaxis2, coloraxis3…), as plotly.js names them
_SUBPLOT = re.compile(r"(xaxis|yaxis|coloraxis|scene|geo|polar|ternary|mapbox|map|smith|legend)(\d+)")


def as_dict(fig) -> dict:
    """The figure as a dict: a dict as it is, a ``go.Figure`` as the JSON of its traces and its layout.

    Each part's ``to_plotly_json`` keeps numpy arrays as arrays, as the figure modules write them; the
    figure's own ``to_plotly_json`` is its ``to_dict``, which turns them into plotly.js typed arrays
    (``{"dtype", "bdata"}``) that code reading the numbers (the CSV export) would have to decode."""
    if isinstance(fig, dict):
        return fig
    return {"data": [trace.to_plotly_json() for trace in fig.data], "layout": fig.layout.to_plotly_json()}


def _owned(value):
    """A copy of the dicts, lists and tuples of a figure's JSON; a numpy array as a read-only view of it
    (the figure cannot write into an array of the caller's, nor the caller into the figure's through it)."""
    if isinstance(value, dict):
        return {key: _owned(item) for key, item in value.items()}
    if isinstance(value, list):
        if all(type(item) in _SCALARS for item in value):  # tick labels, positions: copied without a call per item
            return value.copy()
        return [_owned(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_owned(item) for item in value)
    if isinstance(value, np.ndarray):
        view = value.view()
        view.flags.writeable = False
        return view
    return value


def plotly_dict(fig) -> dict:
    """The figure as plotly.js takes it, as plotly's ``fig.to_dict()`` writes it: numeric numpy arrays as
    plotly.js typed arrays (``{"dtype", "bdata", "shape"}``), without a deep copy of the figure first: new
    dicts and lists, the rest shared with the figure. plotly's copy, and its walk through each figure's
    template (6.5 KB of JSON, the same in every figure), took 37 ms for the Attention page's eight
    figures at 16 tokens; this takes a few. ``fig`` may also be a ``go.Figure`` (``as_dict``)."""
    fig = as_dict(fig)
    return {"data": [plotly_dict_of(trace) for trace in fig["data"]], "layout": plotly_dict_of(fig["layout"])}


def plotly_dict_of(part: dict) -> dict:
    """A trace's or the layout's JSON (``fig["data"][i]`` or ``fig["layout"]``) as ``plotly_dict`` writes it:
    new dicts and lists, numeric numpy arrays as typed arrays."""
    return _typed_arrays(part)


def _typed_arrays(value):
    """A copy of ``value`` in which a dict's value that is a numeric numpy array becomes plotly.js's typed
    array spec, except under the keys plotly leaves as they are (``range``…), as plotly's ``to_dict``
    does; any other value (a numpy array of strings or objects, a number) is left to the JSON encoder.
    A template is left as it is when it is one of ours (no arrays in it)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if item is None or isinstance(item, _SCALARS) or key in _SKIPPED or (key == "template" and _known_template(item)):
                out[key] = item
            elif isinstance(item, np.ndarray):
                dtype = _typed_dtype(item)
                out[key] = item if dtype is None else _typed(item, dtype)
            else:
                out[key] = _typed_arrays(item)
        return out
    if isinstance(value, (list, tuple)):  # an array in a list is not converted (nor by plotly)
        return [_typed_arrays(item) if isinstance(item, (dict, list, tuple)) else item for item in value]
    return value


_SCALARS = (str, int, float)
_SKIPPED = frozenset({"geojson", "layer", "layers", "range"})  # the keys whose arrays plotly's to_dict leaves as lists
# numpy dtypes that plotly.js takes as they are; int64 and uint64 are narrowed to the smallest that holds them
_TYPED = {"int8": "i1", "uint8": "u1", "int16": "i2", "uint16": "u2", "int32": "i4", "uint32": "u4", "float32": "f4", "float64": "f8"}
_NARROWED = {"int64": (np.int8, np.int16, np.int32), "uint64": (np.uint8, np.uint16, np.uint32)}


def _typed_dtype(array: np.ndarray) -> np.dtype | None:
    """The dtype a numpy ``array`` is sent as (typed base64), or None where it goes to the JSON encoder as
    it is (strings, objects, booleans, a 64-bit integer beyond 32 bits, an empty array), as plotly sends them."""
    if not array.size:
        return None
    name = array.dtype.name
    if name in _TYPED:
        return array.dtype
    for dtype in _NARROWED.get(name, ()):
        info = np.iinfo(dtype)
        if array.min() >= info.min and array.max() <= info.max:
            return np.dtype(dtype)
    return None


def _typed(array: np.ndarray, dtype: np.dtype) -> dict:
    """plotly.js's typed array spec of ``array`` sent as ``dtype``: the bytes in C order, base64, and the
    shape of an array of more than one dimension ("3, 4")."""
    spec = {"dtype": _TYPED[dtype.name], "bdata": base64.b64encode(np.ascontiguousarray(array, dtype=dtype)).decode("ascii")}
    if array.ndim > 1:
        spec["shape"] = str(array.shape)[1:-1]
    return spec


def _known_template(value) -> bool:
    return any(value == made for made in list(_TEMPLATES.values()))  # no arrays in a registered template's JSON


GRID_OPTIONS = frozenset({"horizontal_spacing", "vertical_spacing", "column_widths", "row_heights", "shared_xaxes"})


def grid_layout(rows: int, cols: int, n_titles: int, options: dict) -> tuple[dict, dict] | None:
    """The layout that ``make_subplots(rows, cols, subplot_titles=n_titles titles, **options)`` makes, and
    the axes of each cell, computed here with plotly's own arithmetic (plotly/_subplots.py, start cell top
    left); None for an option it does not cover (``GRID_OPTIONS``). plotly's function validates every
    property it sets: the first figures of a new server process spent 70 of their 125 ms in it (cProfile),
    on the way to a cold start's first chart."""
    if set(options) - GRID_OPTIONS or options.get("shared_xaxes") not in (None, False, True, "columns"):
        return None
    h = options.get("horizontal_spacing", 0.2 / cols)
    v = options.get("vertical_spacing", (0.5 if n_titles else 0.3) / rows)
    widths, heights = [(1.0 - h * (cols - 1)) / cols] * cols, [(1.0 - v * (rows - 1)) / rows] * rows
    if options.get("column_widths") is not None:  # plotly's arithmetic, to the last digit
        shares = [float(w) for w in options["column_widths"]]
        widths = [(1.0 - h * (cols - 1)) * (w / sum(shares)) for w in shares]
    if options.get("row_heights") is not None:
        parts = [float(w) for w in options["row_heights"]]
        heights = [(1.0 - v * (rows - 1)) * (w / sum(parts)) for w in parts]
    if len(widths) != cols or len(heights) != rows:
        return None
    heights = heights[::-1]  # plotly lays rows out from the bottom
    layout: dict = {}
    axes, domains = {}, []
    for r in range(rows):  # r = 0 is the top row
        below = rows - 1 - r
        y_start = sum(heights[:below]) + below * v
        y_domain = [min(max(y_start, 0.0), 1.0), min(max(y_start + heights[-1 - r], 0.0), 1.0)]
        for c in range(cols):
            n = r * cols + c + 1
            x_start = sum(widths[:c]) + c * h
            x_domain = [x_start, x_start + widths[c]]
            suffix = "" if n == 1 else str(n)
            layout[f"xaxis{suffix}"] = {"anchor": f"y{suffix}", "domain": x_domain}
            layout[f"yaxis{suffix}"] = {"anchor": f"x{suffix}", "domain": y_domain}
            axes[r + 1, c + 1] = {"xaxis": f"x{suffix}", "yaxis": f"y{suffix}"}
            domains.append((x_domain, y_domain))
    if options.get("shared_xaxes") and rows > 1:
        for c in range(cols):
            bottom = axes[rows, c + 1]["xaxis"]
            for r in range(rows - 1, 0, -1):  # from the row above the bottom one up, as plotly goes
                axis = layout[f"xaxis{axes[r, c + 1]['xaxis'][1:]}"]
                axis.update(matches=bottom, showticklabels=False)
    if n_titles:
        layout["annotations"] = [
            {"font": {"size": 16}, "showarrow": False, "text": str(i), "x": sum(x_domain) / 2.0, "xanchor": "center", "xref": "paper",
             "y": y_domain[1], "yanchor": "bottom", "yref": "paper"}
            for i, (x_domain, y_domain) in enumerate(domains[:n_titles])
        ]  # fmt: skip
    return layout, axes


@lru_cache(maxsize=32)
def _grid(rows: int, cols: int, n_titles: int, options: tuple) -> tuple[dict, dict]:
    made = grid_layout(rows, cols, n_titles, {key: list(value) if isinstance(value, tuple) else value for key, value in options})
    if made is None:
        raise _refused(dict(options))
    return made


def _refused(options: dict) -> ValueError:
    return ValueError(f"subplots lays out {sorted(GRID_OPTIONS)} (shared_xaxes True or 'columns', a width and a height per cell), not {options}")


def subplots(rows: int, cols: int, titles=(), **options) -> tuple[dict, dict]:
    """What ``make_subplots(rows, cols, subplot_titles=titles, **options)`` lays out, as a layout dict,
    and ``{(row, col): {"xaxis": "x2", "yaxis": "y2"}}`` for the traces of each cell. ``ValueError`` for
    an option ``grid_layout`` does not cover.

    The grid is made once per shape and options; the titles are filled in on a copy."""
    if set(options) - GRID_OPTIONS:
        raise _refused(options)
    options = tuple(sorted((key, tuple(value) if isinstance(value, list) else value) for key, value in options.items()))
    layout, axes = _grid(rows, cols, len(titles), options)
    layout = deepcopy(layout)
    for annotation, text in zip(layout.get("annotations", []), titles):
        annotation["text"] = text
    return layout, {cell: dict(refs) for cell, refs in axes.items()}
