"""Streamlit glue shared by the pages: settings, sidebar, cached model runs, figures with exports."""

import streamlit as st
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from deploy import preload
from ui.chart import forget_charts_sent, load_plotly_early  # Streamlit only: no plotly, no torch

# The first run of a process imports this module, in the middle of its page script: the browser starts
# fetching and evaluating plotly.js (4.7 MB) now, while torch and the rest are still being imported, not
# once `page` is reached. `page` then leaves it out of this run.
if get_script_run_ctx(suppress_warning=True) is not None:
    with st.sidebar:
        load_plotly_early()

# `python -m deploy.run` imports torch, the model and figure code in another thread while the first
# browser loads the frontend: wait for it before importing them here (at once without the launcher).
preload.wait()

from collections.abc import Callable

from ui.content_cache import attention_content, page_content
from ui.figures import download_all, show_figure, start_view
from ui.lesson_view import active_lesson, lesson_box
from ui.heads import open_clicked_head
from ui.layout import open_head_box, show, show_notices, show_table
from ui.style import SIDE_BY_SIDE, stylesheet
from ui.text import md
from ui.view import (
    ATTENTION,
    FIGURES,
    FRESH,
    SHOWN,
    VIEW,
    PageContext,
    Sidebar,
    apply_settings,
    commit_view,
    draw_controls,
    draw_notices,
    draw_rest,
    guarded,
    place_controls,
    key,
    notices_box,
    presentation_bar,
    rest_of_the_view,
    sidebar,
    view_rerun,
)

SENTENCE = "sentence"  # with ATTENTION and FIGURES (ui.view): the sidebar controls a page asks for

PAGES = (
    ("app.py", "Home", ":material/home:"),
    ("pages/1_Tokens.py", "Tokens", ":material/text_fields:"),
    ("pages/2_Positional_encoding.py", "Positional encoding", ":material/pin_drop:"),
    ("pages/3_Attention.py", "Attention", ":material/grid_on:"),
    ("pages/4_Embeddings.py", "Embeddings", ":material/scatter_plot:"),
    ("pages/5_Next_token.py", "Next token", ":material/keyboard_double_arrow_right:"),
    ("pages/6_Train.py", "Train", ":material/model_training:"),
    ("pages/7_Lessons.py", "Lessons", ":material/school:"),
    ("pages/8_Scaling_lab.py", "Scaling lab", ":material/science:"),
    ("pages/9_Heads.py", "Heads", ":material/hub:"),
)


def page(title: str, icon: str, controls: tuple[str, ...] = (), body: Callable[[PageContext], None] | None = None, intro: str = "") -> PageContext:
    """Every page starts here: page config, navigation, the shared sidebar, and what the page draws from.

    `controls`: the sidebar controls this page uses besides sentences and model (SENTENCE, ATTENTION, FIGURES).
    `body(context)`: the page below its title and `intro`, as one fragment: a toggle among the sidebar's
    controls after the model box (layer, heads, mask, scaling, temperature, theme…) reruns only it, not the
    page links, the text box, the model box, those controls themselves and the intro. `intro`: markdown
    above the body that no control changes, drawn by the full run alone. Without `body`, the page draws
    itself after `page` returns.
    """
    st.set_page_config(page_title=f"{title} · Attention, step by step", page_icon=icon, layout="wide")
    start_view()
    forget_charts_sent()  # a whole page: the browser may hold none of its charts (another page, a new load)
    with st.sidebar:
        load_plotly_early()
        for path, label, nav_icon in PAGES:
            st.page_link(path, label=label, icon=nav_icon)
    st.title(title)
    lesson = active_lesson({label: path for path, label, _ in PAGES}.get(title, "app.py"))
    beside_question = lesson.controls if lesson is not None and ATTENTION in controls else ()
    drawn = sidebar(frozenset(controls), beside_question)
    context = drawn.context if body is not None else draw_rest(drawn)
    stylesheet(context.settings.presenting)
    if context.settings.presenting:
        presentation_bar()
    if body is not None:
        st.session_state[SHOWN] = {}  # what the controls this full run draws show (ui.view.draw_controls)
    if lesson is not None:
        lesson_box(lesson, context, beside_question, view_rerun() if body is not None else None)
    if body is not None:
        if intro:
            st.markdown(intro)
        drawn = place_controls(drawn)
        st.session_state[FRESH] = True
        try:
            _view_part(drawn, body, title)
        finally:  # after the body (see `_view_part`), and whatever stopped it
            draw_controls(drawn, "page")
    return context


@st.fragment(key=VIEW)
def _view_part(drawn: Sidebar, body: Callable[[PageContext], None], title: str) -> None:
    """The notices, the page's body and the hidden tokens' controls (see `page`); the full run draws the
    other controls after the model box, which rerun this fragment alone (ui.view.draw_controls).

    The body is drawn first, then the controls into their place in the sidebar and the notices into their
    container above the body: the browser gets the page's first chart before the twenty-odd elements of
    the sidebar, which Streamlit's frontend would otherwise handle first (about 1 ms each)."""
    drawn = rest_of_the_view(drawn)
    start_view()  # this run draws every figure of the page: the zip holds these
    notices = notices_box()
    context = commit_view(drawn)
    try:
        body(context)
    finally:  # a body that stops or fails early still leaves the controls (the widgets' values are read before)
        draw_controls(drawn, "fragment")
        draw_notices(drawn, notices)
    download_all(title.lower().replace(" ", "-"))


__all__ = [
    "attention_content",
    "page_content",
    "PAGES",
    "ATTENTION",
    "FIGURES",
    "SENTENCE",
    "SIDE_BY_SIDE",
    "PageContext",
    "apply_settings",
    "download_all",
    "guarded",
    "key",
    "md",
    "open_clicked_head",
    "open_head_box",
    "page",
    "show",
    "show_figure",
    "show_notices",
    "show_table",
]
