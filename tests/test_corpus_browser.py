"""The Corpus page in a real browser: a click on an example's bar opens its sentence on the Attention page,
with the head chosen and the query pinned."""

import re
from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import chromium, settle
from model import load_model
from model.corpus_heads import classroom_sentences
from model.heads import corpus_summary

pytestmark = pytest.mark.browser
BARS = ".st-key-chart_top-examples g.trace.bars g.point path"


def test_a_click_on_an_example_opens_it_on_the_attention_page(server):
    sentence, query, key, weight = corpus_summary(load_model("toy"), classroom_sentences(), top=20).top_examples(1, 2)[2]
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.goto(f"{server}/Corpus?layer=1&heads=2")
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
        assert link["text"] == [classroom_sentences()[sentence]]
        assert (link["layer"], link["heads"], link["pin"], link["cell"]) == (["1"], ["2"], [str(query)], [f"{query},{key}"])
        worked = page.get_by_text(re.compile(r"^Head 2, layer 1: ")).first
        assert f"gives weight {weight:.4f}" in worked.inner_text()
        page.screenshot(path="/tmp/cc/attention-landing.png")
