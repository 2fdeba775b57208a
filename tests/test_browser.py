"""The app in a real browser: Debian's chromium driven by Playwright against `streamlit run` on loopback.

Types a sentence, toggles a head and the mask, downloads exported figures and checks they are a valid
PNG and SVG, and saves a screenshot of every page in artifacts/screenshots/.
"""

import io
import re
import xml.etree.ElementTree as ElementTree

import pytest
from PIL import Image

from conftest import ROOT, chromium, settle, toy_labels
from bench.browser import head_pill

SHOTS = ROOT / "artifacts" / "screenshots"
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page(server):
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1500, "height": 1100}, accept_downloads=True)
        yield context.new_page()


def screenshot(page, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1500, "height": 4200})
    page.wait_for_function(IN_WINDOW_DRAWN, timeout=60_000)  # the charts the taller window shows are drawn
    settle(page)  # and resized
    page.screenshot(path=str(SHOTS / f"{name}.png"))
    page.set_viewport_size({"width": 1500, "height": 1100})


def svg_texts(locator):
    return locator.evaluate_all("elements => elements.map(e => e.textContent)")


IN_WINDOW_DRAWN = (  # every chart shown in the window has drawn its newest figure (those below, or in a tab not open, wait)
    "() => [...document.querySelectorAll('.av-chart:not(.av-chart-hidden)')].filter(b => b.checkVisibility() && b.getBoundingClientRect().top < innerHeight)"
    ".every(b => b.querySelector('.main-svg') && !b.classList.contains('av-chart-stale'))"
)
TITLED = "(words) => [...document.querySelectorAll('.js-plotly-plot .gtitle')].some(e => e.textContent.includes(words))"
FIRST_TICKS = "(n) => [...(document.querySelector('.js-plotly-plot')?.querySelectorAll('.x3tick text') ?? [])].slice(0, n).map(e => e.textContent)"


def wait_for_title(page, words: str) -> None:
    """Until a chart's title holds `words` (on a loaded machine a rerun may start after `settle` returned)."""
    page.wait_for_function(TITLED, arg=words, timeout=60_000)


def wait_for_first_ticks(page, labels: list[str]) -> None:
    """Until the first chart's first key labels are `labels` (its third panel's: in a row of four and in two rows of two)."""
    page.wait_for_function(f"(labels) => JSON.stringify(({FIRST_TICKS})(labels.length)) === JSON.stringify(labels)", arg=labels, timeout=60_000)


def chart_titles(page):
    page.wait_for_selector(".js-plotly-plot .gtitle")
    return svg_texts(page.locator(".js-plotly-plot .gtitle"))


def test_type_toggle_download_and_screenshot_every_page(server, page, tmp_path):
    page.goto(server)
    settle(page)
    page.get_by_role("link", name="Attention").first.click()
    settle(page)
    assert any("toy · layer 0 · head 0" in t for t in chart_titles(page))

    text = page.get_by_role("textbox", name="Sentences, one per line")
    text.fill("The cat sat on the mat.")
    text.press("Control+Enter")
    settle(page)
    wait_for_first_ticks(page, toy_labels("The cat sat on the mat.")[:7])  # the toy's own pieces

    head_pill(page, "1").click()  # one click adds head 1
    settle(page)
    wait_for_title(page, "head 1")

    page.locator(".st-key-w_mask").get_by_role("radio", name="none", exact=True).click()
    settle(page)
    wait_for_title(page, "mask none")
    assert "mask=none" in page.url and "heads=0%2C1" in page.url

    first_chart = page.locator(".av-chart").first  # its own export buttons, under the plot
    with page.expect_download(timeout=90_000) as png_download:
        first_chart.get_by_role("button", name="PNG").click()
    png = tmp_path / "figure.png"
    png_download.value.save_as(png)
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert Image.open(io.BytesIO(png.read_bytes())).size[0] >= 1000
    assert re.fullmatch(r"stages-l0-h0-toy-[0-9a-f]{7}\.png", png_download.value.suggested_filename)  # model and settings in the name

    with page.expect_download(timeout=90_000) as svg_download:
        first_chart.get_by_role("button", name="SVG").click()
    svg = tmp_path / "figure.svg"
    svg_download.value.save_as(svg)
    root = ElementTree.fromstring(svg.read_bytes())
    assert root.tag.endswith("svg")
    assert all(label in svg.read_text() for label in toy_labels("The cat sat on the mat."))

    screenshot(page, "3-attention")
    pages = (
        ("0-home", "Home"),
        ("1-tokens", "Tokens"),
        ("2-positional-encoding", "Positional encoding"),
        ("4-embeddings", "Embeddings"),
        ("5-next-token", "Next token"),
        ("6-train", "Train"),
        ("7-lessons", "Lessons"),
    )
    for name, label in pages:
        page.get_by_role("link", name=label).first.click()
        settle(page)
        assert page.locator("[data-testid=stException]").count() == 0
        screenshot(page, name)
    assert page.get_by_role("textbox", name="Sentences, one per line").input_value() == "The cat sat on the mat."  # kept across pages


def test_a_lesson_opens_in_the_browser(server, page):
    page.goto(f"{server}/Lessons")
    settle(page)
    page.get_by_role("button", name="Open this lesson").nth(2).click()  # padding in a batch
    page.wait_for_url("**/Attention**", timeout=60_000)
    settle(page)
    assert any("mask causal+padding" in t for t in chart_titles(page))
    ticks = svg_texts(page.locator(".js-plotly-plot").first.locator(".x3tick text"))
    assert ticks[:4] == toy_labels("A dog ran.") and "[PAD]" in ticks
    screenshot(page, "8-lesson-padding")
