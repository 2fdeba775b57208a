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
