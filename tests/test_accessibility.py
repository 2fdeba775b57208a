"""Accessible, in Debian's chromium, on every page: axe-core (WCAG 2.1 A and AA rules) finds no serious or
critical violation, and the Tab key reaches every control with a visible focus indicator. axe-core comes
from the npm registry (`make browser` fetches it into .cache/axe). The pages are opened once for these
checks and the offline one (tests/every_page.py)."""

import pytest

from every_page import AXE
from ui import PAGES

pytestmark = pytest.mark.browser


def test_axe_finds_no_serious_or_critical_violation_on_any_page(every_page):
    assert AXE.is_file(), "axe-core is fetched by `make browser` (make test runs it)"
    assert [visit["label"] for visit in every_page["pages"]] == [label for _, label, _ in PAGES]
    for visit in every_page["pages"]:
        label, result = visit["label"], visit["axe"]
        assert result["passed"] > 10 and result["serious"] == [], (label, result["serious"])

        controls, reached, unmarked = visit["tabs"]
        groups = {c["group"] for c in controls if c["probe"] in reached and c["group"] is not None}
        missed = [c["label"] for c in controls if c["probe"] not in reached and (c["group"] is None or c["group"] not in groups)]
        assert len(controls) >= 15 and missed == [], (label, len(controls), missed)  # the sidebar alone has more
        assert unmarked == [], (label, unmarked)
