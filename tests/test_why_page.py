"""The Why page as a user reaches it: the bar of one pair holds parts that add up to the model's own raw score."""

import numpy as np

from apptest_helpers import chart_titled, charts, decode
from apptest_helpers import open_page as open_at

PAGE = "pages/11_Why.py"
TEXT = "The cat sat on the mat because it was tired."


def decode_list(values):
    """A plotly array that may hold nulls (a gap's bar) as floats, NaN for a null."""
    return [np.nan if v is None else float(v) for v in values] if isinstance(values, list) else list(decode(values).astype(float))


def open_page(query=None, first_notices=None):
    return open_at(PAGE, query, first_notices)


def bar_of_pair(at):
    """The parts of the bar of one pair (name → value) and the sum bar."""
    spec = chart_titled(at, ["Query “", "q·k ="])
    bars = spec["data"][0]
    values = decode(bars["x"]).astype(float)
    return dict(zip(bars["y"][:-1], values[:-1])), values[-1]


def raw_score(model_name, text, layer, head, query, key, **load):
    from model import load_model

    trace = load_model(model_name, **load).trace([text])
    return float(trace.stages(layer).scores_raw[0, head, query, key])


def test_the_parts_of_the_default_pair_sum_to_the_models_raw_score():
    from model import load_model

    trace = load_model("toy").trace([TEXT])
    at = open_page({"text": TEXT, "heads": "2"})
    query = len(trace.tokens[0]) - 2  # the last word, " tired", not the closing "."
    assert trace.tokens[0][query].text == " tired" and trace.tokens[0][-1].text == "."
    key = int(trace.pattern(0, 0)[2, query].argmax())
    assert at.select_slider(key="why_query_slider").value == query and at.select_slider(key="why_key_slider").value == key
    parts, total = bar_of_pair(at)
    expected = float(trace.stages(0).scores_raw[0, 2, query, key])
    assert {"token·token", "token·position", "position·token", "position·position"} <= set(parts)
    np.testing.assert_allclose(sum(parts.values()), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(total, expected, rtol=1e-4, atol=1e-5)
    assert chart_titled(at, ["split by where query and key come from"])
    assert chart_titled(at, ["Layer 0: each head's net lift from", "as a share of its whole lift"])
    assert len(at.dataframe[0].value) > 0  # the parts as a table


def test_moving_the_sliders_changes_the_pair_the_bar_and_the_link():
    at = open_page({"text": TEXT, "layer": "1"})
    at.select_slider(key="why_query_slider").set_value(6).run()
    at.select_slider(key="why_key_slider").set_value(2).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.query_params["why_q"] == "6" and at.query_params["why_k"] == "2"
    assert chart_titled(at, ["(6) and key", "(2), layer 1, head 0"])
    parts, total = bar_of_pair(at)
    expected = raw_score("toy", TEXT, 1, 0, 6, 2)
    np.testing.assert_allclose([sum(parts.values()), total], [expected, expected], rtol=1e-4, atol=1e-5)
    sources = {source for name in parts if not name.startswith("the other") for source in name.split("·")}
    assert "MLP" in sources and sources <= {"token", "position", "attention", "MLP", "bias"}  # earlier layers as attention and MLP (the default)

    assert not any("The mask hides key" in c.value for c in at.caption)
    at.select_slider(key="why_key_slider").set_value(8).run()  # a key after the query: the causal mask hides it
    assert any("The mask hides key 8 from query 6" in c.value for c in at.caption)
    np.testing.assert_allclose(bar_of_pair(at)[1], raw_score("toy", TEXT, 1, 0, 6, 8), rtol=1e-4, atol=1e-5)
    at.select_slider(key="why_key_slider").set_value(2).run()

    at.segmented_control(key="w_why_group").set_value("head").run()
    assert at.query_params["why_group"] == "head"
    parts, total = bar_of_pair(at)
    assert any(name.startswith("layer 0 head ") for name in parts)
    np.testing.assert_allclose(total, expected, rtol=1e-4, atol=1e-5)


def test_bad_link_values_fall_back_with_a_notice():
    notices = []
    at = open_page({"text": TEXT, "why_group": "planets", "why_k": "x", "why_q": "40"}, notices)
    shown = " ".join(notices).replace("\\", "")  # markdown escapes
    assert "“why_group” ('planets') is not valid" in shown and "“why_k” ('x') is not valid" in shown
    assert any("The pair (40, -1) is beyond this sentence" in i.value.replace("\\", "") and "the last word" in i.value for i in at.info)
    assert "why_q" not in at.query_params
    assert at.select_slider(key="why_query_slider").value == len(at.select_slider(key="why_query_slider").options) - 2  # " tired", before "."


def test_with_every_key_hidden_each_head_is_a_captioned_gap_in_the_shares_chart():
    at = open_page({"text": TEXT, "hide": ",".join(str(p) for p in range(30))})
    assert any("every head has no lift" in c.value for c in at.caption)
    shares = chart_titled(at, ["Layer 0: each head's net lift from the parts made of position alone"])
    assert not [y for t in shares["data"] for y in decode_list(t.get("y", [])) if y is not None and not np.isnan(y)]  # no bar …
    assert [a["x"] for a in shares["layout"]["annotations"] if a["text"] == "no lift"] == [f"head {h}" for h in range(4)]  # … a gap each
    parts, total = bar_of_pair(at)  # the raw scores are still there: the mask comes after them
    np.testing.assert_allclose(sum(parts.values()), total, rtol=1e-4, atol=1e-5)


def test_a_post_norm_model_after_its_first_layer_says_why_and_draws_nothing():
    at = open_page({"model": "minilm", "layer": "2"})
    assert any("post-norm" in w.value.replace("\\", "") and "first layer only" in w.value for w in at.warning)
    assert charts(at) == []


def test_every_layer_of_a_random_gpt2_adds_up(tiny_model_dir, monkeypatch):
    monkeypatch.setenv("ATTENTION_VIZ_ALLOW_LOCAL", "1")
    folder = str(tiny_model_dir("gpt2"))
    from model import load_model

    n_layers = load_model(folder).n_layers
    at = open_page({"model": folder, "text": TEXT, "layer": str(n_layers - 1), "why_q": "5", "why_k": "3", "why_group": "layer"})
    parts, total = bar_of_pair(at)
    expected = raw_score(folder, TEXT, n_layers - 1, 0, 5, 3)
    np.testing.assert_allclose([sum(parts.values()), total], [expected, expected], rtol=1e-4, atol=1e-5)
    assert any(name.startswith(f"layer {n_layers - 2} ") or f"·layer {n_layers - 2} " in name for name in parts)
