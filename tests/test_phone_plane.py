"""The Embeddings page's PC 1 / PC 2 plane fits a phone's and a tablet's width. Its labels are placed in
pixels, so the figure has a fixed size (900 px); where the chart's box is narrower, the browser draws the
widest of the figure's narrower variants that fits, with its labels placed again (layout.meta.narrower:
viz/embeddings.py, ui/components/chart/chart.js). On a wide screen, and in every export, the figure is drawn
as sent."""

from __future__ import annotations

import io

import pytest

from conftest import scrolled_until, settle

pytestmark = pytest.mark.browser

# The plane (its title names the PCs' shares): its box, its drawing, its plot area, the boxes of its labels'
# text and of its markers, and its pixels per unit along each axis (equal scales: a PCA plane is not stretched).
PLANE = """() => {
  const gd = [...document.querySelectorAll('.js-plotly-plot')].find((g) => (g.layout.title.text || '').includes('PC 1 '));
  if (!gd || !gd.querySelector('.main-svg')) return null;
  const box = gd.closest('.av-chart');
  const rect = (r) => ({left: r.left, top: r.top, right: r.right, bottom: r.bottom});
  const plot = gd.querySelector('.nsewdrag').getBoundingClientRect();
  const [x0, x1] = gd.layout.xaxis.range, [y0, y1] = gd.layout.yaxis.range;
  return {
    box: box.clientWidth, inner: box.scrollWidth, svg: gd.querySelector('.main-svg').getBoundingClientRect().width,
    plot: rect(plot), xScale: plot.width / (x1 - x0), yScale: plot.height / (y1 - y0),
    labels: [...gd.querySelectorAll('.annotation-text-g text')].filter((t) => t.textContent.trim())
      .map((t) => Object.assign(rect(t.getBoundingClientRect()), {text: t.textContent})),
    sent: gd.layout.annotations.filter((a) => a.text).length,
    markers: [...gd.querySelectorAll('.scatterlayer .point')].map((p) => rect(p.getBoundingClientRect())),
  };
}"""


def overlap(a: dict, b: dict) -> float:
    """The area two boxes share (px²)."""
    width = min(a["right"], b["right"]) - max(a["left"], b["left"])
    height = min(a["bottom"], b["bottom"]) - max(a["top"], b["top"])
    return max(0.0, width) * max(0.0, height)


def covers(label: dict, marker: dict) -> bool:
    """Whether a label's box reaches into a marker (the circle in its box)."""
    cx, cy = (marker["left"] + marker["right"]) / 2, (marker["top"] + marker["bottom"]) / 2
    r = (marker["right"] - marker["left"]) / 2 - 1
    nx, ny = min(max(cx, label["left"]), label["right"]), min(max(cy, label["top"]), label["bottom"])
    return (nx - cx) ** 2 + (ny - cy) ** 2 < r * r


def plane(page) -> dict:
    """The plane as drawn, once scrolled to (a chart is drawn when it comes near the window)."""
    drawn = f"() => {{ const p = ({PLANE})(); return p && p.labels.length > 0; }}"
    page.wait_for_function(scrolled_until("[class*=st-key-chart_projection-]", drawn), timeout=60_000, polling=200)
    return page.evaluate(PLANE)


def check_labels(seen: dict) -> None:
    labels = seen["labels"]
    assert len(labels) == seen["sent"] >= 7, seen  # every point and centre labelled
    for i, a in enumerate(labels):
        for b in labels[i + 1 :]:
            assert overlap(a, b) <= 1, (a, b)  # no two labels meet
        plot = seen["plot"]
        assert plot["left"] - 1 <= a["left"] and a["right"] <= plot["right"] + 1, (a, plot)  # inside the plot area
        assert plot["top"] - 1 <= a["top"] and a["bottom"] <= plot["bottom"] + 1, (a, plot)
        assert not any(covers(a, marker) for marker in seen["markers"]), a
    assert seen["xScale"] == pytest.approx(seen["yScale"], rel=0.01), seen  # equal scales


def png_export(page) -> bytes:
    chart = page.locator(".av-chart").filter(has=page.locator(".js-plotly-plot")).first
    with page.expect_download(timeout=60_000) as download:
        chart.get_by_role("button", name="PNG").click()
    return download.value.path().read_bytes()


def test_the_plane_fits_a_phone_and_a_tablet_and_is_exported_as_sent(server, browser):
    from PIL import Image

    senses = "river,money"  # two senses: their centres are labelled too
    exports = {}
    with browser.new_context(accept_downloads=True) as context:
        for width, height in ((360, 800), (390, 844), (768, 1024), (1440, 900)):
            page = context.new_page()
            page.set_viewport_size({"width": width, "height": height})
            page.goto(f"{server}/Embeddings?senses={senses}")
            page.locator("h1").first.wait_for(timeout=120_000)
            settle(page, timeout=180_000)
            seen = plane(page)
            check_labels(seen)
            if width < 900:
                assert seen["inner"] <= seen["box"] and seen["svg"] <= seen["box"], seen  # no sideways scroll inside its box
                assert seen["svg"] >= 0.85 * seen["box"], seen  # and not much narrower
            else:
                assert seen["svg"] == 900, seen  # the figure as sent
                # the window made a phone's: the plane is drawn again for its box
                page.set_viewport_size({"width": 390, "height": 844})
                page.wait_for_function(f"() => {{ const p = ({PLANE})(); return p && p.svg <= p.box; }}", timeout=30_000)
                settle(page)
                seen = plane(page)
                check_labels(seen)
                assert seen["inner"] <= seen["box"], seen
            exports[width] = png_export(page)
            page.close()
    image = Image.open(io.BytesIO(exports[360]))
    assert image.size == (900 * 2, 620 * 2)  # the figure's own size, at the sidebar's PNG resolution
    assert exports[360] == exports[390] == exports[768] == exports[1440]  # the same picture whatever the screen
