"""What the chart component is sent (ui.figures.browser_json): the figure itself in fewer bytes. A hover text
per cell goes as its row and column parts, joined again by chart.js (in chromium: tests/test_chart_browser.py);
the numbers are the figure's float32 arrays, unrounded."""

from __future__ import annotations

import json
from functools import lru_cache

import numpy as np
import plotly.graph_objects as go
import pytest

from apptest_helpers import decode
from ui.chart import TEXT_PARTS, join_text
from ui.figures import browser_json, outer_parts

BASE64_FLOAT32 = 4 * 4 / 3  # bytes of JSON per float32 value in plotly's typed arrays (base64)


@lru_cache(maxsize=2)
def attention_of(n_tokens: int):
    """(model, trace, settings, the Attention page's figures) on the toy model for a sentence of n tokens."""
    from bench.browser import texts_of_tokens
    from model import load_model
    from viz.content import Settings, run_model
    from viz.content.attention import attention_figures

    model = load_model("toy")
    settings = Settings(text=texts_of_tokens("toy", (n_tokens,))[n_tokens])
    trace = run_model(model, settings.sentences, settings.display)
    return model, trace, settings, attention_figures(settings, trace, model=model).figures


def sent(fig: go.Figure) -> dict:
    """The figure as chart.js hands it to plotly: the JSON sent, with its text parts joined."""
    return join_text(json.loads(browser_json(fig)))


@pytest.mark.parametrize("n_tokens", [16, 128])
def test_what_the_browser_draws_is_the_figure_itself(n_tokens):
    """Every figure of the Attention page: the JSON sent, its text joined, equals `fig.to_json()` (numbers,
    hover texts, layout): at 16 tokens the charts look exactly as before."""
    *_, figures = attention_of(n_tokens)
    assert {"value-step-L0-H0", "output-step-L0", "stages-L0-H0"} <= set(figures)
    for figure_id, fig in figures.items():
        assert sent(fig) == json.loads(fig.to_json()), figure_id


def test_the_value_step_at_512_tokens_sends_its_numbers_and_little_else():
    """The value step at 512 tokens (toy model): the 512 × 512 pattern and V and z (512 × d_head each) as
    float32 are 1.57 MB of base64, which the figure sent may exceed by at most 10 % (labels, meta, layout).
    It sent 3.27 MB: 16,384 hover texts per panel for V and z ("query 5: bank<br>key 3: 3"), and plotly's
    escape of every "/" of the base64 as "\\u002f"."""
    _, trace, _, figures = attention_of(512)
    n, d_head = 512, trace.d_head
    arrays = BASE64_FLOAT32 * (n * n + 2 * n * d_head)
    size = len(browser_json(figures["value-step-L0-H0"]).encode("utf-8"))
    assert size <= 1.1 * arrays, f"{size / 1e6:.2f} MB sent for {arrays / 1e6:.2f} MB of float32 arrays"


def test_the_value_step_sent_at_512_tokens_shows_the_models_numbers_and_names_the_tokens():
    _, trace, _, figures = attention_of(512)
    fig = figures["value-step-L0-H0"]
    raw = browser_json(fig)
    spec = sent(fig)
    panels = {t["name"]: t for t in spec["data"]}
    stages = trace.stages(0)
    np.testing.assert_array_equal(decode(panels["V"]["z"]), trace.v[0, 0, 0].numpy())  # unrounded float32
    np.testing.assert_array_equal(decode(panels["z"]["z"]), stages.z[0, 0].numpy())
    pattern = decode(panels["pattern"]["z"])
    allowed = stages.mask[0, 0].numpy()
    np.testing.assert_array_equal(pattern[allowed], stages.pattern[0, 0].numpy()[allowed])
    assert np.isnan(pattern[~allowed]).all()  # masked cells are gaps

    for name in ("V", "z"):
        labels = panels[name]["meta"]["y_labels"]  # the tokens, made safe for plotly's HTML
        text = np.array(panels[name]["text"])
        assert text.shape == (512, trace.d_head)
        assert (text == np.array(next(t for t in fig.data if t.name == name).text)).all()  # the figure's own hover text
        for q in (0, 5, 511):
            assert text[q, 3] == f"query {q}: {labels[q]}<br>key 3: 3"  # hover names the token of the row
        assert TEXT_PARTS in next(t for t in json.loads(raw)["data"] if t["name"] == name)
    assert raw.count("query 5: ") == 2  # once per panel (V, z), not once per cell
    assert "\\u002f" not in raw


def test_a_text_that_is_not_rows_joined_to_columns_is_sent_as_it_is():
    rows, cols = ["query 0: the", "query 1: cat"], ["<br>key 0: 0", "<br>key 1: 1", "<br>key 2: 2"]
    table = [[row + col for col in cols] for row in rows]
    assert outer_parts(table) == (["query 0: the<br>key ", "query 1: cat<br>key "], ["0: 0", "1: 1", "2: 2"])
    assert outer_parts([["only"], ["one column"]]) == (["only", "one column"], [""])
    odd = [row[:] for row in table]
    odd[1][2] = "query 1: cat<br>key 2: 9"
    assert outer_parts(odd) is None
    assert outer_parts([[1, 2], [3, 4]]) is None and outer_parts(["a", "b"]) is None and outer_parts([[]]) is None

    fig = go.Figure(go.Heatmap(z=[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], text=odd, hovertemplate="%{text}"))
    spec = json.loads(browser_json(fig))
    assert spec["data"][0]["text"] == odd and TEXT_PARTS not in spec["data"][0]
    fig = go.Figure(go.Heatmap(z=[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], text=table, hovertemplate="%{text}"))
    assert "text" not in json.loads(browser_json(fig))["data"][0] and sent(fig) == json.loads(fig.to_json())


def test_labels_with_slashes_quotes_and_backslashes_arrive_unchanged():
    labels = ['a/b', '"q"', "back\\slash", "<b>", "\\u002f", "é"]
    fig = go.Figure(go.Heatmap(z=np.arange(36, dtype=np.float32).reshape(6, 6), text=[[f"{r}|{c}" for c in labels] for r in labels]))
    fig.update_layout(title=dict(text="\\u002f </script>"))
    assert sent(fig) == json.loads(fig.to_json())
