"""Every setting is in the link, the sentences too: the longest text the app takes (10,000 characters,
ASCII or CJK, a 90 KB query string) opens through the balancer (`make serve`) with the text restored."""

import os
from urllib.parse import quote

import pytest

from conftest import BROWSER_ARGS, CHROMIUM, settle
from viz.content.settings import MAX_TEXT_CHARS

pytestmark = pytest.mark.browser


def texts():
    ascii_line = "the cat sat on the mat and the dog ran home . "
    cjk_line = "银行在河边，钱在银行里。"
    return {
        "ascii": (ascii_line * (MAX_TEXT_CHARS // len(ascii_line) + 1))[:MAX_TEXT_CHARS],
        "cjk": (cjk_line * (MAX_TEXT_CHARS // len(cjk_line) + 1))[:MAX_TEXT_CHARS],
    }


def test_a_link_with_the_longest_text_opens_through_nginx_with_the_text_restored():
    from playwright.sync_api import sync_playwright

    from deploy.serve import NGINX, Cluster

    assert os.path.exists(NGINX), "Debian's nginx is needed: make nginx (make test installs it)"
    with Cluster(1) as cluster, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        try:
            for name, text in texts().items():
                url = f"{cluster.url}/Scaling_lab?text={quote(text)}"  # a page whose figures do not depend on the text
                assert len(url) > (85_000 if name == "cjk" else 10_000)
                page = browser.new_page(viewport={"width": 1440, "height": 900})
                answer = page.goto(url, timeout=120_000)
                assert answer.status == 200, (name, answer.status)
                box = page.locator("[data-testid=stTextArea] textarea").first
                box.wait_for(timeout=120_000)
                settle(page, timeout=180_000)
                assert box.input_value() == text, name
                assert page.locator("[data-testid=stException]").count() == 0
                page.close()
        finally:
            browser.close()
