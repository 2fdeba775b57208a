"""Accessible: axe-core (WCAG 2.1 A and AA rules) finds no serious or critical violation on any page, in
Debian's chromium. axe-core comes from the npm registry (`make browser` fetches it into .cache/axe)."""

import pytest

from conftest import ROOT, chromium, settle
from ui import PAGES

pytestmark = pytest.mark.browser
AXE = ROOT / ".cache" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
RUN = """async () => {
  const result = await axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}});
  return {
    passed: result.passes.length,
    serious: result.violations.filter((v) => ["serious", "critical"].includes(v.impact))
      .map((v) => ({rule: v.id, nodes: v.nodes.map((n) => n.html.slice(0, 120))})),
  };
}"""


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
            assert result["passed"] > 10 and result["serious"] == [], (label, result["serious"])
