"""The app as a user reaches it: entry point, then each page; assertions on the charts' numbers."""

import json
import logging
import math

import numpy as np
import pyarrow
import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT, toy_tokens
from model import load_model
from model.train import CHECKPOINT
from apptest_helpers import chart_titled, charts, heatmaps


PAGES = ["pages/1_Tokens.py", "pages/2_Positional_encoding.py", "pages/3_Attention.py", "pages/4_Embeddings.py"]


def start(query=None):
    at = AppTest.from_file(str(ROOT / "home.py"), default_timeout=120)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    return at.run()


def on_page(at, path):
    at.switch_page(path).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def stages_chart(at, head):
    return heatmaps(chart_titled(at, [f"head {head} ·"]))


def test_every_page_draws_from_the_entry_point_what_its_page_function_gives(caplog):
    from model import load_model
    from viz.content import Settings, attention_page, embeddings_page, positional_page, run_model, tokens_page

    settings, model = Settings(), load_model("toy")
    trace = run_model(model, settings.sentences, settings.display)
    expected = {
        "pages/1_Tokens.py": tokens_page(settings, trace, model),
        "pages/2_Positional_encoding.py": positional_page(settings, trace, model),
        "pages/3_Attention.py": attention_page(settings, trace, model=model),
        "pages/4_Embeddings.py": embeddings_page(settings, trace, model.name),
    }
    with caplog.at_level(logging.ERROR, logger="attention_viz"):
        at = start()
        assert not at.exception and "Attention" in at.title[0].value
        for path, content in expected.items():
            on_page(at, path)
            titles = [spec["layout"].get("title", {}).get("text") for spec in charts(at)]
            drawn = [figure for name, figure in content.figures.items() if not name.startswith("head-view")]  # a component, not a chart
            assert titles == [figure["layout"]["title"]["text"] for figure in drawn], path
            assert not at.error, [e.value for e in at.error]
    assert [r for r in caplog.records if r.name == "attention_viz"] == []


def test_attention_stages_follow_the_maths_and_the_toggles():
    at = on_page(start(), "pages/3_Attention.py")
    at.sidebar.text_area(key="w_text").set_value("The cat sat on the mat.\nA dog ran.").run()
    at.sidebar.button_group(key="w_heads").set_value([1, 2]).run()
    stages = stages_chart(at, 2)
    raw, scaled, masked, pattern = (stages[k] for k in ("raw Q·Kᵀ", "÷ √d_k", "masked", "softmax"))
    d_head = 32  # toy: d_model 128 / 4 heads
    np.testing.assert_allclose(scaled, raw / math.sqrt(d_head), rtol=1e-5, atol=1e-5)
    n = len(toy_tokens("The cat sat on the mat."))  # the longer sentence
    assert n >= 7  # at least one token per word and the full stop
    assert raw.shape == (n, n)
    np.testing.assert_allclose(np.nansum(pattern, axis=1), 1, atol=1e-5)
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    assert np.isnan(masked[upper]).all() and np.isnan(pattern[upper]).all()  # causal: gaps above the diagonal
    assert not np.isnan(masked[~upper]).any()
    assert chart_titled(at, ["head 1 ·"])  # both chosen heads are drawn

    at.sidebar.button_group(key="w_mask").set_value("none").run()
    pattern = stages_chart(at, 2)["softmax"]
    assert not np.isnan(pattern).any()
    np.testing.assert_allclose(pattern.sum(axis=1), 1, atol=1e-5)

    at.sidebar.toggle(key="w_scaling").set_value(False).run()
    stages = stages_chart(at, 2)
    np.testing.assert_allclose(stages["÷ √d_k"], stages["raw Q·Kᵀ"], rtol=1e-6)
    formulas = next(m.value for m in at.markdown if "S = Q" in m.value)  # the row of formulas above the stages
    assert "unscaled" in formulas and r"\sqrt{d_k}" not in formulas
    assert at.query_params["scale"] == "0" and at.query_params["mask"] == "none"


def test_the_colour_and_theme_controls_restyle_the_stages():
    """The two segmented controls (the colour of the weights on the page, the figure theme in the
    sidebar): the softmax panel's colours end at the figure's own largest weight, then the print theme's
    white background; both go into the link."""
    at = on_page(start({"text": "The cat sat on the mat.", "mask": "none"}), "pages/3_Attention.py")  # no row of one key
    spec = chart_titled(at, ["head 0 ·"])
    assert spec["layout"]["coloraxis2"]["cmax"] == 1
    at.button_group(key="w_pattern_colour").set_value("own").run()
    spec = chart_titled(at, ["head 0 ·"])
    top = np.nanmax(heatmaps(spec)["softmax"])
    assert top < 1 and spec["layout"]["coloraxis2"]["cmax"] == pytest.approx(top, rel=1e-5)
    assert at.query_params["pcol"] == "own"
    at.sidebar.button_group(key="w_theme").set_value("print").run()
    spec = chart_titled(at, ["head 0 ·"])
    assert spec["layout"]["paper_bgcolor"] in ("white", "#ffffff", "#fff", "rgb(255,255,255)") and at.query_params["theme"] == "print"


def test_padding_in_a_batch_is_masked():
    at = on_page(start(), "pages/3_Attention.py")
    at.sidebar.text_area(key="w_text").set_value("A dog ran.\nThe cat sat on the mat.").run()
    at.sidebar.button_group(key="w_mask").set_value("padding").run()
    stages = stages_chart(at, 0)
    pattern = stages["softmax"]
    n = len(toy_tokens("The cat sat on the mat."))
    assert toy_tokens("A dog ran.") == [" a", " dog", " ran", "."] and pattern.shape == (n, n)
    assert np.isnan(pattern[:, 4:]).all()  # [PAD] keys of the 4-token sentence
    np.testing.assert_allclose(np.nansum(pattern[:, :4], axis=1), 1, atol=1e-5)


def test_hidden_tokens_and_temperature():
    at = on_page(start(), "pages/3_Attention.py")
    at.sidebar.text_area(key="w_text").set_value("The cat sat on the mat.").run()
    at.sidebar.button_group(key="w_mask").set_value("none").run()
    at.sidebar.multiselect(key="w_hidden").set_value([(0, 1)]).run()
    pattern = stages_chart(at, 0)["softmax"]
    assert np.isnan(pattern[:, 1]).all()
    peak_default = np.nanmax(pattern, axis=1).mean()
    at.sidebar.select_slider(key="w_temperature").set_value(5.0).run()
    assert np.nanmax(stages_chart(at, 0)["softmax"], axis=1).mean() < peak_default


@pytest.mark.skipif(not __import__("model").available_bundled(), reason="bundled MiniLM not installed")
def test_switching_to_a_pretrained_model():
    at = on_page(start(), "pages/3_Attention.py")
    at.sidebar.text_area(key="w_text").set_value("The bank of the river.").run()
    at.sidebar.selectbox(key="w_model_choice").set_value("minilm").run()
    assert not at.exception
    spec = chart_titled(at, ["minilm", "head 0"])
    pattern = heatmaps(spec)["softmax"]
    ticks = spec["layout"]["xaxis"]["ticktext"]
    assert ticks[0] == "[CLS]" and ticks[-1] == "[SEP]" and "bank" in ticks
    np.testing.assert_allclose(np.nansum(pattern, axis=1), 1, atol=1e-5)
    assert at.sidebar.select_slider(key="w_layer").options == [str(layer) for layer in range(6)]
    at.sidebar.button_group(key="w_mask").set_value("causal+padding").run()
    badge = [m.value.replace("\\", "") for m in at.markdown if "what-if" in m.value.replace("\\", "")]
    assert badge and "mask causal+padding (model: padding)" in badge[0]
    at.button(key="back_to_own").click().run()  # one click back to the model's own settings
    assert not [m for m in at.markdown if "what-if" in m.value.replace("\\", "")] and at.sidebar.button_group(key="w_mask").value == "model"
    # the row stays, saying so (a toggle into a what-if or out of it does not move the page)
    assert [m for m in at.markdown if "the model's own settings" in m.value] and at.button(key="back_to_own").disabled
    for path in PAGES:  # every page draws with a pretrained model too
        on_page(at, path)
        assert not at.error, (path, [e.value for e in at.error])
    learned = chart_titled(at.switch_page("pages/2_Positional_encoding.py").run(), ["minilm", "learned position embeddings"])
    assert heatmaps(learned)[""].shape == (64, 64)


def test_unavailable_model_falls_back_to_toy_with_a_message():
    at = on_page(start(), "pages/3_Attention.py")
    at.sidebar.selectbox(key="w_model_choice").set_value("distilbert-base-uncased").run()
    assert not at.exception
    assert any("not in the local cache" in e.value for e in at.error)
    assert chart_titled(at, ["toy", "head 0"])


def test_malformed_link_falls_back_to_defaults_with_notices():
    at = start({"layer": "999", "heads": "-1,zz", "mask": "diagonal", "temp": "hot", "model": "/etc", "pe_n": "5000"})
    assert not at.exception
    notices = " ".join(i.value for i in at.info).replace("\\", "")  # messages are markdown-escaped
    for field in ("heads", "mask", "temp", "model", "pe_n"):
        assert f"“{field}”" in notices, field
    assert "Layer 999 does not exist" in notices
    at = on_page(at, "pages/3_Attention.py")
    assert chart_titled(at, ["toy · layer 1 · head 0"])


def test_link_reproduces_a_view():
    at = start({"text": "The dog ran.", "layer": "1", "heads": "3", "mask": "none", "scale": "0", "temp": "2"})
    at = on_page(at, "pages/3_Attention.py")
    spec = chart_titled(at, ["layer 1 · head 3 · mask none"])
    assert spec["layout"]["xaxis"]["ticktext"] == [" the", " dog", " ran", "."]  # the toy BPE's pieces keep their space
    stages = heatmaps(spec)
    np.testing.assert_allclose(stages["÷ √d_k"], stages["raw Q·Kᵀ"], rtol=1e-6)


def test_empty_input_gives_a_message_and_keeps_the_controls():
    at = on_page(start(), "pages/3_Attention.py")
    at.sidebar.text_area(key="w_text").set_value("   \n ").run()
    assert not at.exception
    assert any("nothing to read" in w.value for w in at.warning)
    assert at.sidebar.text_area(key="w_text").value == "   \n "


def test_tokens_page_shows_every_tokenizer_side_by_side():
    at = start()
    at.sidebar.text_area(key="w_text").set_value("Unbelievably, the xylophone!").run()
    at = on_page(at, "pages/1_Tokens.py")
    frames = [df.value for df in at.dataframe]
    summary = next(f for f in frames if "tokenizer" in f.columns)
    counts = dict(zip(summary["tokenizer"], summary["tokens"]))
    assert counts["Word-level"] == 5 and counts["Character"] == len("Unbelievably, the xylophone!")
    assert counts["GPT-2 BPE"] > 5
    unknown = dict(zip(summary["tokenizer"], summary["unknown"]))
    assert unknown["Word-level"] == 2  # "unbelievably" and "xylophone" are not in the toy vocabulary


def test_positional_page_matrix_follows_the_sliders():
    at = on_page(start(), "pages/2_Positional_encoding.py")
    at.slider(key="w_pe_positions").set_value(4).run()
    at.slider(key="w_pe_d_model").set_value(4).run()
    at.select_slider(key="w_pe_base").set_value(100).run()
    pe = next(iter(heatmaps(chart_titled(at, ["Sinusoidal positional encoding"])).values()))
    np.testing.assert_allclose(pe[1], [0.841471, 0.540302, 0.099833, 0.995004], atol=1e-5)
    assert at.query_params["pe_n"] == "4" and at.query_params["pe_base"] == "100"


def test_embeddings_page_reports_missing_word_and_draws_arrows():
    at = start()
    at.sidebar.text_area(key="w_text").set_value("A man fishing on a river bank.\nThe cat sat on the mat.\nMoney in the bank.").run()
    at = on_page(at, "pages/4_Embeddings.py")
    assert any("does not occur in sentence 2" in i.value for i in at.info)
    spec = chart_titled(at, ["“bank” after layer"])
    arrows = [a for a in spec["layout"].get("annotations", []) if a.get("arrowhead") == 2]  # not the labels' leader lines
    assert len(arrows) == 2
    at.text_input(key="w_target").set_value("zebra").run()
    assert any("occurs in none" in w.value for w in at.warning)


def test_next_token_page_lists_probabilities_that_follow_the_temperature():
    at = start()
    at.sidebar.text_area(key="w_text").set_value("the woman needed coins and stood at the bank").run()
    at = on_page(at, "pages/5_Next_token.py")
    bars = next(t for t in charts(at)[0]["data"] if t["type"] == "bar")
    from apptest_helpers import decode

    warm = decode(bars["x"])
    assert len(warm) == 10 and np.all(np.diff(warm) <= 1e-7) and warm.sum() <= 1 + 1e-6
    table = at.dataframe[0].value
    own = load_model("toy").trace("the woman needed coins and stood at the bank").last_logits[0].softmax(dim=-1)
    top = own.topk(10)
    assert table["id"].tolist() == top.indices.tolist()  # the model's own ten likeliest, in order
    np.testing.assert_allclose(table["probability"], top.values.numpy(), atol=1e-4)  # as shown, to 4 places
    at.select_slider(key="w_sampling_temperature").set_value(0.3).run()
    cold = decode(next(t for t in charts(at)[0]["data"] if t["type"] == "bar")["x"])
    assert cold[0] > warm[0]  # a lower temperature sharpens the distribution
    last = heatmaps(chart_titled(at, ["Attention of", "every head"]))["last query"]
    assert last.shape == (8, 9)  # 2 layers × 4 heads, 9 tokens
    np.testing.assert_allclose(last.sum(axis=1), 1, atol=1e-5)


def test_train_page_says_what_the_shipped_models_loss_holds():
    at = on_page(start(), "pages/6_Train.py")
    record = json.loads((CHECKPOINT / "training.json").read_text())
    caption = next(c.value for c in at.caption if "sense contrast" in c.value)
    assert caption.startswith("Its next-word loss.") and f"sense contrast (weight {record['train']['sense_weight']:g})" in caption
    assert record["train"]["sense_weight"] == 2
    chart = next(e for e in at.main if getattr(e, "type", "") == "vega_lite_chart").proto  # st.line_chart
    shown = pyarrow.ipc.open_stream(chart.datasets[0].data.data).read_all().column("loss").to_pylist()
    assert shown == record["task_losses"] != record["losses"]  # the next-word part, not the contrast with it
    assert shown[-1] < 1.5 < record["losses"][-1]


def test_train_page_trains_and_every_page_uses_the_new_model():
    at = on_page(start(), "pages/6_Train.py")
    at.selectbox[0].set_value(1)  # layers
    at.selectbox[1].set_value(2)  # heads
    at.selectbox[2].set_value(32)  # d_model
    at.number_input[0].set_value(40)  # steps
    at.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("trained for 40 steps" in s.value for s in at.success)
    assert at.sidebar.selectbox(key="w_model_choice").value == "trained-here"
    at = on_page(at, "pages/3_Attention.py")
    stages = heatmaps(chart_titled(at, ["trained-here · layer 0 · head 0"]))
    assert stages["raw Q·Kᵀ"].shape == (12, 12)  # both default sentences are 12 word tokens (the Train page trains the word-level toy)
    np.testing.assert_allclose(stages["÷ √d_k"], stages["raw Q·Kᵀ"] / 4, rtol=1e-5, atol=1e-6)  # d_head = 32 / 2 heads
    assert any("one layer" in c.value for c in at.sidebar.caption)


def test_a_lesson_opens_its_page_with_its_settings():
    at = on_page(start(), "pages/7_Lessons.py")
    at.button(key="lesson_padding").click().run()
    assert not at.exception
    spec = chart_titled(at, ["toy · layer 0 · head 0 · mask causal+padding"])
    pattern = heatmaps(spec)["softmax"]
    ticks = [label.strip() for label in spec["layout"]["xaxis"]["ticktext"]]
    assert ticks[0] == "a" and "ran" in ticks and ticks[-1] == "[PAD]"
    assert np.isnan(pattern[:, 4:]).all()  # the padding of the short sentence


def test_a_training_stops_at_its_budget_of_one_core_and_says_so(monkeypatch):
    monkeypatch.setenv("ATTENTION_VIZ_TRAIN_CPU_S", "1")  # read when the training starts
    at = on_page(start(), "pages/6_Train.py")
    at.selectbox[2].set_value(128)  # d_model: steps that take long enough
    at.number_input[0].set_value(3000)  # steps
    at.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    done = next(s.value for s in at.success if "trained for" in s.value)
    steps = int(done.split("trained for ")[1].split(" steps")[0])
    assert 1 <= steps < 3000 and f"It stopped after {steps} of 3000 steps" in done and "1 s of one core" in done
