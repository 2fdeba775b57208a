"""The plotly.js the charts load (deploy/plotly_js.py, ui/chart.py): the cartesian bundle of the plotly
package's own plotly.js when `make install` fetched it, the package's whole plotly.js otherwise (ui/assets.py),
and every trace type the app draws is in the bundle."""

from __future__ import annotations

import io
import re
import tarfile
from pathlib import Path

import pytest

from conftest import ROOT
from deploy import plotly_js
from ui import assets, chart

BANNER = "/**\n* plotly.js (cartesian - minified) v{}\n* Copyright 2012-2026, Plotly, Inc.\n*/\nvar Plotly = {{}};\n"


def tarball(folder: Path, text: str, member: str = plotly_js.MEMBER) -> Path:
    path = folder / "package.tgz"
    data = text.encode()
    with tarfile.open(path, "w:gz") as archive:
        info = tarfile.TarInfo(member)
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return path


def test_the_bundle_is_taken_out_of_the_package_only_for_the_plotly_version_installed(tmp_path):
    version = plotly_js.version()
    good = tarball(tmp_path, BANNER.format(version))
    target = plotly_js.extract(good, version, tmp_path / "static")
    assert target.name == f"plotly-cartesian-{version}.min.js" and target.read_text() == BANNER.format(version)
    assert plotly_js.installed(tmp_path / "static") == target
    assert plotly_js.fetch(tmp_path / "static", npm="no-such-npm-here") == target  # there already: npm is not asked
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(ValueError, match="does not hold"):  # another release of plotly.js
        plotly_js.extract(tarball(other, BANNER.format("1.2.3")), version, tmp_path / "elsewhere")
    with pytest.raises(ValueError, match="does not hold"):  # the full bundle, not the cartesian one
        plotly_js.extract(tarball(other, BANNER.format(version).replace("(cartesian - minified) ", "")), version, tmp_path / "elsewhere")
    assert not (tmp_path / "elsewhere").exists() or not any((tmp_path / "elsewhere").iterdir())
    with pytest.raises(RuntimeError, match="npm was not found"):
        plotly_js.fetch(tmp_path / "empty", npm="no-such-npm-here")


def test_the_charts_load_the_bundle_from_app_static_and_the_whole_plotly_js_without_it(tmp_path):
    from plotly.offline import get_plotlyjs

    version = plotly_js.version()
    assert assets.plotly_script(tmp_path) == f"app/static/plotly-{version}.min.js"  # nothing installed: the package's own
    assert (tmp_path / f"plotly-{version}.min.js").read_text(encoding="utf-8") == get_plotlyjs()
    plotly_js.extract(tarball(tmp_path, BANNER.format(version)), version, tmp_path)
    assert assets.plotly_script(tmp_path) == f"app/static/plotly-cartesian-{version}.min.js"


def test_make_install_put_the_bundle_where_streamlit_serves_it():
    """`make install` (and so CI) fetched it; Streamlit serves static/ beside app.py (enableStaticServing)."""
    path = plotly_js.installed()
    assert path is not None and path.parent == ROOT / "static", "run `python -m deploy.plotly_js` (make install does)"
    assert f"plotly.js (cartesian - minified) v{plotly_js.version()}\n" in path.read_text(errors="replace")[:200]
    assert chart.PLOTLY["script"] == f"app/static/{path.name}"
    assert re.search(r"^\s*enableStaticServing\s*=\s*true", (ROOT / ".streamlit" / "config.toml").read_text(), re.M)


def test_every_trace_type_the_app_draws_is_in_the_cartesian_bundle():
    """The figures of every page on the toy model, and every trace class the figure code names."""
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
                types |= {t.get("type", "scatter") for t in (fig["data"] if isinstance(fig, dict) else fig.to_plotly_json()["data"])}
    assert {"heatmap", "scatter", "bar"} <= types
    assert types <= set(plotly_js.TRACES)
    named = set()
    for path in (ROOT / "viz").rglob("*.py"):
        text = path.read_text()
        named |= {m.lower() for m in re.findall(r"go\.([A-Z]\w*)\(", text)} - {"figure"}
        named |= set(re.findall(r"""["']?type["']?\s*[:=]\s*["'](\w+)["']""", text)) - {"log", "linear", "category", "rect", "line", "circle", "path", "date"}
    assert named <= set(plotly_js.TRACES), named - set(plotly_js.TRACES)
