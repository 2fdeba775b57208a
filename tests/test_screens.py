"""Any screen: on a phone (390 × 844) and a tablet (768 × 1024) the sidebar starts collapsed, nothing is
hidden behind it, and no page scrolls sideways (a wide figure may scroll inside itself). Every chart's
title fits its figure and stays clear of the legend (plotly cuts a long title: chart.js breaks it into lines)."""

import pytest

from conftest import one_by_one, settle, slug
from ui import PAGES

pytestmark = pytest.mark.browser
SCREENS = {"phone": (390, 844), "tablet": (768, 1024)}
LAYOUT = """() => {
  const side = document.querySelector('[data-testid=stSidebar]');
  const box = side ? side.getBoundingClientRect() : null;
  const main = document.querySelector('[data-testid=stMain]').getBoundingClientRect();
  const area = document.querySelector('[data-testid=stMain]');
  return {
    scroll: document.documentElement.scrollWidth, width: window.innerWidth,
    mainScroll: area.scrollWidth, mainWidth: area.clientWidth,  // the main area scrolls by itself, not the document
    // links to pages whose label is cut short with an ellipsis
    cutLinks: [...area.querySelectorAll('[data-testid=stPageLink] *')].filter((e) => e.scrollWidth > e.clientWidth + 1
      && getComputedStyle(e).textOverflow === 'ellipsis').map((e) => e.textContent),
    sidebar: box ? Math.max(0, Math.min(box.right, window.innerWidth) - Math.max(box.left, 0)) : 0,
    mainLeft: main.left, title: document.querySelector('h1').getBoundingClientRect().left,
    // the formulas reaching past the window's right edge (a wide formula is cut, not scrolled to)
    formulas: [...document.querySelectorAll('.katex')].filter((f) => f.getBoundingClientRect().right > window.innerWidth + 1)
      .map((f) => f.textContent.slice(0, 40)),
    nFormulas: document.querySelectorAll('.katex').length,
  };
}"""
ALL_DRAWN = "() => [...document.querySelectorAll('.av-chart:not(.av-chart-hidden) .av-chart-plot')].every((gd) => gd.querySelector('.main-svg'))"
# Every drawn chart: how far its title reaches past the figure's left and right edges and past the right
# edge of its box (a figure wider than a phone scrolls in it: the stages), how far it runs
# into a legend above the plot (pixels), and the largest overlap of two annotations (the panels' titles)
# or of one with the title (px²; 0 when clear).
TITLES = """() => [...document.querySelectorAll('.av-chart:not(.av-chart-hidden) .js-plotly-plot')].map((gd) => {
  const svg = gd.querySelector('.main-svg').getBoundingClientRect();
  const title = gd.querySelector('.gtitle');
  const legend = gd.querySelector('.legend');
  if (!title || !title.textContent) return null;
  const t = title.getBoundingClientRect();
  const l = legend && legend.getBoundingClientRect();
  const above = l && l.bottom <= gd.querySelector('.bglayer, .cartesianlayer').getBoundingClientRect().top + 2;
  const panels = [...gd.querySelectorAll('.nsewdrag')].map((r) => r.getBoundingClientRect());
  const plotTop = Math.min(...panels.map((r) => r.top));  // the panels' top
  const boxes = [...gd.querySelectorAll('.annotation-text-g')].filter((g) => g.textContent.trim())
    .map((g) => g.getBoundingClientRect()).filter((r) => r.width);
  const notes = boxes.filter((r) => r.bottom <= plotTop + 2);  // above the panels: the top row's titles
  // a lower row's titles: in the gap under a panel and above another (not inside any panel)
  const inside = (r, p) => r.top >= p.top - 1 && r.bottom <= p.bottom + 1 && r.left >= p.left - 1 && r.right <= p.right + 1;
  const between = boxes.filter((r) => r.bottom > plotTop + 2 && !panels.some((p) => inside(r, p)));
  const span = (a, b, lo, hi) => Math.max(0, Math.min(a[hi], b[hi]) - Math.max(a[lo], b[lo]));
  const meet = (a, b) => span(a, b, "left", "right") * span(a, b, "top", "bottom");
  const worst = (list, extra) => list.flatMap((a, i) => list.slice(i + 1).map((b) => meet(a, b) + (extra ? meet(a, extra) : 0)))
    .reduce((x, y) => Math.max(x, y), 0);
  return {
    text: title.textContent, lines: title.querySelectorAll('tspan.line').length || 1,
    left: Math.max(0, svg.left - t.left), right: Math.max(0, t.right - svg.right),
    shown: Math.max(0, t.right - gd.closest('.av-chart').getBoundingClientRect().right),  // past what a scrolling box shows
    legend: above && l.height ? Math.max(0, Math.min(t.bottom, l.bottom) - Math.max(t.top, l.top)) : 0,
    notes: Math.max(worst(notes, t), worst(between, null)),
  };
}).filter(Boolean)"""


@pytest.mark.parametrize("screen", SCREENS)
def test_the_sidebar_starts_collapsed_and_no_page_scrolls_sideways(server, browser, screen):
    width, height = SCREENS[screen]
    with browser.new_context(viewport={"width": width, "height": height}) as context:
        formulas_seen = 0
        for (_, label, _), page in zip(PAGES, one_by_one(context, [f"{server}/{slug(path)}" for path, _, _ in PAGES])):
            page.locator("h1").first.wait_for(timeout=120_000)
            settle(page, timeout=180_000)
            seen = page.evaluate(LAYOUT)
            assert seen["sidebar"] <= 1, (screen, label, seen)  # collapsed: no strip of it over the page
            assert seen["scroll"] <= seen["width"] + 1, (screen, label, seen)  # no sideways scroll
            assert seen["mainScroll"] <= seen["mainWidth"] + 1, (screen, label, seen)  # not of the main area either
            assert seen["cutLinks"] == [], (screen, label, seen["cutLinks"])  # a link's whole label shows
            assert 0 <= seen["title"] < width / 4, (screen, label, seen)  # the page starts at the left edge
            assert seen["formulas"] == [], (screen, label, seen)  # a row of formulas wraps (ui.layout.formulas)
            formulas_seen += seen["nFormulas"]
            if label == "Generate":  # its run is computed after the page's first draw
                page.wait_for_function("() => [...document.querySelectorAll('.av-chart')].filter((b) => b.__chart?.wanted).length >= 5", timeout=120_000)
            page.evaluate("() => window.dispatchEvent(new Event('beforeprint'))")  # the charts below the window too
            page.wait_for_function(ALL_DRAWN, timeout=60_000)
            titles = page.evaluate(TITLES)
            for title in titles:
                assert title["left"] <= 1 and title["right"] <= 1 and title["legend"] <= 1, (screen, label, title)
                assert title["shown"] <= 1, (screen, label, title)  # a figure wider than the screen scrolls: its title is not cut
                assert title["notes"] <= 4, (screen, label, title)  # panel titles meet neither each other nor the title (px²)
            if label == "Generate":  # its titles are sentences: at a phone's width they take several lines
                assert len(titles) == 5 and (screen == "tablet" or sum(t["lines"] > 1 for t in titles) >= 4), (screen, titles)
            if label == "Attention":  # the stages keep the width their labels need, scrolling inside their box
                stages = page.locator(".av-chart").filter(has=page.locator(".js-plotly-plot")).first
                box = stages.evaluate(
                    "b => ({inner: b.scrollWidth, outer: b.clientWidth, plot: b.querySelector('.js-plotly-plot').offsetWidth,"
                    " hint: getComputedStyle(b, '::before').content})"
                )
                assert box["plot"] >= 900 and box["inner"] > box["outer"] and box["outer"] <= width, (screen, box)
                assert box["hint"] == '"Swipe sideways for the whole figure →"', (screen, box)  # says it scrolls
                # the two softmax patterns of "Why divide by √d_k?": halves on a tablet, one under the other on a phone
                pair = page.locator(".st-key-av_side_by_side .js-plotly-plot").evaluate_all("gds => gds.map((gd) => gd.getBoundingClientRect().toJSON())")
                assert len(pair) == 2, pair
                stacked = pair[1]["top"] >= pair[0]["bottom"] - 1
                assert stacked == (screen == "phone") and pair[0]["width"] >= (0.8 if stacked else 0.4) * (width - 60), (screen, pair)
        assert formulas_seen >= 8, formulas_seen  # the Attention page's four, two on Positional encoding, two on Scaling lab
