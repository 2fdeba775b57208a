"""The sidebar's controls after the model box, drawn by a page's full run (ui.view.draw_controls): a toggle
among them reruns the page's fragment alone, and the browser is not sent those controls again; a value
changed without its control (a click in the page) is drawn by a full run, so the sidebar shows it.

What the browser receives is read from the websocket: each frame is one of Streamlit's ForwardMsg."""

from __future__ import annotations

import urllib.parse

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from conftest import chromium, settle
from test_head_view_browser import click_plot

pytestmark = pytest.mark.browser

TEXT = "The farmer sat on the river bank."
# drawn by the full run: each control's label as its widget's proto holds it
FULL_RUN = ("Layer", "Heads", "Mask", "Scale by 1/√d_k", "Softmax temperature T", "Ablate heads", "Figure theme", "PNG resolution")
FRAGMENT = ("Hide key tokens", "…or find one in any sentence")  # the hidden tokens' pills and box


@pytest.fixture(scope="module")
def page(server):
    with chromium() as browser:
        yield browser.new_context(viewport={"width": 1440, "height": 900}).new_page()


class Frames:
    """Every ForwardMsg the page receives from now on."""

    def __init__(self, page):
        self.payloads: list[bytes] = []
        self.last: list[ForwardMsg] = []
        page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: self.payloads.append(payload)))

    def take(self) -> list[ForwardMsg]:
        messages = []
        for payload in self.payloads:
            if isinstance(payload, bytes):
                message = ForwardMsg()
                message.ParseFromString(payload)
                messages.append(message)
        self.payloads.clear()
        self.last = messages
        return messages


def widget_labels(messages: list[ForwardMsg]) -> list[str]:
    """The labels of the widgets (and charts' kinds) the messages draw."""
    labels = []
    for message in messages:
        if message.WhichOneof("type") != "delta" or message.delta.WhichOneof("type") != "new_element":
            continue
        element = message.delta.new_element
        kind = element.WhichOneof("type")
        labels.append(getattr(getattr(element, kind), "label", kind) or kind)
    return labels


def markdown_bodies(messages: list[ForwardMsg]) -> list[str]:
    return [m.delta.new_element.markdown.body for m in messages if m.WhichOneof("type") == "delta" and m.delta.new_element.WhichOneof("type") == "markdown"]


def open_attention(page, server, frames: Frames, **query):
    page.goto(f"{server}/Attention?{urllib.parse.urlencode(dict(text=TEXT, **query))}")
    page.wait_for_selector(".js-plotly-plot", timeout=90_000)
    settle(page, after=800)
    return widget_labels(frames.take())


def query_of(page) -> dict:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(page.url).query))


def scaling_box(page):
    return page.locator("[data-testid=stCheckbox]").filter(has_text="Scale by")


def test_a_toggle_sends_the_charts_and_not_the_controls_of_the_full_run(server, page):
    frames = Frames(page)
    loaded = open_attention(page, server, frames)
    assert set(FULL_RUN + FRAGMENT) <= set(loaded)  # a page load draws them all: the reading below can see them
    scaling_box(page).locator("label").first.click()
    settle(page, after=800)
    assert query_of(page)["scale"] == "0"
    toggled = widget_labels(frames.take())
    assert not set(FULL_RUN) & set(toggled), toggled
    assert set(FRAGMENT) <= set(toggled)  # the pills and the box are the fragment's: kept in step each rerun
    assert toggled.count("bidi_component") >= 8  # the charts of the view (stages, head view, scaling, values…)
    assert any(r"S' = S \;\text{(unscaled)}" in body for body in markdown_bodies(frames.last))  # the formulas say it
    assert len(toggled) < len(loaded) - 10  # what a toggle sends is the page less the controls


def test_a_click_in_the_page_is_shown_by_the_sidebars_controls(server, page):
    """ "Model's own settings" and a tile of the overview change controls the full run drew: a full run
    draws them again with their new values."""
    frames = Frames(page)
    open_attention(page, server, frames, scale="0", temp="2.5", mask="none")
    assert not scaling_box(page).locator("input").is_checked()
    page.get_by_role("button", name="Model's own settings").click()
    settle(page, after=800)
    assert {"scale", "temp", "mask"}.isdisjoint(query_of(page))
    assert scaling_box(page).locator("input").is_checked()
    temperature = page.locator("[data-testid=stSlider]").filter(has_text="Softmax temperature").get_by_role("slider")
    assert temperature.get_attribute("aria-valuetext") == "1"
    assert set(FULL_RUN) <= set(widget_labels(frames.take()))  # drawn again

    overview = page.locator(".js-plotly-plot").filter(has_text="attention patterns of every head")
    meta = overview.evaluate("gd => gd.data[0].meta")
    x = 3 * (meta["panel_cols"] + meta["gap"]) + (meta["panel_cols"] - 1) / 2  # layer 1, head 3
    y = 1 * (meta["panel_rows"] + meta["gap"]) + (meta["panel_rows"] - 1) / 2
    click_plot(page, overview, x, y)
    settle(page, after=800)
    assert query_of(page)["layer"] == "1" and query_of(page)["heads"] == "3"
    layer = page.locator("[data-testid=stSlider]").filter(has_text="Layer").get_by_role("slider")
    assert layer.get_attribute("aria-valuetext") == "1"
    heads = page.locator("[data-testid=stButtonGroup]").filter(has=page.get_by_text("Heads", exact=True))
    pressed = heads.locator("button[aria-pressed=true]").all_inner_texts()
    assert pressed == ["3"], pressed


def test_a_control_beside_a_lessons_question_reruns_the_view_alone(server, page):
    """The lesson "Why divide by √d_k?" draws the scaling toggle beside its question (its full run): a
    flip reruns the page's fragment, as the sidebar's controls do, not the whole page."""
    frames = Frames(page)
    page.goto(f"{server}/Lessons")
    settle(page)
    page.get_by_role("button", name="Open this lesson").first.click()
    page.wait_for_url("**/Attention**", timeout=60_000)
    settle(page, after=800)
    frames.take()
    toggle = scaling_box(page)
    assert toggle.count() == 1 and page.locator("[data-testid=stSidebar]").locator("[data-testid=stCheckbox]").filter(has_text="Scale by").count() == 0
    toggle.locator("label").first.click()  # beside the question, not in the sidebar
    settle(page, after=800)
    assert query_of(page)["scale"] == "0"
    flipped = widget_labels(frames.take())
    assert "Sentences, one per line" not in flipped and "Scale by 1/√d_k" not in flipped, flipped  # no full run
    assert any(r"S' = S \;\text{(unscaled)}" in body for body in markdown_bodies(frames.last))
