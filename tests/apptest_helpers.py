"""Reading plotly figures out of an AppTest run."""

import base64
import numpy as np
from viz._common import is_decoration


def decode(values):
    """A plotly array: a plain list, or plotly's typed-array dict {dtype, bdata, shape}."""
    if isinstance(values, dict) and "bdata" in values:
        array = np.frombuffer(base64.b64decode(values["bdata"]), dtype=np.dtype(values["dtype"]))
        if "shape" in values:
            shape = values["shape"]
            shape = [int(n) for n in shape.split(",")] if isinstance(shape, str) else shape
            array = array.reshape(shape)
        return array
    return np.array(values, dtype=float)


def chart_elements(at, placeholders: bool = False):
    """The charts of a run: our chart component (ui/chart.py) draws every figure. Not the element that
    loads plotly.js early; with `placeholders`, only the hidden charts of heads not shown (none without)."""
    from chart_data import chart_about
    from ui.chart import EARLY_KEY

    return [
        element
        for element in at.get("bidi_component")
        if element.proto.component_name == "attention_viz.chart"
        and EARLY_KEY not in element.proto.id
        and bool(chart_about(element.proto.bytes).get("placeholder")) == placeholders
    ]


def chart_about(element) -> dict:
    """What the browser is told about a chart besides its figure (version, config, width, height, clickable, export)."""
    from chart_data import read_chart_data

    return read_chart_data(element.proto.bytes)[0]


def charts(at):
    """The figure specs of a run, as the browser receives them."""
    from chart_data import read_chart_data

    return [read_chart_data(element.proto.bytes)[1] for element in chart_elements(at)]


def chart_titled(at, words):
    for spec in charts(at):
        title = spec["layout"].get("title", {}).get("text", "")
        if all(word in title for word in words):
            return spec
    raise AssertionError(f"no chart titled with {words}: {[c['layout'].get('title', {}).get('text') for c in charts(at)]}")


def heatmaps(spec):
    """Heatmap traces by name → 2-D float arrays (NaN where a cell is a gap)."""
    return {t.get("name", ""): decode(t["z"]).astype(float) for t in spec["data"] if t["type"] == "heatmap" and not is_decoration(t)}


def open_page(page: str, query=None, first_notices=None):
    """`page` reached from the entry point (home.py) with the link `query`, as a user does; `first_notices`
    (a list) receives the notices of the first load, where the link is read. No exception, no error box."""
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT

    at = AppTest.from_file(str(ROOT / "home.py"), default_timeout=120)
    for name, value in (query or {}).items():
        at.query_params[name] = value
    at.run()
    if first_notices is not None:
        first_notices += [i.value for i in at.info]
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at
