"""The Attention page's glue: its stages in one box per head, the head view, clickable heatmaps and overview
tiles, bound to the settings `pinned`, `cell`, `words`, `layer` and `heads` (so they are in the URL).
Callbacks write the widget state that the next run reads (ui.view.read_settings)."""

from __future__ import annotations

import weakref

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import streamlit as st

from ui.chart import draw_chart, placeholder_data
from ui.content_cache import attention_content
from ui.figures import describe_view, chart_key, made_once, png_scale, register, show_figure, themed
from ui.head_view import Downloads, head_view
from ui.layout import formulas, show, show_notices
from ui.text import md
from ui.view import SETTINGS, key, live_controls
from viz.clickable import clicked_cell, clicked_tile, with_cell_targets, with_tile_targets
from viz.content.common import FULL_RESOLUTION
from viz.content.settings import to_query
from viz.export import safe_filename

PAGE = Path(__file__).parent / "components" / "page"

_scroll = st.components.v2.component(
    "attention_viz.scroll_here", html="<span class='scroll-here'></span>", js=(PAGE / "scroll_here.js").read_text(encoding="utf-8"), isolate_styles=False
)


def scroll_here(token: int, key: str) -> None:
    """Scroll the page to this point once for each new `token` (e.g. a count of clicks)."""
    _scroll(key=key, data={"token": token, "name": key})


# The page's head view, clickable heatmaps and overview tiles are bound to the settings `pinned`,
# `cell`, `words`, `layer` and `heads` (so they are in the URL); callbacks write the widget state the
# sidebar reads at the start of the next run.

OPENED = "opened_head_clicks"


def attention_head_view(content) -> None:
    """The head view section of the Attention page: heading, how to use it, word-level toggle, the view, downloads."""

    view = content.values["head_view"]
    word_of_token, first_piece = content.values["word_of_token"], content.values["first_piece"]
    to_token = (lambda p: first_piece[p]) if view.words else (lambda p: p)

    def remap_pinned():  # the toggle has flipped: the pinned position changes between tokens and words
        pinned = content.values["pinned"]
        if pinned is not None:
            st.session_state[key("pinned")] = word_of_token[pinned] if st.session_state[key("words")] else first_piece[pinned]

    def on_pin(index):
        st.session_state[key("pinned")] = -1 if index is None else index

    def on_pair(query, key_position):
        st.session_state[key("pinned")] = query
        st.session_state[key("cell")] = [to_token(query), to_token(key_position)]

    st.markdown(  # the heading and its text in one element
        "### Where each token looks\n\n"
        "Queries on the left, keys on the right; a line's colour is its head and its opacity the weight. "
        "Hover a token to preview its row, click to pin it (click again to unpin), then click a key for the "
        "pair's worked example. Keyboard: ↑/↓ move the pinned token, ←/→ switch columns, Enter pins, Escape clears."
    )
    st.toggle(
        "Word level",
        key=key("words"),
        on_change=remap_pinned,
        help="Merge sub-word pieces into words: a word's weight to a key word is the sum over the key word's pieces, averaged over the query word's pieces.",
    )
    name = f"head-view-L{view.layer}"
    fig = themed(content.figures[name])
    downloads = None if st.session_state[SETTINGS].presenting else Downloads(name, fig, png_scale())
    head_view(view, pinned=content.values["pinned"], pair=content.values["pair"], on_pin=on_pin, on_pair=on_pair, downloads=downloads)
    register(safe_filename(name), fig, content.figure_tables.get(name))


def _set_cell(content, query: int, key_position: int) -> None:

    st.session_state[key("cell")] = [query, key_position]
    view = content.values["head_view"]
    st.session_state[key("pinned")] = content.values["word_of_token"][query] if view.words else query


def show_clickable_stages(content, figure_id: str) -> bool:
    """The stages of one head, whose softmax panel's cells set the worked example; False when too large
    to click (blocks of tokens), and then drawn as usual. Content may be shared between sessions: the
    click targets go on a copy."""

    n = len(content.values["labels"])
    cell = (content.values.get("query"), content.values.get("key"))
    figure = content.figures[figure_id]
    fig, clickable = made_once(figure, "clickable", lambda: _clickable_stages(figure, n, cell), variant=cell)  # the latest cell only

    def on_click(selection):
        cell = clicked_cell(selection, fig)
        if cell is not None:
            _set_cell(content, *cell)

    live = live_controls(content.values.get(f"live-{figure_id}"), st.session_state[SETTINGS])
    show_figure(fig, figure_id, on_click=on_click if clickable else None, live=live, per_head=True, table=content.figure_tables.get(figure_id))
    return bool(clickable)


def head_box(head: int):
    """The container of one head's stages and what follows them (caption, notices, focus window): in its
    own place whichever heads are shown, so that a chart keeps its element (and its drawing) when heads
    before it come or go. Named by the head alone: another layer draws over the same chart.
    ui/components/chart/chart.css hides the box of a head whose chart is hidden."""
    return st.container(key=f"{HEAD_BOX}H{head}")


HEAD_BOX = "av_head_box_"  # chart.css finds the boxes by this start of their key
FORMULAS = "av_formulas"  # the key of the row of formulas above the stages, which state the scaling and temperature


def formula_row(d_k: int, scaling: bool, temperature: float) -> None:
    """The four formulas above the stages, with this view's √d_k (or none) and T: one element, laid out
    as a row that wraps (`ui.layout.formulas`); faded while the stages are drawn ahead of the server (chart.css)."""
    formulas(
        r"S = Q K^{\top}",
        r"S' = S / \sqrt{d_k} = S / \sqrt{%d}" % d_k if scaling else r"S' = S \;\text{(unscaled)}",
        r"S''_{ij} = \begin{cases} S'_{ij} & j \text{ allowed} \\ -\infty & j \text{ masked} \end{cases}",
        r"A = \mathrm{softmax}(S''/T),\ T = %g" % temperature,
        key=FORMULAS,
    )


def show_stages_of_heads(content, layer: int) -> None:
    """The Attention page's stages of each head of `layer`, each in its box (`head_box`): for a head shown,
    its clickable stages, then its notices and its focus window or renormalised pattern; for a head not
    shown, its placeholder (drawn by the browser when its pill is clicked) or nothing."""

    for head, shown in content.values["stage_heads"]:
        with head_box(head):
            if not shown:
                show_stages_placeholder(content, f"stages-L{layer}-H{head}")
                continue
            show_clickable_stages(content, f"stages-L{layer}-H{head}")  # how to use its cells: `worked_example_intro`
            show_notices(content, f"long-input-H{head}", holds_place=False)  # the sentence's length alone
            for extra in ("focus", "renormalised"):
                if f"{extra}-L{layer}-H{head}" in content.figures:
                    show(content, f"{extra}-L{layer}-H{head}", per_head=True)
            show_notices(content, f"fully-masked-H{head}", holds_place=False)  # last in the box


def show_stages_placeholder(content, figure_id: str) -> None:
    """The hidden chart of a head that is not shown (`attention_figures`' "placeholder-…"): a click on
    its pill shows its stages at once, drawn by the browser from a shown head's figure and this head's
    raw scores (ui/components/chart/live.js), until the server's figure replaces them. Where the browser
    cannot draw it, a placeholder that keeps the element and the head's last drawing, hidden. Nothing
    in the print theme, which draws nothing ahead."""

    part = content.values.get(f"placeholder-{figure_id}")
    if st.session_state[SETTINGS].theme == "print":
        return
    # of the controls, only the heads' pills: the rest is read through the shown head's chart (live.js).
    # Where the browser cannot draw the head (part None), the placeholder only keeps the chart's element,
    # hidden, with its last drawing: the pill that brings the same figure back draws nothing (chart.js)
    live = None if part is None else {**part, "controls": {"heads": key("heads")}}
    draw_chart(placeholder_data(live), key=chart_key(figure_id, per_head=True))


def _clickable_stages(figure, n: int, cell: tuple) -> tuple:
    """A copy of the stages figure whose softmax cells can be clicked, the chosen cell marked; and whether
    it is clickable (False for blocks of tokens, and then the figure itself)."""

    if n > FULL_RESOLUTION:  # blocks of tokens: nothing to click, nothing added
        return figure, False
    return with_cell_targets(figure, xaxis="x4", yaxis="y4", cell=cell)


def show_clickable_overview(content, figure_id: str = "overview-all-heads") -> None:
    """Every head of every layer; a tile opens its layer and head, and the page scrolls to it."""

    fig = made_once(content.figures[figure_id], "clickable", lambda: with_tile_targets(content.figures[figure_id]))

    def on_click(selection):
        tile = clicked_tile(selection, fig)
        if tile is not None:
            st.session_state[key("layer")], st.session_state[key("heads")] = tile[0], [tile[1]]
            st.session_state[OPENED] = st.session_state.get(OPENED, 0) + 1

    show_figure(fig, figure_id, on_click=on_click, table=content.figure_tables.get(figure_id))


def opened_head_anchor() -> None:
    """Where the page scrolls after an overview tile was clicked (just above the opened head)."""
    clicks = st.session_state.get(OPENED, 0)
    if clicks:
        scroll_here(clicks, key="opened_head_anchor")


def worked_example_intro(content, head: int, layer: int) -> None:
    """The worked example's heading, the pair's weight and how to choose another pair: one element (a heading
    and two captions took three, one of them under the stages)."""
    labels, n = content.values["labels"], content.values["n_tokens"]
    text = "### A worked example"
    if n:
        query, key_position = content.values["query"], content.values["key"]
        text += f"\n\nHead {head}, layer {layer}: “{md(labels[query])}” gives weight {content.values['weight']:.4f} to “{md(labels[key_position])}”."
        if n <= FULL_RESOLUTION:  # the softmax panels' cells can be clicked (`show_clickable_stages`)
            text += " Click a cell of a softmax panel above, or a key of the token pinned in the head view, for another pair."
    st.markdown(text)


def worked_example_picker(content) -> tuple[int, int]:
    """Query and key boxes bound to the setting `cell` (the head view and the heatmaps set it too)."""

    labels, n = content.values["labels"], content.values["n_tokens"]
    st.session_state["w_example_query"], st.session_state["w_example_key"] = content.values["query"], content.values["key"]

    def changed():
        _set_cell(content, st.session_state["w_example_query"], st.session_state["w_example_key"])

    row = st.container(horizontal=True, gap="large")  # one element, not three (columns)
    # select sliders, not selectboxes (Streamlit's selectbox reads the whole session state each rerun, 0.85 ms):
    # a drag sweeps the example along the sentence, the arrow keys step it
    options = dict(options=range(n), format_func=lambda i: f"{i}: {labels[i]}", on_change=changed)
    query = row.select_slider("Query token", key="w_example_query", **options)
    key_position = row.select_slider("Key token", key="w_example_key", **options)
    return query, key_position


def clicks_rerun_only(draw: Callable, settings, trace, model=None) -> None:
    """`draw(content)` (the Attention page's content) as a fragment: a click on a token of the head view,
    a cell of a heatmap or the word-level toggle inside it reruns only this part, with the pinned token,
    cell and word level the click wrote; the sidebar, the trace and the other figures stay as they are.
    The settings and the link follow the click. Above it, the anchor the page scrolls to when an overview
    tile opens a head.

    The fragment stays in the session (a closed tab's too, until Streamlit lets the session go): it holds
    the trace and the model weakly, so that they leave memory with the shared cache's entries; a click after
    they left reruns the whole page, which builds them again."""
    had_model = model is not None
    trace_ref, model_ref = weakref.ref(trace), (weakref.ref(model) if had_model else lambda: None)

    @st.fragment
    def clicked_part():
        trace, model = trace_ref(), model_ref()
        if trace is None or (model is None and had_model):
            st.rerun()
        state = st.session_state
        now = replace(
            settings,
            pinned=state.get(key("pinned"), settings.pinned),
            cell=tuple(state.get(key("cell"), settings.cell)),
            words=bool(state.get(key("words"), settings.words)),
        )
        if state.get(SETTINGS) != now:  # also back to the full run's view (a pin cleared)
            state[SETTINGS] = now
            st.query_params.from_dict(to_query(now))
            describe_view()
        draw(attention_content(now, trace, model=model))

    opened_head_anchor()
    clicked_part()


def open_head_box(options: list[tuple[int, int]]) -> None:
    """A box that opens one layer and head in the sidebar's controls."""

    def open_head():
        layer, head = st.session_state["w_open"]
        st.session_state[key("layer")], st.session_state[key("heads")] = layer, [head]
        st.session_state[OPENED] = st.session_state.get(OPENED, 0) + 1  # the page scrolls to the opened head

    st.selectbox(
        "Open a head",
        options,
        format_func=lambda lh: f"layer {lh[0]} · head {lh[1]}",
        key="w_open",
        index=None,
        on_change=open_head,
        placeholder="choose a layer and head",
    )
