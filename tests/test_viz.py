"""Figure content of the ``viz`` package: data, labels, axes, colours."""

from __future__ import annotations

import ast
import json
import math
import pathlib
import unicodedata

import base64
import re

import numpy as np
import plotly.colors as pc
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import viz
import viz.export
from viz import plain
from viz.heatmap import block_edges
from viz.overview import overview_panel
from viz.theme import MASK_COLOR, MASK_MARK_COLOR
from viz._common import is_decoration

TOKENS = ["The", "<script>alert(1)</script>", "cat", " the", "\u200b", "The"]
SAFE = ["The", "&lt;script&gt;alert(1)&lt;/script&gt;", "cat", " the", "\\u200b", "The"]
TICKS = ["The", "&lt;script&gt;aler…", "cat", " the", "\\u200b", "The"]  # tick text is cut to 12 characters


def causal_mask(n: int) -> np.ndarray:
    return np.triu(np.ones((n, n), dtype=bool), k=1)  # [query_pos, key_pos]


def softmax_rows(scores: np.ndarray) -> np.ndarray:
    shifted = scores - scores.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)


def scale_of(name: str):
    return tuple(tuple(pair) for pair in pc.get_colorscale(name))


def as_tuple(colorscale):
    return tuple((round(float(p), 6), c) for p, c in colorscale)


def sent_json(fig: dict) -> str:
    """The figure as the browser receives it: JSON with numeric arrays as plotly.js typed arrays."""
    return pio.to_json(plain.plotly_dict(fig), validate=False)


def heatmaps(fig: dict) -> list:
    """The data heatmaps (not the transparent one over masked cells, a decoration)."""
    return [t for t in fig["data"] if t["type"] == "heatmap" and not is_decoration(t)]


def stages(n: int = 6, seed: int = 0) -> tuple[dict, np.ndarray]:
    rng = np.random.default_rng(seed)
    raw = rng.normal(size=(n, n)) * 3  # [query_pos, key_pos]
    scaled = raw / 2.0
    mask = causal_mask(n)
    masked_scores = np.where(mask, -np.inf, scaled)
    pattern = softmax_rows(masked_scores)
    return dict(scores_raw=raw, scores_scaled=scaled, scores_masked=masked_scores, pattern=pattern), mask


# --- labels ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ("<img src=x onerror=alert(1)>", "&lt;img␣src=x␣onerror=alert(1)&gt;"),
        ("a&b", "a&amp;b"),
        ("<b>bold</b>", "&lt;b&gt;bold&lt;/b&gt;"),
        ("\u200b", "\\u200b"),
        ("x\u200dy", "x\\u200dy"),
        ("\ufeff", "\\ufeff"),
        ("\x00", "\\x00"),
        ("\x1b[31m", "\\x1b[31m"),
        ("line\nbreak", "line\\nbreak"),
        ("\t", "\\t"),
        ("\u00a0", "\\xa0"),
        ("\u2028", "\\u2028"),
        (" ", "␣"),
        (" the", "␣the"),
        ("", "∅"),
        ("naïve 日本", "naïve␣日本"),
    ],
)
def test_safe_label_escapes(text, expected):
    assert viz.safe_label(text, visible_spaces=True) == expected  # as on the Tokens page


def test_safe_label_options():
    assert viz.safe_label("a b") == "a b"
    assert viz.safe_label(" the") == " the"
    assert viz.safe_label("   ") == "(3 spaces)"
    assert viz.safe_label(" ") == "(space)"
    assert viz.safe_label("abcdefgh", max_chars=3) == "abc…"
    assert viz.safe_label("<<<<", max_chars=2) == "&lt;&lt;…"


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_safe_label_never_leaks_markup_or_invisible_characters(text):
    assert "␣" not in viz.safe_label(text) or "␣" in text  # the symbol only on the Tokens page
    label = viz.safe_label(text, visible_spaces=True)
    assert label
    assert "<" not in label and ">" not in label
    assert "&" not in label.replace("&amp;", "").replace("&lt;", "").replace("&gt;", "")
    assert " " not in label
    for ch in label:
        assert unicodedata.category(ch) not in {"Cc", "Cf", "Cs", "Zl", "Zp", "Zs"}, repr(ch)


def test_position_labels_keep_duplicates_and_order():
    assert viz.position_labels(TOKENS) == SAFE


def test_tick_axis_thins_long_axes():
    ticks = viz.tick_axis([str(i) for i in range(512)], max_ticks=64)
    assert ticks["tickvals"] == list(range(0, 512, 8))
    assert ticks["ticktext"] == [str(i) for i in range(0, 512, 8)]
    short = viz.tick_axis(["a", "b", "a"])
    assert short == dict(tickmode="array", tickvals=[0, 1, 2], ticktext=["a", "b", "a"])


@pytest.mark.parametrize("keep", [0, 1, 7, 255, 300, 511])
def test_tick_thinning_never_hides_the_chosen_token(keep):
    ticks = viz.tick_axis([f"t{i}" for i in range(512)], max_ticks=40, keep=keep)
    positions = ticks["tickvals"]
    assert keep in positions and f"t{keep}" in ticks["ticktext"]
    assert len(positions) <= 41
    assert min(b - a for a, b in zip(positions, positions[1:])) >= 13  # ceil(512 / 40): no crowding near it


def test_tick_text_is_cut_without_breaking_escapes():
    ticks = viz.tick_axis(["&lt;" * 20, "internationalisation"])
    assert ticks["ticktext"] == ["&lt;" * 12 + "…", "internationa…"]


# --- attention_heatmap -------------------------------------------------------


def test_attention_heatmap_values_labels_and_axes():
    n = len(TOKENS)
    matrix = np.random.default_rng(1).random((n, n))  # [query_pos, key_pos]
    fig = viz.attention_heatmap(matrix, TOKENS, TOKENS, title="Head 0.3", colorbar_title="weight")
    (heat,) = heatmaps(fig)
    assert heat["z"].dtype == np.float32
    np.testing.assert_allclose(heat["z"], matrix, rtol=1e-6)
    np.testing.assert_array_equal(heat["x"], np.arange(n))
    np.testing.assert_array_equal(heat["y"], np.arange(n))
    assert list(fig["layout"]["xaxis"]["tickvals"]) == list(range(n))
    assert list(fig["layout"]["xaxis"]["ticktext"]) == TICKS
    assert list(fig["layout"]["yaxis"]["ticktext"]) == TICKS
    assert heat["meta"]["x_labels"] == SAFE and heat["meta"]["y_labels"] == SAFE
    assert fig["layout"]["xaxis"]["title"]["text"] == "key (attended to)"
    assert fig["layout"]["yaxis"]["title"]["text"] == "query (attending)"
    assert fig["layout"]["yaxis"]["range"][0] > fig["layout"]["yaxis"]["range"][1], "query 0 must be on top"
    assert fig["layout"]["title"]["text"] == "Head 0.3"
    assert heat["colorbar"]["title"]["text"] == "weight"
    assert as_tuple(heat["colorscale"]) == as_tuple(scale_of(viz.SEQUENTIAL))
    assert heat["text"][1][5] == "query 1: &lt;script&gt;alert(1)&lt;/script&gt;<br>key 5: The"
    assert "%{z" in heat["hovertemplate"]


def test_attention_heatmap_sends_float32_to_the_browser():
    fig = viz.attention_heatmap(np.eye(3), list("abc"), list("abc"), title="t", colorbar_title="w")
    data = json.loads(sent_json(fig))["data"][0]
    assert data["z"]["dtype"] == "f4"


def test_attention_heatmap_masked_cells_are_gaps_with_marks():
    n = 5
    mask = causal_mask(n)
    scores = np.where(mask, -np.inf, np.arange(n * n, dtype=float).reshape(n, n))
    fig = viz.attention_heatmap(scores, list("abcde"), list("abcde"), title="t", colorbar_title="score", masked=mask, zmid=0)
    (heat,) = heatmaps(fig)
    assert np.isnan(heat["z"][mask]).all()
    assert not np.isinf(heat["z"]).any()
    np.testing.assert_allclose(heat["z"][~mask], scores[~mask])
    assert heat["hoverongaps"] is False
    assert fig["layout"]["plot_bgcolor"] == MASK_COLOR
    assert as_tuple(heat["colorscale"]) == as_tuple(scale_of(viz.DIVERGING))
    # over the masked cells: a transparent heatmap that answers hover and clicks there, and an SVG image
    # with a cross on each (one element for the browser to draw, where markers were styled one by one)
    (cells,) = [t for t in fig["data"] if t["type"] == "heatmap" and is_decoration(t)]
    assert (~np.isnan(np.asarray(cells["z"])) == mask).all() and cells["showscale"] is False and cells["hoverongaps"] is False
    assert {colour for _, colour in cells["colorscale"]} == {"rgba(0,0,0,0)"} and "masked" in cells["hovertemplate"]
    (image,) = fig["layout"]["images"]
    assert (image["xref"], image["yref"], image["x"], image["y"], image["sizex"], image["sizey"], image["sizing"]) == (
        "x domain",
        "y domain",
        0,
        1,
        1,
        1,
        "stretch",
    )
    svg = base64.b64decode(image["source"].split(",", 1)[1]).decode()
    assert 'viewBox="0 0 5 5"' in svg and MASK_MARK_COLOR in svg
    strokes = re.findall(r"M([\d.]+) ([\d.]+)L([\d.]+) ([\d.]+)", svg)
    assert len(strokes) == 2 * int(mask.sum())
    centres = {(round((float(y0) + float(y1)) / 2 - 0.5), round((float(x0) + float(x1)) / 2 - 0.5)) for x0, y0, x1, y1 in strokes}
    assert centres == set(zip(*np.nonzero(mask)))  # a cross centred on every masked cell (query, key), no other
    assert all(abs(float(x1) - float(x0)) < 0.6 for x0, _, x1, _ in strokes)  # inside its cell


def test_attention_heatmap_non_finite_values_become_gaps_even_without_mask():
    matrix = np.array([[0.5, -np.inf], [np.inf, np.nan]])
    fig = viz.attention_heatmap(matrix, ["a", "b"], ["a", "b"], title="t", colorbar_title="w")
    z = heatmaps(fig)[0]["z"]
    assert z[0, 0] == 0.5 and np.isnan(z[0, 1]) and np.isnan(z[1, 0]) and np.isnan(z[1, 1])


def test_attention_heatmap_large_matrix_has_no_marks_and_no_per_cell_text():
    n = 200
    mask = causal_mask(n)
    fig = viz.attention_heatmap(np.zeros((n, n)), ["t"] * n, ["t"] * n, title="t", colorbar_title="w", masked=mask)
    assert [t["type"] for t in fig["data"]] == ["heatmap"]
    assert fig["data"][0].get("text") is None
    assert len(fig["layout"]["xaxis"]["tickvals"]) <= 60
    assert len(sent_json(fig)) < 400_000


def test_attention_heatmap_rejects_wrong_label_count():
    with pytest.raises(ValueError, match="labels"):
        viz.attention_heatmap(np.eye(3), ["a", "b"], ["a", "b", "c"], title="t", colorbar_title="w")


# --- stages_figure -----------------------------------------------------------


def test_stages_figure_panels():
    data, mask = stages()
    fig = viz.stages_figure(data, TOKENS, TOKENS, masked=mask, title="Scores to pattern", layer=1, head=3)
    panels = heatmaps(fig)
    assert [a["text"].split("<br>")[0] for a in fig["layout"]["annotations"]] == ["raw Q·Kᵀ", "÷ √d_k", "masked", "softmax"]
    assert fig["layout"]["title"]["text"] == "Scores to pattern"
    assert len(panels) == 4

    raw, scaled, masked_panel, pattern = panels
    np.testing.assert_allclose(raw["z"], data["scores_raw"], rtol=1e-6)
    np.testing.assert_allclose(scaled["z"], data["scores_scaled"], rtol=1e-6)
    assert not np.isnan(raw["z"]).any() and not np.isnan(scaled["z"]).any()
    for panel in (masked_panel, pattern):
        assert np.isnan(panel["z"][mask]).all()
        assert not np.isinf(panel["z"]).any()
    np.testing.assert_allclose(pattern["z"][~mask], data["pattern"][~mask], rtol=1e-6)
    assert [p["coloraxis"] for p in panels] == ["coloraxis", "coloraxis", "coloraxis", "coloraxis2"]
    assert (fig["layout"]["coloraxis2"]["cmin"], fig["layout"]["coloraxis2"]["cmax"]) == (0.0, 1.0)
    assert fig["layout"]["coloraxis"]["colorbar"]["title"]["text"] == "score" and fig["layout"]["coloraxis2"]["colorbar"]["title"]["text"] == "weight"
    assert as_tuple(fig["layout"]["coloraxis2"]["colorscale"]) == as_tuple(scale_of(viz.SEQUENTIAL))
    assert as_tuple(fig["layout"]["coloraxis"]["colorscale"]) == as_tuple(scale_of(viz.DIVERGING))
    assert [(p["meta"]["stage"], p["meta"]["layer"], p["meta"]["head"]) for p in panels] == [
        (stage, 1, 3) for stage in ("scores_raw", "scores_scaled", "scores_masked", "pattern")
    ]
    marks = [t for t in fig["data"] if is_decoration(t)]  # the masked cells of the masked and softmax panels
    assert sorted(m["xaxis"] for m in marks) == ["x3", "x4"] and sorted(image["xref"] for image in fig["layout"]["images"]) == ["x3 domain", "x4 domain"]
    assert list(fig["layout"]["xaxis2"]["ticktext"]) == TICKS


def test_stages_colorbars_sit_in_the_gaps_after_the_scores_and_after_the_pattern():
    data, mask = stages()
    fig = viz.stages_figure(data, TOKENS, TOKENS, masked=mask, title="t")
    domains = [fig["layout"][f"xaxis{s}"]["domain"] for s in ("", "2", "3", "4")]
    scores, weights = fig["layout"]["coloraxis"]["colorbar"]["x"], fig["layout"]["coloraxis2"]["colorbar"]["x"]
    assert domains[2][1] < scores < domains[3][0]
    assert weights > domains[3][1]


def test_stages_raw_and_scaled_share_one_scale_with_each_spread_written_on_it():
    data, mask = stages()
    fig = viz.stages_figure(data, TOKENS, TOKENS, masked=mask, title="t")
    high = np.abs(data["scores_raw"]).max()
    assert fig["layout"]["coloraxis"]["cmin"] == pytest.approx(-high) and fig["layout"]["coloraxis"]["cmax"] == pytest.approx(high)
    assert fig["layout"]["coloraxis"]["cmid"] == 0
    raw, scaled = fig["layout"]["annotations"][0]["text"], fig["layout"]["annotations"][1]["text"]
    low_raw, high_raw = data["scores_raw"].min(), data["scores_raw"].max()
    assert raw.endswith(f"<sup>{low_raw:.3g} to {high_raw:.3g}</sup>".replace("-", "−"))
    assert scaled.endswith(f"<sup>{low_raw / 2:.3g} to {high_raw / 2:.3g}</sup>".replace("-", "−"))
    assert fig["layout"]["annotations"][3]["text"].endswith(f"largest weight {np.nanmax(data['pattern']):.2f}</sup>")


def test_stage_titles_follow_the_state():
    on = viz.stage_titles(divisor=8.0, d_head=64, mask_name="causal")
    assert on["scores_scaled"] == "÷ √d_k = ÷ √64 = ÷ 8" and on["scores_masked"] == "masked: causal"
    assert on["pattern"] == "softmax"
    off = viz.stage_titles(divisor=1.0, d_head=64, temperature=2.0, mask_name="none", hidden=("[CLS]",))
    assert off["scores_scaled"] == "no scaling (÷ 1)"
    assert off["scores_masked"] == "masked: 1 hidden"
    assert off["pattern"] == "softmax(· ÷ T), T = 2"
    both = viz.stage_titles(divisor=4.0, d_head=16, mask_name="causal+padding", hidden=("the", "cat"))
    assert both["scores_masked"] == "masked: causal+padding<br><sup>+ 2 hidden</sup>"  # the count under the title: one short line
    data, mask = stages()
    fig = viz.stages_figure(data, TOKENS, TOKENS, masked=mask, title="t", titles=off)
    assert fig["layout"]["annotations"][1]["text"].startswith("no scaling (÷ 1)<br>")
    fig = viz.stages_figure(data, TOKENS, TOKENS, masked=mask, title="t", titles=both)
    assert (
        fig["layout"]["annotations"][2]["text"].startswith("masked: causal+padding<br><sup>+ 2 hidden · ")
        and fig["layout"]["annotations"][2]["text"].count("<sup>") == 1
    )


def test_pattern_colour_to_the_figures_own_maximum():
    data, mask = stages()
    data["pattern"] = data["pattern"] * 0.3
    fig = viz.stages_figure(data, TOKENS, TOKENS, masked=mask, title="t", pattern_colour="own")
    top = np.nanmax(np.where(mask, np.nan, data["pattern"]))
    assert fig["layout"]["coloraxis2"]["cmax"] == pytest.approx(top, rel=1e-6) and fig["layout"]["coloraxis2"]["cmin"] == 0
    assert fig["layout"]["coloraxis2"]["colorbar"]["title"]["text"] == f"weight (0 to max {top:.2g})"
    with pytest.raises(ValueError, match="pattern colour"):
        viz.stages_figure(data, TOKENS, TOKENS, masked=mask, title="t", pattern_colour="loud")


def test_stages_figure_requires_all_stages():
    data, mask = stages()
    del data["scores_scaled"]
    with pytest.raises(KeyError, match="scores_scaled"):
        viz.stages_figure(data, TOKENS, TOKENS, masked=mask, title="t")


# --- row statistics ----------------------------------------------------------


def test_row_entropy_known_values():
    n = 8
    uniform = np.full((3, n), 1.0 / n)
    np.testing.assert_allclose(viz.row_entropy(uniform), [math.log2(n)] * 3)
    assert viz.row_entropy(np.eye(4)).tolist() == [0.0] * 4
    assert viz.row_entropy(np.zeros((2, 5))).tolist() == [0.0, 0.0]
    assert viz.row_entropy(np.array([0.5, 0.5, np.nan])) == pytest.approx(1.0)
    assert viz.row_entropy(np.full((2, 3, 4), 0.25)).shape == (2, 3)


def test_row_stats_figure_values():
    data, mask = stages()
    scaled = data["pattern"]
    unscaled = softmax_rows(np.where(mask, -np.inf, data["scores_raw"]))
    fig = viz.row_stats_figure(scaled, unscaled, TOKENS, masked=mask)
    bars = [t for t in fig["data"] if t["type"] == "bar"]
    assert [b["name"] for b in bars] == ["scaled (÷ √d_k)", "scaled (÷ √d_k)", "unscaled", "unscaled"]
    np.testing.assert_allclose(bars[0]["y"], viz.row_entropy(scaled), rtol=1e-5)
    np.testing.assert_allclose(bars[1]["y"], scaled.max(axis=-1), rtol=1e-5)
    np.testing.assert_allclose(bars[2]["y"], viz.row_entropy(unscaled), rtol=1e-5)
    uniform = [t for t in fig["data"] if t["type"] == "scatter"]
    np.testing.assert_allclose(uniform[0]["y"], np.log2(np.arange(1, 7)), rtol=1e-6)
    assert list(fig["layout"]["xaxis2"]["ticktext"]) == TICKS
    assert fig["layout"]["yaxis"]["title"]["text"] == "entropy (bits)"


# --- downsample and heads_overview -------------------------------------------


def test_downsample_block_means():
    matrix = np.arange(16, dtype=float).reshape(4, 4)
    np.testing.assert_allclose(viz.downsample(matrix, 2), [[2.5, 4.5], [10.5, 12.5]])
    np.testing.assert_array_equal(viz.downsample(matrix, 4), matrix)
    np.testing.assert_array_equal(viz.downsample(matrix, 10), matrix)


def test_downsample_non_divisible_sizes():
    matrix = np.arange(25, dtype=float).reshape(5, 5)
    # blocks along each axis: rows/cols 0-1 and 2-4
    expected = [
        [matrix[:2, :2].mean(), matrix[:2, 2:].mean()],
        [matrix[2:, :2].mean(), matrix[2:, 2:].mean()],
    ]
    np.testing.assert_allclose(viz.downsample(matrix, 2), expected)
    assert viz.downsample(np.ones((512, 100)), 48).shape == (48, 48)
    assert viz.downsample(np.ones((30, 100)), 48).shape == (30, 48)


def test_downsample_without_gaps_gives_the_block_means_a_gap_would_leave_alone():
    # a matrix with no NaN takes a shorter path (each block's count is its size): the same means
    rng = np.random.default_rng(3)
    stack = rng.normal(size=(2, 37, 53))
    with_gap = stack.copy()
    with_gap[0, 36, 52] = np.nan  # one gap, in the last block of the first head only
    rows, cols = block_edges(37, 5), block_edges(53, 5)
    expected = [[[stack[h, rows[i] : rows[i + 1], cols[j] : cols[j + 1]].mean() for j in range(5)] for i in range(5)] for h in range(2)]
    np.testing.assert_allclose(viz.downsample(stack, 5), expected, rtol=1e-12)
    np.testing.assert_allclose(viz.downsample(with_gap, 5)[1], expected[1], rtol=1e-12)
    np.testing.assert_allclose(viz.downsample(with_gap, 5)[0, :4], np.asarray(expected)[0, :4], rtol=1e-12)


def test_downsample_ignores_nan():
    matrix = np.array([[1.0, np.nan, 5.0, 7.0], [3.0, np.nan, np.nan, np.nan]])
    out = viz.downsample(matrix, 2)  # 2 rows stay; columns 0-1 and 2-3 are averaged
    np.testing.assert_allclose(out, [[1.0, 6.0], [3.0, np.nan]])
    square = np.full((4, 4), np.nan)
    square[0, 0] = 2.0
    np.testing.assert_allclose(viz.downsample(square, 2), [[2.0, np.nan], [np.nan, np.nan]])


def test_downsample_works_on_leading_axes():
    stack = np.arange(32, dtype=float).reshape(2, 4, 4)  # [head, query_pos, key_pos]
    out = viz.downsample(stack, 2)
    assert out.shape == (2, 2, 2)
    np.testing.assert_allclose(out[1], viz.downsample(stack[1], 2))


def test_downsample_with_a_mask_gives_what_nan_cells_give_bit_for_bit():
    rng = np.random.default_rng(4)
    stack = rng.random((3, 70, 70), dtype=np.float32)  # [head, query, key]
    causal = np.triu(np.ones((70, 70), dtype=bool), 1)
    as_nan = np.where(causal, np.nan, stack)
    fast = viz.downsample(stack, 8, masked=causal)
    np.testing.assert_array_equal(fast, viz.downsample(as_nan, 8))  # the same sums, in the same order
    assert np.isnan(fast[:, 0, 7]).all() and not np.isnan(fast[:, 7, 0]).any()  # a block wholly masked is a gap
    own_gap = stack.copy()
    own_gap[1, 69, 0] = np.nan  # a NaN of the matrix's own is left out too
    np.testing.assert_array_equal(viz.downsample(own_gap, 8, masked=causal), viz.downsample(np.where(causal, np.nan, own_gap), 8))
    with pytest.raises(ValueError, match="masked has shape"):
        viz.downsample(stack, 8, masked=causal[:5])


def test_block_weights_keep_one_key_that_takes_the_weight_as_bright_as_it_is():
    n = 512
    causal = np.triu(np.ones((n, n), dtype=bool), 1)
    sink = np.where(causal, 0.0, 0.1 / np.arange(1, n + 1)[:, None])  # 0.1 spread over each row's keys …
    sink[:, 0] += 0.9  # … and 0.9 on the first token
    previous = np.eye(n, k=-1)  # every query on the token before it
    previous[0, 0] = 1.0
    for pattern in (sink, previous):
        np.testing.assert_allclose(pattern.sum(axis=1), 1.0)
    blocks = viz.block_weights(np.stack([sink, previous]), 32, masked=causal)  # [head, 32, 32]: 16 × 16 tokens a block
    assert blocks.shape == (2, 32, 32)
    np.testing.assert_allclose(np.nansum(blocks, axis=-1), 1.0)  # a row of blocks still sums to 1
    assert blocks[0, 5:, 0].min() > 0.9  # the first token keeps its weight; a block mean made it 0.06
    assert viz.downsample(np.where(causal, np.nan, sink), 32)[5:, 0].max() < 0.07
    assert np.isnan(blocks[:, 0, 1]).all()  # a block of keys no query of the block may see: a gap
    np.testing.assert_allclose(np.diagonal(blocks[1]), [1.0] + [15 / 16] * 31)  # but for a block's first query, each looks inside its block
    np.testing.assert_allclose(blocks[1, 1, 0], 1 / 16)  # the first of the second block looks back into the first
    rng = np.random.default_rng(6)
    small = rng.random((5, 7))  # blocks of unequal sizes
    rows, cols = block_edges(5, 3), block_edges(7, 3)
    expected = [[small[rows[i] : rows[i + 1], cols[j] : cols[j + 1]].sum(axis=1).mean() for j in range(3)] for i in range(3)]
    np.testing.assert_allclose(viz.block_weights(small, 3), expected, rtol=1e-12)


def test_heads_overview_reads_a_sequence_of_layers_once_each():
    rng = np.random.default_rng(5)
    patterns = rng.dirichlet(np.ones(60), size=(3, 2, 60)).astype(np.float32)  # [layer, head, query, key]
    causal = np.triu(np.ones((60, 60), dtype=bool), 1)
    reads = []

    class Layers:  # computes a layer when asked, as the Attention page's overview does
        def __len__(self):
            return len(patterns)

        def __getitem__(self, layer):
            reads.append(layer)
            return patterns[layer].copy()

    from_array = viz.heads_overview(patterns, ["t"] * 60, ["t"] * 60, masked=causal, max_cells=16)
    lazily = viz.heads_overview(Layers(), ["t"] * 60, ["t"] * 60, masked=causal, max_cells=16)
    assert reads == [0, 1, 2]
    np.testing.assert_array_equal(np.asarray(lazily["data"][0]["z"]), np.asarray(from_array["data"][0]["z"]))
    expected = viz.block_weights(patterns[2, 1], 16, masked=causal)
    np.testing.assert_allclose(overview_panel(lazily, 2, 1), expected, rtol=1e-6)
    short = [patterns[0], patterns[1][:, :50, :50]]
    with pytest.raises(ValueError, match="layer 1 of patterns has shape"):
        viz.heads_overview(short, ["t"] * 60, ["t"] * 60)
    with pytest.raises(ValueError, match="4 dimensions"):
        viz.heads_overview(patterns[0], ["t"] * 60, ["t"] * 60)


def test_heads_overview_small():
    rng = np.random.default_rng(2)
    patterns = rng.dirichlet(np.ones(5), size=(2, 3, 5))  # [layer, head, query_pos, key_pos]
    labels = ["a", "b", "<c>", "a", "d"]
    fig = viz.heads_overview(patterns, labels, labels, layer_names=["embed", "final"])
    assert len(heatmaps(fig)) == 1  # one tiled trace: fast to build and to draw
    for layer in range(2):
        for head in range(3):
            np.testing.assert_allclose(overview_panel(fig, layer, head), patterns[layer, head], rtol=1e-6)
    assert list(fig["layout"]["xaxis"]["ticktext"]) == ["H0", "H1", "H2"]
    assert list(fig["layout"]["yaxis"]["ticktext"]) == ["embed", "final"]
    assert (fig["layout"]["coloraxis"]["cmin"], fig["layout"]["coloraxis"]["cmax"]) == (0.0, 1.0)
    z = np.asarray(heatmaps(fig)[0]["z"])
    gap = fig["layout"]["meta"]["gap"]
    assert np.isnan(z[:, 5 : 5 + gap]).all()  # a gap between the panels of head 0 and head 1


def test_heads_overview_masked_and_downsampled():
    n = 100
    mask = causal_mask(n)
    patterns = np.tile(softmax_rows(np.where(mask, -np.inf, 0.0)), (1, 2, 1, 1))  # [1, 2, n, n]
    fig = viz.heads_overview(patterns, ["t"] * n, ["t"] * n, masked=mask, max_cells=10)
    z = overview_panel(fig, 0, 1)
    assert z.shape == (10, 10)
    assert np.isnan(z[0, 9]) and not np.isnan(z[9, 0])
    np.testing.assert_allclose(z, viz.block_weights(np.where(mask, np.nan, patterns[0, 1]), 10), rtol=1e-5)
    np.testing.assert_allclose(np.nansum(z, axis=1), 1.0, rtol=1e-5)  # blocks of a row still share one unit of weight
    assert "weight to these keys" in heatmaps(fig)[0]["hovertemplate"]


def test_heads_overview_json_stays_small_for_distilbert_size_at_512_tokens():
    patterns = np.random.default_rng(3).random((6, 12, 512, 512), dtype=np.float32)
    labels = [f"tok{i}" for i in range(512)]
    fig = viz.heads_overview(patterns, labels, labels)
    payload = sent_json(fig)
    assert len(payload) < 2_000_000
    assert overview_panel(fig, 5, 11).shape == (32, 32)
    np.testing.assert_allclose(overview_panel(fig, 0, 0), viz.block_weights(patterns[0, 0], 32), rtol=1e-5)
    assert json.loads(payload)["data"][0]["z"]["dtype"] == "f4"


# --- positional --------------------------------------------------------------


def sinusoidal(n_positions: int = 32, d_model: int = 16) -> np.ndarray:
    position = np.arange(n_positions)[:, None]
    i = np.arange(d_model // 2)[None, :]
    angle = position / 10000 ** (2 * i / d_model)
    pe = np.zeros((n_positions, d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)
    return pe  # [n_positions, d_model]


def test_pe_heatmap():
    pe = sinusoidal()
    fig = viz.pe_heatmap(pe, title="PE")
    (heat,) = heatmaps(fig)
    np.testing.assert_allclose(heat["z"], pe, rtol=1e-6, atol=1e-7)
    assert (heat["zmin"], heat["zmax"]) == (-1.0, 1.0)
    assert as_tuple(heat["colorscale"]) == as_tuple(scale_of(viz.DIVERGING))
    assert fig["layout"]["xaxis"]["title"]["text"] == "dimension"
    assert fig["layout"]["yaxis"]["title"]["text"] == "position"
    assert fig["layout"]["title"]["text"] == "PE"


def test_pe_curves():
    pe = sinusoidal()
    fig = viz.pe_curves(pe, [0, 1, 6, 7])
    assert [t["name"] for t in fig["data"]] == ["dim 0 (sin)", "dim 1 (cos)", "dim 6 (sin)", "dim 7 (cos)"]
    np.testing.assert_allclose(fig["data"][2]["y"], pe[:, 6], rtol=1e-6, atol=1e-7)
    assert [t["name"] for t in viz.pe_curves(pe, [3], sinusoidal=False)["data"]] == ["dim 3"]
    with pytest.raises(ValueError):
        viz.pe_curves(pe, [16])


def test_position_similarity_heatmap():
    pe = sinusoidal()
    unit = pe / np.linalg.norm(pe, axis=1, keepdims=True)
    sim = unit @ unit.T
    fig = viz.position_similarity_heatmap(sim)
    (heat,) = heatmaps(fig)
    np.testing.assert_allclose(heat["z"], sim, rtol=1e-6, atol=1e-6)
    assert (heat["zmin"], heat["zmax"]) == (-1.0, 1.0)
    assert fig["layout"]["yaxis"]["autorange"] == "reversed"


def test_similarity_by_distance_two_series():
    d = np.arange(10)
    fig = viz.similarity_by_distance_figure(d, np.linspace(1, 0, 10), label="sinusoidal", series={"learned": (d, np.linspace(1, 0.5, 10))})
    assert [t["name"] for t in fig["data"]] == ["sinusoidal", "learned"]
    np.testing.assert_allclose(fig["data"][1]["y"], np.linspace(1, 0.5, 10), rtol=1e-6)
    assert fig["layout"]["yaxis"]["title"]["text"] == "mean cosine similarity"


def test_input_composition_figure():
    rng = np.random.default_rng(4)
    embedding = rng.normal(size=(len(TOKENS), 16))  # [seq, d_model]
    pe = sinusoidal(32, 16)
    fig = viz.input_composition_figure(embedding, pe, TOKENS)
    panels = heatmaps(fig)
    assert [a["text"] for a in fig["layout"]["annotations"]] == ["token embedding", "+ positional encoding", "= model input"]
    np.testing.assert_allclose(panels[0]["z"], embedding, rtol=1e-6)
    np.testing.assert_allclose(panels[1]["z"], pe[: len(TOKENS)], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(panels[2]["z"], embedding + pe[: len(TOKENS)], rtol=1e-5, atol=1e-6)
    axis = fig["layout"]["coloraxis"]
    largest = max(float(np.abs(p["z"]).max()) for p in panels)
    assert (axis["cmin"], axis["cmax"]) == (pytest.approx(-largest), pytest.approx(largest))
    assert all(p["coloraxis"] == "coloraxis" for p in panels)
    assert list(fig["layout"]["yaxis"]["ticktext"]) == TICKS


# --- embeddings --------------------------------------------------------------


def test_projection_figure_groups_contextual_points_by_sense():
    points = [
        dict(label="bank", group="static", sentence=None, sense=None, x=0.0, y=0.0),
        dict(label="bank (s1)", group="contextual", sentence=0, sense="river", x=1.0, y=1.0),
        dict(label="bank (s2)", group="contextual", sentence=1, sense="money", x=-1.0, y=1.5),
        dict(label="bank (s3)", group="contextual", sentence=2, sense="river", x=1.2, y=0.9),
        dict(label="<river> (s1)", group="reference", sentence=0, sense=None, x=2.0, y=0.5),
    ]
    arrows = [dict(x0=0, y0=0, x1=p["x"], y1=p["y"], label=p["label"]) for p in points if p["group"] == "contextual"]
    fig = viz.projection_figure(points, arrows, title="Static vs contextual", centroids={"river": (1.1, 0.95), "money": (-1.0, 1.5)})
    names = [t["name"] for t in fig["data"]]
    assert names == ["static (embedding table)", "in context · river", "in context · money", "reference words (in context)", "centre of each sense"]
    assert list(fig["data"][1]["text"]) == ["bank (s1)", "bank (s3)"]  # hover text: one series per sense
    assert fig["data"][1]["marker"]["color"] != fig["data"][2]["marker"]["color"] and fig["data"][1]["marker"]["symbol"] != fig["data"][2]["marker"]["symbol"]
    assert list(fig["data"][4]["x"]) == [1.1, -1.0]
    drawn = [a for a in fig["layout"]["annotations"] if a["arrowhead"] == 2]
    assert [(a["ax"], a["ay"], a["x"], a["y"]) for a in drawn] == [(0, 0, 1.0, 1.0), (0, 0, -1.0, 1.5), (0, 0, 1.2, 0.9)]
    assert all(a["axref"] == "x" and a["ayref"] == "y" for a in drawn)
    labels = sorted(a["text"] for a in fig["layout"]["annotations"] if a["arrowhead"] != 2)
    assert labels == sorted(["bank", "bank (s1)", "bank (s2)", "bank (s3)", "&lt;river&gt; (s1)", "centre: river", "centre: money"])
    assert fig["layout"]["xaxis"]["title"]["text"] == "PC 1" and fig["layout"]["yaxis"]["title"]["text"] == "PC 2"
    assert fig["layout"]["yaxis"]["scaleanchor"] == "x" and fig["layout"]["yaxis"]["scaleratio"] == 1


def _label_boxes(layout, font_size):
    """Each label's box in pixels within the plot area, as placed for `font_size`: the point's pixel
    position plus the annotation's offset; and the pixels per unit of each axis."""
    from viz.embeddings import label_box_size

    x0, x1 = layout["xaxis"]["range"]
    y0, y1 = layout["yaxis"]["range"]
    margin = layout["margin"]
    x_scale = (layout["width"] - margin["l"] - margin["r"]) / (x1 - x0)
    y_scale = (layout["height"] - margin["t"] - margin["b"]) / (y1 - y0)
    boxes = []
    for a in layout["annotations"]:
        if a["arrowhead"] == 2:
            continue
        w, h = label_box_size(a["text"].replace("&lt;", "<").replace("&gt;", ">"), font_size)
        cx, cy = (a["x"] - x0) * x_scale + a["ax"], (y1 - a["y"]) * x_scale + a["ay"]
        boxes.append((cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2))
    return boxes, x_scale, y_scale


def _patched(base, patch):
    """A layout patch laid over a layout as the chart component does (ui/components/chart/chart.js,
    `patched`): dicts key by key, lists item by item, other values replaced."""
    if isinstance(base, list) and isinstance(patch, list):
        return [_patched(item, patch[i]) if i < len(patch) else item for i, item in enumerate(base)]
    if not isinstance(base, dict) or not isinstance(patch, dict):
        return patch
    return {**base, **{key: _patched(base.get(key), value) for key, value in patch.items()}}


def _drawn_layouts(fig):
    """The figure's layout, then each of its narrower variants (layout.meta.narrower) as the browser draws
    it; each with the font its labels are placed for: the print theme's (its labels' font there), or the
    one a variant gives its labels."""
    from viz.embeddings import PLACEMENT_FONT

    layout = fig["layout"]
    drawn = [(layout, PLACEMENT_FONT)]
    for variant in layout["meta"]["narrower"]:
        fonts = {patch["font"]["size"] for patch in variant["annotations"] if "font" in patch}
        drawn.append((_patched(layout, variant), fonts.pop() if fonts else PLACEMENT_FONT))
    return drawn


def _assert_apart_and_off_markers(layout, font_size, points):
    """No two label boxes overlap and none covers a marker (a circle of MARKER_RADIUS around its point)."""
    from viz.embeddings import MARKER_RADIUS

    boxes, scale, _ = _label_boxes(layout, font_size)
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (layout["width"], a, b)
    x0, _ = layout["xaxis"]["range"]
    _, y1 = layout["yaxis"]["range"]
    markers = [((x - x0) * scale, (y1 - y) * scale) for x, y in points]
    for box in boxes:
        for mx, my in markers:
            nearest = (min(max(mx, box[0]), box[2]) - mx) ** 2 + (min(max(my, box[1]), box[3]) - my) ** 2
            assert nearest >= (MARKER_RADIUS - 0.1) ** 2, (layout["width"], box, (mx, my))
    return boxes


def test_projection_labels_never_overlap_even_when_points_crowd():
    rng = np.random.default_rng(0)
    points = [
        dict(label=f"bank (s{i + 1})", group="contextual", sentence=i, sense="river" if i % 2 else "money", x=float(x), y=float(y))
        for i, (x, y) in enumerate(rng.normal(scale=0.02, size=(14, 2)))
    ]
    points += [
        dict(label=f"word{i} (s{i + 1})", group="reference", sentence=i, sense=None, x=float(x), y=float(y))
        for i, (x, y) in enumerate(rng.normal(scale=1.0, size=(10, 2)))
    ]
    fig = viz.projection_figure(points, [], title="crowded")
    for layout, font_size in _drawn_layouts(fig):  # in the figure as sent and in each narrower variant (a tablet's, a phone's)
        boxes = _assert_apart_and_off_markers(layout, font_size, [(p["x"], p["y"]) for p in points])
        assert len(boxes) == len(points)


def test_the_planes_narrower_variants_keep_every_label_inside_the_plot_apart_and_off_the_markers():
    """The Embeddings page's plane for the toy model, senses given: each narrower variant (the browser draws
    the widest that fits the chart's box) places every label again inside its smaller plot area."""
    from model import load_model
    from viz.content import embeddings_page, run_model
    from viz.content.settings import Settings
    from viz.embeddings import FIGURE_WIDTH

    settings = Settings(senses="river, money")
    model = load_model("toy")
    content = embeddings_page(settings, run_model(model, settings.sentences, settings.display), model.name, model.tokenizer)
    (fig,) = [figure for name, figure in content.figures.items() if name.startswith("projection-")]
    layout = fig["layout"]
    points = [(x, y) for trace in fig["data"] for x, y in zip(trace["x"], trace["y"])]
    n_labels = sum(1 for a in layout["annotations"] if a["text"])
    assert n_labels == len(points) >= 9  # every point and both senses' centres
    variants = layout["meta"]["narrower"]
    assert max(v["width"] for v in variants) < FIGURE_WIDTH and min(v["width"] for v in variants) <= 358  # a phone's box at 390 px
    for variant in variants:
        assert len(variant["annotations"]) == len(layout["annotations"])
        assert all(patch == {} for patch, a in zip(variant["annotations"], layout["annotations"]) if not a["text"])  # the arrows stay
    for drawn, font_size in _drawn_layouts(fig):
        boxes = _assert_apart_and_off_markers(drawn, font_size, points)
        assert len(boxes) == n_labels
        _, x_scale, y_scale = _label_boxes(drawn, font_size)
        assert x_scale == pytest.approx(y_scale)  # equal scales: the plane is not stretched
        margin = drawn["margin"]
        plot_w, plot_h = drawn["width"] - margin["l"] - margin["r"], drawn["height"] - margin["t"] - margin["b"]
        for box in boxes:
            assert box[0] >= 0 and box[1] >= 0 and box[2] <= plot_w and box[3] <= plot_h, (drawn["width"], box)
        xs, ys = [x for x, _ in points], [y for _, y in points]
        (x0, x1), (y0, y1) = drawn["xaxis"]["range"], drawn["yaxis"]["range"]
        assert x0 < min(xs) and max(xs) < x1 and y0 < min(ys) and max(ys) < y1  # every point in view
        # no label lies on an arrow (from the static point to each occurrence): a point every pixel along it
        for arrow in (a for a in drawn["annotations"] if not a["text"]):
            (ax0, ay0), (ax1, ay1) = [((x - x0) * x_scale, (y1 - y) * x_scale) for x, y in ((arrow["ax"], arrow["ay"]), (arrow["x"], arrow["y"]))]
            steps = int(math.hypot(ax1 - ax0, ay1 - ay0)) + 1
            along = [(ax0 + (ax1 - ax0) * k / steps, ay0 + (ay1 - ay0) * k / steps) for k in range(steps + 1)]
            for box in boxes:
                assert not any(box[0] < x < box[2] and box[1] < y < box[3] for x, y in along), (drawn["width"], box, arrow)


def test_sense_layers_figure_draws_same_and_other_sense_per_layer():
    by_layer = [
        dict(layer="static", same=1.0, other=1.0, ratio=float("nan")),
        dict(layer=0, same=0.9, other=0.88, ratio=0.5),
        dict(layer=1, same=0.7, other=0.2, ratio=3.0),
    ]
    fig = viz.sense_layers_figure(by_layer, title="bank")
    assert [t["name"] for t in fig["data"]] == ["same sense", "other sense"]
    assert list(fig["data"][0]["y"]) == [1.0, 0.9, 0.7] and list(fig["data"][1]["y"]) == [1.0, 0.88, 0.2]
    assert list(fig["layout"]["xaxis"]["ticktext"]) == ["static", "input", "after layer 0"]


def test_trajectory_figure():
    fig = viz.trajectory_figure({"bank (river)": [(0, 0), (1, 1), (2, 1)], "bank (money)": [(0, 0), (-1, 0)]}, title="Across layers")
    assert [t["name"] for t in fig["data"]] == ["bank (river)", "bank (money)"]
    assert list(fig["data"][0]["text"]) == ["static", "input", "L0"]
    assert list(fig["data"][0]["customdata"]) == ["static embedding", "model input (before layer 0)", "after layer 0"]
    assert list(fig["data"][1]["text"]) == ["", "input"]  # the shared static point is labelled once
    assert list(fig["data"][0]["x"]) == [0, 1, 2]
    assert "lines" in fig["data"][0]["mode"] and "markers" in fig["data"][0]["mode"]
    assert fig["layout"]["yaxis"]["scaleanchor"] == "x"


# --- tokens ------------------------------------------------------------------


def test_tokens_figure():
    rows = [
        dict(text="<|endoftext|>", id=50256, kind="special"),
        dict(text="Hello", id=15496, kind="normal"),
        dict(text=" wor", id=476, kind="subword"),
        dict(text="ld", id=335, kind="subword"),
    ]
    fig = viz.tokens_figure(rows)
    legend = [t["name"] for t in fig["data"] if t.get("showlegend") is not False]
    assert legend == ["normal token", "special token", "subword piece"]
    texts = [t for t in fig["data"] if t["mode"] == "text" and t["name"].endswith(": text")]
    shown = [label for t in texts for label in t["text"]]
    assert sorted(shown) == sorted(["&lt;|endoftext|&gt;", "Hello", "␣wor", "ld"])
    ids = [label for t in fig["data"] if t["mode"] == "text" and t["name"].endswith(": id") for label in t["text"]]
    assert sorted(ids) == sorted(["50256", "15496", "476", "335"])
    fills = {t["name"]: t["line"]["color"] for t in fig["data"] if t.get("fill") == "toself"}
    assert len(set(fills.values())) == 3
    assert viz.export.figure_to_csv(fig) == (
        "position,token,id,kind\n0,<|endoftext|>,50256,special\n1,Hello,15496,normal\n2, wor,476,subword\n3,ld,335,subword\n"
    )
    # a box is as many data units wide as its text has characters: on a narrow screen the chart keeps the
    # width that gives a unit a character of its 15 px monospace text (0.6 em), and scrolls inside its box
    low, high = fig["layout"]["xaxis"]["range"]
    assert fig["layout"]["meta"]["min_width"] - 20 >= (high - low) * 0.6 * 15


def test_tokens_figure_rejects_unknown_kind():
    with pytest.raises(ValueError, match="kinds"):
        viz.tokens_figure([dict(text="a", id=1, kind="weird")])


# --- theme -------------------------------------------------------------------


def test_print_theme_copies_and_restyles():
    data, mask = stages()
    fig = viz.stages_figure(data, TOKENS, TOKENS, masked=mask, title="t")
    before = json.loads(sent_json(fig))
    printed = viz.apply_print_theme(fig)
    assert json.loads(sent_json(fig)) == before, "the original figure must not change"
    assert printed["layout"]["paper_bgcolor"] == "white"
    assert printed["layout"]["font"]["size"] >= 18
    assert all(a["font"]["size"] >= 18 for a in printed["layout"]["annotations"])
    assert printed["layout"]["plot_bgcolor"] == MASK_COLOR
    assert as_tuple(printed["layout"]["coloraxis"]["colorscale"]) == as_tuple(scale_of("RdBu_r"))
    assert as_tuple(printed["layout"]["coloraxis2"]["colorscale"]) == as_tuple(scale_of("Viridis"))
    assert printed["layout"]["xaxis"]["tickfont"]["size"] == 16 and printed["layout"]["xaxis"]["tickfont"]["color"] == "black"


def test_print_theme_replaces_unsafe_scales_and_thickens_lines():
    fig = go.Figure(
        [
            go.Heatmap(z=[[1, 2]], colorscale="Jet"),
            go.Heatmap(z=[[1, -2]], colorscale="Picnic"),
            go.Heatmap(z=[[1, -2]], colorscale="Hot", zmid=0),
            go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(width=1)),
        ]
    )
    printed = viz.apply_print_theme(fig)
    assert as_tuple(printed["data"][0]["colorscale"]) == as_tuple(scale_of("Viridis"))
    assert as_tuple(printed["data"][1]["colorscale"]) == as_tuple(scale_of("RdBu_r"))
    assert as_tuple(printed["data"][2]["colorscale"]) == as_tuple(scale_of("RdBu_r"))
    assert printed["data"][3]["line"]["width"] >= 3
    assert fig["data"][3]["line"]["width"] == 1


def test_print_theme_keeps_every_token_label_that_fits():
    # an 8-token sentence's print PNG once showed only every other label ("the, sat, the, bank"),
    # thinned by the font's growth from the labels shown rather than by the axis's length
    words = [f"w{i}" for i in range(8)]
    data, mask = stages(8)
    for fig in (
        viz.stages_figure(data, words, words, masked=mask, title="t"),
        viz.attention_heatmap(data["pattern"], words, words, title="t", colorbar_title="weight"),
        viz.value_step_figure(data["pattern"], np.ones((8, 4)), np.ones((8, 4)), words, title="t"),
    ):
        printed = viz.apply_print_theme(fig)
        for name in ("xaxis", "yaxis"):
            assert list(printed["layout"][name]["ticktext"]) == words, (fig["layout"]["title"]["text"], name)


def test_print_theme_thins_a_long_axis_to_its_length_at_the_print_font_keeping_the_chosen_token():
    from viz.theme import PRINT_TICK_SIZE, _axis_px

    n, chosen = 64, 37
    words = [f"w{i}" for i in range(n)]
    data, mask = stages(n)
    fig = viz.stages_figure(data, words, words, masked=mask, title="t", keep=(chosen, chosen))
    printed = viz.apply_print_theme(fig)
    layout = printed["layout"]
    for name in ("xaxis", "yaxis", "xaxis3"):
        shown = len(layout[name]["tickvals"])
        px_per_label = _axis_px(layout, name) / shown
        assert shown <= len(fig["layout"][name]["tickvals"]), "never more labels than on screen"
        assert px_per_label >= 1.6 * PRINT_TICK_SIZE, (name, px_per_label)
        assert shown >= 2 and px_per_label < 2 * 1.6 * PRINT_TICK_SIZE * 1.5, (name, shown, "thinned more than needed")
        assert f"w{chosen}" in layout[name]["ticktext"]
    # the panels are square: the y axis is held by its x axis's width, not by the taller figure
    assert _axis_px(layout, "yaxis") == pytest.approx(_axis_px(layout, "xaxis"))


def test_print_theme_on_shared_coloraxis():
    patterns = np.full((1, 2, 3, 3), 1 / 3)
    printed = viz.apply_print_theme(viz.heads_overview(patterns, list("abc"), list("abc")))
    assert as_tuple(printed["layout"]["coloraxis"]["colorscale"]) == as_tuple(scale_of("Viridis"))
    assert printed["layout"]["height"] > viz.heads_overview(patterns, list("abc"), list("abc"))["layout"]["height"]


# --- package hygiene ---------------------------------------------------------


def test_viz_imports_neither_streamlit_nor_torch():
    root = pathlib.Path(viz.__file__).parent
    for path in root.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] not in {"streamlit", "torch"}, f"{path.name} imports {name}"


def test_the_stages_grid_is_exported_at_the_width_of_its_square_panels():
    """Two columns of square panels: exported at 1280 px wide they would stand apart with a gap the width of a
    panel; the figure's export width is that of its panels, in both themes."""
    from viz.stages import GRID_X, GRID_Y
    from viz.theme import DEFAULT_MARGIN, apply_print_theme

    n = 12
    stages = {key: np.random.default_rng(0).normal(size=(n, n)) for key in ("scores_raw", "scores_scaled", "scores_masked", "pattern")}
    fig = viz.stages_figure(stages, list("abcdefghijkl"), list("abcdefghijkl"), masked=None, title="t")
    for shown in (fig, apply_print_theme(fig)):
        layout = shown["layout"]
        margin = DEFAULT_MARGIN | layout["margin"]
        across = (layout["width"] - margin["l"] - margin["r"]) * (GRID_X[0][1] - GRID_X[0][0])
        down = (layout["height"] - margin["t"] - margin["b"]) * (GRID_Y[0][1] - GRID_Y[0][0])
        assert 0.97 * down <= across <= down + 45, (across, down)  # each column about as wide as its square


def test_the_score_parts_bars_leave_room_for_their_values_on_both_sides():
    """The values are written beyond each bar's end (not shrunk inside it): the axis reaches past the
    longest bar on each side by a third of the span, so a label stays clear of the tick labels."""
    from viz.score_parts import parts_bar_figure

    fig = parts_bar_figure(["token·token", "position·token"], [-7.95, 12.9], 4.95, title="t")
    low, high = fig["layout"]["xaxis"]["range"]
    assert low <= -7.95 - 0.3 * 20.85 and high >= 12.9 + 0.3 * 20.85
    bars = fig["data"][0]
    assert (bars["textposition"], bars["constraintext"], bars["cliponaxis"]) == ("outside", "none", False)
    assert parts_bar_figure(["a"], [2.0], 2.0, title="t")["layout"]["xaxis"]["range"][0] == 0  # nothing below 0: no room there
