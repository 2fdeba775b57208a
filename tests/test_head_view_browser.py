"""The head view component in a real browser: Debian's chromium driven by Playwright against
`streamlit run tests/apps/head_view_app.py` (the component alone, no sidebar)."""

from __future__ import annotations

import contextlib
import io
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ElementTree

import pytest
import torch
from PIL import Image
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from conftest import settle, streamlit_server, tab, toy_labels, toy_tokens
from model import load_model
from model.words import word_groups, word_pattern

pytestmark = pytest.mark.browser
TEXT = "The cat sat on the mat because it was tired."
HEADS = [0, 1, 2, 3]


@pytest.fixture(scope="module")
def app_url():
    with streamlit_server("tests/apps/head_view_app.py", "--server.enableStaticServing", "false") as (url, _):
        yield url


@pytest.fixture
def page(context):
    """A page of its own (its own Streamlit session) in the module's browser context (conftest), closed after the test."""
    with tab(context):
        yield context.new_page()


def open_app(page, url, **query):
    page.goto(f"{url}/?{urllib.parse.urlencode(query)}")
    page.wait_for_selector(".hv-q .hv-tok", timeout=90_000)


def query_of(page) -> dict:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlparse(page.url).query))


def wait_for_query(page, name, value, timeout=30_000):
    try:
        page.wait_for_function("([name, value]) => new URLSearchParams(location.search).get(name) === value", arg=[name, value], timeout=timeout)
    except PlaywrightTimeout:
        raise AssertionError(f"{name}={value!r} never reached the URL: {page.url}") from None


def table_weights(page, position: int) -> list[list[float]]:
    """The weights of the pinned-row table, per head, once it shows `position`."""
    page.wait_for_selector(f".hv-row-table caption:has-text('(position {position})')", timeout=30_000)
    cells = page.locator(".hv-row-table tbody tr").evaluate_all("rows => rows.map(r => [...r.querySelectorAll('td.hv-w')].map(td => Number(td.dataset.value)))")
    return torch.tensor(cells).T.tolist()  # [head, key]


@pytest.fixture(scope="module")
def pattern():
    trace = load_model("toy").trace([TEXT])
    return trace.stages(0).pattern[0, HEADS]  # [head, query_pos, key_pos]


def test_click_pins_the_row_and_the_table_is_the_traces_row(app_url, page, pattern):
    open_app(page, app_url, text=TEXT)
    tokens = page.locator(".hv-q .hv-tok")
    assert tokens.all_inner_texts() == toy_labels(TEXT, visible_spaces=True)  # the toy's own pieces, a leading space as ␣
    tokens.nth(5).click()
    wait_for_query(page, "pin", "5")
    torch.testing.assert_close(torch.tensor(table_weights(page, 5)), pattern[:, 5], atol=1e-6, rtol=0)
    assert tokens.nth(5).get_attribute("aria-pressed") == "true"
    tokens.nth(5).click()  # a second click unpins
    wait_for_query(page, "pin", None)
    expect(page.locator(".hv-row-table")).to_have_count(0, timeout=30_000)


def test_keyboard_moves_pins_and_clears(app_url, page, pattern):
    open_app(page, app_url, text=TEXT, pin="2")
    table_weights(page, 2)
    pinned = page.locator(".hv-q .hv-tok").nth(2)
    pinned.focus()
    assert pinned.evaluate("b => b.matches(':focus-visible') || document.activeElement === b || b.getRootNode().activeElement === b")
    page.keyboard.press("ArrowDown")
    wait_for_query(page, "pin", "3")
    torch.testing.assert_close(torch.tensor(table_weights(page, 3)), pattern[:, 3], atol=1e-6, rtol=0)
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    wait_for_query(page, "pin", "5")
    page.keyboard.press("Escape")
    wait_for_query(page, "pin", None)
    page.keyboard.press("ArrowUp")  # unpinned: arrows move the focus only
    page.keyboard.press("Enter")
    wait_for_query(page, "pin", "4")
    # to the keys' column, then Enter asks for the pair's worked example
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Enter")
    wait_for_query(page, "cell", "4,3")
    expected = float(pattern[0, 4, 3])
    expect(page.get_by_text(f"query 4 → key 3, weight {expected:.4f}")).to_have_count(1, timeout=30_000)  # the rerun follows the URL


def test_clicking_a_key_sets_the_worked_example(app_url, page, pattern):
    open_app(page, app_url, text=TEXT, pin="7")
    table_weights(page, 7)
    page.locator(".hv-k .hv-tok").nth(1).click()
    wait_for_query(page, "cell", "7,1")
    expect(page.get_by_text(f"query 7 → key 1, weight {float(pattern[0, 7, 1]):.4f}")).to_have_count(1, timeout=30_000)
    assert page.locator(".hv-row-table tr.hv-pair-row th").inner_text() == "1"


def test_word_level_merges_pieces(app_url, page):
    text = "The antidisestablishmentarianism of tokenization."
    open_app(page, app_url, text=text, tok="gpt2-bpe", words="1")
    assert page.locator(".hv-q .hv-tok").all_inner_texts() == ["The", "antidisestablishmentarianism", "of", "tokenization", "."]
    assert "sum over the key word's pieces" in page.locator(".hv-note").inner_text()
    page.locator(".hv-q .hv-tok").nth(3).click()
    wait_for_query(page, "pin", "3")
    trace = load_model("toy-random", tokenizer="gpt2-bpe").trace([text])
    merged = word_pattern(trace.stages(0).pattern[0, HEADS], word_groups(trace.tokens[0], text))
    torch.testing.assert_close(torch.tensor(table_weights(page, 3)), merged[:, 3], atol=1e-6, rtol=0)


def test_png_svg_and_csv_downloads(app_url, page, tmp_path):
    open_app(page, app_url, text=TEXT, pin="5")
    table_weights(page, 5)
    with page.expect_download(timeout=90_000) as png_download:
        page.get_by_role("button", name="PNG").click()
    png = png_download.value.path().read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert Image.open(io.BytesIO(png)).size[0] >= 1000
    with page.expect_download(timeout=90_000) as svg_download:
        page.get_by_role("button", name="SVG").click()
    svg = svg_download.value.path().read_text()
    assert ElementTree.fromstring(svg.encode()).tag.endswith("svg")
    tokens, labels = toy_tokens(TEXT), toy_labels(TEXT)
    assert f">{labels[5]}<" in svg and "head 3" in svg
    with page.expect_download(timeout=30_000) as csv_download:
        page.get_by_role("button", name="CSV").click()
    rows = csv_download.value.path().read_text().splitlines()
    assert rows[0] == "layer,head,query_position,query_token,key_position,key_token,weight"
    assert len(rows) == 1 + 4 * len(tokens)  # every key of the pinned query, in each of the four heads
    assert rows[1].startswith(f"0,0,5,{tokens[5]},0,{tokens[0]},") and rows[-1].endswith(",")  # keys after the query are masked (causal)


# ------------------------------------------------------------------ the real app: `streamlit run app.py`

REAL_TEXT = "The cat sat on the mat."
REAL_TOKENS = toy_tokens(REAL_TEXT)  # the toy's own pieces, each with its leading space


def open_attention(page, server, **query):
    page.goto(f"{server}/Attention?{urllib.parse.urlencode(query)}")
    page.wait_for_selector(".hv-q .hv-tok", timeout=90_000)
    settle(page)


def expect_worked_example(page, text: str) -> None:
    """Wait until the worked example's text says `text` (the URL changes before the page is drawn)."""

    expect(page.locator("[data-testid=stMarkdownContainer]").filter(has_text="gives weight")).to_contain_text(text, timeout=30_000)


STILL = """async (gd) => {
  // until the chart is drawn, not waiting below the window, and has not moved for a frame (the scroll is over)
  let last = null;
  for (let frame = 0; frame < 600; frame++) {
    await new Promise((resolve) => requestAnimationFrame(resolve));
    const top = gd.getBoundingClientRect().top;
    if (top === last && gd.querySelector('.main-svg') && !gd.closest('.av-chart')?.classList.contains('av-chart-stale')) return;
    last = top;
  }
}"""


def click_plot(page, chart, x: float, y: float, axes=("xaxis", "yaxis")):
    """Click the point (x, y) of a plotly chart, in data coordinates of the given axes: from the subplot's
    box in the page and the axes' ranges, which plotly writes into the figure's layout when it draws."""
    chart.scroll_into_view_if_needed()
    chart.evaluate(STILL)
    px = chart.evaluate(
        """(gd, [x, y, xa, ya]) => {
             const subplot = xa.replace('axis', '') + ya.replace('axis', '');
             const box = gd.querySelector(`.nsewdrag[data-subplot="${subplot}"]`).getBoundingClientRect();
             const [x0, x1] = gd.layout[xa].range, [y0, y1] = gd.layout[ya].range;
             return [box.left + ((x - x0) / (x1 - x0)) * box.width, box.top + ((y1 - y) / (y1 - y0)) * box.height];
           }""",
        [x, y, *axes],
    )
    page.mouse.click(*px)


@pytest.fixture(scope="module")
def real_pattern():
    trace = load_model("toy").trace([REAL_TEXT])
    return trace.stages(0).pattern[0]  # [head, query_pos, key_pos]


def test_real_app_pin_a_token_then_a_key_gives_its_worked_example(server, page, real_pattern):
    open_attention(page, server, text=REAL_TEXT, heads="0,1")
    page.locator(".hv-q .hv-tok").nth(3).click()
    wait_for_query(page, "pin", "3")
    torch.testing.assert_close(torch.tensor(table_weights(page, 3)), real_pattern[[0, 1], 3], atol=1e-6, rtol=0)
    page.locator(".hv-k .hv-tok").nth(1).click()
    wait_for_query(page, "cell", "3,1")
    expect_worked_example(page, f"“{REAL_TOKENS[3]}” gives weight {float(real_pattern[0, 3, 1]):.4f} to “{REAL_TOKENS[1]}”")
    page.locator(".hv-q .hv-tok").nth(3).focus()
    page.keyboard.press("ArrowDown")
    wait_for_query(page, "pin", "4")
    torch.testing.assert_close(torch.tensor(table_weights(page, 4)), real_pattern[[0, 1], 4], atol=1e-6, rtol=0)
    page.keyboard.press("Escape")
    wait_for_query(page, "pin", None)
    page.reload()  # the link keeps the chosen cell
    page.wait_for_selector(".hv-q .hv-tok", timeout=90_000)
    expect_worked_example(page, f"“{REAL_TOKENS[3]}” gives weight {float(real_pattern[0, 3, 1]):.4f} to “{REAL_TOKENS[1]}”")


def test_real_app_heatmap_cell_sets_the_worked_example(server, page, real_pattern):
    open_attention(page, server, text=REAL_TEXT)
    chart = page.locator(".js-plotly-plot").first  # stages of layer 0, head 0; the softmax panel is x4/y4
    click_plot(page, chart, 2, 5, axes=("xaxis4", "yaxis4"))
    wait_for_query(page, "cell", "5,2")
    assert query_of(page)["pin"] == "5"
    expect_worked_example(page, f"“{REAL_TOKENS[5]}” gives weight {float(real_pattern[0, 5, 2]):.4f} to “{REAL_TOKENS[2]}”")
    table_weights(page, 5)  # the head view pinned the cell's query


def test_real_app_a_masked_cell_hovers_as_masked_and_its_click_sets_the_worked_example(server, page, real_pattern):
    open_attention(page, server, text=REAL_TEXT)
    chart = page.locator(".js-plotly-plot").first
    query, key = 1, 4  # a key after the query: masked in the causal toy model, a gap with a cross
    assert float(real_pattern[0, query, key]) == 0
    click_plot(page, chart, key + 0.02, query + 0.02, axes=("xaxis4", "yaxis4"))  # near, not on, the centre
    assert f"masked: query {REAL_TOKENS[query]} may not attend to key {REAL_TOKENS[key]}" in chart.evaluate("gd => gd.querySelector('.hoverlayer').textContent")
    wait_for_query(page, "cell", f"{query},{key}")
    expect_worked_example(page, f"“{REAL_TOKENS[query]}” gives weight 0.0000 to “{REAL_TOKENS[key]}”")


def test_real_app_overview_tile_opens_its_head_and_scrolls_to_it(server, page):
    open_attention(page, server, text=REAL_TEXT)
    overview = page.locator(".st-key-chart_overview-all-heads .av-chart-plot")  # drawn when scrolled to
    overview.scroll_into_view_if_needed()
    expect(overview.locator(".gtitle")).to_contain_text("attention patterns of every head", timeout=30_000)
    meta = overview.evaluate("gd => gd.data[0].meta")
    x = 2 * (meta["panel_cols"] + meta["gap"]) + (meta["panel_cols"] - 1) / 2  # layer 1, head 2
    y = 1 * (meta["panel_rows"] + meta["gap"]) + (meta["panel_rows"] - 1) / 2
    click_plot(page, overview, x, y)
    wait_for_query(page, "layer", "1")
    assert query_of(page)["heads"] == "2"
    settle(page)

    stages = page.locator(".js-plotly-plot").first
    expect(stages.locator(".gtitle")).to_contain_text("layer 1 · head 2", timeout=60_000)
    top = lambda: stages.evaluate("e => e.getBoundingClientRect().top")  # noqa: E731
    near_top = "() => { const top = document.querySelector('.js-plotly-plot')?.getBoundingClientRect().top; return top >= 0 && top < 400; }"
    with contextlib.suppress(PlaywrightTimeout):
        page.wait_for_function(near_top, timeout=15_000)
    assert 0 <= top() < 400, top()  # scrolled up to the opened head


def test_real_app_head_view_downloads(server, page, tmp_path):
    open_attention(page, server, text=REAL_TEXT, pin="5")
    table_weights(page, 5)
    with page.expect_download(timeout=90_000) as png_download:
        page.locator(".hv .av-chart-exports").get_by_role("button", name="PNG").click()
    png = png_download.value.path().read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and Image.open(io.BytesIO(png)).size[0] >= 1000
    with page.expect_download(timeout=90_000) as svg_download:
        page.locator(".hv .av-chart-exports").get_by_role("button", name="SVG").click()
    svg = svg_download.value.path().read_text()
    assert ElementTree.fromstring(svg.encode()).tag.endswith("svg") and f"“{toy_labels(REAL_TEXT)[5]}” (5)" in svg
    with page.expect_download(timeout=30_000) as html_download:
        page.locator(".hv .av-chart-exports").get_by_role("button", name="HTML").click()
    html = html_download.value.path().read_text()
    assert "function headView(component)" in html and "https://" not in html
