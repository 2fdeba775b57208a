"""Our chart component (ui/chart.py) in Debian's chromium: a toggle updates a chart in place, the charts in
the window at once and the others when they come near it (or for printing); every chart of the page is drawn
on loading."""

from __future__ import annotations

import os
import re
import signal
from contextlib import contextmanager

import pytest
from playwright.sync_api import expect

from conftest import server_pid, settle, tab
from test_plotly_js import TRACES
from ui import assets

pytestmark = pytest.mark.browser

STAGES = ".js-plotly-plot"  # the first chart of the Attention page: the stages of layer 0, head 0
# a panel's finite values as the chart holds them (gd.data): rows of numbers, or plotly's typed array {dtype, bdata}
PANEL = """(gd, axis) => {
  const z = gd.data.find((t) => t.type === 'heatmap' && (t.xaxis || 'x') === axis).z;
  const typed = { f4: Float32Array, f8: Float64Array };
  const decoded = () => Array.from(new typed[z.dtype](Uint8Array.from(atob(z.bdata), (c) => c.charCodeAt(0)).buffer));
  const values = z.bdata ? decoded() : Array.from(z, (row) => Array.from(row)).flat();
  return values.filter(Number.isFinite);
}"""


NEWEST = "() => [...document.querySelectorAll('.av-chart:not(.av-chart-hidden)')].every(b => b.__chart?.wanted && b.__chart.shown === b.__chart.wanted.version)"


def charts_drawn(page) -> int:
    return page.evaluate("() => [...document.querySelectorAll('.av-chart')].filter(b => b.querySelector('.main-svg')).length")


def camera_download(page, plot) -> str:
    """The name of the file plotly's camera button above `plot` (a chart's plot element) saves."""
    plot.hover()
    with page.expect_download(timeout=30_000) as download:
        plot.locator(".modebar-btn[data-title^='Download plot']").click()
    return download.value.suggested_filename


WINDOW = {"width": 1440, "height": 900}


def open_attention(context, server):
    """A page of `context` (its window 1440 × 900) on the Attention page of one short sentence, its first chart drawn."""
    page = context.new_page()
    page.goto(f"{server}/Attention?text=The+cat+sat+on+the+mat.")
    page.wait_for_selector(f"{STAGES} .main-svg", timeout=90_000)
    settle(page)
    return page


def first_stages(page):
    """The first stages chart: its panel's finite values by axis ("x" … "x4"), its titles (the figure's,
    then the four panels'), and the JavaScript expression of its view in chart.js (what it shows, drew ahead)."""
    stages = page.locator(STAGES).first
    panel = lambda axis: stages.evaluate(f"gd => ({PANEL})(gd, '{axis}')")  # noqa: E731
    titles = lambda: stages.evaluate("gd => [gd.layout.title.text, ...gd.layout.annotations.slice(0, 4).map(a => a.text)]")  # noqa: E731
    return panel, titles, "document.querySelector('.av-chart').__chart"


@contextmanager
def server_stopped():
    """The app's process stopped (SIGSTOP) for the block: what the page does then, the browser does alone."""
    os.kill(server_pid[-1], signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(server_pid[-1], signal.SIGCONT)


@pytest.fixture(scope="module")
def first_visit(server, browser):
    """A new visitor's first visit to the Attention page, then one toggle (scaling off), read once for the
    two tests below: the files the browser fetched (plotly.js, the components' code), what came over the
    websocket, and what the page held once loaded and once the toggle's rerun had settled."""
    with browser.new_context(viewport=WINDOW) as context:
        page = context.new_page()
        plotly, code, frames = [], [], []
        answer = lambda r: (r.url.split("/app/static/")[-1], r.status, r.headers.get("content-type", ""))  # noqa: E731
        page.on("response", lambda r: plotly.append(answer(r)) if "lotly" in r.url else code.append(answer(r)) if "/app/static/av-" in r.url else None)
        page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(payload if isinstance(payload, bytes) else payload.encode())))
        page.goto(f"{server}/Attention?text=The+cat+sat+on+the+mat.")
        page.wait_for_selector(f"{STAGES} .main-svg", timeout=90_000)
        settle(page)
        page.evaluate("() => window.dispatchEvent(new Event('beforeprint'))")  # the charts below the window too
        every_drawn = "() => [...document.querySelectorAll('.av-chart:not(.av-chart-hidden)')].every(b => b.querySelector('.main-svg'))"
        page.wait_for_function(every_drawn, timeout=60_000)
        loaded = dict(
            plotly=list(plotly),
            version=page.evaluate("() => Plotly.version"),
            traces=page.evaluate("() => Object.keys(Plotly.PlotSchema.get().traces)"),
            drawn=charts_drawn(page),
        )
        page.locator("[data-testid=stCheckbox]").filter(has_text="Scale by").locator("label").first.click()
        page.wait_for_function("() => location.search.includes('scale=0')", timeout=30_000)
        settle(page)
        toggled = dict(code=list(code), frames=b"".join(frames), drawn=charts_drawn(page))
    return dict(loaded=loaded, toggled=toggled)


def test_the_charts_draw_with_the_cartesian_bundle_and_never_fetch_streamlits_chunk(first_visit):
    """A new visitor's browser evaluates 1.5 MB of plotly.js, not 4.7 MB: the bundle served at app/static/,
    the plotly package's own version, with every trace type the app draws."""
    loaded = first_visit["loaded"]
    answers = loaded["plotly"]
    assert [(url, status) for url, status, _ in answers] == [(f"plotly-cartesian-{assets.plotly_version()}.min.js", 200)]
    assert "javascript" in answers[0][2]
    assert loaded["version"] == assets.plotly_version()
    assert set(TRACES) <= set(loaded["traces"])
    assert loaded["drawn"] >= 7


def test_the_components_code_is_fetched_once_from_app_static_and_never_sent_with_an_element(first_visit):
    """The chart component's code (45 KB, ui/assets.py) is fetched once from app/static/, never sent with
    an element: a toggle's messages hold figures, not code."""
    toggled = first_visit["toggled"]
    answers = toggled["code"]
    names = sorted(name for name, _, _ in answers)
    assert names == sorted([assets.file_name("av-chart"), assets.file_name("av-head-view")]), answers  # each once
    assert all(status == 200 and "javascript" in kind for _, status, kind in answers), answers
    assert toggled["drawn"] >= 7
    received = toggled["frames"]
    assert b"Plotly.react" not in received and b"function saveFile(" not in received  # no component code in any message
    assert b'"version"' in received  # the charts' data did come this way


def test_a_toggle_changes_the_chart_in_place_and_every_chart_is_drawn(server, context):
    with tab(context):
        page = open_attention(context, server)
        boxes = page.locator(".av-chart:not(.av-chart-hidden)").count()  # not the hidden charts of heads 1 to 3
        assert boxes >= 7  # stages, scaling pair, row statistics, value step, output step, overview
        # a chart below the window is drawn when it comes near it: the last ones are not drawn before (one
        # that was near while the page was still filling in may be), none stays blank after
        settle(page)
        below = "() => [...document.querySelectorAll('.av-chart:not(.av-chart-hidden)')].filter(b => b.getBoundingClientRect().top > 3 * innerHeight)"
        assert page.evaluate(f"() => ({below})().length") >= 2  # the output step, the overview
        assert page.evaluate(f"() => ({below})().every(b => !b.querySelector('.main-svg'))")
        shown = page.locator(".av-chart:not(.av-chart-hidden)")
        for i in range(boxes):
            shown.nth(i).scroll_into_view_if_needed()
            shown.nth(i).locator(".main-svg").first.wait_for(timeout=30_000)
        page.evaluate("() => window.scrollTo(0, 0)")
        assert charts_drawn(page) == boxes

        stages = page.locator(STAGES).first
        stages.evaluate("gd => { gd.__before = true; gd.querySelector('.main-svg').__before = true; }")
        camera = lambda plot: (camera_download(page, plot), plot.evaluate("gd => gd.closest('.av-chart').__chart.wanted.config.toImageButtonOptions.filename"))  # noqa: E731
        before_name, wanted = camera(stages)
        assert before_name == wanted + ".svg" and before_name.startswith("stages-l0-h0-")
        rows = page.locator(".av-chart").filter(has_text="How peaked is each query row?").locator(".js-plotly-plot")
        rows_version = rows.evaluate("gd => gd.closest('.av-chart').__chart.shown")
        rows_before_name = camera(rows)[0]
        stages.scroll_into_view_if_needed()  # back to the stages, which the hover on the rows' chart scrolled away
        panel = lambda axis: stages.evaluate(f"gd => ({PANEL})(gd, '{axis}')")  # noqa: E731
        scaled = panel("x2")
        page.locator("[data-testid=stCheckbox]").filter(has_text="Scale by").locator("label").first.click()
        page.wait_for_function("() => location.search.includes('scale=0')", timeout=30_000)
        page.wait_for_function(
            f"(before) => {{ const z = ({PANEL})(document.querySelector('.js-plotly-plot'), 'x2'); return z.some((v, i) => Math.abs(v - before[i]) > 1e-6); }}",
            arg=scaled,
            timeout=30_000,
        )
        unscaled, raw = panel("x2"), panel("x")
        assert stages.evaluate("gd => gd.__before === true")  # the same plot element: updated, not drawn anew
        # and plotly updated it (Plotly.react's diff), not purged and drew it from scratch (a new config
        # would): yet the camera button saves the file under the new view's name
        assert stages.evaluate("gd => gd.querySelector('.main-svg').__before === true")
        after_name, wanted = camera(stages)
        assert after_name == wanted + ".svg" and after_name != before_name
        # a chart whose figure the toggle did not change (how peaked each row is: it compares both) is not
        # drawn again, nor faded as waiting below the window, but its camera button names the new view
        settle(page)
        assert rows.evaluate("gd => gd.closest('.av-chart').__chart.shown") == rows_version
        assert "av-chart-stale" not in rows.evaluate("gd => gd.closest('.av-chart').className")
        rows_name, rows_wanted = camera(rows)
        assert rows_name == rows_wanted + ".svg" and rows_name != rows_before_name and rows_name.startswith("row-stats-")
        assert unscaled == pytest.approx(raw, abs=1e-4)  # scaling off: the second panel is the raw scores
        assert scaled == pytest.approx([v / 32**0.5 for v in raw], abs=1e-3)  # before: raw ÷ √d_k (d_k = 32)
        settle(page)
        assert charts_drawn(page) == boxes

        # a chart far below the window keeps its old picture, faded, until it comes near the window
        overview = page.locator(".av-chart").filter(has_text="attention patterns of every head")
        assert "av-chart-stale" in overview.get_attribute("class")
        titles = lambda: page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => gd.layout.title.text)")  # noqa: E731
        assert sum("scaling off" in t for t in titles()) < boxes - 1  # only what was in the window was redrawn
        overview.scroll_into_view_if_needed()
        expect(overview).not_to_have_class(re.compile("av-chart-stale"), timeout=30_000)
        assert "scaling off" in overview.locator(".js-plotly-plot").evaluate("gd => gd.layout.title.text")
        page.evaluate("() => window.dispatchEvent(new Event('beforeprint'))")  # printing draws the rest
        page.wait_for_function("() => !document.querySelector('.av-chart-stale')", timeout=30_000)
        assert page.evaluate(NEWEST)  # each chart drew its newest figure
        assert page.locator("[data-testid=stException], [data-testid=stAlertContentError], .av-chart-note:not(:empty)").count() == 0


def test_the_stages_follow_the_scaling_and_temperature_at_once_and_the_servers_figure_agrees(server, context):
    """With the server stopped, a click on the scaling toggle, a key on the temperature slider, a hidden key
    and a click on the mask's pills redraw the first layer's stages in the browser (ui/components/chart/live.js); once the server runs again, its own
    figure replaces them: the same values and the same titles."""
    with tab(context):
        page = open_attention(context, server)
        panel, titles, view = first_stages(page)
        opacity = lambda selector: float(page.evaluate(f"() => getComputedStyle(document.querySelector('{selector}')).opacity"))  # noqa: E731
        formulas_opacity = lambda: opacity(".st-key-av_formulas")  # noqa: E731
        badge_top = page.locator(".st-key-page_notices").bounding_box()["y"]
        assert formulas_opacity() == 1 and "the model's own settings" in page.locator(".st-key-page_notices").inner_text()
        raw, pattern = panel("x"), panel("x4")
        assert "scaling off" not in titles()[0]
        with server_stopped():
            page.locator("[data-testid=stCheckbox]").filter(has_text="Scale by").locator("label").first.click()
            page.wait_for_function(f"() => {view}.predicted && {view}.shown.includes(' false model 1 - ')", timeout=10_000)
            assert panel("x2") == pytest.approx(raw, rel=1e-6)  # scaling off: the second panel is the raw scores
            ahead_unscaled = titles()
            assert "scaling off" in ahead_unscaled[0] and ahead_unscaled[2].startswith("no scaling (÷ 1)")
            assert formulas_opacity() < 0.5  # the formulas above still say S / √32: faded until the server's rerun
            assert opacity(".st-key-page_notices") < 0.5  # and the badge "the model's own settings"
            thumb = page.locator("[data-testid=stSlider]").filter(has_text="Softmax temperature").get_by_role("slider")
            thumb.focus()
            thumb.press("ArrowRight")  # T = 1 → 1.25
            page.wait_for_function(f"() => {view}.shown.includes(' false model 1.25 - ')", timeout=10_000)
            ahead = panel("x4")
            assert titles()[4].startswith("softmax(· ÷ T), T = 1.25") and "T = 1.25" in titles()[0]
            assert ahead != pytest.approx(pattern, abs=1e-3)  # a new pattern, drawn while the server was stopped
            hide = page.locator("[data-testid=stMultiSelect]").get_by_role("combobox", name=BOX, exact=True)
            hide.click()
            page.get_by_role("option", name=re.compile(r"\(sentence 1, position 1\)$")).first.click()
            page.keyboard.press("Escape")
            page.wait_for_function(f"() => {view}.shown.endsWith(' false model 1.25 hiding 1')", timeout=10_000)
            ahead, ahead_titles = panel("x4"), titles()
            assert "hidden “cat”" in ahead_titles[0] and "+ 1 hidden" in ahead_titles[3]
            assert len(ahead) == len(pattern) - 6  # key 1 hidden from the six queries (1 to 6) that saw it
            page.locator(".st-key-w_mask").get_by_role("radio", name="none", exact=True).click()  # the mask's pills
            page.wait_for_function(f"() => {view}.shown.endsWith(' false none 1.25 hiding 1')", timeout=10_000)
            ahead, ahead_titles = panel("x4"), titles()
            assert "mask none" in ahead_titles[0] and ahead_titles[3].startswith("masked: 1 hidden")
            assert len(ahead) == 7 * 6  # no causal mask: every query sees every key but the hidden one
        parts = "['scale=0', 'temp=1.25', 'hide=', 'mask=none']"
        try:
            page.wait_for_function(f"() => {parts}.every((part) => location.search.includes(part))", timeout=30_000)
        except Exception as error:  # what the page shows, for whoever reads a failure
            script = "document.querySelector('[data-testid=stApp]').getAttribute('data-test-script-state')"
            state = page.evaluate(f"() => [location.search, {view}.shown, {view}.wanted.version, {script}]")
            raise AssertionError(f"the server's rerun did not show the four changes: {state}") from error
        page.wait_for_function(f"() => !{view}.predicted && {view}.shown === {view}.wanted.version", timeout=30_000)
        settle(page)
        assert titles() == ahead_titles  # the server's figure: the titles the browser wrote
        assert formulas_opacity() == 1 and "(unscaled)" in page.locator(".st-key-av_formulas").inner_text()  # and now say so
        badge = page.locator(".st-key-page_notices").inner_text()
        assert opacity(".st-key-page_notices") == 1
        assert "what-if: mask none (model: causal+padding); hidden: 'cat' in sentence 1; scaling off; temperature 1.25" in badge
        assert page.locator(".st-key-page_notices").bounding_box()["y"] == badge_top  # the page did not move
        assert panel("x4") == pytest.approx(ahead, rel=1e-3, abs=1e-6)  # its values, sent to 4 significant digits
        assert page.locator("[data-testid=stException], [data-testid=stAlertContentError], .av-chart-note:not(:empty)").count() == 0


BOX = "…or find one in any sentence"  # the "Hide key tokens" box, under the token pills of a short sentence
TOKEN_PILLS = ".st-key-w_hide_here button[aria-pressed]"  # one a position, in order


def test_a_tokens_pill_hides_it_at_once_and_the_box_and_the_servers_figure_agree(server, context):
    """With the server stopped, a click on a token's pill redraws the stages without that key, a second
    click brings it back, a third pill adds another. Once the server runs again, the box lists both
    tokens and the server's figure has the browser's values and titles. Then, the server stopped again,
    a token taken out of the box (the control touched last) is what the browser draws, not the pills
    (which show the server's choice until its rerun)."""
    with tab(context):
        page = open_attention(context, server)
        panel, titles, view = first_stages(page)
        pills = page.locator(TOKEN_PILLS)
        assert pills.all_inner_texts() == ["the", "cat", "sat", "on", "the\u200b", "mat", "."]  # the sentence, a repeat told apart
        pattern = panel("x4")
        with server_stopped():
            pills.nth(1).click()
            page.wait_for_function(f"() => {view}.predicted && {view}.shown.endsWith(' true model 1 hiding 1')", timeout=10_000)
            assert "hidden “cat”" in titles()[0] and "+ 1 hidden" in titles()[3]
            assert len(panel("x4")) == len(pattern) - 6  # key 1 hidden from the six queries (1 to 6) that saw it
            pills.nth(1).click()
            page.wait_for_function(f"() => !{view}.predicted && {view}.shown === {view}.wanted.version", timeout=10_000)
            assert panel("x4") == pytest.approx(pattern)  # the server's figure again: nothing hidden
            pills.nth(1).click()
            pills.nth(5).click()
            page.wait_for_function(f"() => {view}.shown.endsWith(' true model 1 hiding 1,5')", timeout=10_000)
            ahead, ahead_titles = panel("x4"), titles()
            assert "hidden “cat”, “mat”" in ahead_titles[0] and len(ahead) == len(pattern) - 6 - 2
        page.wait_for_function("() => location.search.includes('hide=0.1%2C0.5') || location.search.includes('hide=0.1,0.5')", timeout=30_000)
        page.wait_for_function(f"() => !{view}.predicted && {view}.shown === {view}.wanted.version", timeout=30_000)
        settle(page)
        assert titles() == ahead_titles and panel("x4") == pytest.approx(ahead, rel=1e-3, abs=1e-6)
        tags = page.locator(".st-key-w_hidden [data-tag]")
        assert [tags.nth(i).get_attribute("aria-label") for i in range(tags.count())] == ["cat (sentence 1, position 1)", "mat (sentence 1, position 5)"]
        with server_stopped():
            box = page.locator("[data-testid=stMultiSelect]").get_by_role("combobox", name=BOX, exact=True)
            box.click()
            box.press("Backspace")  # "mat" out of the box; its pill still on until the server's rerun
            page.keyboard.press("Escape")
            page.wait_for_function(f"() => {view}.shown.endsWith(' true model 1 hiding 1')", timeout=10_000)
            assert [pill.get_attribute("aria-pressed") for pill in pills.all()].count("true") == 2
        page.wait_for_function(f"() => !{view}.predicted && {view}.shown === {view}.wanted.version", timeout=30_000)
        settle(page)
        assert [pill.get_attribute("aria-pressed") for pill in pills.all()] == ["false", "true", "false", "false", "false", "false", "false"]
        assert page.locator("[data-testid=stException], [data-testid=stAlertContentError], .av-chart-note:not(:empty)").count() == 0


SENDS_AND_DRAWS = """() => {
  // each message the page sends to the server, and each drawing of the chart component (chart.js reports
  // them to window.__avChartTimes, as it does for the browser benchmark), on the page's clock
  window.__sends = []; window.__draws = [];
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (data) { window.__sends.push(performance.now()); return send.call(this, data); };
  window.__avChartTimes = { push: ([started]) => window.__draws.push(started) };
}"""


@pytest.mark.parametrize("control", ["scaling", "mask"])
def test_a_controls_new_value_leaves_for_the_server_before_the_browser_draws_ahead(server, context, control):
    """The browser draws the stages ahead of the server's rerun (live.js), but only once Streamlit has sent
    the control's new value: the rerun then runs while the browser draws, not after (at 16 tokens the
    drawing takes 100 ms of this machine's main thread, which the rerun does not wait for). The server's
    figure, which draws the same, then takes the chart's place without drawing it again."""
    with tab(context):
        page = open_attention(context, server)
        page.evaluate(SENDS_AND_DRAWS)
        page.locator(STAGES).first.evaluate("gd => { gd.__drawings = 0; gd.on('plotly_afterplot', () => gd.__drawings++); }")
        view = "document.querySelector('.av-chart').__chart"
        clicked = page.evaluate("performance.now()")
        if control == "scaling":
            page.locator("[data-testid=stCheckbox]").filter(has_text="Scale by").locator("label").first.click()
        else:
            page.locator(".st-key-w_mask").get_by_role("radio", name="none", exact=True).click()
        page.wait_for_function(f"() => {view}.predicted || window.__draws.length", timeout=10_000)
        sends, draws = page.evaluate("[window.__sends, window.__draws]")
        first_draw = min(d for d in draws if d > clicked)
        assert [t for t in sends if clicked < t < first_draw], (clicked, sends, draws)  # the value went first
        page.wait_for_function(f"() => !{view}.predicted && {view}.shown === {view}.wanted.version", timeout=30_000)
        settle(page)
        assert page.locator(STAGES).first.evaluate("gd => gd.__drawings") == 1  # drawn ahead, then not again


def test_a_heads_pill_shows_or_hides_its_stages_at_once_and_the_servers_figure_agrees(server, context):
    """With the server stopped, a click on head 2's pill shows head 2's stages, drawn in the browser from
    head 0's figure and head 2's raw scores (its placeholder); a click on head 0's pill hides head 0's. Once
    the server runs again, its figure of head 2 takes the same element without drawing it again: the same
    values and titles."""
    with tab(context):
        page = open_attention(context, server)
        stages_of = "(head) => document.querySelector(`[class*=st-key-av_head_box_H${head}] .av-chart`)"
        shown = lambda head: page.evaluate(f"(({stages_of})({head})?.getBoundingClientRect().height || 0) > 0")  # noqa: E731
        title = lambda head: page.evaluate(f"({stages_of})({head}).querySelector('.js-plotly-plot')?.layout.title.text")  # noqa: E731
        panel = lambda head, axis: page.evaluate(f"({PANEL})(({stages_of})({head}).querySelector('.js-plotly-plot'), '{axis}')")  # noqa: E731
        assert shown(0) and not any(shown(h) for h in (1, 2, 3))  # heads 1 to 3: placeholders, hidden
        head_0 = panel(0, "x")
        page.evaluate(f"() => {{ ({stages_of})(2).__mark = 'same element'; }}")
        pill = lambda head: page.locator(".st-key-w_heads button", has_text=str(head))  # noqa: E731
        with server_stopped():
            pill(2).click()
            page.wait_for_function(f"() => ({stages_of})(2).querySelector('.js-plotly-plot .main-svg')", timeout=10_000)
            assert shown(0) and shown(2) and "· head 2 · mask causal+padding" in title(2)
            faded = "(selector) => getComputedStyle(document.querySelector(selector)).opacity !== '1'"
            assert not page.evaluate(faded, ".st-key-av_formulas") and not page.evaluate(faded, ".st-key-page_notices")  # a head is no what-if
            ahead_raw, ahead_pattern = panel(2, "x"), panel(2, "x4")
            assert ahead_raw != pytest.approx(head_0, abs=1e-3)  # head 2's own raw scores
            assert len(ahead_pattern) == 7 * 8 // 2  # 7 tokens, causal: the lower triangle
            pill(0).click()
            page.wait_for_function(f"() => ({stages_of})(0)?.getBoundingClientRect().height === 0", timeout=10_000)
            first_shown = page.locator(".av-chart:not(.av-chart-hidden) .js-plotly-plot").first
            assert shown(2) and first_shown.evaluate("gd => gd.layout.title.text") == title(2)
            drawings = "gd => { gd.__drawings = 0; gd.on('plotly_afterplot', () => gd.__drawings++); }"
            page.locator("[class*=st-key-av_head_box_H2] .js-plotly-plot").evaluate(drawings)
        page.wait_for_function("() => location.search.includes('heads=2')", timeout=30_000)
        view = f"({stages_of})(2).__chart"
        page.wait_for_function(f"() => !{view}.predicted && {view}.shown === {view}.wanted.version", timeout=30_000)
        settle(page)
        assert page.evaluate(f"() => ({stages_of})(2).__mark") == "same element"  # drawn over, not remounted
        # the server's figure of head 2 draws what the browser drew: the chart is not drawn again
        assert page.locator("[class*=st-key-av_head_box_H2] .js-plotly-plot").evaluate("gd => gd.__drawings") == 0
        assert not shown(0) and shown(2) and title(2).startswith("<b>toy · layer 0 · head 2 · mask causal+padding")
        assert panel(2, "x") == pytest.approx(ahead_raw, rel=1e-3, abs=1e-6)
        assert panel(2, "x4") == pytest.approx(ahead_pattern, rel=1e-3, abs=1e-6)
        # another layer: the same head's chart draws over its figure (its box is named by the head alone)
        thumb = page.locator("[data-testid=stSlider]").filter(has_text="Layer").get_by_role("slider")
        thumb.focus()
        thumb.press("ArrowRight")
        page.wait_for_function(f"() => ({stages_of})(2).querySelector('.js-plotly-plot')?.layout.title.text.includes('layer 1 · head 2')", timeout=30_000)
        settle(page)
        assert page.evaluate(f"() => ({stages_of})(2).__mark") == "same element" and not shown(0)
        assert page.locator("[data-testid=stException], [data-testid=stAlertContentError], .av-chart-note:not(:empty)").count() == 0


def test_a_head_clicked_off_and_on_again_is_shown_as_it_was_drawn(server, context):
    """In a later layer (which the browser cannot draw ahead), a head's pill clicked off hides its stages
    and keeps their drawing; clicked on again, the server's figure is the same, and the chart is shown
    without being drawn again: the same plot, no plotly redraw."""
    with tab(context):
        page = open_attention(context, server)
        thumb = page.locator("[data-testid=stSlider]").filter(has_text="Layer").get_by_role("slider")
        thumb.focus()
        thumb.press("ArrowRight")
        page.wait_for_function("() => document.querySelector('.js-plotly-plot')?.layout.title.text.includes('layer 1 · head 0')", timeout=30_000)
        settle(page)
        box = "document.querySelector('[class*=st-key-av_head_box_H1] .av-chart')"
        shown = lambda: page.evaluate(f"() => ({box}?.getBoundingClientRect().height || 0) > 0")  # noqa: E731
        pill = page.locator(".st-key-w_heads button", has_text="1")
        pill.click()
        page.wait_for_function(f"() => {box}?.querySelector('.js-plotly-plot')?.layout.title.text.includes('layer 1 · head 1')", timeout=30_000)
        settle(page)
        count_drawings = "gd.__drawings = 0; gd.on('plotly_afterplot', () => gd.__drawings++); gd.querySelector('.main-svg').__mark = 1;"
        page.evaluate(f"() => {{ const gd = {box}.querySelector('.js-plotly-plot'); {count_drawings} }}")
        pill.click()
        page.wait_for_function(f"() => {box}.getBoundingClientRect().height === 0", timeout=30_000)
        settle(page)
        assert page.locator(".av-chart:not(.av-chart-hidden) .js-plotly-plot").count() == page.locator(".js-plotly-plot").count() - 1
        pill.click()
        page.wait_for_function(f"() => {box}.getBoundingClientRect().height > 0", timeout=30_000)
        settle(page)
        assert shown() and page.evaluate(f"() => {box}.querySelector('.main-svg').__mark") == 1
        assert page.evaluate(f"() => {box}.querySelector('.js-plotly-plot').__drawings") == 0
        assert "layer 1 · head 1" in page.evaluate(f"() => {box}.querySelector('.js-plotly-plot').layout.title.text")
        assert page.locator("[data-testid=stException], [data-testid=stAlertContentError], .av-chart-note:not(:empty)").count() == 0


def test_a_chart_drawn_ahead_that_leaves_the_page_leaves_nothing_faded(server, context):
    """The fades belong to charts in the page: once a chart drawn ahead is gone (another page, another
    layer), the next click finds no chart ahead, and the formulas and badge are no longer faded."""
    with tab(context):
        page = open_attention(context, server)
        classes = "() => document.documentElement.className"
        with server_stopped():
            page.locator("[data-testid=stCheckbox]").filter(has_text="Scale by").locator("label").first.click()
            page.wait_for_function(f"() => ({classes})().includes('av-formulas-ahead')", timeout=10_000)
            page.evaluate("() => document.querySelector('[class*=st-key-av_head_box_H0] .av-chart').remove()")  # as Streamlit removes it
            page.locator("h1").click()
            page.wait_for_function(f"() => !({classes})().includes('av-drawn-ahead') && !({classes})().includes('av-formulas-ahead')", timeout=10_000)


def stages_figure(text: str):
    """The first chart of the Attention page as the server builds it (README: the content API)."""
    from model import load_model
    from viz.content import Settings, attention_page, run_model

    settings = Settings(text=text)
    model = load_model("toy")
    return attention_page(settings, run_model(model, settings.sentences, settings.display), model=model).figures["stages-L0-H0"]


def test_the_export_buttons_under_a_chart_save_png_svg_html_and_csv_once(server, context, tmp_path):
    """PNG and SVG rendered by plotly.js in the page, at the server export's size; HTML and CSV made by the
    server when clicked and sent once with the chart's data: the chart is not redrawn, and a reload saves
    nothing again."""
    import io
    import json
    import re
    import xml.etree.ElementTree as ElementTree

    import plotly.io
    from PIL import Image

    from viz.export import figure_to_csv

    text = "The cat sat on the mat."
    fig = stages_figure(text)
    width, height = fig["layout"].get("width") or 1280, fig["layout"].get("height") or 720
    with tab(context):
        page = context.new_page()
        page.goto(f"{server}/Attention?text=The+cat+sat+on+the+mat.")
        page.wait_for_selector(f"{STAGES} .main-svg", timeout=90_000)
        settle(page)
        chart = page.locator(".av-chart").first
        buttons = chart.locator(".av-chart-exports button")
        assert buttons.all_inner_texts() == ["PNG", "SVG", "HTML", "CSV"]
        assert page.locator("[data-testid=stDownloadButton]").filter(has_text="PNG").count() == 0  # the head view's are its own too
        assert page.locator(".hv .av-chart-exports button").all_inner_texts() == ["PNG", "SVG", "HTML", "CSV"]
        page.locator(STAGES).first.evaluate("gd => { gd.__before = true; }")
        page.evaluate("() => { window.__avChartTimes = []; }")

        files = {}
        for label in ("PNG", "SVG", "HTML", "CSV"):
            with page.expect_download(timeout=60_000) as download:
                chart.get_by_role("button", name=label).click()
            assert re.fullmatch(rf"stages-l0-h0-toy-[0-9a-f]{{7}}\.{label.lower()}", download.value.suggested_filename)
            files[label] = download.value.path().read_bytes()

        png = files["PNG"]
        assert png.startswith(b"\x89PNG\r\n\x1a\n")
        assert Image.open(io.BytesIO(png)).size == (width * 2, height * 2)  # the sidebar's PNG resolution: 2×
        svg = files["SVG"].decode("utf-8")
        root = ElementTree.fromstring(svg)
        assert root.tag.endswith("svg") and (root.get("width"), root.get("height")) == (str(width), str(height))
        assert "toy · layer 0 · head 0" in svg and "<b>" not in svg  # the figure's own title, not the page's bold one
        html = files["HTML"].decode("utf-8")
        spec = json.loads(plotly.io.to_json(fig))  # the figure as plotly writes it (arrays as base64 typed arrays)
        assert "Plotly.newPlot" in html and "<script src=" not in html  # plotly.js inside: works offline
        numbers = spec["data"][0]["z"]["bdata"].replace("/", "\\u002f")  # plotly's HTML escapes "/" in its JSON
        assert numbers in html and "toy · layer 0 · head 0" in html  # the figure's numbers and title
        assert files["CSV"].decode("utf-8") == figure_to_csv(fig)

        settle(page)
        assert page.evaluate("() => window.__avChartTimes.length") == 0  # no chart was redrawn for a file
        assert page.locator(STAGES).first.evaluate("gd => gd.__before === true")
        assert page.locator(".av-chart-note:not(:empty)").count() == 0

        saved_again = []
        page.on("download", lambda download: saved_again.append(download))
        page.locator("[data-testid=stCheckbox]").filter(has_text="Scale by").locator("label").first.click()  # a rerun
        page.wait_for_function("() => location.search.includes('scale=0')", timeout=30_000)
        settle(page)
        for _ in range(2):
            page.reload()
            page.wait_for_selector(f"{STAGES} .main-svg", timeout=90_000)
            settle(page)
            # every chart has the data it was sent (a file would have come with the first chart's)
            page.wait_for_function("() => [...document.querySelectorAll('.av-chart:not(.av-chart-hidden)')].every(b => b.__chart?.wanted)", timeout=30_000)
        assert saved_again == []  # the file went with one rerun's data only, and was saved once


def test_a_hover_text_sent_as_rows_and_columns_and_values_sent_as_digits_are_unpacked_before_plotly_draws(server, context):
    """The value step's hover texts per cell go as their row and column parts, the output step's W_O (128 ×
    128) as 4 significant digits (ui/figures.py, browser_json): chart.js unpacks them, so plotly holds the
    figure's own text per cell, the hover names the token, and W_O holds the values Python decodes."""
    import json

    import numpy as np

    from apptest_helpers import decode
    from model import load_model
    from chart_data import join_text
    from viz.payload import browser_json
    from viz.content import Settings, attention_page, run_model

    text = "The cat sat on the mat."
    settings = Settings(text=text)
    model = load_model("toy")
    figures = attention_page(settings, run_model(model, settings.sentences, settings.display), model=model).figures
    fig, output_step = figures["value-step-L0-H0"], figures["output-step-L0"]
    w_o = decode(next(t for t in join_text(json.loads(browser_json(output_step)))["data"] if t["name"] == "W_O")["z"])
    with tab(context):
        page = open_attention(context, server)
        chart = page.locator(".st-key-chart_value-step .av-chart-plot")  # drawn when scrolled to: its key, not its title
        chart.scroll_into_view_if_needed()
        chart.locator(".main-svg").first.wait_for(timeout=30_000)
        drawn = chart.evaluate("gd => gd.data.map(t => ({name: t.name, text: t.text || null, parts: 'av_text' in t}))")
        want = {t["name"]: np.asarray(t["text"]).tolist() for t in fig["data"] if t["type"] == "heatmap"}
        assert {t["name"]: t["text"] for t in drawn if t["name"] in want} == want
        assert not any(t["parts"] for t in drawn)
        hover = chart.evaluate("gd => { window.Plotly.Fx.hover(gd, {xval: 1, yval: 2}, 'x3y3'); return gd.querySelector('.hovertext')?.textContent || ''; }")
        assert hover.startswith(f"query 2: {fig['data'][2]['meta']['y_labels'][2]}key 1: 1")  # z's cell (2, 1): the token's name

        chart = page.locator(".st-key-chart_output-step .av-chart-plot")
        chart.scroll_into_view_if_needed()
        chart.locator(".main-svg").first.wait_for(timeout=30_000)
        drawn = chart.evaluate(
            "gd => { const t = gd.data.find(t => t.name === 'W_O'); return {z: Array.from(t.z, row => Array.from(row)), packed: 'av_z' in t}; }"
        )
        assert not drawn["packed"] and np.array_equal(np.array(drawn["z"], dtype=np.float32), w_o)
        np.testing.assert_allclose(w_o, next(t for t in output_step["data"] if t["name"] == "W_O")["z"], rtol=6e-4)


def test_a_chart_in_a_tab_not_open_is_drawn_when_its_tab_opens(server, context):
    """The Tokens page compares four tokenizers in tabs: a chart in a tab not open takes no room and waits,
    as one below the window does (chart.js), and is drawn when its tab is clicked."""
    with tab(context):
        page = context.new_page()
        page.goto(f"{server}/Tokens?text=The+cat+sat+on+the+mat.")
        page.get_by_role("tab").nth(1).wait_for(timeout=90_000)
        settle(page)
        tabs = page.locator("[data-testid=stTabs]").last
        tabs.scroll_into_view_if_needed()
        panels = tabs.locator(".av-chart")
        assert panels.count() == page.get_by_role("tab").count() >= 3
        second = panels.nth(1)
        assert second.evaluate("b => b.__chart.wanted !== null && !b.checkVisibility()")  # its data came; not shown
        assert second.locator(".main-svg").count() == 0
        page.get_by_role("tab").nth(1).click()
        second.locator(".main-svg").first.wait_for(timeout=30_000)
        assert second.evaluate("b => b.checkVisibility() && b.__chart.shown === b.__chart.wanted.version")
