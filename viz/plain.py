"""Figures written as plain plotly JSON and wrapped in a ``go.Figure`` without validating them again.

plotly's object model validates and copies every property it is given: ``update_layout(template=…)``
resolves and deep-copies the whole template, ``make_subplots`` builds a validated figure, every
``update_xaxes`` walks the validators again. Building the Attention page's figures that way took
0.3–0.5 s at 16 tokens (cProfile: ``update_layout`` 64 %, template ``__init__`` 36 %, validators), for a
model run of a millisecond. The figure modules instead write each figure as the JSON plotly's validators
would produce (traces as dicts with their ``type``, titles as ``{"text": …}``, colour scales resolved to
their colour lists, the template as its JSON) and hand it over in one call (``figure``), which neither
validates nor deep-copies it; ``plotly_dict`` turns a figure back into the JSON plotly.js takes without a
deep copy either.

Once built, a figure behaves like any other: later edits (the print theme, click targets) are validated
as usual. ``tests/test_plain_figures.py`` validates every page's figures again and checks that nothing
sent to the browser changes.
"""

from __future__ import annotations

import base64
from copy import deepcopy
from functools import lru_cache

import numpy as np
import orjson
import plotly.graph_objects as go
import plotly.io as pio
from _plotly_utils.basevalidators import is_homogeneous_array
from _plotly_utils.utils import to_typed_array_spec
from plotly.validator_cache import ValidatorCache

from .theme import SCREEN_TEMPLATE


_TEMPLATES: dict[str, dict] = {}  # name → plotly JSON, as made by template_json


def template_json(name: str = SCREEN_TEMPLATE) -> dict:
    """A registered template as plotly JSON, made once (each figure takes a copy of it)."""
    if name not in _TEMPLATES:
        _TEMPLATES[name] = pio.templates[name].to_plotly_json()
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
    from _plotly_utils.basevalidators import ColorscaleValidator

    return tuple(tuple(pair) for pair in ColorscaleValidator("colorscale", "heatmap").validate_coerce(name))


def colorscale(scale):
    """A colour scale as plotly stores it: a name ("Viridis", "RdBu_r") becomes its ``[[position, colour], …]``."""
    if isinstance(scale, str):
        return [list(pair) for pair in _colorscale(scale)]
    return scale


def title(text: str) -> dict:
    return {"text": text}


def figure(data: list[dict], layout: dict, *, template: str = SCREEN_TEMPLATE) -> go.Figure:
    """A ``go.Figure`` of trace dicts (each with its ``type``) and a layout dict, built without validation.

    The inputs must already be in plotly's canonical form (see the module's docstring): nothing here
    checks a property name or converts a value. The template is ``template`` unless ``layout`` has one.

    ``go.Figure(spec, _validate=False)`` still made an object for every property it was given and then
    deep-copied them all: 35 ms for the eight figures of the Attention page at 16 tokens, of a new view's
    ~120 ms of figure work. Here the figure takes a copy of the dicts and lists (``_owned``; arrays become
    read-only views, as plotly's validators make them read-only copies), and its traces and layout read
    them as a figure built by plotly does (each trace object's properties are its entry of
    ``fig._data``, made on first access): 9 ms for the same figures. ``tests/test_plain_figures.py``
    checks that every page's figures send what plotly's validated figures send."""
    owned = _owned(layout)
    if "template" not in owned:
        owned["template"] = _template_copy(template)
    return _assemble(_owned(list(data)), owned)


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


_TRACES = ValidatorCache.get_validator("", "data")


def _assemble(data: list[dict], layout: dict) -> go.Figure:
    """A figure over ``data`` and ``layout`` (plotly JSON the figure now owns), as plotly's own
    ``BaseFigure.__init__`` leaves one: a trace object per trace dict, bound to it by its index, and the
    layout object bound to the layout dict. An empty template first: the default one is not applied
    (and copied) only to be replaced."""
    fig = go.Figure(layout={"template": {}}, _validate=False)
    # made as plotly makes a figure's own trace objects (`_parent`: none of the eighty-odd properties set one
    # by one; five heatmaps and a scatter 0.50 → 0.39 ms a figure), then bound to their dicts by index
    traces = [_TRACES.get_trace_class(trace["type"])(_parent=fig) for trace in data]
    for index, trace in enumerate(traces):
        trace._trace_ind = index
    fig._data_objs, fig._data, fig._data_defaults = traces, data, [{} for _ in data]
    fig._layout = layout
    layout_obj = fig._layout_obj
    for name in layout:  # xaxis2, coloraxis3…: names the layout object knows only once told, as plotly's own init tells it
        match = layout_obj._subplot_re_match(name)
        if match:
            if int(match.group(2)) < 2:
                raise ValueError(f"{name}: plotly renames a subplot numbered {match.group(2)}; write {match.group(1)} or a number from 2")
            layout_obj._valid_props.add(name)
            layout_obj._subplotid_props.add(name)
            layout_obj[name]  # its object, bound to layout[name] (the layout's attribute access needs it made)
    fig._validate = True  # later edits are checked as in any figure
    layout_obj._validate = True
    return fig


def plotly_dict(fig: go.Figure) -> dict:
    """``fig.to_dict()``, the figure as plotly.js takes it (numeric arrays as typed base64), without
    plotly's deep copy of the whole figure first: new dicts and lists, the rest shared with the figure.
    plotly's copy, and its walk through each figure's template (6.5 KB of JSON, the same in every
    figure), took 37 ms for the Attention page's eight figures at 16 tokens; this takes a few."""
    return {"data": [plotly_dict_of(trace) for trace in fig._data], "layout": plotly_dict_of(fig._layout)}


def plotly_dict_of(part: dict) -> dict:
    """A trace's or the layout's JSON (a figure's ``fig._data[i]`` or ``fig._layout``) as ``plotly_dict``
    writes it: new dicts and lists, numeric arrays as typed base64."""
    return _typed_arrays(part)


def _typed_arrays(value):
    """What plotly's ``convert_to_base64`` makes of a copy of ``value``: a dict's value that is an array
    (a numpy array, a pandas series…) becomes plotly.js's typed array spec, except under the keys plotly
    skips; a template is left as it is when it is one of ours (no arrays in it)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if item is None or isinstance(item, _SCALARS) or key in _SKIPPED or (key == "template" and _known_template(item)):
                out[key] = item
            elif (dtype := _typed_dtype(item)) is not None:
                out[key] = _typed(item, dtype)
            elif is_homogeneous_array(item):
                out[key] = to_typed_array_spec(item)
            else:
                out[key] = _typed_arrays(item)
        return out
    if isinstance(value, (list, tuple)):  # an array in a list is not converted (nor by plotly)
        return [_typed_arrays(item) if isinstance(item, (dict, list, tuple)) else item for item in value]
    return value


_SCALARS = (str, int, float)
_SKIPPED = frozenset({"geojson", "layer", "layers", "range"})  # plotly's is_skipped_key
# numpy dtypes that plotly.js takes as they are; int64 and uint64 are narrowed to the smallest that holds them
_TYPED = {"int8": "i1", "uint8": "u1", "int16": "i2", "uint16": "u2", "int32": "i4", "uint32": "u4", "float32": "f4", "float64": "f8"}
_NARROWED = {"int64": (np.int8, np.int16, np.int32), "uint64": (np.uint8, np.uint16, np.uint32)}


def _typed_dtype(array) -> np.dtype | None:
    """The dtype plotly sends a numpy ``array`` as (typed base64), or None where plotly leaves it to its
    JSON encoder (strings, objects, booleans, a 64-bit integer beyond 32 bits) or it is no numpy array or
    an empty one (plotly's own function then decides)."""
    if not isinstance(array, np.ndarray) or not array.size:
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
    """plotly's ``to_typed_array_spec`` for an array it sends as typed base64 (as ``dtype``), without its
    copy of the array and its check of what kind of data frame it might be (most of its time)."""
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
    kwargs = {key: list(value) if isinstance(value, tuple) else value for key, value in options}
    made = grid_layout(rows, cols, n_titles, kwargs)
    if made is not None:
        return made
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[str(i) for i in range(n_titles)] or None, **kwargs)
    layout = fig.to_plotly_json()["layout"]
    layout.pop("template", None)
    axes = {(r + 1, c + 1): dict(fig._grid_ref[r][c][0].trace_kwargs) for r in range(rows) for c in range(cols)}
    return layout, axes


def subplots(rows: int, cols: int, titles=(), **options) -> tuple[dict, dict]:
    """What ``make_subplots(rows, cols, subplot_titles=titles, **options)`` lays out, as a layout dict,
    and ``{(row, col): {"xaxis": "x2", "yaxis": "y2"}}`` for the traces of each cell.

    The grid is made once per shape and options; the titles are filled in on a copy."""
    options = tuple(sorted((key, tuple(value) if isinstance(value, list) else value) for key, value in options.items()))
    layout, axes = _grid(rows, cols, len(titles), options)
    layout = deepcopy(layout)
    for annotation, text in zip(layout.get("annotations", []), titles):
        annotation["text"] = text
    return layout, {cell: dict(refs) for cell, refs in axes.items()}
