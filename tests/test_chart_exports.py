"""The export buttons drawn by the chart component (ui/chart.py): what each chart's data tells the browser,
and the server side of the HTML and CSV buttons (made when clicked, sent once with the chart's data).
The clicks themselves, in chromium: tests/test_chart_browser.py."""

from __future__ import annotations

import re

import plotly.graph_objects as go
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import ui.chart
import chart_data
import ui.figures
from apptest_helpers import chart_about, chart_elements, charts
from conftest import ROOT
from viz import plain
from viz.export import figure_to_csv
from viz.export.image import DEFAULT_HEIGHT, DEFAULT_WIDTH, export_size


def test_the_export_size_is_the_servers():
    assert export_size(go.Figure().layout) == (DEFAULT_WIDTH, DEFAULT_HEIGHT) == (1280, 720)
    assert export_size(go.Figure(layout=dict(width=900, height=400)).layout) == (900, 400)
    assert export_size({"height": 460}) == (1280, 460)


def test_the_attention_page_has_no_download_button_per_figure_and_every_chart_says_how_to_export_it():
    at = AppTest.from_file(str(ROOT / "home.py"), default_timeout=120)
    at.query_params["text"] = "The cat sat on the mat."
    at.run()
    at.switch_page("pages/3_Attention.py").run()
    assert not at.exception, [e.value for e in at.exception]

    keys = [re.sub(r"^\$\$ID-[0-9a-f]+-", "", element.proto.id) for element in at.get("download_button")]
    # only the zip: the charts and the head view (ui/head_view.py) draw their own export buttons
    assert keys == ["zip_attention"], keys

    elements = chart_elements(at)
    assert len(elements) >= 7
    hashes = set()
    for element, spec in zip(elements, charts(at), strict=True):
        about = chart_about(element)
        export = about["export"]
        layout = spec["layout"]
        assert (export["width"], export["height"]) == (layout.get("width") or 1280, layout.get("height") or 720)
        assert export["scale"] == 2.0  # the sidebar's PNG resolution
        place = element.proto.id.split("-chart_", 1)[1]  # the chart's key names its place (a head's box), not its layer
        base = re.sub(r"-h\d+$", "", place)
        assert re.fullmatch(rf"{re.escape(base)}(-l\d+)?(-h\d+)?-toy-([0-9a-f]{{7}})", export["name"]), (place, export["name"])
        hashes.add(export["name"][-7:])
        assert about["config"]["toImageButtonOptions"]["filename"] == export["name"]  # the camera button's name too
        assert "file" not in about  # nothing to save on a page load
    assert len(hashes) == 1  # one view, one settings stamp

    at.sidebar.select_slider(key="png_scale").set_value(4).run()
    assert {chart_about(element)["export"]["scale"] for element in chart_elements(at)} == {4.0}


@pytest.fixture
def session(monkeypatch):
    """Bare mode: one session state for the process; what a test puts in it is taken out after."""
    for name in (ui.chart.FILES, "settings", ui.figures.REGISTRY, ui.figures.KEYS, "png_scale"):
        monkeypatch.setitem(st.session_state, name, None)
        del st.session_state[name]
    sent = []
    monkeypatch.setattr(ui.chart, "_component", lambda **kwargs: sent.append(kwargs))
    yield sent
    for key in list(st.session_state):
        if str(key).startswith("chart_"):
            del st.session_state[key]


def fig_of_numbers():
    return plain.figure([{"type": "heatmap", "z": [[0.25, 0.75], [1.0, 0.0]], "name": "pattern"}], {"title": plain.title("A small pattern"), "height": 300})


def run_showing(fig, figure_id):
    """A run of a page that draws `fig` as `figure_id` (each run numbers its charts' keys afresh)."""
    ui.figures.start_view()
    ui.figures.show_figure(fig, figure_id)


def click(sent, key, value):
    """What Streamlit does when the component sends a trigger: the value under the widget's key, then its callback."""
    st.session_state[key] = {value[0]: value[1]}
    sent[-1][f"on_{value[0]}_change"]()


def test_a_csv_click_makes_the_file_once_and_the_next_data_carries_it_once(session):
    sent = session
    fig = fig_of_numbers()
    run_showing(fig, "small-pattern")
    key = "chart_small-pattern"
    first = sent[-1]["data"]
    about, spec = chart_data.read_chart_data(first)
    assert about["export"] == {"name": "small-pattern", "width": 1280, "height": 300, "scale": 2.0}
    assert chart_data.read_chart_file(first) is None and "file" not in about

    click(sent, key, ("export", {"format": "csv", "seq": 1}))
    made = st.session_state[ui.chart.FILES][key]
    assert made["bytes"] == figure_to_csv(fig).encode("utf-8") and made["name"] == "small-pattern.csv" and made["mime"] == "text/csv"
    assert "0.75" in made["bytes"].decode()

    run_showing(fig, "small-pattern")  # the rerun after the click
    carrying = sent[-1]["data"]
    with_file, spec_with_file = chart_data.read_chart_data(carrying)
    assert chart_data.read_chart_file(carrying) == figure_to_csv(fig).encode("utf-8")
    assert with_file["file"] == {"name": "small-pattern.csv", "mime": "text/csv", "nonce": made["nonce"], "length": len(made["bytes"])}
    assert with_file["version"] == about["version"] and spec_with_file == spec  # the chart is not redrawn for a file
    assert carrying.partition(b"\n")[2] == first.partition(b"\n")[2] + made["bytes"]  # the same spec, the file after it

    run_showing(fig, "small-pattern")  # the next rerun (or a new page load): no file again
    assert sent[-1]["data"] is first  # the bytes made once per figure, as before the click
    assert chart_data.read_chart_file(sent[-1]["data"]) is None


def test_an_html_click_makes_the_standalone_page_with_the_figures_name_and_a_new_nonce_each_time(session):
    sent = session
    fig = fig_of_numbers()
    key = "chart_small-pattern"
    nonces = []
    for seq in (1, 2):
        run_showing(fig, "small-pattern")
        click(sent, key, ("export", {"format": "html", "seq": seq}))
        run_showing(fig, "small-pattern")
        about, _ = chart_data.read_chart_data(sent[-1]["data"])
        html = chart_data.read_chart_file(sent[-1]["data"]).decode("utf-8")
        assert about["file"]["name"] == "small-pattern.html" and about["file"]["mime"] == "text/html"
        assert "A small pattern" in html and "0.75" in html and "Plotly.newPlot" in html and "<script src=" not in html
        nonces.append(about["file"]["nonce"])
    assert len(set(nonces)) == 2  # a second click saves a second file


def test_png_svg_and_unknown_formats_and_charts_without_exports_make_nothing_on_the_server(session, monkeypatch):
    sent = session
    fig = fig_of_numbers()
    key = "chart_small-pattern"
    run_showing(fig, "small-pattern")
    for value in ({"format": "png", "seq": 1}, {"format": "svg", "seq": 2}, {"format": "../../etc/passwd"}, "csv", None):
        click(sent, key, ("export", value))
    assert not st.session_state.get(ui.chart.FILES)

    ui.figures.show_figure(fig, "no-buttons", exports=False)
    assert chart_data.read_chart_data(sent[-1]["data"])[0]["export"] is None
    click(sent, "chart_no-buttons", ("export", {"format": "csv", "seq": 3}))
    assert not st.session_state.get(ui.chart.FILES)


def test_a_file_whose_chart_is_not_drawn_again_soon_is_dropped(session, monkeypatch):
    sent = session
    fig = fig_of_numbers()
    key = "chart_small-pattern"
    run_showing(fig, "small-pattern")
    click(sent, key, ("export", {"format": "csv", "seq": 1}))
    st.session_state[ui.chart.FILES][key]["made"] -= ui.chart.FILE_TTL_S + 1
    run_showing(fig, "small-pattern")
    assert chart_data.read_chart_file(sent[-1]["data"]) is None and not st.session_state[ui.chart.FILES]


def test_a_chart_is_keyed_by_its_place_so_another_layer_updates_it_in_place():
    """The Attention page's charts with heads 0 and 1 of layer 0, then of layer 1: the same keys, in the
    same order (the browser keeps each chart and draws the new figure over the old one). Each head's stages
    have their own place (ui.head_view.head_box, where a head not shown waits hidden): heads 2 and 3 of
    layer 1 take theirs, and every chart below keeps its key."""

    def places(at):
        return [element.proto.id.split("-chart_", 1)[1] for element in chart_elements(at)]

    def titles(at):
        return [spec["layout"]["title"]["text"] for spec in charts(at)]

    at = AppTest.from_file(str(ROOT / "home.py"), default_timeout=120)
    at.query_params.update(text="The cat sat on the mat.", heads="0,1")
    at.run()
    at.switch_page("pages/3_Attention.py").run()
    before = places(at)
    assert before[:2] == ["stages-h0", "stages-h1"] and len(before) == len(set(before))
    assert "layer 0 · head 1" in titles(at)[1]
    at.sidebar.select_slider(key="w_layer").set_value(1).run()
    assert not at.exception, [e.value for e in at.exception]
    assert places(at) == before
    assert "layer 1 · head 0" in titles(at)[0] and "layer 1 · head 1" in titles(at)[1]
    at.sidebar.button_group(key="w_heads").set_value([2, 3]).run()
    assert places(at) == ["stages-h2", "stages-h3", *before[2:]]
    assert "layer 1 · head 2" in titles(at)[0] and "layer 1 · head 3" in titles(at)[1]


def test_a_chart_in_its_heads_box_is_keyed_by_its_head_and_not_its_layer():
    """The stages of head 2 keep their chart (and its drawing) through a change of layer or of the other
    heads; a chart elsewhere keeps its place's key whatever layer and head it shows."""
    assert ui.figures.chart_key("stages-L3-H2", per_head=True) == "chart_stages-h2" == ui.figures.chart_key("stages-L0-H2", per_head=True)
    assert ui.figures.chart_key("focus-L0-H11", per_head=True) == "chart_focus-h11"
    ui.figures.start_view()
    assert ui.figures.chart_key("value-step-L3-H2") == "chart_value-step"
    assert ui.figures.chart_key("value-step-L0-H0") == "chart_value-step-2"  # the second of its kind in this run
    ui.figures.start_view()  # the next run
    assert ui.figures.chart_key("value-step-L0-H0") == "chart_value-step"
