"""Focus window, hidden sink tokens with renormalised rows, and the value step: data and layout."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

import viz
import viz.export


def causal_pattern(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    scores = np.where(np.tri(n, dtype=bool), rng.normal(size=(n, n)), -np.inf)  # [query_pos, key_pos]
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize(
    ("n", "centre", "width", "expected"), [(300, 150, 40, (130, 170)), (300, 3, 40, (0, 40)), (300, 299, 40, (260, 300)), (12, 5, 40, (0, 12))]
)
def test_focus_range_stays_inside_the_input(n, centre, width, expected):
    assert viz.focus_range(n, centre, width) == expected


def test_focus_window_is_full_resolution_beside_the_whole_input_and_keeps_the_chosen_label():
    n, centre = 300, 157
    pattern = causal_pattern(n)
    labels = [f"w{i}" for i in range(n)]
    fig = viz.focus_figure(pattern, labels, centre=centre, title="t", masked=~np.tri(n, dtype=bool), cells=dict(layer=0, head=1))
    overview, window = (t for t in fig["data"] if t["type"] == "heatmap")
    assert np.asarray(overview["z"]).shape == (64, 64)
    np.testing.assert_allclose(np.nan_to_num(window["z"]), pattern[137:177, 137:177], rtol=1e-6)  # every cell, no block means
    assert f"w{centre}" in fig["layout"]["xaxis2"]["ticktext"] and f"w{centre}" in fig["layout"]["yaxis2"]["ticktext"]
    assert (fig["layout"]["coloraxis"]["cmin"], fig["layout"]["coloraxis"]["cmax"]) == (0, 1)
    outline = fig["layout"]["shapes"][0]
    assert outline["x0"] < 137 * 64 / n < 177 * 64 / n < outline["x1"] + 1
    table = pd.read_csv(io.StringIO(viz.export.figure_to_csv(fig)))
    focus = table[table.stage == "pattern"]
    assert focus.query_position.min() == 137 and focus.query_position.max() == 176  # real positions, not window indices
    assert set(focus["head"]) == {1}
    printed = viz.apply_print_theme(fig)
    assert f"w{centre}" in printed["layout"]["xaxis2"]["ticktext"]  # the print theme thins labels but keeps the chosen one


def test_hiding_sink_tokens_renormalises_each_row_and_says_so():
    pattern = np.array([[1.0, 0.0, 0.0], [0.8, 0.2, 0.0], [0.5, 0.1, 0.4]])
    shown, kept = viz.renormalised_without(pattern, [0])
    assert kept == [1, 2]
    np.testing.assert_allclose(shown, [[0.0, 0.0], [1.0, 0.0], [0.2, 0.8]])  # the first row had only the sink: stays 0
    fig = viz.renormalised_figure(pattern, ["[CLS]", "bank", "river"], ["[CLS]", "bank", "river"], hidden=[0], title="head 3")
    assert "“[CLS]” hidden, each row renormalised" in fig["layout"]["title"]["text"] and "not the model's own weights" in fig["layout"]["title"]["text"]
    assert list(fig["layout"]["xaxis"]["ticktext"]) == ["bank", "river"]
    table = pd.read_csv(io.StringIO(viz.export.figure_to_csv(fig)))
    assert sorted(set(table.key_position)) == [1, 2] and set(table.stage) == {"pattern renormalised"}


def test_value_step_is_pattern_times_v_on_one_scale():
    rng = np.random.default_rng(1)
    pattern = causal_pattern(5)
    v = rng.normal(size=(5, 4))  # [key_pos, d_head]
    z = pattern @ v
    fig = viz.value_step_figure(pattern, v, z, list("abcde"), layer=0, head=2, title="t")
    weights, values, out = (t for t in fig["data"] if t["type"] == "heatmap")
    np.testing.assert_allclose(out["z"], np.asarray(weights["z"]) @ np.asarray(values["z"]), rtol=1e-5)
    assert values["coloraxis"] == out["coloraxis"] == "coloraxis"
    high = np.abs(np.concatenate([v.ravel(), z.ravel()])).max()
    assert fig["layout"]["coloraxis"]["cmax"] == pytest.approx(high, rel=1e-6) and fig["layout"]["coloraxis"]["cmin"] == pytest.approx(-high, rel=1e-6)
    with pytest.raises(ValueError, match="do not chain"):
        viz.value_step_figure(pattern, v, z[:, :3], list("abcde"), title="t")


def test_output_step_concatenates_the_heads_and_outlines_the_chosen_ones():
    rng = np.random.default_rng(2)
    z_heads = rng.normal(size=(3, 4, 2))  # [head, query_pos, d_head]
    w_o = rng.normal(size=(6, 5))  # [head · d_head, d_model]
    output = np.concatenate(list(z_heads), axis=1) @ w_o
    fig = viz.output_step_figure(z_heads, w_o, output, list("abcd"), heads=[1], layer=0, title="t")
    concatenated = np.asarray(fig["data"][0]["z"])
    np.testing.assert_allclose(concatenated[:, 2:4], z_heads[1], rtol=1e-6)  # head 1 is columns 2-3
    np.testing.assert_allclose(np.asarray(fig["data"][2]["z"]), concatenated @ w_o, rtol=1e-4, atol=1e-5)
    assert list(fig["layout"]["xaxis"]["ticktext"]) == ["H0", "H1", "H2"]
    assert [(s["x0"], s["x1"]) for s in fig["layout"]["shapes"] if s["xref"] == "x"] == [(1.5, 3.5)]


def test_side_by_side_panels_keep_their_width_on_a_phone_and_scroll_in_their_box():
    """Three panels in a phone's 358 px would overlap their labels: these charts keep 720 px (meta.min_width,
    read by ui/components/chart) and scroll sideways inside their box, as the stages do."""
    from viz.heads import value_norm_figure
    from viz.positional import input_composition_figure
    from viz.score_parts import part_maps_figure

    rng = np.random.default_rng(3)
    pattern, v = causal_pattern(4), rng.normal(size=(4, 2))
    figures = [
        viz.value_step_figure(pattern, v, pattern @ v, list("abcd"), title="t"),
        viz.output_step_figure(rng.normal(size=(2, 4, 2)), rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), list("abcd"), heads=[0], title="t"),
        value_norm_figure(pattern, pattern * 2, list("abcd"), title="t"),
        part_maps_figure([("token·token", pattern), ("token·position", pattern)], list("abcd"), list("abcd"), title="t"),
        input_composition_figure(rng.normal(size=(4, 8)), rng.normal(size=(4, 8)), list("abcd")),
    ]
    assert [fig["layout"]["meta"]["min_width"] for fig in figures] == [720] * 5
