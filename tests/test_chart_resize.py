"""A chart follows its box's width (ui/components/chart/chart.js: a ResizeObserver on its box): a narrower or
wider window redraws it to the new width, in Debian's chromium."""

from __future__ import annotations

import pytest

from conftest import settle, tab

pytestmark = pytest.mark.browser

WIDTHS = """() => { const box = document.querySelector('.av-chart'); const svg = box.querySelector('.main-svg');
  return [Math.round(box.getBoundingClientRect().width), Math.round(svg.getBoundingClientRect().width)]; }"""
FOLLOWS = f"() => {{ const [box, svg] = ({WIDTHS})(); return Math.abs(box - svg) <= 2; }}"


def test_the_first_chart_follows_the_window_narrower_and_wider(server, context):
    with tab(context):
        page = context.new_page()
        page.goto(f"{server}/Tokens?text=The+cat+sat+on+the+mat.")
        page.wait_for_selector(".av-chart .main-svg", timeout=90_000)
        settle(page)
        wide_box, wide_svg = page.evaluate(WIDTHS)
        assert abs(wide_box - wide_svg) <= 2 and wide_box > 900

        def resized(width: int, before: int) -> tuple[int, int]:
            page.set_viewport_size({"width": width, "height": 900})
            page.wait_for_function(f"() => ({WIDTHS})()[0] !== {before}", timeout=30_000)  # the box has its new width
            page.wait_for_function(FOLLOWS, timeout=30_000)  # and the drawing takes it
            return page.evaluate(WIDTHS)

        narrow_box, narrow_svg = resized(1100, wide_box)
        assert narrow_box < wide_box - 200 and abs(narrow_svg - narrow_box) <= 2
        back_box, back_svg = resized(1440, narrow_box)
        assert abs(back_box - wide_box) <= 2 and abs(back_svg - wide_svg) <= 2
