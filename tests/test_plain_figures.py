"""Figures written as plain plotly JSON (viz.plain) send exactly what plotly's validators make of them.

The figure modules write dicts and skip plotly's validation to make a new view cheap (issue 19). That is
safe only if what they write is already in the form validation would give: every property name valid,
colour scales resolved, titles as dicts, arrays of the same dtype. Each figure here is passed through the
validators (`go.Figure(fig)`, plotly's public constructor, validates every property) and what it sends
(`to_json`) must equal what `plain.plotly_dict` sends of the dict itself.
"""

from __future__ import annotations

import ast
import json
import pathlib
from dataclasses import replace

import numpy as np
import plotly.colors
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from plotly.subplots import make_subplots

from model import load_model
from viz import apply_print_theme, plain
from viz.content import embeddings_page, next_token_page, positional_page, tokens_page
from viz.content.attention import attention_figures, attention_selection
from viz.content.heads import ablation_section, heads_page, ranking_section
from viz.content.scaling import scaling_lab_page
from viz.content.settings import Settings, run_model

WORDS = "the farmer sat on the river bank with his dog and the woman took money from the bank in town".split()
VIEWS = {
    "default": Settings(),
    "mask none, scaling off": replace(Settings(), mask="none", scaling=False),
    "temperature 0.5, own colours": replace(Settings(), temperature=0.5, pattern_colour="own"),
    "two heads, a hidden key, layer 1": replace(Settings(), heads=(0, 1), layer=1, mask="causal+padding", hidden=((0, 2),)),
    "64 tokens, sinks": Settings(text=" ".join(WORDS[i % len(WORDS)] for i in range(64)), sinks=True, pe_positions=100, pe_d_model=32, pe_base=100),
    "200 tokens (block means, focus window)": Settings(text=" ".join(WORDS[i % len(WORDS)] for i in range(200)), focus=50),
}


@pytest.fixture(scope="module")
def toy():
    return load_model("toy")


def sent(fig: dict) -> str:
    """The figure dict as the browser receives it (``plain.plotly_dict``: arrays as typed base64), keys sorted."""
    return as_json(plain.plotly_dict(fig))


def as_json(spec: dict) -> str:
    return json.dumps(json.loads(pio.to_json(spec, validate=False)), sort_keys=True)


def validated(fig: dict) -> str:
    """What plotly sends of the same traces and layout passed through every one of its validators, keys sorted."""
    return json.dumps(json.loads(go.Figure(fig).to_json()), sort_keys=True)


def is_figure_dict(fig) -> bool:
    return type(fig) is dict and set(fig) == {"data", "layout"} and all("type" in trace for trace in fig["data"]) and "template" in fig["layout"]


def page_figures(settings: Settings, model) -> dict[str, dict]:
    trace = run_model(model, settings.sentences, settings.display)
    pages = {
        "attention": attention_figures(settings, trace, model=model).merge(attention_selection(settings, trace)),
        "tokens": tokens_page(settings, trace, model, tokenizers={}),
        "positional": positional_page(settings, trace, model),
        "embeddings": embeddings_page(settings, trace, model.name, model.tokenizer),
        "next-token": next_token_page(settings, trace, model),
        "heads": heads_page(settings, trace, model).merge(ranking_section(settings, trace, model)).merge(ablation_section(settings, trace, model, [(0, 0)], 1)),
    }
    return {f"{page}/{name}": fig for page, content in pages.items() for name, fig in content.figures.items()}


@pytest.mark.parametrize("view", list(VIEWS))
def test_every_figure_of_every_page_is_sent_as_plotly_would_validate_it(view, toy):
    figures = page_figures(VIEWS[view], toy)
    assert any(name.startswith("attention/stages-") for name in figures) and any(name.startswith("heads/") for name in figures)
    if view.startswith("200"):
        assert any(name.startswith("attention/focus-") for name in figures)
    assert [name for name, fig in figures.items() if not is_figure_dict(fig)] == []
    changed = [name for name, fig in figures.items() if sent(fig) != validated(fig)]
    assert changed == []


@pytest.mark.parametrize("view", ["default", "200 tokens (block means, focus window)"])
def test_the_print_theme_of_every_page_is_sent_as_plotly_would_validate_it(view, toy):
    """apply_print_theme restyles a figure's plotly JSON without validation too, into a new dict."""
    figures = page_figures(VIEWS[view], toy)
    before = {name: sent(fig) for name, fig in figures.items()}
    printed = {name: apply_print_theme(fig) for name, fig in figures.items()}
    assert all(is_figure_dict(fig) and fig["layout"]["font"]["size"] == 18 for fig in printed.values())
    changed = [name for name, fig in printed.items() if sent(fig) != validated(fig)]
    assert changed == []
    assert {name: sent(fig) for name, fig in figures.items()} == before  # the figures themselves (shared by sessions) unchanged


def test_the_scaling_lab_is_sent_as_plotly_would_validate_it():
    for name, fig in scaling_lab_page(64, 16).figures.items():
        assert is_figure_dict(fig) and sent(fig) == validated(fig), name


def test_the_check_sees_a_figure_written_in_a_form_validation_changes():
    """The comparison above can fail: a colour scale by name and an axis title as a bare string are
    each rewritten by validation (a list of colours, {"text": …}), so they are sent differently."""
    by_name = plain.figure([dict(type="heatmap", z=np.eye(2, dtype=np.float32), colorscale="Viridis")], {})
    bare_title = plain.figure([], {"xaxis": {"title": "key"}})
    assert sent(by_name) != validated(by_name)
    assert sent(bare_title) != validated(bare_title)
    resolved = plain.figure(
        [dict(type="heatmap", z=np.eye(2, dtype=np.float32), colorscale=plain.colorscale("Viridis"))], {"xaxis": {"title": {"text": "key"}}}
    )
    assert sent(resolved) == validated(resolved)
    with pytest.raises(ValueError):  # a property plotly does not know is refused by the validation the check runs
        validated(plain.figure([], {"no_such_property": 1}))
    with pytest.raises(ValueError):
        validated(plain.figure([dict(type="scatter", x=[0], y=[0], marker={"color": "not a colour"})], {}))


def test_a_plain_figure_has_the_screen_template_and_sends_what_plotly_s_figure_sends():
    fig = plain.figure([dict(type="scatter", x=[0, 1], y=[1, 0])], {"height": 300})
    white = go.Figure(layout=dict(template="plotly_white")).layout.template
    white.layout.xaxis.ticklabeloverflow = white.layout.yaxis.ticklabeloverflow = "allow"  # plain.AXIS_DEFAULTS
    assert fig["layout"]["template"] == white.to_plotly_json()
    assert sent(fig) == json.dumps(json.loads(go.Figure(go.Scatter(x=[0, 1], y=[1, 0]), layout=dict(height=300, template=white)).to_json()), sort_keys=True)
    plotly = go.layout.Template(pio.templates["plotly"])  # a copy: the registered one stays as plotly made it
    plotly.layout.xaxis.ticklabeloverflow = plotly.layout.yaxis.ticklabeloverflow = "allow"
    assert plain.figure([], {}, template="plotly")["layout"]["template"] == plotly.to_plotly_json()
    with pytest.raises(ValueError, match="xaxis1"):  # plotly renames a subplot numbered 1: its axes would not be the ones written
        plain.figure([], {"xaxis1": {}})


def test_as_dict_takes_a_dict_as_it_is_and_a_go_figure_as_its_json():
    fig = plain.figure([dict(type="bar", x=["a"], y=[1.0])], {"title": plain.title("t")})
    assert plain.as_dict(fig) is fig
    made = go.Figure(go.Bar(x=["a"], y=np.array([1.0, 2.0], dtype=np.float32)), layout=dict(title="t"))
    as_made = plain.as_dict(made)
    assert is_figure_dict(as_made) and as_made["layout"]["title"] == {"text": "t"}
    assert isinstance(as_made["data"][0]["y"], np.ndarray) and as_made["data"][0]["y"].tolist() == [1.0, 2.0]  # numbers, not base64
    assert as_json(plain.plotly_dict(made)) == validated(made) == validated(as_made)


@pytest.mark.parametrize("name", ["Viridis", "RdBu_r", "Twilight", "Cividis", "RdBu"])
def test_a_named_colour_scale_is_the_list_plotly_s_validators_make_of_the_name(name):
    """plain.colorscale resolves a name with plotly.colors.get_colorscale, at the positions the validators
    give (i / (n − 1)): to the last digit, or the figure would send other numbers than a validated one."""
    assert plain.colorscale(name) == [list(pair) for pair in go.Heatmap(colorscale=name).colorscale]


def test_every_named_colour_scale_and_its_reverse_resolves_as_plotly_s_validators_do():
    names = plotly.colors.named_colorscales()
    assert len(names) > 50
    for name in names + [f"{name}_r" for name in names]:
        assert plain.colorscale(name) == [list(pair) for pair in go.Heatmap(colorscale=name).colorscale], name


def test_viz_uses_no_private_module_name_or_attribute_of_plotly():
    """viz/ imports no module or name with a leading underscore from plotly (nor _plotly_utils), and reads or
    writes no attribute with a leading underscore of anything but its own objects (``self``)."""
    root = pathlib.Path(plain.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                modules = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                modules = []
            found += [(path.name, node.lineno, m) for m in modules if m.split(".")[0] in ("plotly", "_plotly_utils") and "._" in f".{m}"]
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__") and ast.unparse(node.value) != "self":
                found.append((path.name, node.lineno, ast.unparse(node)))
    assert found == []


def test_subplots_lay_out_what_make_subplots_does():
    titles = ["a", "b", "c"]
    layout, cells = plain.subplots(1, 3, titles=titles, column_widths=[0.4, 0.3, 0.3], horizontal_spacing=0.08)
    reference = make_subplots(rows=1, cols=3, subplot_titles=titles, column_widths=[0.4, 0.3, 0.3], horizontal_spacing=0.08)
    expected = reference.to_plotly_json()["layout"]
    expected.pop("template")
    assert layout == expected
    assert cells[1, 2] == {"xaxis": "x2", "yaxis": "y2"}
    layout["annotations"][0]["text"] = "changed"  # a copy: the next figure of this shape starts clean
    assert plain.subplots(1, 3, titles=titles, column_widths=[0.4, 0.3, 0.3], horizontal_spacing=0.08)[0]["annotations"][0]["text"] == "a"


def test_the_value_norm_panels_name_tokens_in_hover_only_up_to_the_attention_pages_limit():
    """Like the Attention page's figures: hover text per cell up to MAX_HOVER_CELLS cells a panel."""
    from viz.heads import value_norm_figure
    from viz.heatmap import MAX_HOVER_CELLS

    for n in (8, 200):
        labels = [f"w{i}" for i in range(n)]
        fig = value_norm_figure(np.full((n, n), 1 / n), np.ones((n, n)), labels, title="t")
        named = n * n <= MAX_HOVER_CELLS
        for trace in fig["data"]:
            assert (trace.get("text") is not None) == named, n
            assert ("query %{y}<br>key %{x}" in trace["hovertemplate"]) != named, n
        if named:
            assert fig["data"][0]["text"][3][5] == "query 3: w3<br>key 5: w5"


def test_a_plain_figure_owns_its_dicts_and_cannot_write_into_the_callers_arrays():
    """`plain.figure` copies no array, so it must not let the figure and its caller change each other."""
    z = np.arange(6, dtype=np.float32).reshape(2, 3)
    axis = {"title": {"text": "key"}}
    trace = dict(type="heatmap", z=z, colorscale=plain.colorscale("Viridis"))
    fig = plain.figure([trace], {"xaxis": axis})
    other = plain.figure([trace], {"xaxis": axis})
    fig["layout"]["xaxis"]["title"]["text"] = "changed"
    fig["layout"]["template"]["layout"]["font"]["size"] = 30
    fig["data"][0]["zmin"] = -1
    assert axis == {"title": {"text": "key"}} and "zmin" not in trace
    assert other["layout"]["xaxis"]["title"]["text"] == "key" and "zmin" not in other["data"][0]
    assert other["layout"]["template"]["layout"]["font"].get("size") != 30 and plain.template_json()["layout"]["font"].get("size") != 30
    assert np.shares_memory(fig["data"][0]["z"], z) and not fig["data"][0]["z"].flags.writeable
    with pytest.raises(ValueError):
        fig["data"][0]["z"][0, 0] = 99.0
    z[0, 0] = 5.0  # the caller's own array stays the caller's to change
    assert fig["data"][0]["z"][0, 0] == 5.0
    layout, cells = plain.subplots(1, 2, titles=["a", "b"])
    grid = plain.figure([dict(type="scatter", x=[0], y=[0], **cells[1, 2])], {**layout, "coloraxis2": {"cmin": 0}})
    assert tuple(grid["layout"]["xaxis2"]["domain"]) == go.Figure(grid).layout.xaxis2.domain and grid["layout"]["coloraxis2"]["cmin"] == 0


def test_plotly_dict_is_plotly_s_to_dict_and_leaves_the_figure_as_it_was():
    """The walk without a deep copy gives what plotly's `to_dict()` of the validated figure gives (typed
    arrays, skipped keys, int64 narrowed, strings and objects left to the JSON encoder, a template with no
    arrays left as it is), and what the caller does to it stays out of the figure."""
    fig = plain.figure(
        [
            dict(type="heatmap", z=np.eye(3, dtype=np.float32), text=np.array([["a"] * 3] * 3, dtype=object), colorscale=plain.colorscale("Viridis")),
            dict(type="scatter", x=np.arange(3, dtype=np.int64), y=[1.0, 2.0, 3.0], customdata=np.arange(3.0)),
            dict(type="scatter", x=np.array([0, 2**40]), y=np.array([True, False]), text=np.array(["a", "b"]), ids=np.array([], dtype=np.float32)),
        ],
        {"xaxis": {"range": np.array([0.0, 2.0])}, "shapes": [{"type": "line", "x0": 0, "x1": 1, "y0": 0, "y1": 1}]},
    )
    spec = plain.plotly_dict(fig)
    assert as_json(spec) == as_json(go.Figure(fig).to_dict())
    assert spec["data"][1]["x"] == {"dtype": "i1", "bdata": "AAEC"}  # int64 narrowed as plotly.js takes it
    assert spec["layout"]["xaxis"]["range"] is fig["layout"]["xaxis"]["range"]  # under a skipped key: sent as a list
    assert [type(spec["data"][2][key]) for key in ("x", "y", "text", "ids")] == [np.ndarray] * 4  # beyond 32 bits, bool, str, empty
    for name in ("plotly", "plotly_white", plain.SCREEN_TEMPLATE):
        template = plain.template_json(name)
        assert plain._typed_arrays(template) == template  # walked, it would turn any array into a typed spec
    spec["data"][0].pop("z")
    spec["layout"]["shapes"][0]["x1"] = 5
    assert fig["data"][0]["z"] is not None and fig["layout"]["shapes"][0]["x1"] == 1


def test_the_clickable_copies_are_sent_as_plotly_would_validate_them(toy):
    """The page's clickable stages (a cell marked) and overview are written as plotly JSON too
    (viz.clickable): validated again, they send the same; the figures they copy are unchanged."""
    from viz.clickable import with_cell_targets, with_tile_targets

    figures = page_figures(VIEWS["two heads, a hidden key, layer 1"], toy)
    stages, overview = figures["attention/stages-L1-H0"], figures["attention/overview-all-heads"]
    before = sent(stages), sent(overview)
    clickable, answers = with_cell_targets(stages, xaxis="x4", yaxis="y4", cell=(3, 1))
    tiles = with_tile_targets(overview)
    assert answers and [t["name"] for t in clickable["data"]][-1] == "worked example" and tiles["data"][-1]["name"] == "tile target"
    for fig in (clickable, tiles):
        assert is_figure_dict(fig) and sent(fig) == validated(fig)
    assert (sent(stages), sent(overview)) == before
