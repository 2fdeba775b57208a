"""On a phone a legend beside the plot goes above it (ui/components/chart/chart.js, `legendOnTop`): at 390 px
a legend on the right took a third of the chart. On a wide screen, and in every export, it stays where the
figure puts it. The Positional encoding page's curves (one line per chosen dimension) show both."""

from __future__ import annotations

import pytest

from conftest import settle

pytestmark = pytest.mark.browser

CURVES = """() => {
  const gd = [...document.querySelectorAll('.js-plotly-plot')].find((g) => (g.layout.title.text || '').includes('across positions'));
  const chart = gd.querySelector('.main-svg').getBoundingClientRect();
  const plot = gd.querySelector('.nsewdrag').getBoundingClientRect();
  const legend = gd.querySelector('.legend').getBoundingClientRect();
  return {chart: chart.width, plot: plot.width, plotTop: plot.top, plotRight: plot.right,
          legendBottom: legend.bottom, legendLeft: legend.left, entries: gd.querySelectorAll('.legend .traces').length};
}"""


@pytest.mark.parametrize("width", [390, 1440])
def test_a_legend_beside_the_plot_goes_above_it_on_a_phone(server, browser, width):
    with browser.new_context(viewport={"width": width, "height": 900}) as context:
        page = context.new_page()
        page.goto(f"{server}/Positional_encoding")
        page.locator("h1").first.wait_for(timeout=120_000)
        settle(page, timeout=180_000)
        page.get_by_text("Selected dimensions across positions").first.scroll_into_view_if_needed()
        page.wait_for_function(f"() => {{ try {{ return ({CURVES})().entries >= 2; }} catch (e) {{ return false; }} }}", timeout=60_000)
        seen = page.evaluate(CURVES)
        if width == 390:
            assert seen["legendBottom"] <= seen["plotTop"] + 1, seen  # above the plot
            assert seen["plot"] >= 0.6 * seen["chart"], seen  # which keeps the chart's width
        else:
            assert seen["legendLeft"] >= seen["plotRight"] - 1, seen  # beside it, as the figure puts it
