"""Figures written as plain plotly JSON and wrapped in a ``go.Figure`` without validating them again.

plotly's object model validates and copies every property it is given: ``update_layout(template=…)``
resolves and deep-copies the whole template, ``make_subplots`` builds a validated figure, every
``update_xaxes`` walks the validators again. Building the Attention page's figures that way took
0.3–0.5 s at 16 tokens (cProfile: ``update_layout`` 64 %, template ``__init__`` 36 %, validators), for a
model run of a millisecond. The figure modules instead write each figure as the JSON plotly's validators
would produce (traces as dicts with their ``type``, titles as ``{"text": …}``, colour scales resolved to
their colour lists, the template as its JSON) and hand it over in one call, with ``_validate=False``.

Once built, a figure behaves like any other: later edits (the print theme, click targets) are validated
as usual. ``tests/test_plain_figures.py`` validates every page's figures again and checks that nothing
sent to the browser changes.
"""

from __future__ import annotations

from copy import deepcopy
from functools import lru_cache

import plotly.graph_objects as go
import plotly.io as pio

from .theme import SCREEN_TEMPLATE


@lru_cache(maxsize=8)
def template_json(name: str = SCREEN_TEMPLATE) -> dict:
    """A registered template as plotly JSON, made once (``go.Figure`` copies it into each figure)."""
    return pio.templates[name].to_plotly_json()


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
    checks a property name or converts a value. The template is ``template`` unless ``layout`` has one."""
    layout = dict(layout)
    layout.setdefault("template", template_json(template))
    fig = go.Figure({"data": data, "layout": layout}, _validate=False)
    fig._validate = True  # later edits are checked as in any figure
    fig._layout_obj._validate = True
    for trace in fig.data:
        trace._validate = True
    return fig


def copy(fig: go.Figure) -> go.Figure:
    """A deep copy of ``fig`` that is not validated again (``go.Figure(fig)`` validates every property of
    the copy, the template included: about 10 ms a figure). For a figure to add to (click targets)."""
    return figure([trace.to_plotly_json() for trace in fig.data], fig.layout.to_plotly_json())


@lru_cache(maxsize=32)
def _grid(rows: int, cols: int, n_titles: int, options: tuple) -> tuple[dict, dict]:
    from plotly.subplots import make_subplots

    kwargs = {key: list(value) if isinstance(value, tuple) else value for key, value in options}
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
