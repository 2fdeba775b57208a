"""The page layer (`viz.content`): each page's figures, tables and notices from settings and a trace,
checked on their numbers, without Streamlit; and the settings' round trip through the URL."""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import replace

import numpy as np
import pytest

from apptest_helpers import decode
from model import load_model
from viz.content import (
    AttentionDisplay,
    Settings,
    attention_page,
    embeddings_page,
    next_token_page,
    positional_page,
    run_model,
    tokens_page,
)
from viz.content.settings import URL_KEYS, from_query, to_query
from viz._common import is_decoration


@pytest.fixture(scope="module")
def toy():
    return load_model("toy")


def heatmaps(figure):
    return {
        t.get("name") or "": decode(t["z"]).astype(float) if isinstance(t["z"], dict) else np.array(t["z"], dtype=float)
        for t in figure["data"]
        if t["type"] == "heatmap" and not is_decoration(t)
    }


def stage_panels(figure):
    """The four stage panels of a stages figure, by their subplot order (raw, ÷√d_k, masked, softmax)."""
    panels = [np.array(t["z"], dtype=float) for t in figure["data"] if t["type"] == "heatmap" and not is_decoration(t)]
    assert len(panels) == 4
    return panels


def test_attention_page_ids_and_the_scaled_panel_is_raw_over_root_d_head(toy):
    settings = Settings(text="The cat sat on the mat.", layer=1, heads=(2, 0), mask="causal")
    trace = run_model(toy, settings.sentences, settings.display)
    content = attention_page(settings, trace)
    assert set(content.figures) == {
        "stages-L1-H2",
        "stages-L1-H0",
        "value-step-L1-H2",
        "value-step-L1-H0",
        "softmax-scaled-L1-H2",
        "softmax-unscaled-L1-H2",
        "row-stats-L1-H2",
        "head-view-L1",
        "overview-all-heads",
    }
    raw, scaled, masked, pattern = stage_panels(content.figures["stages-L1-H2"])
    d_head = trace.d_head  # toy: d_model 128 / 4 heads = 32
    np.testing.assert_allclose(scaled, raw / math.sqrt(d_head), rtol=1e-5, atol=1e-6)
    stages = trace.stages(1)
    np.testing.assert_allclose(raw, stages.scores_raw[0, 2].numpy(), rtol=1e-5, atol=1e-6)
    n = len(trace.tokens[0])
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    assert np.isnan(pattern[upper]).all() and np.isnan(masked[upper]).all()
    np.testing.assert_allclose(np.nansum(pattern, axis=1), 1, atol=1e-5)

    table = content.tables["worked-example"]
    steps = list(table["step"])[:3]
    assert steps[0] == "q · k" and steps[1].startswith("÷ ") and steps[2] == "mask"
    assert float(table["value"][0]) == pytest.approx(float(stages.scores_raw[0, 2, 2, 0]), abs=1e-4)
    assert content.values["weight"] == pytest.approx(float(stages.pattern[0, 2, 2, 0]), abs=1e-6)
    assert content.values["d_k"] == trace.d_head == 32 and content.values["head"] == 2


def test_unscaled_panel_equals_raw_and_temperature_flattens(toy):
    base = Settings(text="The cat sat on the mat.", mask="none", scaling=False)
    content = attention_page(base, run_model(toy, base.sentences, base.display))
    raw, scaled, _, pattern = stage_panels(content.figures["stages-L0-H0"])
    np.testing.assert_array_equal(scaled, raw)
    hot = replace(base, temperature=5.0)
    hot_pattern = stage_panels(attention_page(hot, run_model(toy, hot.sentences, hot.display)).figures["stages-L0-H0"])[3]
    assert hot_pattern.max(axis=1).mean() < pattern.max(axis=1).mean()


@pytest.mark.parametrize("text", ["cat", "The cat sat."])
def test_one_token_one_head_one_layer_gives_every_page_without_raising(text):
    model = load_model("toy-random", n_layers=1, n_heads=1, d_model=8)
    settings = Settings(text=text, model="toy-random", target="cat", references="")
    trace = run_model(model, settings.sentences, settings.display)
    attention = attention_page(settings, trace)
    assert set(attention.figures) >= {"stages-L0-H0", "overview-all-heads"}
    n = len(trace.tokens[0])
    assert stage_panels(attention.figures["stages-L0-H0"])[0].shape == (n, n)
    assert len(attention.tables["worked-example"]) == 6
    tokens = tokens_page(settings, trace, model, tokenizers={})
    assert list(tokens.tables["token-ids-s1"]["token"]) == [t.text for t in trace.tokens[0]]
    positional = positional_page(replace(settings, pe_positions=2, pe_d_model=2), trace, model)
    assert heatmaps(positional.figures["pe-matrix"])[""].shape == (2, 2)
    embeddings = embeddings_page(settings, trace, model.name)
    assert "similarities" in embeddings.tables and len(embeddings.tables["similarities"]) > 0
    prediction = next_token_page(settings, trace, model)
    assert len(prediction.tables["predictions"]) == 10
    np.testing.assert_allclose(prediction.tables["predictions"]["probability"].iloc[0], max(prediction.tables["predictions"]["probability"]))


def test_embeddings_page_notices_a_missing_word_and_keeps_the_table(toy):
    settings = Settings(text="I sat by the bank.\nThe cat sat on the mat.", references="")
    trace = run_model(toy, settings.sentences, settings.display)
    content = embeddings_page(settings, trace, toy.name)
    assert content.notice_ids() == ["kind", "missing-s2", "senses-hint"]
    assert "sentence 2" in content.notices_for("missing")[0].text
    assert "only the words before it" in content.notices_for("kind")[0].text  # the toy model is causal
    table = content.tables["similarities"]
    assert list(table.columns) == ["its static embedding"]
    assert len(table) == trace.n_layers + 1  # one row per layer after the input and each block
    absent = embeddings_page(replace(settings, target="zebra"), trace, toy.name)
    assert absent.notice_ids() == ["kind", "missing-s1", "missing-s2", "word-absent"] and absent.figures == {}


def test_embeddings_page_draws_senses_and_lists_unknown_and_absent_reference_words(toy):
    from model.heldout import BANK_BEFORE, pairs

    texts, senses = pairs(BANK_BEFORE)
    settings = Settings(text="\n".join(texts), senses=", ".join(senses), references="river, lake, zzqx")
    trace = run_model(toy, settings.sentences, settings.display)
    content = embeddings_page(settings, trace, toy.name, load_model("toy-random", tokenizer="word").tokenizer)
    assert list(content.figures) == ["projection-bank-L2", "senses-bank", "trajectory-bank"]
    layers = content.tables["sense-layers"]
    assert list(layers["layer"]) == ["static", "0", "1", "2"]
    np.testing.assert_allclose(layers["margin"], layers["same_sense"] - layers["other_sense"], atol=2e-3)
    assert content.values["senses"] == ["river", "money"] and np.isfinite(content.values["ratio"])
    assert [n.text for n in content.notices_for("references-unknown")] == ["Unknown to this model's tokenizer, so not drawn: zzqx."]
    assert [n.text for n in content.notices_for("references-absent")] == ["In none of the sentences, so not drawn: lake."]
    projection = content.figures["projection-bank-L2"]
    assert {t["name"] for t in projection["data"]} >= {"in context · river", "in context · money", "centre of each sense"}


def test_every_bank_lesson_opens_with_two_senses():
    from viz.content.lessons import LESSONS

    lessons = [lesson for lesson in LESSONS if lesson.key.startswith("bank-")]
    assert {lesson.settings["model"] for lesson in lessons} >= {"toy", "toy-random", "toy-bidirectional", "toy-bidirectional-random", "minilm", "smollm2"}
    for lesson in lessons:
        settings = Settings(**lesson.settings)
        assert len(settings.sense_names) == len(settings.sentences)
        assert set(settings.sense_names) == {"river", "money"}


def test_next_token_page_without_a_language_model_head_is_a_notice(tiny_model_dir):
    model = load_model(str(tiny_model_dir("distilbert")))
    settings = Settings(text="the man sat on the river bank", model=str(tiny_model_dir("distilbert")))
    content = next_token_page(settings, run_model(model, settings.sentences, settings.display), model)
    assert content.notice_ids() == ["no-lm-head"] and content.figures == {}


def test_next_token_page_follows_the_sampling_temperature(toy):
    settings = Settings(text="the woman needed coins and stood at the bank")
    trace = run_model(toy, settings.sentences, settings.display)
    warm = next_token_page(settings, trace, toy)
    cold = next_token_page(replace(settings, sampling_temperature=0.3), trace, toy)
    logits = np.array(warm.tables["predictions"]["logit"])
    expected = np.exp(logits / 0.3 - (logits / 0.3).max())
    top = float(cold.tables["predictions"]["probability"].iloc[0])
    assert top > float(warm.tables["predictions"]["probability"].iloc[0])
    assert expected[0] / expected.sum() >= top - 1e-4  # the top 10 carry at most all of the mass
    assert warm.values["uniform_entropy"] == pytest.approx(math.log2(toy.tokenizer.d_vocab))


def test_pretrained_display_runs_through_the_whole_model(tiny_model_dir):
    model = load_model(str(tiny_model_dir("bert")))
    settings = Settings(text="the man sat on the river bank", mask="causal+padding", temperature=2.0)
    trace = run_model(model, settings.sentences, settings.display)
    assert trace.mask.name == "causal+padding" and trace.mask.name == "causal+padding" and trace.temperature == 2.0
    assert trace.what_ifs == ["mask causal+padding (model: padding)", "temperature 2"]
    pattern = stage_panels(attention_page(settings, trace).figures["stages-L0-H0"])[3]
    assert np.isnan(pattern[np.triu(np.ones(pattern.shape, dtype=bool), k=1)]).all()


def test_settings_use_full_names_and_the_url_keeps_its_short_keys():
    settings = Settings(sentence=1, temperature=2.5, embedding_layer=1, hidden=((1, 3), (0, 5)), tokenizer="char", scaling=False, references="a, b")
    query = to_query(settings)
    assert query == {"sent": "1", "temp": "2.5", "elayer": "1", "hide": "0.5,1.3", "tok": "char", "scale": "0", "refs": "a, b"}
    back, notices = from_query(query)
    assert notices == [] and back == settings
    assert set(URL_KEYS.values()) >= {"sent", "temp", "elayer", "ntemp", "pe_n", "pe_d", "topk"}
    bad, notices = from_query({"hide": "-1", "heads": "-2", "sent": "x"})
    assert bad == Settings() and len(notices) == 3
    bad, notices = from_query({"hide": "0.-2,1.x"})
    assert bad == Settings() and len(notices) == 1


def test_attention_display_is_validated_once():
    assert AttentionDisplay(hidden=((1, 3), (0, 1), (1, 3))).hidden == ((0, 1), (1, 3))
    for wrong in (dict(mask="diagonal"), dict(temperature=0), dict(temperature=float("nan")), dict(hidden=((0, -1),)), dict(hidden=(3,))):
        with pytest.raises(ValueError):
            AttentionDisplay(**wrong)
    spec = AttentionDisplay("model", ((1, 2),)).mask_spec("causal")
    assert spec.hidden_in == ((1, 2),) and spec.hidden_keys == () and spec.hidden_for(1) == (2,) and spec.hidden_for(0) == ()
    assert AttentionDisplay().is_models_own and not AttentionDisplay(scaling=False).is_models_own
    with pytest.raises(dataclasses.FrozenInstanceError):
        AttentionDisplay().temperature = 2.0  # type: ignore[misc]


def test_guarded_keeps_the_page_and_logs_the_traceback(caplog):
    from ui.view import guarded

    with caplog.at_level(logging.ERROR, logger="attention_viz"), guarded():
        {}["sentence"]
    records = [r for r in caplog.records if r.name == "attention_viz"]
    assert len(records) == 1 and records[0].exc_info[0] is KeyError
    assert "KeyError" in caplog.text and "Traceback" in caplog.text


def test_attention_titles_follow_the_state(toy):
    settings = Settings(text="The cat sat on the mat.", layer=0, heads=(1,), mask="causal", hidden=((0, 1),), scaling=False, temperature=2.0)
    trace = run_model(toy, settings.sentences, settings.display)
    figure = attention_page(settings, trace).figures["stages-L0-H1"]
    panel_titles = [a["text"].split("<br>")[0] for a in figure["layout"]["annotations"]]
    assert panel_titles == ["raw Q·Kᵀ", "no scaling (÷ 1)", "masked: causal", "softmax(· ÷ T), T = 2"]
    assert figure["layout"]["annotations"][2]["text"].startswith("masked: causal<br><sup>+ 1 hidden · ")
    assert figure["layout"]["title"]["text"] == "toy · layer 0 · head 1 · mask causal · hidden “cat” · scaling off · T = 2 · what-if"
    on = run_model(toy, settings.sentences, Settings(text=settings.text).display)
    scaled_title = attention_page(Settings(text=settings.text, heads=(1,)), on).figures["stages-L0-H1"]["layout"]["annotations"][1]["text"]
    assert scaled_title.startswith("÷ √d_k = ÷ √32 = ÷ ")
    raw, scaled = (t for t in figure["data"] if t["type"] == "heatmap" and t["name"] in ("raw Q·Kᵀ", "÷ √d_k"))
    assert raw["coloraxis"] == scaled["coloraxis"]  # one scale for raw and scaled


def test_attention_page_value_step_is_the_models_own_and_output_step_uses_its_w_o(toy):
    settings = Settings(text="The cat sat on the mat.", layer=1, heads=(2,))
    trace = run_model(toy, settings.sentences, settings.display)
    content = attention_page(settings, trace, model=toy)
    stages = trace.stages(1)
    value = heatmaps(content.figures["value-step-L1-H2"])
    np.testing.assert_allclose(value["z"], stages.z[0, 2].numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(value["V"], trace.v[1, 0, 2].numpy(), rtol=1e-5, atol=1e-6)
    output = heatmaps(content.figures["output-step-L1"])
    w_o, b_o = toy.output_projection(1)
    np.testing.assert_allclose(output["output"], output["concatenated z"] @ w_o.numpy() + b_o.numpy(), rtol=1e-4, atol=1e-5)
    d = trace.d_head
    np.testing.assert_allclose(output["concatenated z"][:, 2 * d : 3 * d], stages.z[0, 2].numpy(), rtol=1e-5, atol=1e-6)  # head 2's columns


def test_pattern_colour_and_the_renormalised_sink_view(toy):
    settings = Settings(text="The cat sat on the mat.", heads=(0,), pattern_colour="own", sinks=True)
    trace = run_model(toy, settings.sentences, settings.display)
    content = attention_page(settings, trace)
    stages = content.figures["stages-L0-H0"]
    top = np.nanmax(heatmaps(stages)["softmax"])
    assert stages["layout"]["coloraxis2"]["cmax"] == pytest.approx(top, rel=1e-6)
    view = content.figures["renormalised-L0-H0"]
    assert "“ the” hidden, each row renormalised" in view["layout"]["title"]["text"]  # the toy BPE token keeps its space
    shown = next(iter(heatmaps(view).values()))
    pattern = trace.stages(0).pattern[0, 0].numpy()
    expected = pattern[:, 1:] / pattern[:, 1:].sum(axis=1, keepdims=True)
    masked = ~trace.stages(0).mask[0, 0].numpy()[:, 1:]  # causal: later keys stay gaps
    np.testing.assert_allclose(shown, np.where(masked, np.nan, expected), rtol=1e-5, atol=1e-6)
    assert from_query({"pcol": "own", "sinks": "1", "focus": "40"})[0] == Settings(pattern_colour="own", sinks=True, focus=40)
    assert from_query({"pcol": "loud"})[1]  # a bad value falls back, with a notice


def test_long_input_gets_a_focus_window_around_the_chosen_token(toy):
    words = ("the fisherman sat by the river bank and watched the water " * 20).split()[:150]
    settings = Settings(text=" ".join(words), focus=100)
    trace = run_model(toy, settings.sentences, settings.display)
    content = attention_page(settings, trace)
    focus = content.figures["focus-L0-H0"]
    window = [t for t in focus["data"] if t["type"] == "heatmap"][1]
    assert window["meta"]["query_positions"] == list(range(80, 120))
    assert f"{trace.tokens[0][100].text}" in focus["layout"]["xaxis2"]["ticktext"]


def test_scaling_lab_spread_grows_as_root_d_k_and_the_undivided_softmax_saturates():
    from model.scaling import dot_products, softmax_row
    from viz.content.scaling import scaling_lab_page

    for d_k in (1, 16, 512):
        spread = float(dot_products(d_k, n=4000).std())
        assert spread == pytest.approx(math.sqrt(d_k), rel=0.06)
    row = softmax_row(512)
    np.testing.assert_allclose(
        np.array(row["scores_raw"]) / math.sqrt(512),
        np.log(row["with_division"]) - np.log(row["with_division"]).max() + max(row["scores_raw"]) / math.sqrt(512),
        atol=1e-4,
    )
    assert max(row["without_division"]) > 0.99 and max(row["with_division"]) < 0.9
    one = softmax_row(1)
    assert one["with_division"] == one["without_division"]  # √1 = 1

    content = scaling_lab_page(512, model_d_k=16)
    assert set(content.figures) == {"dot-spread", "softmax-row-d512"}
    measured = content.figures["dot-spread"]["data"][0]
    assert 16 in measured["x"] and 512 in measured["x"] and 1024 in measured["x"]
    spreads = dict(zip(measured["x"], measured["y"]))
    assert spreads[1024] / spreads[16] == pytest.approx(8, rel=0.1)  # √(1024 / 16)
    shapes = {round(s["x0"]) for s in content.figures["dot-spread"]["layout"]["shapes"]}
    assert shapes == {512, 16}  # the chosen d_k and the model's own are marked
    labels = {a["text"]: 10 ** a["x"] for a in content.figures["dot-spread"]["layout"]["annotations"]}  # log axis: log10 positions
    assert labels == pytest.approx({"chosen d_k = 512": 512, "the model's d_k = 16": 16})
    notes = content.figures["dot-spread"]["layout"]["annotations"]  # one above the other, each towards the middle
    assert [(a["xanchor"], a["yshift"]) for a in notes] == [("right", 0), ("left", 20)]
    same = scaling_lab_page(16, model_d_k=16).figures["dot-spread"]["layout"]["annotations"]
    assert [a["text"] for a in same] == ["chosen d_k = the model's d_k = 16"]
    assert 10 ** content.figures["dot-spread"]["layout"]["xaxis"]["range"][1] < 2048  # the axis ends near d_k = 1024
    assert content.values["entropy_without"] < 0.1 < content.values["entropy_with"]
