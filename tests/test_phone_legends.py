"""On a phone a legend beside the plot goes above it (ui/components/chart/chart.js, `legendOnTop`), or below
the axes where panels have titles above them: at 390 px a legend on the right took a third of the chart. On a
wide screen, and in every export, it stays where the figure puts it. The Positional encoding page's curves
(one line per chosen dimension) and the Attention page's row statistics show both."""

from __future__ import annotations

import pytest

from conftest import scrolled_until, settle, tab

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
def test_a_legend_beside_the_plot_goes_above_it_on_a_phone(server, context, width):
    with tab(context):
        page = context.new_page()
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{server}/Positional_encoding")
        page.locator("h1").first.wait_for(timeout=120_000)
        settle(page, timeout=180_000)
        drawn = f"() => {{ try {{ return ({CURVES})().entries >= 2; }} catch (e) {{ return false; }} }}"
        page.wait_for_function(scrolled_until(".st-key-chart_pe-curves", drawn), timeout=60_000, polling=200)
        seen = page.evaluate(CURVES)
        if width == 390:
            assert seen["legendBottom"] <= seen["plotTop"] + 1, seen  # above the plot
            assert seen["plot"] >= 0.6 * seen["chart"], seen  # which keeps the chart's width
        else:
            assert seen["legendLeft"] >= seen["plotRight"] - 1, seen  # beside it, as the figure puts it


ROWS = """() => {
  const gd = document.querySelector('.st-key-chart_row-stats .js-plotly-plot');
  if (!gd || !gd.querySelector('.legend')) return null;
  const chart = gd.querySelector('.main-svg').getBoundingClientRect();
  const plots = [...gd.querySelectorAll('.nsewdrag')].map((d) => d.getBoundingClientRect());
  const legend = gd.querySelector('.legend').getBoundingClientRect();
  const below = [...gd.querySelectorAll('.xtick text, .g-xtitle text, .g-x2title text')].map((t) => t.getBoundingClientRect().bottom);
  return {chart: chart.width, chartBottom: chart.bottom, plot: Math.min(...plots.map((p) => p.width)), plotRight: Math.max(...plots.map((p) => p.right)),
          lowest: Math.max(...below), legendTop: legend.top, legendBottom: legend.bottom, legendLeft: legend.left};
}"""


@pytest.mark.parametrize("width", [390, 1440])
def test_a_legend_beside_panels_with_titles_goes_below_the_axes_on_a_phone(server, context, width):
    """How peaked each query row is: two panels with titles above them, which a legend above would cover.
    On a phone its legend goes under the axes' labels and title, and the panels keep the chart's width."""
    with tab(context):
        page = context.new_page()
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{server}/Attention?text=The+cat+sat+on+the+mat+by+the+river+bank.")
        page.locator("h1").first.wait_for(timeout=120_000)
        settle(page, timeout=180_000)
        page.wait_for_function(scrolled_until(".st-key-chart_row-stats", f"() => ({ROWS})() !== null"), timeout=60_000, polling=200)
        settle(page)
        seen = page.evaluate(ROWS)
        if width == 390:
            assert seen["legendTop"] >= seen["lowest"] - 1, seen  # under the tick labels and the axis title
            assert seen["legendBottom"] <= seen["chartBottom"] + 1, seen  # inside the chart
            assert seen["plot"] >= 0.6 * seen["chart"], seen  # the panels keep the chart's width
        else:
            assert seen["legendLeft"] >= seen["plotRight"] - 1, seen  # beside them, as the figure puts it
