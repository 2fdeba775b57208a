"""Handouts and presentation in a real browser: a page printed to PDF by chromium leaves out the sidebar
and the buttons and keeps the figures with their titles; presentation mode hides the sidebar, enlarges
the text, and the arrow keys move from one figure to the next."""

import contextlib
import io

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from pypdf import PdfReader

from conftest import settle, tab

pytestmark = pytest.mark.browser
AT_TOP = "(i) => Math.abs(document.querySelectorAll('.av-chart:not(.av-chart-hidden)')[i].getBoundingClientRect().y) <= 80"
SCROLL_ENDED = """async (chart) => {
  // until the chart has not moved for ten frames: a smooth scroll is over
  let last = null, still = 0;
  for (let frame = 0; frame < 600 && still < 10; frame++) {
    await new Promise((resolve) => requestAnimationFrame(resolve));
    const y = chart.getBoundingClientRect().y;
    still = y === last ? still + 1 : 0;
    last = y;
  }
}"""


@pytest.fixture(scope="module")
def browser_page(context):
    """One page for the printing and the presentation tests, in the module's browser context (conftest)."""
    return context.new_page()


def open_page(page, url):
    """`url` loaded and its script run to the end. The status widget alone was not enough: on a server's first
    run it could be checked before it had appeared (seen in CI: the sidebar not drawn yet)."""
    page.goto(url)
    page.wait_for_function("() => document.querySelector('.av-chart')?.__chart?.wanted", timeout=90_000)  # drawn or waiting below the window
    settle(page, quiet=1500)


def test_a_printed_page_has_its_figures_and_no_sidebar_or_buttons(server, browser_page):
    open_page(browser_page, f"{server}/Attention?text=The+cat+sat+on+the+mat.&mask=causal")
    browser_page.get_by_text("Sentences, one per line").wait_for(state="visible", timeout=30_000)  # on screen, the sidebar is there
    exports = browser_page.locator(".av-chart-exports").first  # the chart's own export buttons
    assert exports.is_visible()
    browser_page.emulate_media(media="print")
    assert exports.is_hidden()
    browser_page.emulate_media(media="null")  # no emulation: page.pdf() below prints with print media
    text = "\n".join(p.extract_text() for p in PdfReader(io.BytesIO(browser_page.pdf(print_background=True, prefer_css_page_size=True))).pages)
    assert "toy · layer 0 · head 0 · mask causal" in text  # a figure with its title
    assert "softmax" in text and "key (attended to)" in text  # its panels and axes, not cut off
    assert "Why divide by √d_k?" in text or "Why divide by" in text
    assert "attention patterns of every head" in text  # the page's last chart: drawn for printing, never scrolled to
    for absent in ("Sentences, one per line", "Softmax temperature", "Presentation mode", "Download all", "Positional encoding\nAttention"):
        assert absent not in text, absent


def test_presentation_mode_hides_the_sidebar_and_moves_by_figure(server, browser_page):
    open_page(browser_page, f"{server}/Attention?text=The+cat+sat+on+the+mat.&present=1")
    assert not browser_page.locator("section[data-testid=stSidebar]").is_visible()
    assert browser_page.locator(".av-chart-exports").first.is_hidden()
    size = browser_page.evaluate("() => parseFloat(getComputedStyle(document.querySelector('[data-testid=stMarkdownContainer] p')).fontSize)")
    assert size >= 22
    charts = browser_page.locator(".av-chart:not(.av-chart-hidden)")  # not the hidden charts of heads not shown
    assert charts.count() >= 4
    height = charts.nth(0).bounding_box()["height"]
    assert height >= 0.85 * 900  # one figure per screen
    browser_page.locator("h1").click()
    tops = []
    for figure in range(2):
        browser_page.keyboard.press("ArrowRight")
        with contextlib.suppress(PlaywrightTimeout):  # the scroll has reached the figure (asserted below)
            browser_page.wait_for_function(AT_TOP, arg=figure, timeout=10_000)
        charts.nth(figure).evaluate(SCROLL_ENDED)
        tops.append([round(charts.nth(i).bounding_box()["y"]) for i in range(3)])
    # after the first key the first figure is at the top of the window, after the second the next one
    assert abs(tops[0][0]) <= 80 and abs(tops[1][1]) <= 80, tops
    browser_page.get_by_role("button", name="Exit presentation").click()
    browser_page.locator("section[data-testid=stSidebar]").wait_for(state="visible", timeout=60_000)
    assert "present" not in browser_page.url


@pytest.mark.parametrize("width, height", [(1280, 720), (1440, 900)])
def test_presentation_formula_row_fits_on_one_line_at_projector_widths(server, context, width, height):
    """The four formulas above the stage panels are whole (none cut at the row's edge or the window's)
    in one row, and no widget label ends in an ellipsis."""
    with tab(context):
        page = context.new_page()
        page.set_viewport_size({"width": width, "height": height})
        open_page(page, f"{server}/Attention?text=The+cat+sat+on+the+mat.&present=1")
        boxes = page.evaluate(
            """() => [...document.querySelectorAll('.st-key-av_formulas .katex-html')].map((formula) => {
                const range = document.createRange();
                range.selectNodeContents(formula);  // the glyphs drawn, not the block they sit in
                const own = range.getBoundingClientRect(), row = formula.closest('.st-key-av_formulas').getBoundingClientRect();
                return {left: own.left, right: own.right, top: own.top, column_right: row.right};
            })"""
        )
        assert len(boxes) == 4
        for box in boxes:
            assert box["right"] <= box["column_right"] + 1 and box["right"] <= width, boxes
        assert max(b["top"] for b in boxes) - min(b["top"] for b in boxes) < 40, boxes  # one row
        cut = page.evaluate(
            "() => [...document.querySelectorAll('.stMarkdownEllipsis')].filter((e) => e.scrollWidth > e.clientWidth + 1).map((e) => e.textContent)"
        )
        assert cut == []


def test_the_presentation_toggle_in_the_sidebar_reruns_the_whole_page_into_presentation_mode(server, context):
    """The toggle sits in the view's fragment (ui.page with a body), but presentation mode is drawn by the
    full run (stylesheet, the bar with the way out): switching it reruns the whole page, and back."""
    with tab(context):
        page = context.new_page()
        open_page(page, f"{server}/Attention?text=The+cat+sat+on+the+mat.")
        page.locator("[data-testid=stCheckbox]").filter(has_text="Presentation mode").locator("label").first.click()
        page.get_by_role("button", name="Exit presentation").wait_for(timeout=60_000)
        page.wait_for_function("() => location.search.includes('present=1')", timeout=30_000)
        assert not page.locator("section[data-testid=stSidebar]").is_visible()  # the presentation stylesheet hides it
        page.get_by_role("button", name="Exit presentation").click()
        page.wait_for_function("() => !location.search.includes('present=1')", timeout=60_000)
        page.locator("section[data-testid=stSidebar]").wait_for(state="visible", timeout=60_000)
        assert page.get_by_role("button", name="Exit presentation").count() == 0
        assert page.locator("[data-testid=stException], [data-testid=stAlertContentError]").count() == 0
