"""What a rerun of the Attention page rebuilds, and what the figures send: issue 19's server work per action."""

from __future__ import annotations

import functools
import io
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import plotly.io
import pytest
from streamlit.testing.v1 import AppTest

import ui.content_cache
import viz
from apptest_helpers import chart_titled, charts, decode
from conftest import ROOT
from viz import plain
from viz.export import figure_to_csv
from viz.payload import browser_json


class CountingFigure(dict):
    """A figure dict that counts its conversions to plotly JSON (what the chart component is sent)."""

    conversions = 0


def heatmap_figure(z, **trace) -> CountingFigure:
    return CountingFigure(plain.figure([{"type": "heatmap", "z": z, **trace}], {}))


def counting_conversions(monkeypatch):
    """`viz.payload.browser_json` (the figure as the chart component is sent it) counts on the figure."""
    import ui.figures

    convert = viz.payload.browser_json

    def counted(fig):
        fig.conversions += 1
        return convert(fig)

    monkeypatch.setattr(ui.figures, "browser_json", counted)


def test_a_figure_is_converted_once_however_often_it_is_shown(monkeypatch):
    from ui.chart import chart_data
    from chart_data import read_chart_data
    from ui.figures import made_once, sent_to_browser

    counting_conversions(monkeypatch)

    fig = heatmap_figure([[0.25, 0.75], [1.0, 0.0]], name="pattern")
    first = sent_to_browser(fig, {"displaylogo": False}, clickable=False, variant=("name", 2, False))
    assert sent_to_browser(fig, {"displaylogo": False}, clickable=False, variant=("name", 2, False)) is first and fig.conversions == 1
    about, sent = read_chart_data(first)
    assert decode(sent["data"][0]["z"]).tolist() == [[0.25, 0.75], [1.0, 0.0]]
    assert about["height"] == 450 and about["width"] == "stretch" and not about["clickable"]
    changed = heatmap_figure([[0.25, 0.75], [0.0, 1.0]], name="pattern")
    assert read_chart_data(chart_data(changed, browser_json(changed), {}, clickable=False))[0]["version"] != about["version"]
    rescaled = read_chart_data(chart_data(fig, browser_json(fig), {"displaylogo": False, "toImageButtonOptions": {"scale": 3}}, clickable=False))[0]
    # the camera button's new scale (or file name) reaches the browser, which sets it in place: the same
    # figure is not drawn again for it (chart.js)
    assert rescaled["config"]["toImageButtonOptions"] == {"scale": 3} and rescaled["version"] == about["version"]
    reconfigured = read_chart_data(chart_data(fig, browser_json(fig), {"displaylogo": True}, clickable=False))[0]
    assert reconfigured["version"] != about["version"]  # the rest of the config is plotly's: drawn again
    made = []
    for variant in ((2, 0), (2, 0), (3, 1), (2, 0)):  # only the latest variant is kept
        made_once(fig, "clickable", lambda v=variant: made.append(v) or len(made), variant=variant)
    assert made == [(2, 0), (3, 1), (2, 0)]


def attention_page_of(text: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "home.py"), default_timeout=120)
    at.query_params["text"] = text
    at.run()
    at.switch_page("pages/3_Attention.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def counted(monkeypatch) -> list[tuple[str, object]]:
    """Count the parts of pages that are built (not found in ui.content_cache): (builder's name, settings)."""
    calls = []
    build = ui.content_cache.built

    def counting(builder, settings, *args, **kwargs):
        calls.append((builder.__name__, settings))
        return build(builder, settings, *args, **kwargs)

    monkeypatch.setattr(ui.content_cache, "built", counting)
    return calls


FIGURE_PARTS = {"layer_part", "head_part", "first_head_part", "output_part", "overview_part"}


def test_pinning_a_token_or_choosing_a_cell_builds_no_figure_again(monkeypatch):
    ui.content_cache._cached.clear()
    built = counted(monkeypatch)
    at = attention_page_of("the fisher sat on the river bank")
    stages_before = chart_titled(at, ["head 0 ·"])
    assert sorted(name for name, _ in built) == sorted([*FIGURE_PARTS, "attention_selection"])

    at.session_state["w_pinned"] = 3  # what a click on a token of the head view writes
    at.session_state["w_cell"] = [3, 1]  # what a click on a cell writes
    built.clear()
    at.run()
    assert not at.exception
    assert [name for name, _ in built] == ["attention_selection"]  # every figure came from the cache
    assert built[0][1].cell == (3, 1)
    stages_after = chart_titled(at, ["head 0 ·"])
    marks = [t for t in stages_after["data"] if t.get("name") == "worked example"]
    assert [(m["x"], m["y"]) for m in marks] == [([1], [3])]  # the chosen cell is outlined on the softmax panel
    assert [t for t in stages_before["data"] if t.get("name") != "worked example"] == [t for t in stages_after["data"] if t.get("name") != "worked example"]
    assert (at.session_state["w_example_query"], at.session_state["w_example_key"]) == (3, 1)  # the worked example follows
    assert at.select_slider(key="w_example_key").value == 1

    at.select_slider(key="w_example_key").set_value(2).run()  # the key's slider, dragged or stepped with the arrow keys
    assert not at.exception and list(at.session_state["w_cell"]) == [3, 2]
    marks = [t for t in chart_titled(at, ["head 0 ·"])["data"] if t.get("name") == "worked example"]
    assert [(m["x"], m["y"]) for m in marks] == [([2], [3])]  # the cell outlined follows the slider
    at.select_slider(key="w_example_key").set_value(1).run()

    built.clear()
    at.sidebar.toggle(key="w_scaling").set_value(False).run()
    figure_parts = [settings for name, settings in built if name in FIGURE_PARTS]
    assert len(figure_parts) == len(FIGURE_PARTS) and all(s.scaling is False and s.pinned == -1 and s.cell == () for s in figure_parts)  # a new view
    assert at.query_params["pin"] == "3" and at.query_params["scale"] == "0"


def test_showing_one_more_head_builds_that_head_s_figures_only(monkeypatch):
    """The Attention page's figures are cached in parts (viz.content.attention.attention_figures): one more
    head builds its stages and value step, the heads side by side and the selection (worked example, head
    view) again, not the overview, the scaling comparison or the heads already shown; hiding it again
    builds nothing."""
    ui.content_cache._cached.clear()
    built = counted(monkeypatch)
    at = attention_page_of("the fisher sat on the river bank")
    before = {spec["layout"]["title"]["text"]: spec for spec in charts(at)}
    built.clear()
    at.sidebar.button_group(key="w_heads").set_value([0, 2]).run()
    assert not at.exception
    assert sorted((name, settings.heads) for name, settings in built) == [("attention_selection", (0, 2)), ("head_part", (2,)), ("output_part", (0, 2))]
    after = {spec["layout"]["title"]["text"]: spec for spec in charts(at)}
    assert any("head 2 ·" in title for title in after) and not any("head 2 ·" in title for title in before)
    kept = [title for title in before if "head 0 ·" in title or "every head" in title]
    assert kept and all(after[title] == before[title] for title in kept)  # the same figures, sent as before
    built.clear()
    at.sidebar.button_group(key="w_heads").set_value([0]).run()
    assert built == []


def test_a_figure_already_sent_is_not_serialised_again_for_another_view_s_file_names(monkeypatch):
    """Showing one more head changes the view (its file names name the heads): the figures that stay the
    same get new names in their chart data, but their JSON is taken from the bytes made before, not made
    again; only the new head's figures and those that changed are serialised."""
    import ui.figures

    ui.content_cache._cached.clear()
    at = attention_page_of("the fisher sat on the river bank")
    before = {spec["layout"]["title"]["text"]: spec for spec in charts(at)}
    serialised = []
    original = viz.payload.browser_json

    def counting(fig):
        serialised.append(fig["layout"]["title"]["text"])
        return original(fig)

    monkeypatch.setattr(ui.figures, "browser_json", counting)
    at.sidebar.button_group(key="w_heads").set_value([0, 2]).run()
    assert not at.exception
    after = {spec["layout"]["title"]["text"]: spec for spec in charts(at)}
    kept = [title for title in before if "head 0 ·" in title or "every head" in title]
    assert kept and all(after[title] == before[title] for title in kept)  # sent as before, under the new names
    assert serialised and not set(serialised) & set(kept)
    # head 2's stages and value step, and the heads side by side (now of heads 0 and 2)
    assert len(serialised) == 3 and all("head 2 ·" in title or "heads side by side" in title for title in serialised), serialised


def test_every_chart_sent_equals_its_figure(monkeypatch):
    """The bytes made once (ui.figures.sent_to_browser) are what the browser gets: same traces, same numbers."""
    from model import load_model
    from viz.content import Settings, attention_page, run_model

    ui.content_cache._cached.clear()
    settings = Settings(text="the fisher sat on the river bank")
    model = load_model("toy")
    content = attention_page(settings, run_model(model, settings.sentences, settings.display), model=model)
    at = attention_page_of(settings.text)
    at.run()  # the second run sends the dicts made in the first
    sent = {spec["layout"]["title"]["text"]: spec for spec in charts(at)}
    expected = json.loads(plotly.io.to_json(content.figures["value-step-L0-H0"]))  # as plotly writes the figure
    got = sent[expected["layout"]["title"]["text"]]
    for want, have in zip(expected["data"], got["data"], strict=True):
        np.testing.assert_array_equal(decode(have["z"]), decode(want["z"]))


def test_long_inputs_send_no_hover_text_per_cell_and_the_csv_keeps_every_token_at_full_precision():
    rng = np.random.default_rng(0)
    n, d_head = 300, 16
    logits = rng.normal(size=(n, n))
    pattern = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    v = rng.normal(size=(n, d_head))
    labels = [f"w{i}" for i in range(n)]
    fig = viz.value_step_figure(pattern, v, pattern @ v, labels, layer=0, head=1, title="t")
    size_mb = len(plotly.io.to_json(fig)) / 1e6
    assert size_mb < 1.5, f"{size_mb:.1f} MB"  # a text per cell made it 5 MB
    weights = next(t for t in fig["data"] if t.get("name") == "pattern")
    assert weights.get("text") is None and "query %{y}" in weights["hovertemplate"]  # positions in the hover, not one text per cell
    small = viz.value_step_figure(pattern[:8, :8], v[:8], pattern[:8, :8] @ v[:8], labels[:8], title="t")
    assert next(t for t in small["data"] if t.get("name") == "pattern").get("text") is not None  # short inputs keep both tokens in the hover
    table = pd.read_csv(io.StringIO(figure_to_csv(fig)))
    cells = table[table["panel"] == "pattern"]
    assert len(cells) == n * n and set(cells["row_label"]) == set(labels)
    row = cells[(cells["row"] == 5) & (cells["column"] == 7)]
    assert row["value"].item() == pytest.approx(float(np.float32(pattern[5, 7])), rel=1e-7)


@pytest.mark.browser
def test_a_click_in_the_head_view_reruns_only_its_part_of_the_page(server):
    """The head view, the stages heatmaps and the worked example are one fragment (ui.head_view.clicks_rerun_only):
    pinning a token sends that part again, not the page; a sidebar toggle still reruns the whole page."""
    from conftest import chromium, settle

    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        frames = []
        page.on("websocket", lambda ws: ws.on("framereceived", lambda frame: frames.append(len(frame))))
        page.goto(f"{server}/Attention?text=The+cat+sat+on+the+mat.")
        page.wait_for_selector(".hv-q .hv-tok", timeout=90_000)
        settle(page)  # the run has ended and the page is still: every frame of it has come

        frames.clear()
        page.locator(".hv-q .hv-tok").nth(3).click()
        page.wait_for_function("() => location.search.includes('pin=3')", timeout=30_000)
        settle(page)  # the run has ended and the page is still: every frame of it has come
        pin_frames = len(frames)
        page.wait_for_selector(".hv-row-table caption:has-text('(position 3)')", timeout=30_000)  # the pinned row's table
        assert page.locator(".hv-q .hv-tok.hv-pinned").all_inner_texts() == ["␣on"]  # the toy BPE piece " on", its space shown as ␣

        frames.clear()
        page.locator("[data-testid=stCheckbox]").filter(has_text="Scale by").locator("label").first.click()
        page.wait_for_function("() => location.search.includes('scale=0')", timeout=30_000)
        settle(page)  # the run has ended and the page is still: every frame of it has come
        toggle_frames = len(frames)
        assert "pin=3" in page.url  # the full run kept the pinned token
        assert 0 < pin_frames < toggle_frames / 2, (pin_frames, toggle_frames)
        assert page.locator("[data-testid=stException], [data-testid=stAlertContentError]").count() == 0


def test_the_zip_holds_the_head_view_as_shown_after_a_click_reruns_only_its_fragment(monkeypatch):
    """A pin click reruns only the head view's fragment (ui.head_view.clicks_rerun_only): the page's zip
    button, drawn by the last full run, must still give the figures and the settings shown now."""
    import streamlit as st

    import ui.figures
    from viz.content import Settings

    buttons = {}
    monkeypatch.setattr(st, "download_button", lambda label, data, *a, key=None, **k: buttons.setdefault(key, data))
    monkeypatch.setattr(ui.figures, "figures_zip", functools.partial(ui.figures.figures_zip, formats=("csv",)))
    monkeypatch.setattr(ui.figures, "draw_chart", lambda *a, **k: None)

    def head_view(pinned):  # stands for the head view figure: its numbers depend on the pinned token
        z = [[0.5, 0.5], [1.0, 0.0]] if pinned < 0 else [[0.9, 0.1], [0.2, 0.8]]
        return plain.figure([{"type": "heatmap", "z": z, "name": "pattern"}], {})

    shown = Settings(text="the fisher sat on the river bank")
    for name in ("settings", ui.figures.REGISTRY, ui.figures.KEYS, ui.figures.ABOUT, ui.figures.TABLES):  # bare mode: one session state
        monkeypatch.setitem(st.session_state, name, None)  # put back as it was after the test
        del st.session_state[name]
    st.session_state["settings"] = shown
    ui.figures.start_view()  # a full run
    ui.figures.show_figure(head_view(-1), "head-view-L0", exports=False)
    ui.figures.download_all("attention")
    zip_of_the_page = buttons["zip_attention"]

    from dataclasses import replace

    st.session_state["settings"] = replace(shown, pinned=3)  # the fragment rerun after a pin click, as clicks_rerun_only does it
    ui.figures.describe_view()
    ui.figures.show_figure(head_view(3), "head-view-L0", exports=False)

    import zipfile

    archive = zipfile.ZipFile(io.BytesIO(zip_of_the_page()))
    manifest = json.loads(archive.read("manifest.json"))
    assert manifest["settings"]["pinned"] == 3 and "pin=3" in manifest["link"]
    (csv_name,) = [name for name in archive.namelist() if name.endswith(".csv")]
    values = pd.read_csv(io.BytesIO(archive.read(csv_name)))["value"].tolist()
    assert values == pytest.approx([0.9, 0.1, 0.2, 0.8])  # the pinned view, not the one before the click


FIRST_RUN = """
import json, sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(sys.argv[1], default_timeout=120)
at.run()
seen = {"home": sorted(m for m in sys.argv[2:] if m in sys.modules)}
at.switch_page("pages/3_Attention.py").run()
seen["attention"] = sorted(m for m in sys.argv[2:] if m in sys.modules)
seen["charts"] = len([e for e in at.get("bidi_component") if e.proto.component_name == "attention_viz.chart"])
seen["errors"] = [e.value for e in at.exception]
print(json.dumps(seen))
"""


def test_a_first_visit_on_the_toy_model_loads_no_hugging_face_and_no_export_machinery():
    """Cold start: a fresh interpreter runs Home then the Attention page as a first visitor does. The
    toy model needs torch and the `tokenizers` package (its BPE) only; transformers loads when a Hugging
    Face model is chosen, kaleido and its browser driver when a PNG/SVG is asked for (checking that they
    are installed imports neither)."""
    lazy = ["transformers", "huggingface_hub", "tiktoken", "kaleido", "choreographer"]
    done = subprocess.run(
        [sys.executable, "-c", FIRST_RUN, str(ROOT / "home.py"), *lazy],
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["errors"] == [] and seen["charts"] >= 5  # the page was drawn
    assert seen["home"] == [] and seen["attention"] == []


def test_the_app_runs_torch_on_one_thread_unless_told_otherwise():
    from ui.view import torch_threads

    assert torch_threads({}) == 1 and torch_threads({"ATTENTION_VIZ_TORCH_THREADS": "2"}) == 2
    assert torch_threads({"ATTENTION_VIZ_TORCH_THREADS": "lots"}) == 1 and torch_threads({"ATTENTION_VIZ_TORCH_THREADS": "0"}) == 1
    code = "import torch, ui.view; print(torch.get_num_threads())"
    env = {k: v for k, v in os.environ.items() if k != "ATTENTION_VIZ_TORCH_THREADS"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert done.stdout.split()[-1] == "1"  # applied when the app's glue is imported


def test_a_views_description_is_made_once_per_view_not_once_per_figure():
    """`about_view` names every figure's files (8 a run on the Attention page): it is made once per view."""
    from dataclasses import replace

    from ui.figures import _described
    from viz.content import Settings

    settings = Settings(text="The cat sat.")
    first = _described(settings, "http://localhost:8501/Attention", 2.0)
    assert _described(replace(settings), "http://localhost:8501/Attention", 2.0) is first  # an equal view: the same
    other = _described(replace(settings, layer=1), "http://localhost:8501/Attention", 2.0)
    assert other is not first and other["settings"]["layer"] == 1 and first["settings"]["layer"] == 0
    assert other["link"] == "http://localhost:8501/Attention?text=The+cat+sat.&layer=1" and "text" not in other["settings"]
    assert _described(settings, "http://localhost:8501/Attention", 3.0)["settings"]["png_scale"] == 3.0
