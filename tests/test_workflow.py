"""The teacher's workflow (issue 20): controls where they belong, a log-scale temperature, Home lists every page."""

from __future__ import annotations

import numpy as np
from streamlit.testing.v1 import AppTest

from apptest_helpers import chart_titled, heatmaps
from conftest import ROOT, toy_tokens
from ui import PAGES

ATTENTION_KEYS = ("w_layer", "w_heads", "w_mask", "w_hidden", "w_scaling", "w_temperature")


def start():
    return AppTest.from_file(str(ROOT / "home.py"), default_timeout=120).run()


def sidebar_keys(at):
    return {getattr(w, "key", None) for w in at.sidebar.get("*") if getattr(w, "key", None)}


def widget_keys(at):
    keys = set()
    for kind in ("slider", "select_slider", "multiselect", "button_group", "selectbox", "toggle", "radio", "button"):
        keys |= {w.key for w in at.sidebar.get(kind)}
    return keys


def test_attention_controls_only_on_the_pages_that_draw_attention():
    at = start()
    home = widget_keys(at)
    assert "w_model_choice" in home and not home & set(ATTENTION_KEYS) and "w_theme" not in home
    page_links = [link.proto.page for link in at.main.get("page_link")]
    assert len(page_links) == len(PAGES) - 1  # Home lists every other page
    for path, shows_attention in [
        ("pages/1_Tokens.py", False),
        ("pages/3_Attention.py", True),
        ("pages/6_Train.py", False),
        ("pages/7_Lessons.py", False),
    ]:
        at.switch_page(path).run()
        assert not at.exception, path
        keys = widget_keys(at)
        assert (set(ATTENTION_KEYS) <= keys) == shows_attention and (not keys & set(ATTENTION_KEYS)) == (not shows_attention), (path, keys)


def test_temperature_slider_is_log_scaled_with_a_reset_and_keeps_its_value_across_pages():
    at = start().switch_page("pages/3_Attention.py").run()
    slider = at.sidebar.select_slider(key="w_temperature")
    options = [float(o) for o in slider.options]
    assert options[0] == 0.05 and options[-1] == 10.0
    middle = options.index(1.0) / (len(options) - 1)
    assert 0.4 <= middle <= 0.6  # the linear slider had T = 1 at 9.5 % of the track
    ratios = np.diff(np.log(options))
    assert ratios.max() / ratios.min() < 2  # steps roughly even on a log scale
    slider.set_value(5.0).run()
    peaked = np.nanmax(heatmaps(chart_titled(at, ["head 0 ·"]))["softmax"], axis=1).mean()
    at.switch_page("pages/1_Tokens.py").run()  # no attention controls here …
    at.switch_page("pages/3_Attention.py").run()  # … and the value survives
    assert at.sidebar.select_slider(key="w_temperature").value == 5.0 and at.query_params["temp"] == "5.0"
    at.sidebar.button(key="reset_temperature").click().run()
    assert at.sidebar.select_slider(key="w_temperature").value == 1.0
    assert np.nanmax(heatmaps(chart_titled(at, ["head 0 ·"]))["softmax"], axis=1).mean() > peaked


def test_model_box_checks_a_typed_id_before_loading(tiny_model_dir, monkeypatch):
    monkeypatch.setenv("ATTENTION_VIZ_ALLOW_LOCAL", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    at = start().switch_page("pages/3_Attention.py").run()
    at.sidebar.selectbox(key="w_model_choice").set_value("custom").run()
    assert at.sidebar.selectbox(key="w_model_choice").value == "custom"  # no snapping back to the toy model
    box = at.sidebar.text_input(key="w_custom_model")
    assert chart_titled(at, ["toy · layer 0 · head 0"])  # the toy model stays until a typed id is loaded

    box.set_value("someone/not-a-cached-model").run()
    at.sidebar.button(key="load_custom_model").click().run()
    message = " ".join(e.value for e in at.sidebar.error).replace("\\", "")
    assert "not in the local cache" in message and "huggingface-cli download someone/not-a-cached-model" in message
    assert chart_titled(at, ["toy · layer 0 · head 0"]) and at.sidebar.text_input(key="w_custom_model").value == "someone/not-a-cached-model"

    empty = tiny_model_dir("distilbert").parent / "empty-folder"
    empty.mkdir(exist_ok=True)
    at.sidebar.text_input(key="w_custom_model").set_value(str(empty)).run()
    at.sidebar.button(key="load_custom_model").click().run()
    assert any("no config.json" in e.value.replace("\\", "") for e in at.sidebar.error)

    folder = str(tiny_model_dir("distilbert"))
    at.sidebar.text_input(key="w_custom_model").set_value(folder).run()
    at.sidebar.button(key="load_custom_model").click().run()
    assert not at.exception and not at.sidebar.error
    spec = chart_titled(at, ["layer 0 · head 0"])
    assert folder.split("/")[-1] in spec["layout"]["title"]["text"].replace("\\", "")
    assert spec["layout"]["xaxis"]["ticktext"][0] == "[CLS]"
    assert at.query_params["model"] == folder


def test_scaling_lab_follows_its_d_k_slider_and_marks_the_models_own():
    at = start().switch_page("pages/8_Scaling_lab.py").run()
    assert not at.exception and not at.error
    at.slider(key="w_lab_d_k").set_value(1024).run()
    row = chart_titled(at, ["d_k = 1024"])
    bars = {bar["name"]: np.array(bar["y"], dtype=float) for bar in row["data"]}
    assert bars["softmax(q·k), no division"].max() > 0.99 > bars["softmax(q·k / √d_k)"].max()
    spread = chart_titled(at, ["Spread of q·k"])
    marks = sorted(round(shape["x0"]) for shape in spread["layout"]["shapes"])
    assert marks == [32, 1024]  # the toy model's d_k = 128 / 4 heads, and the chosen one
    assert at.query_params["dk"] == "1024"
    assert not [w for w in at.sidebar.get("select_slider") if w.key == "w_temperature"]


def test_a_lesson_asks_before_replacing_typed_sentences_stays_on_its_page_and_undoes():
    at = start()
    at.sidebar.text_area(key="w_text").set_value("My own sentence about the bank.").run()
    at.switch_page("pages/7_Lessons.py").run()
    at.button(key="lesson_causal-mask").click().run()
    assert any("replaces your sentences" in w.value for w in at.warning)  # asked, nothing replaced yet
    assert at.sidebar.text_area(key="w_text").value == "My own sentence about the bank."
    at.button(key="lesson_replace_causal-mask").click().run()
    assert not at.exception
    at.switch_page("pages/3_Attention.py").run()  # AppTest stays on the page the lesson opened
    markdown = " ".join(m.value for m in at.main.markdown)
    assert "Lesson: What the causal mask does" in markdown and "Ask the class:" in markdown and "first row always a single 1" in markdown
    assert [w.key for w in at.main.button_group][:1] == ["w_mask"]  # the control the question talks about, beside it
    assert "w_mask" not in {w.key for w in at.sidebar.button_group}
    pattern = heatmaps(chart_titled(at, ["toy · layer 0 · head 0 · mask causal+padding"]))["softmax"]
    assert pattern.shape == (7, 7) and np.isnan(pattern[np.triu(np.ones((7, 7), dtype=bool), k=1)]).all()
    at.main.button_group(key="w_mask").set_value("none").run()
    assert not np.isnan(heatmaps(chart_titled(at, ["head 0 · mask none"]))["softmax"]).any()
    at.button(key="lesson_undo").click().run()
    assert at.sidebar.text_area(key="w_text").value == "My own sentence about the bank."
    assert not any("Lesson:" in m.value for m in at.main.markdown)
    ticks = chart_titled(at, ["toy · layer 0 · head 0 · mask causal+padding"])["layout"]["xaxis"]["ticktext"]
    assert ticks == toy_tokens("My own sentence about the bank.")  # the user's sentence back, in the toy's own pieces


def what_if_badges(at):
    return [m.value.replace("\\", "") for m in at.markdown if "what-if" in m.value.replace("\\", "")]


def test_a_token_hidden_in_one_sentence_by_its_text():
    at = start().switch_page("pages/3_Attention.py").run()
    at.sidebar.text_area(key="w_text").set_value("A man fishing on a river bank.\nHe went to the bank to get cash.").run()
    hide = at.sidebar.multiselect(key="w_hidden")
    labels = list(hide.options)  # the sentence shown's tokens first, then the other's
    assert labels[:2] == ["a (sentence 1, position 0)", "man (sentence 1, position 1)"]
    assert "bank (sentence 1, position 6)" in labels and "the (sentence 2, position 3)" in labels
    shown = np.isnan(heatmaps(chart_titled(at, ["head 0 ·"]))["softmax"])
    hide.select("bank (sentence 1, position 6)").run()
    assert at.query_params["hide"] == "0.6"
    assert what_if_badges(at) and "hidden: 'bank' in sentence 1" in what_if_badges(at)[0]
    spec = chart_titled(at, ["head 0 ·", "hidden “bank”"])
    pattern = heatmaps(spec)["softmax"]
    assert np.isnan(pattern[6:7, 6]).all() and not shown[6, 6]  # the key is a gap for the queries that could see it
    np.testing.assert_allclose(np.nansum(pattern[:7], axis=1), 1, atol=1e-5)
    at.sidebar.selectbox(key="w_sentence").set_value(1).run()  # sentence 2: its "get" at position 6 stays
    other = heatmaps(chart_titled(at, ["head 0 ·"]))["softmax"]
    assert not np.isnan(other[6:, 6]).any() and "hidden" not in chart_titled(at, ["head 0 ·"])["layout"]["title"]["text"].replace("what-if", "")
    labels = list(at.sidebar.multiselect(key="w_hidden").options)
    assert labels[0] == "he (sentence 2, position 0)" and "bank (sentence 1, position 6)" in labels
    at.button(key="back_to_own").click().run()
    assert at.sidebar.multiselect(key="w_hidden").value == [] and not what_if_badges(at)


def test_a_tokens_pill_hides_it_and_the_box_shows_the_same_tokens():
    """A row of pills, one a token of the sentence shown, hides a key in one click; the box below it offers
    every sentence's tokens. Both show the same hidden tokens, whichever was used, for each sentence shown."""
    at = start().switch_page("pages/3_Attention.py").run()
    at.sidebar.text_area(key="w_text").set_value("A man fishing on a river bank.\nHe went to the bank to get cash.").run()
    pills = at.sidebar.button_group(key="w_hide_here")
    assert pills.label == "Hide key tokens" and at.sidebar.multiselect(key="w_hidden").label == "…or find one in any sentence"
    assert [option.content.replace("\u200b", "") for option in pills.proto.options] == ["a", "man", "fishing", "on", "a", "river", "bank", "."]
    pills.set_value([6]).run()
    assert at.query_params["hide"] == "0.6" and at.sidebar.multiselect(key="w_hidden").value == [(0, 6)]
    assert "hidden “bank”" in chart_titled(at, ["head 0 ·"])["layout"]["title"]["text"]
    at.sidebar.multiselect(key="w_hidden").select("the (sentence 2, position 3)").run()
    assert at.query_params["hide"] == "0.6,1.3" and at.sidebar.button_group(key="w_hide_here").value == [6]
    at.sidebar.selectbox(key="w_sentence").set_value(1).run()  # sentence 2 shown: its pills, its hidden "the"
    assert at.sidebar.button_group(key="w_hide_here").value == [3]
    at.sidebar.button_group(key="w_hide_here").set_value([3, 4]).run()
    assert at.query_params["hide"] == "0.6,1.3,1.4"  # sentence 1's "bank" kept
    assert at.sidebar.multiselect(key="w_hidden").value == [(0, 6), (1, 3), (1, 4)]
    at.button(key="back_to_own").click().run()
    assert at.sidebar.button_group(key="w_hide_here").value == [] and at.sidebar.multiselect(key="w_hidden").value == []
    at.sidebar.text_area(key="w_text").set_value(" ".join(["word"] * 40)).run()  # too long for a row of pills: the box alone
    assert not [w for w in at.sidebar.button_group if w.key == "w_hide_here"] and at.sidebar.multiselect(key="w_hidden").label == "Hide key tokens"
    assert not at.exception


def test_a_first_version_link_hides_the_position_in_each_sentence_and_says_so():
    at = AppTest.from_file(str(ROOT / "home.py"), default_timeout=120)
    at.query_params["text"] = "A man fishing on a river bank.\nHe went to the bank to get cash."
    at.query_params["hide"] = "6"
    at.run()
    assert any("older version" in i.value and "position 6" in i.value for i in at.info)
    at.switch_page("pages/3_Attention.py").run()
    assert not at.exception
    assert at.sidebar.multiselect(key="w_hidden").value == [(0, 6), (1, 6)]
    assert "hidden: 'bank' in sentence 1 and 'get' in sentence 2" in what_if_badges(at)[0]


def test_editing_a_sentence_lets_go_of_the_tokens_hidden_in_it_and_says_so():
    at = start().switch_page("pages/3_Attention.py").run()
    at.sidebar.text_area(key="w_text").set_value("A man fishing on a river bank.\nHe went to the bank to get cash.").run()
    hide = at.sidebar.multiselect(key="w_hidden")
    first_bank = next(label for label in hide.options if label.startswith("bank (sentence 1"))
    second_bank = next(label for label in hide.options if label.startswith("bank (sentence 2"))
    hide.select(first_bank).select(second_bank).run()
    assert len(at.sidebar.multiselect(key="w_hidden").value) == 2
    at.sidebar.text_area(key="w_text").set_value("A man fishing on a river bank.\nShe went to the bank to get cash.").run()
    kept = at.sidebar.multiselect(key="w_hidden").value
    assert [sentence for sentence, _ in kept] == [0]  # sentence 1 reads as before; sentence 2 changed
    assert any("Sentence 2 has changed" in i.value for i in at.info)
    assert "hidden: 'bank' in sentence 1" in what_if_badges(at)[0] and "sentence 2" not in what_if_badges(at)[0]


def test_follow_edit_keeps_only_the_hidden_tokens_of_unchanged_sentences():
    from dataclasses import replace

    from viz.content.settings import Settings, follow_edit

    before = Settings(text="one two three\n\nfour five six\nseven", hidden=((0, 1), (1, 2), (2, 0)))
    same, notices = follow_edit(before, replace(before, layer=1))
    assert same.hidden == before.hidden and notices == []
    edited, notices = follow_edit(before, replace(before, text="one two three\n\nfour FIVE six"))  # sentence 3 gone too
    assert edited.hidden == ((0, 1),) and notices == [
        "Sentences 2, 3 have changed, so the tokens hidden in them are shown again (choose them anew under “Hide key tokens”)."
    ]


def test_model_box_names_fit_and_the_description_stands_below():
    from viz.content.settings import BUILTIN_MODELS, MODEL_NAMES

    assert set(MODEL_NAMES) == set(BUILTIN_MODELS) and max(len(name) for name in MODEL_NAMES.values()) <= 36
    at = start()
    box = at.sidebar.selectbox(key="w_model_choice")
    assert box.format_func("smollm2") == "SmolLM2-135M-Instruct"
    assert BUILTIN_MODELS["toy"] in [c.value for c in at.sidebar.caption]
