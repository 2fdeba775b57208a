"""The Generate page in a real browser: it draws, the arrow keys on the focused step slider move the step,
Play steps through the run to its end and Pause stops it."""

import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from conftest import settle, tab
from ui.generate import TICK_S

pytestmark = pytest.mark.browser
STEP = 'input[aria-label="Step (←/→ when the slider is focused)"]'
SHOWN = """() => {  // the step the caption "Step 3 of 5 read …" names, counting from 1
  for (const caption of document.querySelectorAll('[data-testid=stCaptionContainer]')) {
    const found = caption.innerText.match(/^Step (\\d+) of \\d+ read/);
    if (found) return found[1];
  }
}"""

RECORD = f"""() => {{  // every step shown, in turn
  window.__steps = [({SHOWN})()];
  setInterval(() => {{ const s = ({SHOWN})(); if (s !== window.__steps.at(-1)) window.__steps.push(s); }}, 10);
}}"""


def open_generate(context, server, query: str):
    page = context.new_page()
    page.goto(f"{server}/Generate?{query}")
    page.locator("h1").first.wait_for(timeout=120_000)
    page.locator(STEP).wait_for(timeout=180_000)  # the page's run has drawn the step controls (a click before would be lost)
    settle(page, timeout=180_000)
    assert page.locator("[data-testid=stException]").count() == 0
    return page


def shown_step(page) -> int:
    """The step the caption names, counting from 1."""
    return int(page.evaluate(SHOWN))


def test_the_arrow_keys_step_through_the_run(server, context):
    with tab(context):
        page = open_generate(context, server, "gen_n=6")
        caption = page.locator("text=/Step \\d of 6 read/").first
        assert caption.inner_text().startswith("Step 1 of 6 read")
        page.evaluate("() => document.querySelectorAll('.av-chart').forEach((chart, i) => { chart.dataset.mark = i; })")
        slider = page.locator(STEP)
        slider.focus()
        for expected in (2, 3):
            page.keyboard.press("ArrowRight")
            settle(page)
            assert caption.inner_text().startswith(f"Step {expected} of 6 read")
        # a step reruns the step's part alone and redraws its charts in place: the same elements, new figures
        marks = page.evaluate("() => Array.from(document.querySelectorAll('.av-chart'), box => box.dataset.mark)")
        assert marks == [str(i) for i in range(5)]
        assert page.evaluate("() => document.querySelector('.av-chart .js-plotly-plot').layout.title.text").removeprefix("<b>").startswith("Step 3 of 6")
        page.keyboard.press("ArrowLeft")
        settle(page)
        assert caption.inner_text().startswith("Step 2 of 6 read") and "step=1" in page.url
        assert slider.get_attribute("aria-valuetext").startswith("2 · ")


def test_play_steps_to_the_end_and_pause_stops_it(server, context):
    n = 5
    with tab(context):
        page = open_generate(context, server, f"gen_n={n}&step=1")
        play = page.get_by_role("button", name=re.compile("^(play_arrow|pause)?\\s*(Play|Pause)$"))
        page.evaluate(RECORD)
        play.click()
        page.wait_for_function(f"() => {{ const s = ({SHOWN})(); return s === '{n}'; }}", timeout=30_000 * n)
        settle(page)
        assert page.evaluate("window.__steps") == [str(i) for i in range(2, n + 1)]  # one step a tick, none skipped
        assert page.get_by_role("button", name=re.compile("Play$")).count() == 1  # stopped at the end: Play again
        assert f"step={n - 1}" in page.url and page.locator(STEP).get_attribute("aria-valuetext").startswith(f"{n} · ")
        with pytest.raises(PlaywrightTimeout):  # no step after the last: the timer was stopped
            page.wait_for_function(f"() => ({SHOWN})() !== '{n}'", timeout=4_000 * TICK_S)

        play.click()  # from the last step: again from the first
        page.wait_for_function(f"() => Number(({SHOWN})()) >= 2 && Number(({SHOWN})()) < {n}", timeout=30_000)
        page.get_by_role("button", name=re.compile("Pause$")).click()
        page.get_by_role("button", name=re.compile("Play$")).wait_for(timeout=30_000)
        settle(page)
        stopped = shown_step(page)
        with pytest.raises(PlaywrightTimeout):  # paused: no tick moves it
            page.wait_for_function(f"() => ({SHOWN})() !== '{stopped}'", timeout=4_000 * TICK_S)
        assert stopped < n and f"step={stopped - 1}" in page.url and page.locator("[data-testid=stException]").count() == 0


STRIP = "() => Array.from(document.querySelectorAll('.js-plotly-plot')).find(g => (g.querySelector('.gtitle')?.textContent || '').startsWith('Step '))"
LABELS = f"""() => {{  // the labels drawn in the token strip (the chart titled "Step …"): text, box, and the box of its token
  const strip = ({STRIP})();
  const rect = r => ({{left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width, height: r.height}});
  const texts = Array.from(strip.querySelectorAll('.main-svg text')).filter(  // the traces' own text: not the title, legend or hover
    t => !t.closest('.infolayer, .hoverlayer') && t.getBoundingClientRect().width > 0 && t.textContent.trim());
  return {{
    width: strip.getBoundingClientRect().width,
    tokens: strip.data.reduce((n, trace) => n + trace.x.length, 0),
    labels: texts.map(t => ({{text: t.textContent, box: rect(t.getBoundingClientRect()),
                             token: t.closest('.point') ? rect(t.closest('.point').querySelector('path').getBoundingClientRect()) : null}})),
  }};
}}"""


def overlap(a, b) -> bool:
    return min(a["right"], b["right"]) - max(a["left"], b["left"]) > 1 and min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > 1


@pytest.mark.parametrize("width, height", [(390, 844), (1440, 900)])
def test_the_token_strip_labels_never_overlap(server, context, width, height):
    """Each label inside its own token's box, none over another; on a wide screen every token is labelled,
    on a phone most are (the others on hover)."""
    with tab(context):
        page = context.new_page()
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"{server}/Generate?gen_n=16&step=15")
        page.locator("h1").first.wait_for(timeout=120_000)
        settle(page, timeout=180_000)
        page.wait_for_function(STRIP, timeout=60_000)
        page.evaluate(f"() => ({STRIP})().scrollIntoView()")
        settle(page)
        seen = page.evaluate(LABELS)
        labels = seen["labels"]
        assert seen["width"] <= width
        for i, a in enumerate(labels):
            assert not [b for b in labels[i + 1 :] if overlap(a["box"], b["box"])], a
        for a in labels:
            assert a["token"] is not None, a  # a label is its token box's own text
            inside = a["box"]["left"] >= a["token"]["left"] - 1 and a["box"]["right"] <= a["token"]["right"] + 1
            assert inside and a["box"]["top"] >= a["token"]["top"] - 1 and a["box"]["bottom"] <= a["token"]["bottom"] + 1, a
        assert len(labels) == seen["tokens"] if width > 1000 else len(labels) >= 0.75 * seen["tokens"]
        assert min(label["box"]["height"] for label in labels) >= 2 * 10  # a token and its id, at 10 px or more
