"""A head's position share (model/score_parts.py) where the heads are shown: the Attention page's head view,
the Heads page's grid, and the Why page's chart of a layer's heads (a head with no lift, a negative share)."""

from __future__ import annotations

import math

import pytest
import torch

from model.heads import head_summary
from model.loading import load_model
from model.score_parts import fast_pairs, head_position_shares, lift, score_parts
from test_score_parts import TOY_TEXTS, positional_toy
from viz.content.settings import Settings

TEXT = "The cat sat on the mat because it was tired."


def expected_badge(share: float) -> str:
    """The classes the captions state: positional at 2/3 or more, content at 1/3 or less, mixed between."""
    if math.isnan(share):
        return "no lift"
    return "positional" if share >= 2 / 3 else "content" if share <= 1 / 3 else "mixed"


def marked_cells(figure) -> dict[tuple[int, int], str]:
    """(layer, head) → the position badge marked on the Heads grid: a mark of its own (small squares) or a
    second line under the square's word."""
    glyphs = {"▲": "positional", "◆": "mixed", "●": "content"}
    cells = {}
    for trace in figure["data"]:
        name = trace.get("name", "")
        if name.startswith("position: ") and list(trace["x"]) != [None]:
            badge = name.removeprefix("position: ").split(" (")[0]
            for x, y, data in zip(trace["x"], trace["y"], trace["customdata"]):
                assert (data[0], data[1]) == (y, x)  # a click on the mark opens its head
                cells[(data[0], data[1])] = badge
        elif trace.get("marker", {}).get("symbol") == "square" and "text" in trace.get("mode", ""):
            for text, data in zip(trace["text"], trace["customdata"]):
                if "<br>" in text:
                    cells[(data[0], data[1])] = glyphs[text.split("<br>")[1]]
    return cells


# --- the head view (Attention page) ------------------------------------------------------------------


def test_the_head_view_states_each_drawn_heads_share_in_its_note_and_legend():
    from viz.content.head_view import head_view_section
    from viz.head_view import component_data

    model = positional_toy()  # head 0 looks at the previous token by position alone
    trace = model.trace(TOY_TEXTS)
    content = head_view_section(Settings(model="toy", layer=0, heads=(0, 1)), trace)
    shares = head_position_shares(trace, 0, 0)
    assert content.values["position_shares"] == {0: shares[0].position_share, 1: shares[1].position_share}
    assert expected_badge(shares[0].position_share) == "positional"
    note = component_data(content.values["head_view"])["note"]  # what the component draws under the heads
    for head in (0, 1):
        share = shares[head].position_share
        assert f"head {head}: {share:.0%} ({expected_badge(share)})" in note
    assert "positional at 67% or more, content at 33% or less" in note and note.endswith(content.notices_for("head-view")[0].text)
    legend = [t["name"] for t in content.figures["head-view-L0"]["data"] if t.get("legendgroup", "").startswith("head ") and t.get("showlegend", True)]
    assert legend == [f"head {h}: {shares[h].position_share:.0%} {expected_badge(shares[h].position_share)}" for h in (0, 1)]
    assert "positional ≥ 67%" in content.figures["head-view-L0"]["layout"]["legend"]["title"]["text"]


def test_the_head_view_says_why_a_layer_or_a_long_sentence_has_no_share():
    from viz.content.head_view import head_view_section
    from viz.content.why import SHARE_TOKENS
    from viz.head_view import component_data

    model = load_model("toy")
    later = head_view_section(Settings(layer=1, heads=(2,)), model.trace([TEXT]))
    assert later.values["position_shares"] == {}
    assert "first layer of a model that adds positions" in component_data(later.values["head_view"])["note"]
    assert [t["name"] for t in later.figures["head-view-L1"]["data"] if t.get("legendgroup") == "head 2" and t.get("showlegend", True)] == ["head 2"]
    long_trace = model.trace([" ".join([TEXT] * 8)])
    assert len(long_trace.tokens[0]) > SHARE_TOKENS
    long = head_view_section(Settings(layer=0, heads=(0,)), long_trace)
    assert long.values["position_shares"] == {} and f"computed up to {SHARE_TOKENS} tokens" in long.notices_for("head-view-position")[0].text


# --- the Heads page's grid ------------------------------------------------------------------------------


def test_the_heads_grid_marks_each_first_layer_head_with_its_shares_class():
    from viz.content.heads import heads_page

    model = positional_toy()
    trace = model.trace(TOY_TEXTS)
    content = heads_page(Settings(model="toy"), trace, model)
    shares = [s.position_share for s in head_position_shares(trace, 0, 0)]
    assert content.values["position_shares"] == [shares]  # one layer: the toy has one
    cells = marked_cells(content.figures["head-grid"])
    assert cells == {(0, h): expected_badge(share) for h, share in enumerate(shares)} and cells[(0, 0)] == "positional"
    caption = content.notices_for("position-badges")[0].text
    assert "positional at 67% or more, content at 33% or less" in caption and "parts made of position alone" in caption
    table = content.tables["position-shares"]
    assert list(table["badge"]) == [expected_badge(s) for s in shares]

    toy = load_model("toy")  # two layers: the second has no share, and says why
    two = heads_page(Settings(), toy.trace([TEXT]), toy)
    assert set(marked_cells(two.figures["head-grid"])) == {(0, h) for h in range(toy.n_heads)}
    assert two.values["position_shares"][1] == [None] * toy.n_heads
    assert "layer 0 only" in two.notices_for("position-badges")[0].text


def test_a_rotary_model_is_marked_on_every_layer_and_a_long_sentence_nowhere(tiny_model_dir):
    from viz.content.heads import heads_page
    from viz.content.why import SHARE_TOKENS

    model = load_model(str(tiny_model_dir("llama")))
    trace = model.trace([TEXT])
    content = heads_page(Settings(), trace, model)
    expected = {}
    for layer in range(trace.n_layers):
        for head_share in head_position_shares(trace, layer, 0):
            expected[(layer, head_share.head)] = expected_badge(head_share.position_share)
            assert content.values["position_shares"][layer][head_share.head] == head_share.position_share
    assert marked_cells(content.figures["head-grid"]) == {cell: badge for cell, badge in expected.items() if badge != "no lift"}
    assert "fastest 25% of the rotary pairs" in content.notices_for("position-badges")[0].text
    toy = load_model("toy")
    long_trace = toy.trace([" ".join([TEXT] * 8)])
    assert len(long_trace.tokens[0]) > SHARE_TOKENS
    long = heads_page(Settings(), long_trace, toy)
    assert marked_cells(long.figures["head-grid"]) == {} and f"up to {SHARE_TOKENS} tokens" in long.notices_for("position-badges")[0].text


def test_the_heads_page_shows_the_marks_and_opening_a_head_does_not_compute_them_again(monkeypatch):
    import viz.content.heads as heads_content
    from apptest_helpers import chart_titled, open_page

    calls = []
    real = heads_content.head_position_shares
    monkeypatch.setattr(heads_content, "head_position_shares", lambda *args: calls.append(args[1:]) or real(*args))
    text = "A dog ran to the red door and sat."  # a sentence no other test caches
    at = open_page("pages/9_Heads.py", {"text": text})
    grid = chart_titled(at, ["Every head of", "by badge"])
    trace = load_model("toy").trace([text])
    shares = head_position_shares(trace, 0, 0)
    assert marked_cells(grid) == {(0, s.head): expected_badge(s.position_share) for s in shares}
    assert any("positional at 67% or more" in c.value for c in at.caption)
    assert calls == [(0, 0)]
    at.sidebar.select_slider(key="w_layer").set_value(1).run()
    at.sidebar.button_group(key="w_heads").set_value([2]).run()
    assert not at.exception and chart_titled(at, ["Layer 1, head 2", "actually sent"])
    assert calls == [(0, 0)]  # the shares came from the cache


# --- the Why page's chart of a layer's heads ------------------------------------------------------------


def test_a_head_with_no_lift_is_a_captioned_gap_in_the_shares_chart():
    from viz.content.why import why_page

    model = load_model("toy-random", n_layers=1, n_heads=4, d_model=64, seed=1)
    with torch.no_grad():
        model.module.blocks[0].attn.W_Q[2].zero_()  # q = 0: every score of head 2 is level, its pattern uniform
    trace = model.trace([TEXT])
    content = why_page(Settings(layer=0, heads=(0,)), trace, model)
    shares = content.values["shares"]
    assert math.isnan(shares[2]) and not any(math.isnan(s) for i, s in enumerate(shares) if i != 2)
    assert content.values["badges"][2] == "no lift"
    figure = content.figures["head-shares"]
    bars = {x: y for t in figure["data"] for x, y in zip(t["x"], t["y"]) if y is not None}
    assert set(bars) == {"head 0", "head 1", "head 3"}  # no bar for head 2 …
    assert figure["layout"]["xaxis"]["categoryarray"] == [f"head {h}" for h in range(4)]  # … but its place on the axis
    assert [(a["x"], a["text"]) for a in figure["layout"]["annotations"] if a["text"] == "no lift"] == [("head 2", "no lift")]
    assert "head 2 has no lift" in content.notices_for("share-measure")[0].text
    one_token = why_page(Settings(layer=0, heads=(0,)), model.trace(["The"]), model)
    assert sum(a["text"] == "no lift" for a in one_token.figures["head-shares"]["layout"]["annotations"]) == 4
    assert "every head has no lift" in one_token.notices_for("share-measure")[0].text


@pytest.mark.slow
def test_smollm2_negative_shares_are_worded_as_a_signed_net_lift(smollm2):
    """SmolLM2's layer-3 heads look where the fastest pairs score keys below average: those pairs' lifts are
    negative while the whole lift is positive, so the share (their net lift over the whole) is below 0."""
    from viz.content.why import why_page

    trace = smollm2.trace(TOY_TEXTS[0])
    content = why_page(Settings(model="smollm2", layer=3, heads=(0,)), trace, smollm2)
    shares = content.values["shares"]
    negative = [head for head, share in enumerate(shares) if share < 0]
    assert negative
    pattern, allowed = trace.pattern(3, 0), trace.attend()[0, 0] & trace.key_valid[0][:, None]
    for head in negative:
        lifts = list(lift(score_parts(trace, 3, head, 0, by="pair"), pattern[head], allowed).values())
        fast, whole = sum(lifts[: fast_pairs(len(lifts))]), sum(lifts)
        assert fast < 0 < whole and shares[head] == pytest.approx(fast / whole, rel=1e-9)
        assert content.values["badges"][head] == "content"
    figure = content.figures["head-shares"]
    assert "net lift from the fastest 25% of the rotary pairs" in figure["layout"]["title"]["text"]
    assert figure["layout"]["yaxis"]["range"][0] < min(shares)  # the negative bars are drawn, not clipped
    assert all("net lift" in t["hovertemplate"] for t in figure["data"] if t.get("hovertemplate"))
    caption = content.notices_for("share-measure")[0].text
    assert "signed: below 0 %" in caption and "content at 33% or less (negative shares too)" in caption

    heads = head_summary(trace, 0).badges
    from viz.content.heads import heads_page

    grid = heads_page(Settings(model="smollm2"), trace, smollm2)
    cells = marked_cells(grid.figures["head-grid"])
    assert len(cells) == trace.n_layers * trace.n_heads
    assert all(cells[(3, head)] == "content" for head in negative)
    previous = [(l, h) for l in range(trace.n_layers) for h in range(trace.n_heads) if heads[l][h] == "previous-token"]
    assert previous and all(cells[cell] == "positional" for cell in previous)
