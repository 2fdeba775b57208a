"""The Generate page as a user reaches it: its figures hold `model.generate`'s own numbers, step by step."""

import numpy as np

from apptest_helpers import chart_titled, charts, heatmaps
from apptest_helpers import open_page as open_at

PAGE = "pages/10_Generate.py"
PROMPT = "The cat sat on the"


def open_page(query=None, first_notices=None):
    return open_at(PAGE, query, first_notices)


def query_row(at):
    return heatmaps(chart_titled(at, ["the query of"]))["last query"]


def test_a_greedy_run_on_the_toy_shows_the_models_own_numbers_at_each_step():
    from model import load_model

    n = 5
    run = load_model("toy").generate(PROMPT, n)
    at = open_page()
    at.text_area(key="w_prompt").set_value(PROMPT).run()
    at.slider(key="w_new_tokens").set_value(n).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.select_slider(key="w_step").options == [f"{i + 1} · {t}" for i, t in enumerate(run.tokens[len(run.prompt_ids) :])]

    for step, layer in ((0, 0), (3, 1), (4, 1)):
        at.select_slider(key="w_step").set_value(step)
        at.select_slider(key="w_layer").set_value(layer).run()
        s = run.steps[step]
        assert chart_titled(at, [f"Step {step + 1} of {n}", "(greedy)"])
        np.testing.assert_allclose(query_row(at), s.pattern[layer].numpy(), rtol=1e-6, atol=1e-7)
        assert query_row(at).shape == (load_model("toy").n_heads, s.position + 1)
        assert chart_titled(at, [f"Layer {layer}: the cached keys, {s.n_keys} rows"])
        assert chart_titled(at, [f"{s.cache_bytes:,} bytes"])
        table = at.dataframe[0].value  # the candidates of the step
        assert table.id.tolist()[:3] == [c.id for c in s.candidates[:3]] and table.written.sum() == 1
        np.testing.assert_allclose(table.probability, [c.probability for c in s.candidates], atol=1e-6)
        assert at.query_params.get("step") == (str(step) if step else None)  # the link follows (step 0 is the default)
    assert any(run.text.replace(".", "\\.") in m.value for m in at.markdown)


def test_the_buttons_move_the_step_and_the_link_reproduces_a_sampled_run():
    from model import load_model

    run = load_model("toy").generate(PROMPT, 6, temperature=1.5, top_k=5, seed=7)
    query = {"prompt": PROMPT, "gen_n": "6", "sample": "1", "ntemp": "1.5", "gen_topk": "5", "seed": "7", "step": "2"}
    at = open_page(query)
    assert chart_titled(at, ["Step 3 of 6", "sampled at T = 1.5, top-k 5, seed 7"])
    np.testing.assert_allclose(query_row(at), run.steps[2].pattern[0].numpy(), rtol=1e-6, atol=1e-7)
    at.button(key="generate_next").click().run()
    assert chart_titled(at, ["Step 4 of 6"]) and at.query_params["step"] == "3"
    at.button(key="generate_previous").click().run()
    at.button(key="generate_previous").click().run()
    assert chart_titled(at, ["Step 2 of 6"])
    np.testing.assert_allclose(query_row(at), run.steps[1].pattern[0].numpy(), rtol=1e-6, atol=1e-7)


def test_a_bidirectional_model_says_why_it_cannot_generate():
    at = open_page({"model": "toy-bidirectional"})
    assert not at.error, [e.value for e in at.error]
    assert charts(at) == []
    assert any("is bidirectional" in w.value and "Choose a causal model" in w.value for w in at.warning)


def test_bad_link_values_fall_back_with_a_notice():
    notices = []
    at = open_page({"gen_n": "500", "gen_topp": "nan", "step": "40", "prompt": PROMPT}, notices)
    shown = " ".join(notices).replace("\\", "")  # markdown escapes
    assert "“gen_n” ('500') is not valid" in shown and "“gen_topp” ('nan') is not valid" in shown
    texts = " ".join(i.value for i in at.info)
    assert "Step 41 is beyond this run (16 steps); showing the last." in texts
    assert chart_titled(at, ["Step 16 of 16"]) and at.query_params["step"] == "15"


def test_the_generated_text_opens_on_the_attention_page():
    from model import load_model

    run = load_model("toy").generate(PROMPT, 4)
    at = open_page({"prompt": PROMPT, "gen_n": "4"})
    at.button(key="generate_open_attention").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Attention"
    assert at.sidebar.text_area(key="w_text").value == " ".join((PROMPT + run.text).splitlines())


def test_smollm2_writes_paris_and_the_page_shows_its_grouped_heads(smollm2):
    from ui.view import cached_model

    cached_model.cache.get(("smollm2", ""), lambda: smollm2)  # the session's loaded model, not a second load
    run = smollm2.generate("The capital of France is", 3)
    at = open_page({"model": "smollm2", "gen_n": "3", "prompt": "The capital of France is"})
    assert run.text.startswith(" Paris")
    assert chart_titled(at, ["Step 1 of 3: “ Paris” written at position 5 (greedy)"])
    np.testing.assert_allclose(query_row(at), run.steps[0].pattern[0].numpy(), rtol=1e-5, atol=1e-6)
    assert query_row(at).shape == (9, 5)
    shown = " ".join(c.value for c in at.caption).replace("\\", "")
    assert "9 query heads share 3 cached key/value heads" in shown and "(×3)" in shown


def test_play_starts_from_the_step_shown_and_a_step_by_hand_or_pause_stops_it():
    from ui.generate import PLAYING

    at = open_page({"prompt": PROMPT, "gen_n": "4", "step": "1"})
    assert at.button(key="generate_play").label == "Play"
    at.button(key="generate_play").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state[PLAYING] and at.button(key="generate_play").label == "Pause"
    assert chart_titled(at, ["Step 2 of 4"])  # the page's own run draws the step shown; the timer's ticks move it
    at.button(key="generate_next").click().run()  # a step by hand stops playing
    assert not at.session_state[PLAYING] and at.button(key="generate_play").label == "Play"
    assert chart_titled(at, ["Step 3 of 4"]) and at.query_params["step"] == "2"
    at.button(key="generate_play").click().run()
    at.button(key="generate_play").click().run()  # Pause
    assert not at.session_state[PLAYING] and at.button(key="generate_play").label == "Play"
    assert chart_titled(at, ["Step 3 of 4"]) and at.query_params["step"] == "2"


def test_play_on_the_last_step_starts_again_from_the_first():
    from ui.generate import PLAYING

    at = open_page({"prompt": PROMPT, "gen_n": "4", "step": "3"})
    assert at.button(key="generate_next").disabled
    at.button(key="generate_play").click().run()
    assert at.session_state[PLAYING] and chart_titled(at, ["Step 1 of 4"]) and at.query_params.get("step") is None
    at.select_slider(key="w_step").set_value(2).run()  # the slider moved by hand stops playing too
    assert not at.session_state[PLAYING] and chart_titled(at, ["Step 3 of 4"])


def test_a_run_of_one_step_has_no_step_controls():
    at = open_page({"prompt": PROMPT, "gen_n": "1"})
    assert chart_titled(at, ["Step 1 of 1"])
    assert [b.key for b in at.button if b.key and b.key.startswith("generate_")] == ["generate_open_attention"]
