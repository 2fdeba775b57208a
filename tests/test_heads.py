"""What heads do: summaries, rollout, value norms and sentence diffs on cases with known answers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model import load_model
from model.heads import (
    BADGES,
    align_tokens,
    attention_flow,
    badge,
    _output_projections,
    head_output_weights,
    head_summary,
    model_patterns,
    residual_adjusted,
    rollout,
    sentence_diff,
    summarise_patterns,
    value_weighted,
)
from model.tokenizers import Token

SENTENCE = "the cat sat on the mat and the dog sat on the rug"


def tokens_of(texts: list[str], special: tuple[int, ...] = ()) -> list[Token]:
    return [Token(text, i, "special" if i in special else "normal", 0, 0, None if i in special else i) for i, text in enumerate(texts)]


def previous_token_toy():
    """A one-layer, one-head toy whose W_Q and W_K make every query look at the token before it.

    Token embeddings are zero, so a block reads LayerNorm(PE(i)), of norm √d_model at every position.
    W_K maps LayerNorm(PE(j)) to LayerNorm(PE(j + 1)) (least squares over the positions used) and W_Q
    is a large multiple of the identity, so q_i·k_j = c·LN(PE(i))·LN(PE(j + 1)): largest at j = i − 1.
    """
    model = load_model("toy-random", n_layers=1, n_heads=1, d_model=32, pe_base=10.0, causal=True, tokenizer="word")
    block = model.module.blocks[0]
    n = 14
    with torch.no_grad():
        model.module.embed.weight.zero_()
        x = block.ln1(model.module.pe[: n + 1])  # [n + 1, d_model]
        w_k = torch.linalg.pinv(x[:n]) @ x[1:]  # x[j] · w_k ≈ x[j + 1]
        block.attn.W_Q.copy_(30.0 * torch.eye(32)[None])
        block.attn.W_K.copy_(w_k[None])
    return model


def test_a_head_set_to_attend_to_the_previous_token_gets_the_previous_token_badge():
    model = previous_token_toy()
    trace = model.trace(SENTENCE)
    pattern = model_patterns(trace)[0, 0]
    n = pattern.shape[0]
    assert torch.equal(pattern[1:].argmax(-1), torch.arange(n - 1))  # every row's largest weight: i − 1
    summary = head_summary(trace)
    assert summary.previous[0, 0] > 0.9
    assert summary.badges == [["previous-token"]]


def test_badges_follow_the_stated_thresholds_on_constructed_patterns():
    n = 6
    tokens = tokens_of(["[CLS]", "a", "b", ",", "c", "[SEP]"], special=(0, 5))
    identity = torch.eye(n)
    first = torch.zeros(n, n)
    first[:, 0] = 1
    sep = torch.zeros(n, n)
    sep[:, 5] = 1
    uniform = torch.full((n, n), 1 / n)
    patterns = torch.stack([identity, first, sep, uniform])[None]  # [1 layer, 4 heads, n, n]
    summary = summarise_patterns(patterns, tokens)
    assert summary.badges == [["self", "first-token sink", "delimiter sink", "broad"]]
    assert summary.entropy[0, 3] == pytest.approx(torch.log2(torch.tensor(6.0)).item())
    assert summary.entropy_normalised[0, 3] == pytest.approx(1.0)
    assert summary.delimiter[0, 2] == pytest.approx(1.0)
    # the comma at position 3 is punctuation; a head on it alone is a delimiter sink too
    comma = torch.zeros(n, n)
    comma[:, 3] = 1
    on_comma = summarise_patterns(comma[None, None], tokens)
    assert on_comma.punctuation[0, 0] == pytest.approx(1.0)
    assert on_comma.badges == [["delimiter sink"]]
    # a head spread evenly over i − 1, i and i + 1: no share reaches half, mean distance under 1 token
    band = torch.zeros(n, n)
    for i in range(n):
        for j in (i - 1, i, i + 1):
            if 0 <= j < n:
                band[i, j] = 1
    band = band / band.sum(-1, keepdim=True)
    local = summarise_patterns(band[None, None], tokens_of(list("abcdef")))
    assert local.distance[0, 0] == pytest.approx((4 * 2 / 3 + 1 / 2) / 5)  # rows 1…5
    assert local.badges == [["local"]]


def test_badge_rules_are_tried_in_order():
    base = dict(previous=0.0, self=0.0, first=0.0, delimiter=0.0, punctuation=0.0, distance=5.0, entropy_normalised=0.0)
    assert badge(base, 10) == "mixed"
    assert badge(dict(base, previous=0.5, first=0.5), 10) == "previous-token"
    assert badge(dict(base, delimiter=0.3, punctuation=0.2), 10) == "delimiter sink"
    assert badge(dict(base, entropy_normalised=0.8), 10) == "broad"
    assert set(BADGES) >= {badge(dict(base, distance=1.0), 10)}


def test_rollout_equals_the_product_formula_on_a_three_token_example():
    a1 = torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    a2 = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    b1 = torch.tensor([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    b2 = torch.eye(3)
    patterns = torch.stack([torch.stack([a1, b1]), torch.stack([a2, b2])])  # [layer 2, head 2, 3, 3]
    eye = torch.eye(3)
    hat1 = 0.5 * (a1 + b1) / 2 + 0.5 * eye
    hat2 = 0.5 * (a2 + b2) / 2 + 0.5 * eye
    # by hand: Â_1 row 0 = ½·(1 + 1)/2 + ½ = 1 on token 0; Â_2 row 2 = (¼, 0, ¾)
    assert hat2[2].tolist() == [0.25, 0.0, 0.75]
    result = rollout(patterns)
    assert torch.allclose(result[0], hat1)
    assert torch.allclose(result[1], hat2 @ hat1)
    assert torch.allclose(result[1].sum(-1), torch.ones(3))
    assert torch.allclose(result[1][2], torch.tensor([0.25 * 1 + 0.75 * 0.05, 0.0 + 0.75 * 0.075, 0.75 * 0.875]))


def test_attention_flow_of_one_layer_is_the_adjusted_attention_row():
    patterns = torch.tensor([[[[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]]]])  # one layer, one head
    flow = attention_flow(patterns, query=2)
    assert torch.allclose(flow, residual_adjusted(patterns)[0, 2])


def test_attention_flow_through_two_layers_takes_the_bottlenecks():
    # residual 0: Â is the attention itself. Output token 0 reaches input 0 through token 0
    # (min(0.75, 0.5)) and through token 1 (min(0.25, 0.9)); input 1 gets min(0.75, 0.5) + min(0.25, 0.1).
    layer_1 = torch.tensor([[0.5, 0.5], [0.9, 0.1]])
    layer_2 = torch.tensor([[0.75, 0.25], [0.5, 0.5]])
    patterns = torch.stack([layer_1, layer_2])[:, None]  # [layer, head 1, 2, 2]
    flow = attention_flow(patterns, query=0, residual=0.0)
    assert flow.tolist() == pytest.approx([0.75, 0.6])
    assert rollout(patterns, residual=0.0)[-1, 0].tolist() == pytest.approx([0.6, 0.4])  # products, not bottlenecks


def test_value_norms_equal_a_manual_computation():
    model = load_model("toy-random", n_layers=2, n_heads=4, d_model=32, seed=3)
    trace = model.trace("the cat sat on the mat")
    layer = 1
    result = value_weighted(trace, model, layer)
    attn = model.module.blocks[layer].attn
    x = model.module.blocks[layer].ln1(trace.hidden_states[layer, 0])  # [pos, d_model]
    pattern = model_patterns(trace)[layer]
    with torch.no_grad():
        check_value_norms(result, attn, x, pattern)
    assert torch.equal(result.pattern, pattern)


def check_value_norms(result, attn, x, pattern):
    for head in range(4):
        v = x @ attn.W_V[head] + attn.b_V[head]  # [pos, d_head]
        f = v @ attn.W_O[head * 8 : (head + 1) * 8]  # this head's rows of W_O
        for i in range(pattern.shape[1]):
            for j in range(pattern.shape[2]):
                expected = torch.linalg.vector_norm(pattern[head, i, j] * f[j])
                assert result.weighted_norm[head, i, j] == pytest.approx(float(expected), rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("kind", ["bert", "distilbert", "gpt2", "llama"])
def test_head_output_weights_recompose_the_output_projection(kind, tiny_model_dir):
    model = load_model(str(tiny_model_dir(kind)))
    trace = model.trace("the cat sat on the mat")
    w = head_output_weights(model, 0)  # [head, d_head, d_model]
    assert w.shape == (model.n_heads, model.d_head, model.d_model)
    z = trace.stages(0).z[0]  # [head, pos, d_head]
    projection = _output_projections(model)[0]
    concatenated = z.transpose(0, 1).reshape(z.shape[1], -1)
    expected = projection(concatenated)
    bias = projection.bias if projection.bias is not None else 0.0  # Llama's o_proj has none
    assert torch.allclose(torch.einsum("hpd,hdm->pm", z, w) + bias, expected, atol=1e-5)


def test_the_diff_of_a_sentence_with_itself_is_zero():
    model = load_model("toy")
    trace = model.trace([SENTENCE, SENTENCE])
    diff = sentence_diff(trace, 0, 1)
    assert len(diff.pairs) == len(trace.tokens[0])
    assert torch.count_nonzero(diff.change) == 0
    assert torch.count_nonzero(diff.difference) == 0


def test_sentence_diff_aligns_tokens_and_finds_moving_heads():
    assert align_tokens(list("abxcd"), list("abycd")) == [(0, 0), (1, 1), (3, 3), (4, 4)]
    model = load_model("toy")
    trace = model.trace(["the cat sat by the river bank", "the man sat by the money bank"])
    diff = sentence_diff(trace, 0, 1)
    assert [diff.tokens_a[i].strip() for i, _ in diff.pairs] == ["the", "sat", "by", "the", "bank"]  # BPE pieces carry their space
    assert diff.change.shape == (2, 4)
    assert ((diff.change > 0) & (diff.change <= 1)).all()
    top = diff.top_heads(3)
    assert top[0][2] == pytest.approx(float(diff.change.max()))
    assert [h[2] for h in top] == sorted((h[2] for h in top), reverse=True)


# --- figures ----------------------------------------------------------------------------------------

from viz.heads import BADGE_COLORS, diff_figure, head_grid_figure, ranking_figure, rollout_figure, value_norm_figure  # noqa: E402


def test_head_grid_has_one_clickable_square_per_head_coloured_by_badge():
    badges = [["self", "mixed", "previous-token"], ["first-token sink", "self", "broad"]]
    fig = head_grid_figure(badges, [["n"] * 3] * 2, title="heads", selected=(1, 2))
    points = {}
    for trace in fig["data"]:
        if trace.get("name") in BADGE_COLORS:
            assert trace["marker"]["color"] == BADGE_COLORS[trace["name"]]
            for x, y, data in zip(trace["x"], trace["y"], trace["customdata"]):
                assert (data[0], data[1]) == (y, x)
                points[(y, x)] = trace["name"]
    assert points == {(l, h): badges[l][h] for l in range(2) for h in range(3)}
    assert [t.get("name") for t in fig["data"]][-1] == "open"
    assert head_grid_figure([], title="none")["layout"]["annotations"][0]["text"].startswith("Nothing to draw")


def test_value_norm_figure_shows_weight_beside_norm():
    pattern = torch.tensor([[1.0, 0.0], [0.25, 0.75]])
    norms = pattern * torch.tensor([0.5, 4.0])
    fig = value_norm_figure(pattern.numpy(), norms.numpy(), ["a", "b"], title="t")
    left, right = [t for t in fig["data"] if t["type"] == "heatmap"]
    assert np.asarray(left["z"]).tolist() == [[1.0, 0.0], [0.25, 0.75]]
    assert np.asarray(right["z"]).tolist() == [[0.5, 0.0], [0.125, 3.0]]


def test_rollout_diff_and_ranking_figures_carry_their_numbers():
    matrix = torch.tensor([[1.0, 0.0], [0.4, 0.6]]).numpy()
    fig = rollout_figure(matrix, ["a", "b"], title="r")
    assert np.allclose(fig["data"][0]["z"], matrix)
    diff = diff_figure(-matrix, ["a", "b"], title="d")
    assert diff["data"][0]["zmid"] == 0 and diff["data"][0]["z"][1][1] == pytest.approx(-0.6)
    ranking = ranking_figure(["L0 H1", "L1 H0"], [0.3, 0.1], title="k", value_title="effect")
    assert list(ranking["data"][0]["x"]) == [0.3, 0.1] and list(ranking["layout"]["yaxis"]["ticktext"]) == ["L0 H1", "L1 H0"]


# --- ablation -----------------------------------------------------------------------------------------

from model.heads import HIDDEN_MEASURE, KL_MEASURE, ablated_runs, cosine_rows, rank_heads  # noqa: E402


@pytest.mark.parametrize("kind", ["bert", "gpt2"])
def test_knocking_out_a_head_equals_zeroing_its_slice_of_the_output_projection(kind, tiny_model_dir):
    model = load_model(str(tiny_model_dir(kind)))
    text = "the cat sat on the mat"
    runs = ablated_runs(model, text, [[], [(1, 2)], [(0, 0), (1, 1)]])
    assert torch.allclose(runs.final_hidden[0], model.trace(text).hidden_states[-1, 0], atol=1e-5)
    d_head = model.d_head
    for run, heads in ((1, [(1, 2)]), (2, [(0, 0), (1, 1)])):
        projections = _output_projections(model)
        saved = [p.weight.detach().clone() for p in projections]
        with torch.no_grad():
            for layer, head in heads:
                weight = projections[layer].weight
                rows = slice(head * d_head, (head + 1) * d_head)
                if isinstance(projections[layer], torch.nn.Linear):
                    weight[:, rows] = 0  # Linear: [out, in], the head's inputs are columns
                else:
                    weight[rows, :] = 0  # GPT-2 Conv1D: [in, out]
            expected = model.trace(text).hidden_states[-1, 0]
            for p, w in zip(projections, saved):
                p.weight.copy_(w)
        assert torch.allclose(runs.final_hidden[run], expected, atol=1e-5)
        assert not torch.allclose(runs.final_hidden[run], runs.final_hidden[0], atol=1e-4)


@pytest.mark.parametrize("kind", ["bert", "distilbert", "gpt2", "llama"])
def test_ablating_heads_in_a_batch_equals_the_engines_ablate(kind, tiny_model_dir):
    model = load_model(str(tiny_model_dir(kind)))
    text = "the woman sat by the river"
    head_sets = [[(0, 1)], [(1, 0), (1, 2)], []]
    runs = ablated_runs(model, text, head_sets)
    for run, heads in enumerate(head_sets):
        engine = model.trace(text, ablate=heads)
        assert torch.allclose(runs.final_hidden[run], engine.hidden_states[-1, 0], atol=1e-5)
        if engine.last_logits is not None:  # the Llama decoder has a next-token head
            assert torch.allclose(runs.last_logits[run], engine.last_logits[0], atol=1e-5)


def test_toy_ablation_and_ranking_use_the_engine_and_measure_kl():
    model = load_model("toy")
    text = "the man went to the bank to get"
    runs = ablated_runs(model, text, [[], [(1, 3)]])
    engine = model.trace(text, ablate=[(1, 3)])
    assert torch.equal(runs.last_logits[1], engine.last_logits[0])
    ranking = rank_heads(model, text)
    assert ranking.measure == KL_MEASURE and ranking.effect.shape == (2, 4)
    before = torch.log_softmax(model.trace(text).last_logits[0], -1)
    after = torch.log_softmax(engine.last_logits[0], -1)
    expected = float((before.exp() * (before - after)).sum() / torch.log(torch.tensor(2.0)))
    assert ranking.effect[1, 3] == pytest.approx(expected, rel=1e-4)
    assert (ranking.effect >= -1e-6).all()


def test_ranking_in_batches_equals_one_run_per_head(tiny_model_dir):
    model = load_model(str(tiny_model_dir("bert")))
    text = "the man sat on the river bank"
    ranking = rank_heads(model, text, batch_size=4)
    assert ranking.measure == HIDDEN_MEASURE and ranking.effect.shape == (2, 3)
    baseline = ablated_runs(model, text, [[]]).final_hidden[0]
    for layer, head in [(0, 1), (1, 2)]:
        alone = ablated_runs(model, text, [[(layer, head)]]).final_hidden[0]
        expected = (1 - cosine_rows(baseline, alone)).mean()
        assert ranking.effect[layer, head] == pytest.approx(float(expected), rel=1e-4, abs=1e-7)
    top = ranking.top(6)
    assert [t[2] for t in top] == sorted(ranking.effect.flatten().tolist(), reverse=True)


# --- the page's content and the page ---------------------------------------------------------------

from viz.content.heads import ablation_section, heads_page  # noqa: E402
from viz.content.settings import Settings  # noqa: E402


def test_heads_page_content_follows_the_summary_and_the_open_head():
    model = load_model("toy")
    settings = Settings(model="toy", layer=1, heads=(3,))
    trace = model.trace(settings.sentences)
    content = heads_page(settings, trace, model)
    summary = head_summary(trace, 0)
    grid = content.figures["head-grid"]
    shown = {(d[0], d[1]): t["name"] for t in grid["data"] if t.get("name") in BADGE_COLORS for d in t["customdata"]}
    assert shown == {(l, h): summary.badges[l][h] for l in range(2) for h in range(4)}
    assert {"value-norms-L1-H3", "value-shares-L1-H3", "rollout", "flow", "diff-change", "diff-L1-H3"} <= set(content.figures)
    assert [t.strip() for t in content.values["unaligned_a"]] == ["fishing", "on", "river"]  # BPE pieces carry their space
    assert len(content.tables["head-summary"]) == 8
    alone = heads_page(Settings(model="toy", text="the cat sat on the mat"), model.trace("the cat sat on the mat"), model)
    assert "diff-one-sentence" in alone.notice_ids() and "diff-change" not in alone.figures


def test_masked_word_prediction_changes_when_heads_are_knocked_out(tiny_model_dir, tmp_path):
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    torch.manual_seed(1)
    source = tiny_model_dir("bert")
    config = BertConfig.from_pretrained(source)
    BertForMaskedLM(config).save_pretrained(tmp_path)
    AutoTokenizer.from_pretrained(source).save_pretrained(tmp_path)
    model = load_model(str(tmp_path))
    text = "the man sat on the [MASK] bank"
    settings = Settings(model=str(tmp_path), text=text)
    trace = model.trace(text)
    assert trace.lm_head == "masked"
    content = ablation_section(settings, trace, model, [(0, 1), (1, 2)], word=2)
    position = [t.text for t in trace.tokens[0]].index("[MASK]")
    after = model.trace(text, ablate=[(0, 1), (1, 2)])
    from model.heads import kl_divergence

    expected = float(kl_divergence(trace.logits[0, position], after.logits[0, position]))
    assert content.values["kl_bits"] == pytest.approx(expected, rel=1e-4)
    assert "masked word at position" in content.figures["ablation-prediction"]["layout"]["title"]["text"]
    cos = torch.nn.functional.cosine_similarity(trace.hidden_states[-1, 0, 2], after.hidden_states[-1, 0, 2], dim=0)
    assert content.values["cosine_last"] == pytest.approx(float(cos), abs=1e-6)
    no_mask = ablation_section(settings, model.trace("the man sat"), model, [(0, 1)], word=1)
    assert "ablation-no-mask" in no_mask.notice_ids()


def test_the_heads_page_opens_a_head_and_ranks_every_head():
    from streamlit.testing.v1 import AppTest

    from apptest_helpers import chart_titled
    from conftest import ROOT

    at = AppTest.from_file(str(ROOT / "home.py"), default_timeout=180).run()
    at.switch_page("pages/9_Heads.py").run()
    assert not at.exception, [e.value for e in at.exception]
    at.sidebar.select_slider(key="w_layer").set_value(1).run()
    at.sidebar.button_group(key="w_heads").set_value([2]).run()
    assert chart_titled(at, ["Layer 1, head 2", "actually sent"])
    at.multiselect(key="w_ablate_heads").set_value([(1, 2), (0, 0)]).run()
    assert chart_titled(at, ["heads 1.2, 0.0 knocked out"])
    at.button(key="w_rank_heads").click().run()
    assert not at.exception and not at.error
    spec = chart_titled(at, ["ranked by their effect"])
    model = load_model("toy")
    expected = rank_heads(model, model.trace(Settings().sentences).texts[0]).top(15)
    assert spec["layout"]["yaxis"]["ticktext"][:3] == [f"layer {l} · head {h}" for l, h, _ in expected[:3]]


def test_the_heads_benchmark_builds_sentences_of_the_asked_length_and_times_every_part():
    from bench.heads import measure, sentence_of

    model = load_model("toy")
    assert len(model.tokenizer.encode(sentence_of(model, 17))) == 17
    result = measure("toy", 12, 1)
    assert result["tokens"] == 12 and (result["layers"], result["heads"]) == (2, 4)
    for part in ("trace_s", "summary_s", "rollout_s", "value_norms_layer_s", "flow_one_token_s", "rank_all_heads_s"):
        assert result[part] > 0, part
    assert result["flow_all_tokens_s_extrapolated"] == pytest.approx(12 * result["flow_one_token_s"])


def test_a_click_on_the_head_grid_opens_that_head(monkeypatch):
    """The chart component reports a click as {"points": [{..., "customdata": [layer, head, ...]}]}."""
    import streamlit as st

    from ui.heads import open_clicked_head
    from ui.view import key

    for name in (key("layer"), key("heads")):
        monkeypatch.setitem(st.session_state, name, None)
    open_clicked_head()({"points": [{"curve_number": 0, "point_index": 9, "x": 2, "y": 1, "customdata": [1, 2, 0.5]}]})
    assert (st.session_state[key("layer")], st.session_state[key("heads")]) == (1, [2])
    open_clicked_head()({"points": []})  # a click beside the grid changes nothing
    assert (st.session_state[key("layer")], st.session_state[key("heads")]) == (1, [2])
