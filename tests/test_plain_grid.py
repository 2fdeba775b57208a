"""viz.plain lays out subplot grids itself: exactly what plotly's make_subplots lays out, without its validation."""

import json

import pytest
from plotly.subplots import make_subplots

from viz import plain

CASES = [
    (1, 4, 4, dict(horizontal_spacing=0.03)),  # the stages of a head (viz/stages.py)
    (2, 1, 2, dict(shared_xaxes=True, vertical_spacing=0.1)),  # row statistics
    (1, 3, 3, dict(column_widths=[0.4, 0.3, 0.3], horizontal_spacing=0.08)),  # the value step (viz/values.py)
    (1, 2, 2, dict(horizontal_spacing=0.14)),  # viz/heads.py
    (1, 5, 5, dict(horizontal_spacing=0.04)),  # positional panels
    (1, 2, 2, {}),
    (3, 2, 6, dict(shared_xaxes=True)),
    (3, 2, 0, dict(shared_xaxes="columns")),
    (2, 3, 4, dict(row_heights=[0.7, 0.3], vertical_spacing=0.05)),
    (3, 1, 0, dict(row_heights=[1, 2, 3])),
    (1, 1, 1, {}),
]


def made_by_plotly(rows, cols, n_titles, options):
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[str(i) for i in range(n_titles)] or None, **options)
    layout = fig.to_plotly_json()["layout"]
    layout.pop("template", None)
    return layout, {(r, c): cell_axes(fig, r, c) for r in range(1, rows + 1) for c in range(1, cols + 1)}


def cell_axes(fig, row: int, col: int) -> dict:
    """The axes make_subplots gives a cell's traces ({"xaxis": "x2", "yaxis": "y2"}), from its public get_subplot."""
    subplot = fig.get_subplot(row, col)
    return {"xaxis": "x" + subplot.xaxis.plotly_name[5:], "yaxis": "y" + subplot.yaxis.plotly_name[5:]}


@pytest.mark.parametrize("rows, cols, n_titles, options", CASES)
def test_the_grid_is_the_one_make_subplots_lays_out(rows, cols, n_titles, options):
    layout, axes = plain.grid_layout(rows, cols, n_titles, options)
    expected_layout, expected_axes = made_by_plotly(rows, cols, n_titles, options)
    assert axes == expected_axes
    assert json.dumps(layout, sort_keys=True) == json.dumps(expected_layout, sort_keys=True)  # every number, to the last digit


@pytest.mark.parametrize("options", [dict(shared_yaxes=True), dict(shared_xaxes="rows"), dict(specs=[[{}, {}]]), dict(column_widths=[1.0])])
def test_an_option_it_does_not_cover_is_refused(options):
    assert plain.grid_layout(1, 2, 0, options) is None
    with pytest.raises(ValueError, match="subplots lays out"):
        plain.subplots(1, 2, **options)
