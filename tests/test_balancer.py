"""Two app processes behind nginx (deploy/serve.py): sticky sessions, both serve, failover from the link.

Browser sessions (separate Playwright contexts, each with its own cookie) open the Attention page through
nginx until both processes have one. nginx's access log says which process answered every request of
every session: each session's requests, its websocket included, go to one process. Then one process is
stopped: its users' tabs reconnect through nginx to the other, and a user's next change, with no reload,
is drawn there on the view of the link (ui/view.py, arrived_from_elsewhere).
"""

import os
from urllib.parse import quote

import pytest

from conftest import BROWSER_ARGS, CHROMIUM, settle

pytestmark = pytest.mark.browser
WORDS = ["cat", "dog", "bird", "horse", "cow", "sheep", "mouse", "king", "queen", "doctor"]


def ticks(page):
    return page.locator(".js-plotly-plot").first.locator(".x3tick text").evaluate_all("els => els.map(e => e.textContent)")


def scale_toggle(page):
    return page.locator("[data-testid=stCheckbox]").filter(has_text="Scale by")


def title(page) -> str:
    return page.locator(".js-plotly-plot").first.evaluate("gd => gd.layout.title.text")


# the first chart shows the figure the server sent for the newest view, not the one the browser drew ahead of it
# (ui/components/chart/live.js redraws the stages at once when a control changes)
SERVERS_FIGURE = "() => { const c = document.querySelector('.av-chart').__chart; return c?.wanted && !c.predicted && c.shown === c.wanted.version; }"


def ports_of(cluster, cookie, since=0):
    """Processes that answered this browser's requests (from the `since`-th line of nginx's log), in order.

    nginx logs a request when it ends, so a websocket shows up when it closes; the health and
    host-config requests a tab makes before it (re)opens its websocket show up at once.
    """
    return [r["port"] for r in cluster.access_log()[since:] if r["key"] == cookie and r["status"] == "200" and r["port"] is not None]


def test_sticky_sessions_both_processes_serve_and_after_failover_the_next_change_works_on_the_links_view():
    from playwright.sync_api import sync_playwright

    from deploy.serve import COOKIE, NGINX, Cluster

    assert os.path.exists(NGINX), "Debian's nginx is needed: make nginx (make test installs it)"
    with Cluster(2) as cluster, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        sessions = []  # (word, page, cookie)
        try:
            for word in WORDS:
                context = browser.new_context(viewport={"width": 1440, "height": 900})
                page = context.new_page()
                page.goto(f"{cluster.url}/Attention?text={quote(f'the {word} sat on the mat .')}")
                page.locator(".js-plotly-plot .x3tick text").first.wait_for(timeout=120_000)
                assert f" {word}" in ticks(page)
                cookie = next(c["value"] for c in context.cookies() if c["name"] == COOKIE)
                sessions.append((word, page, cookie))
                served = {port for _, _, c in sessions for port in ports_of(cluster, c)}
                if len(sessions) >= 2 and served == set(cluster.backend_ports):
                    break
            log = cluster.access_log()
            by_session = {c: {r["port"] for r in log if r["key"] == c and r["port"] is not None} for _, _, c in sessions}
            assert all(len(ports) == 1 for ports in by_session.values()), by_session  # sticky: one process each
            assert set().union(*by_session.values()) == set(cluster.backend_ports)  # both processes serve
            # the frontend's files came from nginx itself (no process named), none through an app process
            static = [r for r in log if r["uri"].startswith("/static/")]
            assert len(static) > 50 and all(r["port"] is None and r["status"] in ("200", "304") for r in static), static[:3]
            plotly = [r for r in log if r["uri"].startswith("/app/static/plotly-cartesian-")]  # the charts' plotly.js too
            assert plotly and all(r["port"] is None and r["status"] in ("200", "304") for r in plotly), plotly
            code = [r for r in log if r["uri"].startswith(("/app/static/av-chart-", "/app/static/av-head-view-"))]  # the components' code
            assert {r["uri"].split("-")[1] for r in code} == {"chart", "head"}, code
            assert all(r["port"] is None and r["status"] in ("200", "304") for r in code), code

            # A user on the first process changes the view (scaling off): it goes into the link.
            victim = cluster.backend_ports[0]
            word, page, cookie = next(s for s in sessions if by_session[s[2]] == {victim})
            scale_toggle(page).locator("label").first.click()
            page.wait_for_url("**scale=0**", timeout=60_000)
            page.locator(".js-plotly-plot .x3tick text").first.wait_for(timeout=60_000)

            survivor = cluster.backend_ports[1]
            since = len(cluster.access_log())
            with page.expect_websocket(timeout=120_000):  # the tab's new websocket: it has reconnected
                cluster.stop_backend(victim)
            assert survivor in ports_of(cluster, cookie, since), "the tab did not reconnect through nginx"
            # The other process knows nothing of this tab until the user's next change (the mask: none), which
            # starts a session there: it draws the link's view (scaling off, the sentence) with that change.
            page.locator(".st-key-w_mask").get_by_role("radio", name="none", exact=True).click()
            page.wait_for_function("() => ['mask=none', 'scale=0'].every((part) => location.search.includes(part))", timeout=60_000)
            page.wait_for_function(SERVERS_FIGURE, timeout=60_000)
            settle(page)
            assert set(ports_of(cluster, cookie, since)) == {survivor}  # nothing of this tab's went elsewhere since
            assert "mask none" in title(page) and "scaling off" in title(page), title(page)
            assert f" {word}" in ticks(page)
            assert scale_toggle(page).locator("input").is_checked() is False
            assert page.locator(".st-key-w_mask").get_by_role("radio", name="none", exact=True).is_checked()
            assert page.locator("[data-testid=stException], [data-testid=stAlertContentError]").count() == 0
        finally:
            browser.close()
