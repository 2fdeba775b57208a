"""The pages' content for the engine's features: what-ifs through the whole model, predictions at any
position, each family's input recipe, rotary maths. Numbers, no streamlit."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from model import load_model
from model.positional import rotary_angles, rotary_dot_by_distance, rotary_frequencies, rotate
from viz.content import next_token_page, positional_page, run_model
from viz.content.settings import AttentionDisplay, Settings, clamp_to_model, from_query, to_query

TEXT = "The man sat on the river bank.\nA woman is fishing"


@pytest.fixture(scope="module")
def models(tiny_model_dir):
    cache = {}

    def get(kind):
        if kind not in cache:
            cache[kind] = load_model(str(tiny_model_dir(kind)))
        return cache[kind]

    return get


def test_every_model_runs_the_display_through_the_whole_model(models):
    model = models("bert")
    display = AttentionDisplay(mask="causal+padding", hidden=((0, 1),), scaling=False, temperature=2.0, ablate=((0, 1),))
    trace = run_model(model, TEXT.splitlines(), display)
    own = run_model(model, TEXT.splitlines(), AttentionDisplay())
    hidden = f"hidden: '{trace.tokens[0][1].text}' in sentence 1"
    assert trace.what_ifs == ["mask causal+padding (model: padding)", hidden, "scaling off", "temperature 2", "head 0.1 ablated (zero)"]
    assert own.what_ifs == []
    assert (trace.hidden_states[-1] - own.hidden_states[-1]).abs().max() > 1e-2
    assert trace.stages(1).pattern[0, 0, 3, 1] == 0  # the hidden key, in a later layer too


def test_ablate_and_position_settings_round_trip_and_clamp():
    settings = Settings(ablate=((1, 2), (0, 3)), position=4)
    query = to_query(settings)
    assert query["ablate"] == "0.3,1.2" and query["pos"] == "4"
    back, notices = from_query(query)
    assert back.ablate == ((0, 3), (1, 2)) and back.position == 4 and notices == []
    _, notices = from_query({"ablate": "1.x"})
    assert any("ablate" in notice for notice in notices)
    clamped, notices = clamp_to_model(settings, n_layers=1, n_heads=4, n_pos=8, n_sentences=1, sentence_lengths=[4])
    assert clamped.ablate == ((0, 3),) and clamped.position == -1
    assert "Ablated heads that this model does not have were dropped." in notices


def test_next_token_at_a_chosen_position_equals_the_models_logits(models):
    model = models("gpt2-lm")
    settings = Settings(text=TEXT, model="x", position=2, top_k=3)
    trace = run_model(model, settings.sentences, settings.display)
    content = next_token_page(settings, trace, model)
    expected = trace.logits[0, 2].softmax(dim=-1).topk(3)
    table = content.tables["predictions"]
    assert table["id"].tolist() == expected.indices.tolist()
    np.testing.assert_allclose(table["probability"], expected.values.numpy(), atol=1e-4)
    assert content.values["position"] == 2 and content.values["token"] == content.values["labels"][2]
    row = content.figures["last-token-attention"]["data"][0]["z"]
    stages = trace.stages(0).pattern[0, 0, 2, : len(trace.tokens[0])].numpy()
    np.testing.assert_allclose(np.asarray(row, dtype=np.float32)[0], stages, atol=1e-6)
    last = next_token_page(replace(settings, position=-1), trace, model)  # the default: the last word, "bank"
    assert last.values["position"] == len(trace.tokens[0]) - 2 and trace.tokens[0][-2].text.strip() == "bank"
    assert trace.tokens[0][-1].text == "."


def test_the_default_prediction_is_after_the_last_word(models):
    """After a sentence's closing "." a model that learned from one sentence at a time, as the toy did,
    predicts "." again (0.71 after "…on a river bank."): the page's default is after the last word, and a
    BERT's is that word, not [SEP]; a sentence without a closing mark keeps its last token."""
    toy = load_model("toy")
    settings = Settings(text="Write a poem about a man fishing on a river bank.\nThe man went to the bank", model="toy")
    trace = run_model(toy, settings.sentences, settings.display)
    for sentence, (text, n) in enumerate(zip(trace.texts, map(len, trace.tokens))):
        content = next_token_page(replace(settings, sentence=sentence), trace, toy)
        assert content.values["token"].strip() == "bank" and content.values["position"] == (n - 2 if text.endswith(".") else n - 1)
    after_the_stop = next_token_page(replace(settings, position=len(trace.tokens[0]) - 1), trace, toy).tables["predictions"]
    assert after_the_stop["token"].iloc[0] == "."
    bert = models("bert-mlm")
    trace = run_model(bert, ["the man sat on the river bank ."], settings.display)
    content = next_token_page(replace(settings, sentence=0), trace, bert)
    assert [t.text for t in trace.tokens[0]][-1] == "[SEP]" and content.values["token"] == "bank"


def test_masked_word_head_and_no_head(models):
    masked = models("bert-mlm")
    settings = Settings(text=TEXT, model="x", position=3)
    content = next_token_page(settings, run_model(masked, settings.sentences, settings.display), masked)
    assert content.values["head"] == "masked" and [n.id for n in content.notices] == ["masked-head"]
    bare = models("bert")
    content = next_token_page(settings, run_model(bare, settings.sentences, settings.display), bare)
    assert [n.id for n in content.notices] == ["no-lm-head"] and not content.figures
    assert "SmolLM2" in content.notices[0].text


@pytest.mark.parametrize("kind,formula", [("bert", "LayerNorm(token + position + token type)"), ("gpt2", "token + position"), ("llama", "token (position")])
def test_positional_page_shows_the_familys_input_recipe(models, kind, formula):
    model = models(kind)
    settings = Settings(text=TEXT, model="x", pe_positions=16, pe_d_model=16)
    trace = run_model(model, settings.sentences, settings.display)
    content = positional_page(settings, trace, model)
    assert content.values["input_recipe"].startswith(formula)
    assert content.values["recipe_difference"] < 1e-5
    figure = content.figures["input-composition"]
    n = len(trace.tokens[0])
    np.testing.assert_allclose(np.asarray(figure["data"][-1]["z"], dtype=np.float32), trace.hidden_states[0, 0, :n].numpy(), atol=1e-6)
    titles = [a["text"] for a in figure["layout"]["annotations"]]
    assert titles[0] == "token embedding" and titles[-1].endswith("first-layer input")
    if kind == "bert":
        assert titles[1:3] == ["+ position", "+ token type"] and content.values["plain_sum_difference"] > 0.5
        assert figure["data"][-1]["coloraxis"] == "coloraxis2" and figure["data"][0]["coloraxis"] == "coloraxis"  # LayerNorm: its own scale
    if kind == "llama":
        assert len(titles) == 2 and "rotary-angles" in content.figures and "learned-position-similarity" not in content.figures


def test_rotary_figures_are_the_models_own_rotation(models):
    model = models("llama")
    settings = Settings(text=TEXT, model="x", pe_positions=16)
    trace = run_model(model, settings.sentences, settings.display)
    frequencies = model.rotary_inverse_frequencies()
    torch.testing.assert_close(frequencies, rotary_frequencies(model.d_head, model.module.config.rope_parameters["rope_theta"]))
    content = positional_page(settings, trace, model)
    angles = np.asarray(content.figures["rotary-angles"]["data"][0]["customdata"], dtype=np.float32)
    np.testing.assert_allclose(angles[5], 5 * frequencies.numpy(), rtol=1e-6)
    dots = np.asarray(content.figures["rotary-by-distance"]["data"][0]["y"])
    assert dots[0] == pytest.approx(1.0) and dots[1] < 1.0
    # the trace's q is the projection rotated by position: the figure's maths is what the model did
    attention = model.module.model.layers[0].self_attn
    x = model.module.model.layers[0].input_layernorm(trace.hidden_states[0])
    with torch.no_grad():
        projected = attention.q_proj(x).view(*x.shape[:2], model.n_heads, model.d_head).transpose(1, 2)
    positions = torch.arange(x.shape[1])
    torch.testing.assert_close(rotate(projected, positions, frequencies), trace.q[0], atol=1e-5, rtol=0)


def test_rotary_score_depends_on_distance_only():
    frequencies = rotary_frequencies(8, base=100.0)
    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(8, generator=generator), torch.randn(8, generator=generator)

    def score(m, n):
        rotated_q = rotate(q[None, :], torch.tensor([m]), frequencies)[0]
        rotated_k = rotate(k[None, :], torch.tensor([n]), frequencies)[0]
        return float(rotated_q @ rotated_k)

    assert score(7, 3) == pytest.approx(score(20, 16), abs=1e-5)
    assert score(7, 3) != pytest.approx(score(7, 4), abs=1e-3)
    assert rotary_angles(3, frequencies)[2, 0] == pytest.approx(2.0)  # θ_0 = 1
    distances, dots = rotary_dot_by_distance(frequencies, 4)
    assert distances.tolist() == [0, 1, 2, 3]
    assert float(dots[1]) == pytest.approx(float(torch.cos(frequencies.double()).mean()), abs=1e-6)
