"""No text of an exported figure overlaps another or leaves the canvas, in both themes, at 12 and 64 tokens
(the pages of what heads do: at 12).

Each figure is rendered to SVG by the real exporter (kaleido and Chromium) and its text boxes are
estimated from position, font size, rotation and length (see ``svg_layout``).
"""

from __future__ import annotations

import re

import numpy as np
import plotly.graph_objects as go
import pytest

import viz

from svg_layout import layout_problems, text_boxes
from model import load_model
from model.heads import corpus_summary
from viz.content import Settings, attention_page, embeddings_page, next_token_page, positional_page, run_model, tokens_page
from viz.content.corpus import corpus_page
from viz.content.generate import generate_page
from viz.content.heads import heads_page
from viz.content.scaling import scaling_lab_page
from viz.content.why import why_page
from viz.export import figure_to_svg
from viz.theme import apply_print_theme

WORDS = "The cat sat on the mat by the river bank and the dog watched it from the old wooden bridge while rain fell".split()


def sentence(n_tokens: int) -> str:
    """A sentence of ``n_tokens`` toy-model tokens (words and the final full stop)."""
    return " ".join((WORDS * 8)[: n_tokens - 1]) + "."


# --- the checker itself ------------------------------------------------------


def annotated(*texts: tuple[str, float, float, int]) -> bytes:
    fig = go.Figure()
    for text, x, y, angle in texts:
        fig.add_annotation(text=text, x=x, y=y, xref="paper", yref="paper", showarrow=False, textangle=angle, font=dict(size=20))
    fig.update_layout(width=400, height=300, margin=dict(l=0, r=0, t=0, b=0), xaxis=dict(visible=False), yaxis=dict(visible=False))
    return figure_to_svg(fig)


def test_checker_finds_overlapping_text():
    problems = layout_problems(annotated(("attention", 0.5, 0.5, 0), ("pattern", 0.55, 0.52, 0)))
    assert len(problems) == 1 and problems[0].startswith("overlap: 'attention'")


def test_checker_accepts_text_apart_and_turns_rotated_text():
    assert layout_problems(annotated(("attention", 0.2, 0.5, 0), ("pattern", 0.8, 0.5, 0))) == []
    # upright, the long word is narrow across and tall along y: it clears a word beside it ...
    assert layout_problems(annotated(("attention", 0.45, 0.5, -90), ("key", 0.56, 0.5, 0))) == []
    # ... but not the same word lying flat
    assert len(layout_problems(annotated(("attention", 0.45, 0.5, -90), ("key", 0.5, 0.5, 0)))) == 1
    boxes, width, height = text_boxes(annotated(("attention", 0.5, 0.5, -90)))
    left, top, right, bottom = boxes[0].bounds()
    assert (width, height) == (400, 300) and bottom - top > 3 * (right - left)


def test_checker_finds_text_off_the_canvas():
    fig = go.Figure(go.Scatter(x=[0], y=[0]))
    fig.add_annotation(text="far too long a caption for so small a figure", x=1, y=1, xref="paper", yref="paper", showarrow=False)
    fig.update_layout(width=200, height=200)
    assert any(p.startswith("off the canvas") for p in layout_problems(figure_to_svg(fig)))


# --- every figure of every page ----------------------------------------------


@pytest.fixture(scope="module")
def toy():
    return load_model("toy")


@pytest.fixture(scope="module", params=[12, 64], ids=lambda n: f"{n}-tokens")
def figures(request, toy):
    """Every figure of every page, from the page functions the app calls, in the state with the longest
    titles (hidden tokens, scaling off, T = 2, the sink view on); plus the focus window on its own."""
    settings = Settings(
        text=f"{sentence(request.param)}\nA man withdrew money from the bank.",
        layer=1,
        heads=(0,),
        mask="causal",
        hidden=((0, 1), (0, 2)),
        scaling=False,
        temperature=2.0,
        sinks=True,
    )
    trace = run_model(toy, settings.sentences, settings.display)
    built = {}
    for content in (
        tokens_page(settings, trace, toy),
        positional_page(settings, trace, toy),
        attention_page(settings, trace, model=toy),
        embeddings_page(settings, trace, toy.name),
        next_token_page(settings, trace, toy),
        scaling_lab_page(512, model_d_k=trace.d_head),
    ):
        built.update(content.figures)
    built.update(page_level_figures(request.param))
    if request.param == 12:  # the pages of what heads do, once: their figures do not grow with the sentence
        built.update(heads_level_figures(settings, trace, toy))
    return built


def heads_level_figures(settings, trace, toy) -> dict[str, dict]:
    """The Heads, Why, Generate and Corpus pages' figures, each id under its page's name."""
    sentences = [*trace.texts, "The river bank was muddy after the rain."] * 4
    run = toy.generate("The cat sat on the", 8)
    pages = {
        "heads": heads_page(settings, trace, toy),
        "why": why_page(settings, trace, toy),
        "generate": generate_page(run, 3),
        "corpus": corpus_page(corpus_summary(toy, sentences, top=20), 1, 0, (0, 1), 0, view=settings, sentences=sentences),
    }
    return {f"{page}/{figure_id}": figure for page, content in pages.items() for figure_id, figure in content.figures.items()}


def page_level_figures(n: int) -> dict[str, dict]:
    """The focus window (drawn by the page beyond 128 tokens), the renormalised view and the value step on a
    MiniLM-like pattern of ``n`` tokens with [CLS] and [SEP]."""
    rng = np.random.default_rng(0)
    labels = ["[CLS]", *(WORDS * 8)[: n - 2], "[SEP]"]
    scores = rng.normal(size=(n, n)) * 3  # [query_pos, key_pos]
    pattern = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    v, w_o = rng.normal(size=(4, n, 16)), rng.normal(size=(64, 64))  # [head, key_pos, d_head], [head · d_head, d_model]
    z = np.einsum("qk,hkd->hqd", pattern, v)
    return {
        "focus": viz.focus_figure(pattern, labels, centre=n // 2, width=min(n, 40), title="MiniLM · layer 0 · head 1: focus window"),
        "renormalised": viz.renormalised_figure(pattern, labels, labels, hidden=[0, n - 1], title="MiniLM · layer 0 · head 1"),
        "value-step": viz.value_step_figure(pattern, v[1], z[1], labels, title="layer 0 · head 1: z = pattern · V"),
        "output-step": viz.output_step_figure(z, w_o, np.concatenate(list(z), axis=1) @ w_o, labels, heads=[1], title="layer 0: heads → W_O"),
    }


@pytest.mark.parametrize("theme", ["screen", "print"])
def test_no_text_overlaps_or_leaves_the_canvas(figures, theme):
    problems = {}
    for figure_id, figure in figures.items():
        shown = apply_print_theme(figure) if theme == "print" else figure
        found = layout_problems(figure_to_svg(shown))
        if found:
            problems[figure_id] = found[:5] + ([f"… {len(found) - 5} more"] if len(found) > 5 else [])
    assert not problems, "\n".join(f"{key}:\n  " + "\n  ".join(lines) for key, lines in problems.items())


# --- the Attention page's stage panels, from 2 to 128 tokens ----------------------------------

PAGE_CHART_PX = 928  # the chart's width on the Attention page at 1440 × 900 (the main column beside the sidebar)


def tokens_exactly(model, n: int) -> str:
    """A text of exactly ``n`` tokens of ``model``: words that are one token each, then a full stop."""
    from viz.content import Settings, run_model

    whole = [w for w in WORDS if len(run_model(model, [w], Settings(text=w).display).tokens[0]) == 1]
    text = " ".join((whole * 16)[: n - 1]) + "."
    assert len(run_model(model, [text], Settings(text=text).display).tokens[0]) == n
    return text


def tick_texts(svg: str, axis: str) -> list[str]:
    return re.findall(rf'<g class="{axis}tick"><text[^>]*>([^<]*)</text>', svg)


@pytest.mark.parametrize("n", [2, 16, 48, 96, 128])
def test_stage_panels_stay_readable_from_2_to_128_tokens(toy, n):
    """On the page (its width at 1440 × 900, screen theme) and exported in the print theme: no label
    overlaps another or leaves the canvas; on the page every token is labelled where a label fits (a panel
    of at least 280 px beyond a row's seven tokens, every token up to 17 and at least 15 labels beyond),
    and the chosen token always is."""
    from viz.content import Settings, run_model
    from viz.content.attention import stages_of_head

    settings = Settings(text=tokens_exactly(toy, n))
    trace = run_model(toy, settings.sentences, settings.display)
    chosen = n // 2 + 1 if n > 2 else 1  # never a position the thinning keeps anyway (every k-th from 0)
    figure = stages_of_head(trace, 0, 0, 0, focus=chosen)
    labels = [t.text for t in trace.tokens[0]]
    for theme in ("page", "print"):
        svg = figure_to_svg(apply_print_theme(figure) if theme == "print" else figure, width=PAGE_CHART_PX if theme == "page" else None).decode()
        assert layout_problems(svg) == [], (theme, layout_problems(svg)[:5])
        if theme != "page":
            continue
        panels = [float(w) for w in re.findall(r'<rect class="bg" [^>]*width="([\d.]+)"', svg)][:4]  # the subplots, then colour bars
        assert min(panels) >= (140 if n <= 7 else 280), (theme, panels)
        keys, queries = tick_texts(svg, "x" if n <= 7 else "x3"), tick_texts(svg, "y")
        for shown in (keys, queries):
            assert len(shown) == n if n <= 17 else len(shown) >= 15, len(shown)
            assert labels[chosen].strip() in [s.strip() for s in shown]
        axis = figure["layout"]["xaxis3" if n > 7 else "xaxis"]
        assert chosen in axis["tickvals"]
