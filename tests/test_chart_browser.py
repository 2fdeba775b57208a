"""Our chart component (ui/chart.py) in Debian's chromium: a toggle updates a chart in place, the chart in
the window first, and every chart of the page is drawn in the end."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit

from conftest import chromium
from ui.chart import PLOTLY_CHUNK

pytestmark = pytest.mark.browser

STAGES = ".js-plotly-plot"  # the first chart of the Attention page: the stages of layer 0, head 0
PANEL = "(gd, axis) => Array.from(gd._fullData.find(t => t.type === 'heatmap' && t.xaxis === axis).z, row => Array.from(row)).flat().filter(Number.isFinite)"


def test_the_plotly_chunk_of_streamlits_frontend_is_found():
    """The component takes plotly.js from Streamlit's own frontend: a Streamlit upgrade that renames the
    chunk fails here rather than in a user's browser."""
    assert PLOTLY_CHUNK and (Path(streamlit.__file__).parent / "static" / "static" / "js" / PLOTLY_CHUNK).is_file()
    assert b"window.Plotly=" in (Path(streamlit.__file__).parent / "static" / "static" / "js" / PLOTLY_CHUNK).read_bytes()


def charts_drawn(page) -> int:
    return page.evaluate("() => [...document.querySelectorAll('.av-chart')].filter(b => b.querySelector('.main-svg')).length")


def settle(page):
    page.wait_for_function("() => document.querySelector('[data-testid=stApp]')?.getAttribute('data-test-script-state') === 'notRunning'", timeout=90_000)
    page.wait_for_timeout(800)


def test_a_toggle_changes_the_chart_in_place_and_every_chart_is_drawn(server):
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.goto(f"{server}/Attention?text=The+cat+sat+on+the+mat.")
        page.wait_for_selector(f"{STAGES} .main-svg", timeout=90_000)
        settle(page)
        boxes = page.locator(".av-chart").count()
        assert boxes >= 7  # stages, scaling pair, row statistics, value step, output step, overview
        # the charts below the window are drawn when the browser is idle: none stays blank
        drawn = "(n) => [...document.querySelectorAll('.av-chart')].filter(b => b.querySelector('.main-svg')).length === n"
        page.wait_for_function(drawn, arg=boxes, timeout=30_000)

        stages = page.locator(STAGES).first
        stages.evaluate("gd => { gd.__before = true; }")
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
        assert unscaled == pytest.approx(raw, abs=1e-4)  # scaling off: the second panel is the raw scores
        assert scaled == pytest.approx([v / 32**0.5 for v in raw], abs=1e-3)  # before: raw ÷ √d_k (d_k = 32)
        settle(page)
        assert charts_drawn(page) == boxes
        assert page.locator("[data-testid=stException], [data-testid=stAlertContentError], .av-chart-note:not(:empty)").count() == 0
