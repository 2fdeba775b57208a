"""One pass over every page of `ui.PAGES` in Debian's chromium at 1440 × 900 on the test server, for the
checks that only need each page opened as a visitor opens it (tests/test_accessibility.py, and the offline
check of tests/test_links_plain_text.py). Each page is loaded once and everything those checks need is
read from it there: axe-core's findings, the controls the Tab key reaches, and every request the browser
made. The tests then assert on what was read, each with its own messages (conftest's `every_page`)."""

from __future__ import annotations

from conftest import ROOT, chromium, one_by_one, settle, slug
from ui import PAGES

AXE = ROOT / ".cache" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
PROBE = ROOT / "tests" / "focus_probe.js"
MAX_TABS = 400
RUN = """async () => {
  const result = await axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}});
  return {
    passed: result.passes.length,
    serious: result.violations.filter((v) => ["serious", "critical"].includes(v.impact))
      .map((v) => ({rule: v.id, nodes: v.nodes.map((n) => n.html.slice(0, 120))})),
  };
}"""


def tab_through(page) -> tuple[list[dict], dict[str, dict], list[str]]:
    """Press Tab from the top of the page until the focus comes back round (or MAX_TABS presses): the
    controls the page has, those the focus reached, and the labels of those it reached without any visible
    change (outline, shadow, border or background of the element or the three boxes around it)."""
    page.evaluate("() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); }")
    page.add_script_tag(path=str(PROBE))
    controls = page.evaluate("() => focusProbe.controls()")
    resting = page.evaluate("() => focusProbe.resting()")
    reached, unmarked = {}, []
    for _ in range(MAX_TABS):
        page.keyboard.press("Tab")
        now = page.evaluate("() => focusProbe.focused()")
        if now is None or now["probe"] is None:
            continue
        if now["probe"] in reached:
            if now["probe"] == controls[0]["probe"]:
                break  # round again (a grid keeps the focus while Tab walks its cells)
            continue
        reached[now["probe"]] = now
        if now["look"] == resting[int(now["probe"])]:
            unmarked.append(now["label"])
    return controls, reached, unmarked


def visit_every_page(server: str) -> dict:
    """Open every page in chromium at 1440 × 900, in `ui.PAGES` order, each checked in its tab while the next
    one loads in another (conftest's `one_by_one`). Returns `pages`: per page (in order) its label,
    axe-core's result (None when axe-core is not fetched) and the Tab walk's (controls, reached, unmarked);
    `requests`: every address the browser asked for, in order; and `server`."""
    out = {"server": server, "pages": [], "requests": []}
    with chromium() as browser, browser.new_context(viewport={"width": 1440, "height": 900}) as context:
        context.on("request", lambda request: out["requests"].append(request.url))
        tabs = one_by_one(context, [f"{server}/{slug(path)}" for path, _, _ in PAGES])
        for (_, label, _), page in zip(PAGES, tabs):
            page.locator("h1").first.wait_for(timeout=120_000)
            settle(page, timeout=180_000)
            # the charts below the window too (they are drawn when scrolled to, and before printing)
            page.evaluate("() => window.dispatchEvent(new Event('beforeprint'))")
            settle(page, timeout=180_000)
            axe = None
            if AXE.is_file():
                page.add_script_tag(path=str(AXE))
                axe = page.evaluate(RUN)
                if axe["serious"]:  # a page between two renders (the sidebar being filled) reads as empty: once more, quieter
                    settle(page, timeout=180_000, quiet=1500)
                    axe = page.evaluate(RUN)
            out["pages"].append({"label": label, "axe": axe, "tabs": tab_through(page)})
    return out
