"""Whatever a link carries is shown as plain text: a web address, a "www." address, an e-mail, markdown or
HTML in any link parameter never becomes a link, markup or a script on any page (issue: a shared link put
a clickable phishing address inside the app's own notice)."""

from urllib.parse import urlencode

import pytest

from conftest import chromium, one_by_one, settle, slug
from ui import PAGES
from viz.content.settings import URL_KEYS

pytestmark = pytest.mark.browser
HOSTILE = "https://evil-example.com/login www.evil-example.com a@evil-example.com [x](https://evil-example.com) <b>bold</b> <img src=x onerror=alert(1)>"


def test_no_link_markup_or_script_from_any_link_parameter_on_any_page(server):
    params = {key: HOSTILE for key in URL_KEYS.values() if key != "text"}
    params["text"] = "The cat sat on the mat. " + HOSTILE  # the sentences are echoed too (badges, captions, labels)
    with chromium() as browser, browser.new_context(viewport={"width": 1440, "height": 900}) as context:
        dialogs = []
        context.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        tabs = one_by_one(context, [f"{server}/{slug(path)}?{urlencode(params)}" for path, _, _ in PAGES])
        for (_, label, _), page in zip(PAGES, tabs):
            page.locator("h1").first.wait_for(timeout=120_000)
            settle(page, timeout=180_000)
            links = page.locator("a").evaluate_all(  # the page's own anchors carry its link: only other hosts count
                "els => els.map(a => new URL(a.href, location.href)).filter(u => u.host !== location.host).map(u => u.href)"
            )
            assert links == [], (label, links)
            assert page.locator("[data-testid=stMain] b:text('bold'), [data-testid=stMain] img[src=x]").count() == 0, label
            notices = " ".join(page.locator("[data-testid=stAlert]").all_inner_texts())
            if label == "Attention":  # the link's values are echoed, as text
                assert "evil-example" in notices.replace("\u2060", ""), notices[:300]
            assert page.locator("[data-testid=stException]").count() == 0, label
        assert dialogs == []


def test_no_request_leaves_the_machine_on_any_page(every_page):
    """Used offline, the app asks no other host for anything (no icon font, no CDN, no analytics): every
    request of the browser while every page was opened (tests/every_page.py)."""
    from urllib.parse import urlparse

    assert [visit["label"] for visit in every_page["pages"]] == [label for _, label, _ in PAGES]
    own = urlparse(every_page["server"]).netloc
    asked = every_page["requests"]
    elsewhere = sorted({url for url in asked if urlparse(url).scheme in ("http", "https", "ws", "wss") and urlparse(url).netloc != own})
    assert len(asked) > 20 and elsewhere == [], elsewhere[:5]
