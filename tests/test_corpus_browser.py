"""The Corpus page in a real browser: a click on an example's bar opens its sentence on the Attention page,
with the head chosen and the query pinned."""

import re
from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import settle, tab
from model import load_model
from model.corpus_heads import heldout_sentences
from model.heads import corpus_summary

pytestmark = pytest.mark.browser
BARS = ".st-key-chart_top-examples g.trace.bars g.point path"


def test_a_click_on_an_example_opens_it_on_the_attention_page(server, context):
    sentence, query, key, weight = corpus_summary(load_model("toy"), heldout_sentences(), top=20).top_examples(1, 2)[2]
    with tab(context):
        page = context.new_page()
        page.goto(f"{server}/Corpus?corpus=held-out&layer=1&heads=2")
        page.locator("h1").first.wait_for(timeout=120_000)
        settle(page, timeout=180_000)
        bar = page.locator(BARS).nth(2)  # the third strongest example
        bar.scroll_into_view_if_needed()
        box = bar.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_url(re.compile(r"/Attention\?"), timeout=60_000)
        settle(page, timeout=120_000)
        assert page.locator("[data-testid=stException]").count() == 0
        link = parse_qs(urlsplit(page.url).query)
        assert link["text"] == [heldout_sentences()[sentence]]
        assert (link["layer"], link["heads"], link["pin"], link["cell"]) == (["1"], ["2"], [str(query)], [f"{query},{key}"])
        worked = page.get_by_text(re.compile(r"^Head 2, layer 1: ")).first
        assert f"gives weight {weight:.4f}" in worked.inner_text()


def test_the_tables_link_opens_the_example_in_a_new_tab(server, context):
    sentence, query, key, weight = corpus_summary(load_model("toy"), heldout_sentences(), top=20).top_examples(1, 2)[0]
    with tab(context):
        page = context.new_page()
        page.goto(f"{server}/Corpus?corpus=held-out&layer=1&heads=2")
        page.locator("h1").first.wait_for(timeout=120_000)
        settle(page, timeout=180_000)
        page.get_by_text("The examples as a table").first.click()
        settle(page)
        grid = page.locator("[data-testid=stDataFrame]").first
        grid.evaluate("e => e.scrollIntoView({block: 'center'})")
        settle(page)
        box = grid.bounding_box()
        x, y = box["x"] + 95, box["y"] + 52  # the "open" cell of the first row (the columns: rank, open, …)
        page.mouse.move(x, y)
        with context.expect_page(timeout=30_000) as opened:
            page.mouse.click(x, y)
        opened_tab = opened.value
        opened_tab.locator("h1").first.wait_for(timeout=120_000)
        settle(opened_tab, timeout=120_000)
        link = parse_qs(urlsplit(opened_tab.url).query)
        assert urlsplit(opened_tab.url).path.endswith("/Attention") and link["text"] == [heldout_sentences()[sentence]]
        assert (link["pin"], link["cell"]) == ([str(query)], [f"{query},{key}"])
        assert f"gives weight {weight:.4f}" in opened_tab.get_by_text(re.compile(r"^Head 2, layer 1: ")).first.inner_text()
