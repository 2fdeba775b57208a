"""Click targets on heatmaps and overview tiles, and reading a click back from a selection."""

import numpy as np

from model import load_model
from viz.clickable import CELL_TARGET, MAX_CELL_TARGETS, add_cell_targets, add_tile_targets, clicked_cell, clicked_tile
from viz.export import figure_to_csv
from viz.overview import heads_overview
from viz.content.attention import pattern_of_head


def test_every_cell_gets_a_target_and_a_click_reads_back_query_and_key():
    trace = load_model("toy").trace(["The cat sat on the mat."])
    fig = pattern_of_head(trace, 0, 0, 1)
    csv_before = figure_to_csv(fig)
    n = trace.input_ids.shape[1]
    assert add_cell_targets(fig, n, n)
    targets = fig.data[-1]
    assert targets.name == CELL_TARGET and len(targets.x) == n * n
    assert {(int(y), int(x)) for x, y in zip(targets.x, targets.y)} == {(q, k) for q in range(n) for k in range(n)}
    assert figure_to_csv(fig) == csv_before  # the targets are not data
    selection = {"points": [{"curve_number": len(fig.data) - 1, "point_index": 17, "x": 3.0, "y": 2.0}]}
    assert clicked_cell(selection, fig) == (2, 3)
    assert clicked_cell({"points": [{"curve_number": 0, "x": 3, "y": 2}]}, fig) is None  # the heatmap itself
    assert clicked_cell(None, fig) is None


def test_too_many_cells_are_left_unclickable():
    import plotly.graph_objects as go

    fig = go.Figure()
    side = int(np.sqrt(MAX_CELL_TARGETS)) + 1
    assert not add_cell_targets(fig, side, side) and len(fig.data) == 0


def test_overview_tiles_name_their_layer_and_head():
    patterns = np.random.default_rng(0).random((3, 5, 6, 6))
    fig = heads_overview(patterns, list("abcdef"), list("abcdef"))
    add_tile_targets(fig)
    targets = fig.data[-1]
    assert len(targets.x) == 15
    index = 2 * 5 + 4  # layer 2, head 4
    selection = {"points": [{"curve_number": len(fig.data) - 1, "point_index": index, "x": targets.x[index], "y": targets.y[index]}]}
    assert clicked_tile(selection, fig) == (2, 4)
    meta = fig.data[0].meta
    assert targets.x[index] == 4 * (meta["panel_cols"] + meta["gap"]) + (meta["panel_cols"] - 1) / 2
