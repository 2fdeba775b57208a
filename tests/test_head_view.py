"""The head view's data, figure, CSV and standalone page (no browser)."""

import csv
import io
import json
import re
from dataclasses import replace

import numpy as np
import pytest

from model import load_model
from ui.head_view import CSS, JS
from viz.head_view import (
    FOCUS_WINDOW,
    component_data,
    focus_start,
    head_view_data,
    head_view_figure,
    head_view_html,
    pinned_row_csv,
)

TEXT = "The cat sat on the mat because it was tired."


@pytest.fixture(scope="module")
def trace():
    return load_model("toy").trace([TEXT])


def test_data_is_the_traces_pattern_and_lines_keep_only_weights_above_the_threshold(trace):
    view = head_view_data(trace, 0, 1, [0, 2])
    pattern = trace.stages(1).pattern[0, [0, 2]].numpy()
    np.testing.assert_array_equal(view.weights, pattern)
    data = component_data(view, pinned=4)
    for line, weights in zip(data["lines"], pattern):
        expected = np.argwhere(weights >= view.threshold)
        assert list(zip(line["q"], line["k"])) == [tuple(x) for x in expected]
        assert line["w"] == [round(float(weights[q, k]) * 1000) for q, k in expected]
    np.testing.assert_allclose(data["row"]["weights"], pattern[:, 4], atol=1e-6)
    assert data["row"]["masked"] == [k > 4 for k in range(len(view.labels))]  # the trained toy model is causal
    hidden, total = view.hidden_lines()
    assert hidden == int(((pattern > 0) & (pattern < view.threshold)).sum()) and total == int((pattern > 0).sum())
    assert f"({hidden:,} of {total:,})" in data["note"]
    json.dumps(data)


def test_figure_draws_the_pinned_row_only_with_one_opacity_step_per_weight(trace):
    view = head_view_data(trace, 0, 0, [0, 1, 2, 3])
    fig = head_view_figure(view, pinned=5, pair=(5, 1))
    lines = [t for t in fig["data"] if t["mode"] == "lines" and t["x"][0] is not None and t["name"] != "worked example"]
    drawn = sum(len(t["x"]) // 3 for t in lines)
    assert drawn == int((view.weights[:, 5] >= view.threshold).sum())
    for t in lines:
        head = int(t["name"].split()[1])
        weights = view.weights[view.heads.index(head), 5]
        keys = [round(-y) for y in t["y"][1::3]]  # a head's lines are shifted by less than half a row
        assert all(abs(t["opacity"] - (min(int(weights[k] * 8), 7) + 1) / 8) < 1e-9 for k in keys)
    assert list([t for t in fig["data"] if t.get("name") == "worked example"][0]["y"]) == [-5, -1]
    texts = [t for t in fig["data"] if t["mode"] == "text"]
    assert list(texts[1]["text"]) == view.labels
    assert [t for t in texts[0]["text"] if t.startswith("<b>")] == [f"<b>{view.labels[5]}</b>"]  # only the pinned token is bold
    assert "Lines below a weight of 0.02 are not drawn" in fig["layout"]["title"]["text"]


def test_long_input_is_drawn_through_a_focus_window():
    trace = load_model("toy").trace(["the cat sat on the mat . " * 80])
    view = head_view_data(trace, 0, 0, [0])
    assert view.n > FOCUS_WINDOW
    assert focus_start(view.n, 300) == 300 - FOCUS_WINDOW // 2
    assert focus_start(view.n, view.n - 1) == view.n - FOCUS_WINDOW
    fig = head_view_figure(view, pinned=300)
    assert len([t for t in fig["data"] if t["mode"] == "text"][0]["text"]) == FOCUS_WINDOW
    assert f"positions {300 - FOCUS_WINDOW // 2}–{300 + FOCUS_WINDOW // 2 - 1} of {view.n}" in fig["layout"]["title"]["text"]
    assert "shown 128 at a time (focus window)" in view.note()


def test_pinned_row_csv_is_tidy_has_every_key_of_every_head_and_leaves_masked_cells_empty(trace):
    view = head_view_data(trace, 0, 0, [1, 3])
    rows = list(csv.reader(io.StringIO(pinned_row_csv(view, 2))))
    assert rows[0] == ["layer", "head", "query_position", "query_token", "key_position", "key_token", "weight"]
    assert len(rows) == 1 + 2 * view.n
    assert [r[5] for r in rows[1 : view.n + 1]] == view.labels and {r[1] for r in rows[1:]} == {"1", "3"}
    assert {(r[2], r[3]) for r in rows[1:]} == {("2", view.labels[2])}
    assert float(rows[1][6]) == pytest.approx(float(view.weights[0, 2, 0]), abs=1e-6)
    assert float(rows[view.n + 2][6]) == pytest.approx(float(view.weights[1, 2, 1]), abs=1e-6)
    assert rows[4][6] == "" and rows[view.n + 4][6] == ""  # key 3 is after query 2: masked, in both heads


def test_word_level_view_states_its_rule(trace):
    view = head_view_data(trace, 0, 0, [0], words=True)
    assert view.words and view.labels[:3] == ["The", "cat", "sat"]
    assert view.note().startswith("Word level: a word's weight to a key word is the sum over the key word's pieces")


def test_standalone_page_inlines_the_component_and_needs_no_network(trace):
    view = head_view_data(trace, 0, 0, [0, 1])
    page = head_view_html(view, JS, CSS, pinned=3).decode()
    assert "export default" not in page and "function headView(component)" in page
    assert not re.search(r"""(src|href)=["']?https?:""", page)
    payload = json.loads(re.search(r"data: (\{.*\}) \};", page).group(1))
    assert payload["tokens"] == view.labels and payload["pinned"] == 3
    assert (
        "<script>alert(1)</script>" not in head_view_html(head_view_data(load_model("toy").trace(["<script>alert(1)</script>"]), 0, 0, [0]), JS, CSS).decode()
    )


def test_attention_page_takes_the_pinned_token_the_cell_and_word_level_from_the_settings():
    from viz.content import attention_page, run_model
    from viz.content.settings import from_query, to_query

    settings, notices = from_query({"text": "The antidisestablishmentarianism of tokenization.", "pin": "3", "cell": "8,2", "words": "1"})
    assert not notices and (settings.pinned, settings.cell, settings.words) == (3, (8, 2), True)
    assert to_query(settings)["cell"] == "8,2" and to_query(settings)["pin"] == "3" and to_query(settings)["words"] == "1"
    settings = replace(settings, model="toy-random", tokenizer="gpt2-bpe")
    model = load_model("toy-random", tokenizer="gpt2-bpe")
    trace = run_model(model, settings.sentences, settings.display)
    content = attention_page(settings, trace)
    view = content.values["head_view"]
    assert view.words and view.labels == ["The", "antidisestablishmentarianism", "of", "tokenization", "."]
    assert content.values["pinned"] == 3 and content.values["pair"] == (3, 1)  # pieces 8 and 2 lie in words 3 and 1
    assert (content.values["query"], content.values["key"]) == (8, 2)  # the worked example stays on tokens
    assert content.values["weight"] == pytest.approx(float(trace.stages(0).pattern[0, 0, 8, 2]), abs=1e-7)
    assert content.values["first_piece"] == [0, 1, 6, 7, 9] and content.values["word_of_token"][8] == 3
    assert content.notices_for("head-view")[0].text.startswith("Word level")


def test_a_cell_or_pin_beyond_the_input_is_cleared_with_a_notice():
    from viz.content.settings import Settings, clamp_to_model, from_query

    settings, notices = from_query({"pin": "-5", "cell": "1,2,3"})
    assert settings.pinned == -1 and settings.cell == () and len(notices) == 2
    clamped, notices = clamp_to_model(Settings(pinned=40, cell=(2, 50)), 2, 4, 12, 1)
    assert clamped.pinned == -1 and clamped.cell == () and "cleared" in notices[0]
    kept, notices = clamp_to_model(Settings(pinned=11, cell=(11, 0)), 2, 4, 12, 1)
    assert (kept.pinned, kept.cell, notices) == (11, (11, 0), [])


def test_the_views_own_export_buttons_make_a_file_on_a_click_and_the_next_data_carries_it_once(trace, monkeypatch):
    """The head view draws its PNG, SVG, HTML and CSV buttons itself (no Streamlit download buttons): a click
    is a trigger, its callback makes the file, and the view's next data carries it once, for the browser to save."""
    import base64

    import streamlit as st

    import ui.head_view
    from ui.chart import FILES  # where the files made on a click wait, the charts' too
    from ui.head_view import Downloads, head_view

    monkeypatch.setitem(st.session_state, FILES, {})  # bare mode: one session state for the process
    monkeypatch.setattr(ui.head_view, "_static_export", lambda: (False, "No browser for PNG and SVG here."))
    sent = []
    monkeypatch.setattr(ui.head_view, "_component", lambda **kwargs: sent.append(kwargs))
    view = head_view_data(trace, 0, 1, [0, 2])

    def draw(pinned):
        head_view(view, pinned=pinned, pair=None, on_pin=lambda i: None, on_pair=lambda q, k: None, key="hv_test", downloads=Downloads("Head view L1"))
        return sent[-1]["data"]

    def click(form):
        st.session_state["hv_test"] = {"export": {"format": form, "seq": 1}}
        sent[-1]["on_export_change"]()

    first = draw(None)
    assert first["exports"] == {"name": "head-view-l1", "formats": ["html", "csv"], "csv": False, "why": "No browser for PNG and SVG here."}
    assert "file" not in first
    click("csv")  # nothing pinned: no row to save
    assert "file" not in draw(None)

    assert draw(4)["exports"]["csv"] is True
    click("csv")
    file = draw(4)["file"]
    assert file["name"] == "head-view-l1-row-4.csv" and file["mime"] == "text/csv"
    assert base64.b64decode(file["base64"]).decode("utf-8") == pinned_row_csv(view, 4)
    assert "file" not in draw(4)  # sent once

    for form in ("png", "../../etc/passwd", None):  # not offered here, or not a format: nothing made
        click(form)
        assert "file" not in draw(4)
    click("html")
    file = draw(4)["file"]
    html = base64.b64decode(file["base64"]).decode("utf-8")
    assert file["name"] == "head-view-l1.html" and "function headView(component)" in html and "https://" not in html
    assert "function saveFile(blob, name)" in JS and ".av-chart-export " in CSS  # the shared parts came with it

    head_view(view, pinned=4, pair=None, on_pin=lambda i: None, on_pair=lambda q, k: None, key="hv_test")
    assert "exports" not in sent[-1]["data"]  # no downloads asked for (presentation mode): no buttons
