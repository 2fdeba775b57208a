"""Every figure function takes the empty and one-element cases: no tokens kept, one token, one head,
one layer. It returns a figure (with a message when there is nothing to draw), never raises."""

import numpy as np
import pytest

from viz import (
    apply_print_theme,
    attention_heatmap,
    heads_overview,
    input_composition_figure,
    pe_curves,
    pe_heatmap,
    position_similarity_heatmap,
    projection_figure,
    row_stats_figure,
    sense_layers_figure,
    similarity_by_distance_figure,
    stages_figure,
    tokens_figure,
    trajectory_figure,
)
from viz.prediction import last_row_figure, next_token_figure
from viz.export import figure_to_csv


def message(fig: dict) -> str:
    """The text of the figure's 'nothing to draw' message, or ''."""
    return " ".join(a["text"] for a in fig["layout"].get("annotations", []) if a.get("name") == "message")


def stages(n: int, fill: float = 0.5) -> dict:
    m = np.full((n, n), fill)
    return dict(scores_raw=m, scores_scaled=m, scores_masked=m, pattern=np.full((n, n), 1.0 / max(n, 1)))


def labels(n: int) -> list[str]:
    return [f"t{i}" for i in range(n)]


def empty_cases():
    """(name, call) for nothing to draw: zero tokens, zero dimensions, no points."""
    return [
        ("attention_heatmap", lambda: attention_heatmap(np.zeros((0, 0)), [], [], title="t", colorbar_title="w")),
        ("stages_figure", lambda: stages_figure(stages(0), [], [], masked=np.zeros((0, 0), bool), title="t")),
        ("row_stats_figure", lambda: row_stats_figure(np.zeros((0, 0)), np.zeros((0, 0)), [], masked=np.zeros((0, 0), bool))),
        ("heads_overview", lambda: heads_overview(np.zeros((1, 1, 0, 0)), [], [])),
        ("heads_overview no heads", lambda: heads_overview(np.zeros((0, 0, 3, 3)), labels(3), labels(3))),
        ("pe_heatmap", lambda: pe_heatmap(np.zeros((0, 4)))),
        ("pe_curves", lambda: pe_curves(np.zeros((0, 4)), [0])),
        ("pe_curves no dims", lambda: pe_curves(np.zeros((5, 4)), [])),
        ("position_similarity_heatmap", lambda: position_similarity_heatmap(np.zeros((0, 0)))),
        ("similarity_by_distance_figure", lambda: similarity_by_distance_figure(np.zeros(0), np.zeros(0), label="x")),
        ("input_composition_figure", lambda: input_composition_figure(np.zeros((0, 4)), np.zeros((0, 4)), [])),
        ("tokens_figure", lambda: tokens_figure([])),
        ("projection_figure", lambda: projection_figure([], [], title="t")),
        ("trajectory_figure", lambda: trajectory_figure({}, title="t")),
        ("sense_layers_figure", lambda: sense_layers_figure([], title="t")),
        ("next_token_figure", lambda: next_token_figure([], [], title="t")),
        ("last_row_figure", lambda: last_row_figure(np.zeros((0, 0)), [], [], title="t")),
    ]


def one_cases():
    """(name, call, expected values) for one token, one head, one layer, one point."""
    one = np.array([[1.0]])
    return [
        ("attention_heatmap", lambda: attention_heatmap(one, ["a"], ["a"], title="t", colorbar_title="w"), [1.0]),
        ("stages_figure", lambda: stages_figure(stages(1), ["a"], ["a"], masked=np.zeros((1, 1), bool), title="t"), [1.0]),
        ("row_stats_figure", lambda: row_stats_figure(one, one, ["a"], masked=np.zeros((1, 1), bool)), [1.0]),
        ("heads_overview", lambda: heads_overview(one[None, None], ["a"], ["a"]), [1.0]),
        ("pe_heatmap", lambda: pe_heatmap(np.array([[0.0, 1.0]])), [0.0, 1.0]),
        ("pe_curves", lambda: pe_curves(np.array([[0.0, 1.0]]), [1]), [1.0]),
        ("position_similarity_heatmap", lambda: position_similarity_heatmap(one), [1.0]),
        ("similarity_by_distance_figure", lambda: similarity_by_distance_figure(np.zeros(1), np.ones(1), label="x"), [1.0]),
        ("input_composition_figure", lambda: input_composition_figure(np.array([[0.5, 0.0]]), np.array([[0.0, 1.0]]), ["a"]), [0.5, 1.0]),
        ("tokens_figure", lambda: tokens_figure([dict(text="a", id=7, kind="normal")]), None),
        ("projection_figure", lambda: projection_figure([dict(label="a", group="static", sentence=None, x=0.25, y=0.5)], [], title="t"), [0.25]),
        ("trajectory_figure", lambda: trajectory_figure({"a (s1)": [(0.25, 0.5)]}, title="t"), [0.25]),
        ("sense_layers_figure", lambda: sense_layers_figure([dict(layer=0, same=0.25, other=0.5, ratio=1.0)], title="t"), [0.25, 0.5]),
        ("next_token_figure", lambda: next_token_figure(["a"], [1.0], title="t"), [1.0]),
        ("last_row_figure", lambda: last_row_figure(one, ["a"], ["L0 H0"], title="t"), [1.0]),
    ]


@pytest.mark.parametrize("name,call", empty_cases(), ids=[c[0] for c in empty_cases()])
def test_nothing_to_draw_gives_a_figure_with_a_message(name, call):
    fig = call()
    assert isinstance(fig, dict) and set(fig) == {"data", "layout"}
    assert "nothing to draw" in message(fig).lower(), (name, fig["layout"]["annotations"])
    figure_to_csv(fig)  # the export of such a figure works too
    assert message(apply_print_theme(fig)) == message(fig)


def numbers(fig: dict) -> list[float]:
    found = []
    for trace in fig["data"]:
        for attr in ("z", "x", "y"):
            value = trace.get(attr)
            if value is not None and not isinstance(value, str):
                array = np.asarray(value, dtype=object).ravel()
                found += [float(v) for v in array if isinstance(v, (int, float, np.floating, np.integer)) and v is not None]
    return found


@pytest.mark.parametrize("name,call,expected", one_cases(), ids=[c[0] for c in one_cases()])
def test_one_element_is_drawn_without_a_message(name, call, expected):
    fig = call()
    assert isinstance(fig, dict) and set(fig) == {"data", "layout"} and fig["data"], name
    assert message(fig) == ""
    values = numbers(fig)
    assert not any(np.isnan(v) for v in values), name
    for value in expected or []:
        assert any(abs(v - value) < 1e-6 for v in values), (name, value, values[:20])
    figure_to_csv(fig)
