"""Accessible, in Debian's chromium, on every page: axe-core (WCAG 2.1 A and AA rules) finds no serious or
critical violation, and the Tab key reaches every control with a visible focus indicator. axe-core comes
from the npm registry (`make browser` fetches it into .cache/axe)."""

import pytest

from conftest import ROOT, chromium, settle
from ui import PAGES

pytestmark = pytest.mark.browser
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


def test_axe_finds_no_serious_or_critical_violation_on_any_page(server):
    assert AXE.is_file(), "axe-core is fetched by `make browser` (make test runs it)"
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        for path, label, _ in PAGES:
            slug = "" if path == "home.py" else path.split("_", 1)[1].removesuffix(".py")
            page.goto(f"{server}/{slug}")
            page.locator("h1").first.wait_for(timeout=120_000)
            settle(page, timeout=180_000)
            page.add_script_tag(path=str(AXE))
            result = page.evaluate(RUN)
            if result["serious"]:  # a page between two renders (the sidebar being filled) reads as empty: once more, quieter
                settle(page, timeout=180_000, quiet=1500)
                result = page.evaluate(RUN)
            assert result["passed"] > 10 and result["serious"] == [], (label, result["serious"])

            controls, reached, unmarked = tab_through(page)
            groups = {c["group"] for c in controls if c["probe"] in reached and c["group"] is not None}
            missed = [c["label"] for c in controls if c["probe"] not in reached and (c["group"] is None or c["group"] not in groups)]
            assert len(controls) >= 15 and missed == [], (label, len(controls), missed)  # the sidebar alone has more
            assert unmarked == [], (label, unmarked)
