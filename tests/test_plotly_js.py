"""The plotly.js the charts load (ui/assets.py): the cartesian bundle of the plotly package's own plotly.js
when `make install` fetched it, the package's whole plotly.js otherwise, and every trace type the app draws
is in the bundle."""

from __future__ import annotations

import re

from conftest import ROOT
from ui import assets, chart

TRACES = ("heatmap", "scatter", "bar")  # every trace type the app's figures use (tests/test_chart_browser.py)


def test_the_charts_load_the_bundle_from_app_static_and_the_whole_plotly_js_without_it(tmp_path):
    from plotly.offline import get_plotlyjs

    version = assets.plotly_version()
    assert assets.plotly_script(tmp_path) == f"app/static/plotly-{version}.min.js"  # nothing installed: the package's own
    assert (tmp_path / f"plotly-{version}.min.js").read_text(encoding="utf-8") == get_plotlyjs()
    (tmp_path / f"plotly-cartesian-{version}.min.js").write_text("var Plotly = {};")
    assert assets.plotly_script(tmp_path) == f"app/static/plotly-cartesian-{version}.min.js"


def test_make_install_put_the_bundle_where_streamlit_serves_it():
    """`make install` (and so CI) fetched it; Streamlit serves static/ beside app.py (enableStaticServing)."""
    path = assets.cartesian_bundle()
    assert path is not None and path.parent == ROOT / "static", "run `make install`"
    assert f"plotly.js (cartesian - minified) v{assets.plotly_version()}\n" in path.read_text(errors="replace")[:200]
    assert chart.PLOTLY["script"] == f"app/static/{path.name}"
    assert re.search(r"^\s*enableStaticServing\s*=\s*true", (ROOT / ".streamlit" / "config.toml").read_text(), re.M)


def test_every_trace_type_the_app_draws_is_in_the_cartesian_bundle():
    """The figures of every page on the toy model are of the types the bundle holds."""
    from bench.miss import page_builders
    from model import load_model
    from viz.content.settings import Settings, run_model

    model = load_model("toy")
    types = set()
    for text in ("The cat sat on the mat.", "the river bank\nthe bank counter"):
        settings = Settings(text=text)
        trace = run_model(model, settings.sentences, settings.display)
        for build in page_builders(model).values():
            for fig in build(settings, trace).figures.values():
                types |= {t.get("type", "scatter") for t in fig["data"]}
    assert {"heatmap", "scatter", "bar"} <= types <= set(TRACES)
