"""Reading plotly figures out of an AppTest run."""

import base64
import json

import numpy as np


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


def charts(at):
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def chart_titled(at, words):
    for spec in charts(at):
        title = spec["layout"].get("title", {}).get("text", "")
        if all(word in title for word in words):
            return spec
    raise AssertionError(f"no chart titled with {words}: {[c['layout'].get('title', {}).get('text') for c in charts(at)]}")


def heatmaps(spec):
    """Heatmap traces by name → 2-D float arrays (NaN where a cell is a gap)."""
    return {t.get("name", ""): decode(t["z"]).astype(float) for t in spec["data"] if t["type"] == "heatmap"}
