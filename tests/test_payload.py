"""What the chart component is sent (viz.payload.browser_json): the figure itself in fewer bytes. A hover text
per cell goes as its row and column parts, a large heatmap's values to the 4 significant digits its hover
shows; chart.js unpacks both (in chromium: tests/test_chart_browser.py). The exports keep the figure's own."""

from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache

import numpy as np
import pytest
import plotly.io

from apptest_helpers import decode
from viz.payload import DECIMAL_Z, TEXT_PARTS
from chart_data import join_text
from viz import plain
from viz.payload import DECIMAL_MIN_VALUES, browser_json, decimal_digits, outer_parts

BASE64_FLOAT32 = 4 * 4 / 3  # bytes of JSON per float32 value in plotly's typed arrays (base64)
BASE64_DECIMAL = 3 * 4 / 3  # and per value to 4 significant digits (ui.figures.decimal_digits)


def shown(value) -> str:
    """What plotly's hover `%{z:.4g}` shows of a float32 value: JavaScript's toPrecision(4) of it (its exact
    decimal value rounded half up), here as digits and exponent; "" for a gap."""
    if np.isnan(value):
        return ""
    exact = Decimal(float(value))
    if exact == 0:
        return "0"
    digits = exact.scaleb(3 - exact.adjusted()).quantize(Decimal(1), rounding=ROUND_HALF_UP)
    return f"{digits}e{exact.adjusted()}" if abs(digits) < 10_000 else f"{digits / 10:.0f}e{exact.adjusted() + 1}"


def same_digits(sent, original) -> bool:
    return [shown(v) for v in np.asarray(sent, dtype=np.float32).ravel()] == [shown(v) for v in np.asarray(original, dtype=np.float32).ravel()]


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


def sent(fig: dict) -> dict:
    """The figure as chart.js hands it to plotly: the JSON sent, with its text parts joined."""
    return join_text(json.loads(browser_json(fig)))


def rounded_traces(fig: dict) -> list[str]:
    """Check that `fig` arrives as plotly writes it (`plotly.io.to_json`: every hover text, layout, value), except that a large
    heatmap whose hover shows `%{z:.4g}` may arrive to those 4 digits; the names of those traces."""
    want, got = json.loads(plotly.io.to_json(fig)), sent(fig)
    types = {trace.get("type", "scatter") for trace in want["data"]}
    assert set(got["layout"]["template"]["data"]) == types & set(want["layout"]["template"]["data"])
    want["layout"]["template"]["data"] = {name: value for name, value in want["layout"]["template"]["data"].items() if name in types}
    rounded = []
    for mine, theirs, made in zip(got["data"], want["data"], fig["data"], strict=True):
        if mine.get("z") != theirs.get("z"):
            assert np.size(made["z"]) >= DECIMAL_MIN_VALUES and "%{z:.4g}" in made["hovertemplate"], made.get("name")
            assert same_digits(decode(mine["z"]), made["z"]), made.get("name")
            np.testing.assert_allclose(decode(mine["z"]), made["z"], rtol=6e-4)  # colours: 1/2000 of the value at most
            mine.pop("z"), theirs.pop("z")
            rounded.append(made.get("name"))
    assert got == want
    return rounded


def test_the_template_sent_holds_the_trace_defaults_of_the_figures_types_only():
    """plotly applies a template's defaults for a trace type to traces of that type alone: the others stay
    on the server (a heatmap figure's plotly_white is sent in 3.2 KB, not 7.2 KB), the layout's all go."""
    fig = plain.figure([dict(type="heatmap", z=np.eye(3, dtype=np.float32)), dict(type="scatter", x=[0, 1], y=[1, 0])], dict(title=plain.title("t")))
    full = json.loads(plotly.io.to_json(fig))["layout"]["template"]
    template = json.loads(browser_json(fig))["layout"]["template"]
    assert set(full["data"]) > {"heatmap", "scatter", "bar", "surface"} and set(template["data"]) == {"heatmap", "scatter"}
    assert template["data"]["heatmap"] == full["data"]["heatmap"] and template["layout"] == full["layout"]
    assert len(json.dumps(template)) < len(json.dumps(full)) / 2


def test_at_16_tokens_the_browser_draws_the_figure_itself():
    """Every figure of the Attention page at 16 tokens (toy model): the JSON sent, unpacked, equals
    `fig.to_json()`, every hover text and every float32 value; only the layer's W_O (128 × 128, whatever
    the input) arrives to the 4 significant digits its hover shows."""
    *_, figures = attention_of(16)
    assert {"value-step-L0-H0", "output-step-L0", "stages-L0-H0"} <= set(figures)
    assert {figure_id: rounded_traces(fig) for figure_id, fig in figures.items() if rounded_traces(fig)} == {"output-step-L0": ["W_O"]}


def test_at_128_tokens_large_heatmaps_arrive_to_the_digits_their_hover_shows():
    """At 128 tokens the stages' 128 × 128 panels, the value step's pattern and the output step's arrays go
    as 4 significant digits: every value shows the same digits in the hover; the rest is the figure's own."""
    *_, figures = attention_of(128)
    rounded = {figure_id: rounded_traces(fig) for figure_id, fig in figures.items()}
    assert len(rounded["stages-L0-H0"]) == 4 and rounded["value-step-L0-H0"] == ["pattern"]
    assert rounded["overview-all-heads"] == []  # its hover shows `%{z:.3f}`: sent as float32


def test_the_value_step_at_512_tokens_sends_its_numbers_and_little_else():
    """The value step at 512 tokens (toy model): the 512 × 512 pattern and V and z (512 × d_head each) to 4
    significant digits are 1.18 MB of base64 (1.57 MB as float32), which the figure sent may exceed by at
    most 10 % (labels, meta, layout). It sent 3.27 MB: 16,384 hover texts per panel for V and z
    ("query 5: bank<br>key 3: 3"), float32, and plotly's escape of every "/" of the base64 as "\\u002f"."""
    _, trace, _, figures = attention_of(512)
    n, d_head = 512, trace.d_head
    arrays = BASE64_DECIMAL * (n * n + 2 * n * d_head)
    size = len(browser_json(figures["value-step-L0-H0"]).encode("utf-8"))
    assert size <= 1.1 * arrays, f"{size / 1e6:.2f} MB sent for {arrays / 1e6:.2f} MB of arrays"
    assert size < 0.8 * BASE64_FLOAT32 * (n * n + 2 * n * d_head)


def test_the_value_step_sent_at_512_tokens_shows_the_models_numbers_and_names_the_tokens():
    _, trace, _, figures = attention_of(512)
    fig = figures["value-step-L0-H0"]
    raw = browser_json(fig)
    spec = sent(fig)
    panels = {t["name"]: t for t in spec["data"]}
    stages = trace.stages(0)
    assert all(DECIMAL_Z in t for t in json.loads(raw)["data"] if t["type"] == "heatmap")
    assert same_digits(decode(panels["V"]["z"]), trace.v[0, 0, 0].numpy())  # what the hover shows: the model's values
    assert same_digits(decode(panels["z"]["z"]), stages.z[0, 0].numpy())
    pattern = decode(panels["pattern"]["z"])
    allowed = stages.mask[0, 0].numpy()
    assert same_digits(pattern[allowed], stages.pattern[0, 0].numpy()[allowed])
    assert np.isnan(pattern[~allowed]).all()  # masked cells are gaps
    for made in fig["data"]:  # the figure, which the exports are made of, keeps float32
        assert made["z"].dtype == np.float32
    np.testing.assert_array_equal(next(t for t in fig["data"] if t.get("name") == "V")["z"], trace.v[0, 0, 0].numpy())

    for name in ("V", "z"):
        labels = panels[name]["meta"]["y_labels"]  # the tokens, made safe for plotly's HTML
        text = np.array(panels[name]["text"])
        assert text.shape == (512, trace.d_head)
        assert (text == np.array(next(t for t in fig["data"] if t.get("name") == name)["text"])).all()  # the figure's own hover text
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

    fig = plain.figure([{"type": "heatmap", "z": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "text": odd, "hovertemplate": "%{text}"}], {})
    spec = json.loads(browser_json(fig))
    assert spec["data"][0]["text"] == odd and TEXT_PARTS not in spec["data"][0]
    fig = plain.figure([{"type": "heatmap", "z": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "text": table, "hovertemplate": "%{text}"}], {})
    assert "text" not in json.loads(browser_json(fig))["data"][0] and rounded_traces(fig) == []


def test_labels_with_slashes_quotes_and_backslashes_arrive_unchanged():
    labels = ['a/b', '"q"', "back\\slash", "<b>", "\\u002f", "é"]
    text = [[f"{r}|{c}" for c in labels] for r in labels]
    fig = plain.figure([{"type": "heatmap", "z": np.arange(36, dtype=np.float32).reshape(6, 6), "text": text}], {"title": plain.title("\\u002f </script>")})
    assert rounded_traces(fig) == [] and sent(fig)["data"][0]["text"] == text


def test_four_significant_digits_round_as_the_hover_does():
    """Half away from zero on the exact value, as JavaScript's toPrecision: 0.015625 (uniform attention over
    64 keys) shows 0.01563; negative, tiny, huge and subnormal values, zeros and gaps survive."""
    from chart_data import decimal_values

    values = np.array(
        [0.015625, -0.015625, 1.0625, 0.99995, 0.999949, 9999.5, 12345.0, -3.14159265, 1e-30, 3e38, 1e-45, 0.0, -0.0, np.nan, 1.0, 0.1]
        + list(np.random.default_rng(0).normal(scale=10.0, size=10_000)),
        dtype=np.float32,
    ).reshape(1, -1)
    packed = decimal_digits(values)
    assert len(packed) == 3 * values.size
    import base64

    back = decode(decimal_values({"shape": list(values.shape), "bdata": base64.b64encode(packed).decode()}))
    assert same_digits(back, values)
    assert shown(back[0, 0]) == "1563e-2" and back[0, 12] == 0 and np.isnan(back[0, 13])
    assert decimal_digits(np.array([[1.0, np.inf]])) is None  # sent as float32 instead


@pytest.mark.parametrize(
    "values",
    [
        [0.25, 0.5, 0.015625, 0.0001234, 999.95, 0.99995],  # no gap or zero, every value multiplied up to 4 digits
        [12345.0, 99995.0, 1e30, 3e38, 10_000.0, 1234.5],  # every value divided down
        [9999.5 * 10.0**k for k in range(-40, 35)],  # each rounds up to the next power of ten
        [10.0**k for k in range(-44, 39)] + [np.nextafter(np.float32(10.0**k), np.float32(0)) for k in range(-40, 38)],
    ],
    ids=["all below 1000", "all above", "rounding up a power", "powers of ten and just below"],
)
def test_four_significant_digits_whatever_the_powers(values):
    """The power of ten comes from the binary exponent, one too small at times: the digits are still those
    the hover shows, for arrays with no gap (sent without a copy) and every power."""
    from chart_data import decimal_values
    import base64

    array = np.array(values, dtype=np.float32).reshape(1, -1)
    packed = decimal_digits(array)
    back = decode(decimal_values({"shape": list(array.shape), "bdata": base64.b64encode(packed).decode()}))
    assert same_digits(back, array)
