"""Streamlit glue shared by the pages. Every page runs the same way, top to bottom:

    settings (URL on a first load, widgets after) → model and trace (cached) → sidebar → the page's content

`page` does the first three and returns the `PageContext` the page draws from.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import streamlit as st

from ui.chart import load_plotly
from ui.content_cache import attention_content, page_content
from ui.figures import download_all, show_figure, start_view
from ui.heads import open_clicked_head
from ui.attention import open_head_box
from ui.layout import formulas, show, show_notices, show_table, table_download
from ui.lesson_view import active_lesson, lesson_box
from ui.style import SIDE_BY_SIDE, stylesheet
from ui.text import md
from ui.view import (
    ATTENTION,
    FIGURES,
    PageContext,
    apply_settings,
    arrived_from_elsewhere,
    follow_the_widgets,
    guarded,
    key,
    notices_and_badge,
    presentation_bar,
    resolve,
    sidebar,
)

ICON = str(Path(__file__).parent / "components" / "icon.png")  # served by the app: no icon font from a CDN
SENTENCE = "sentence"  # with ATTENTION and FIGURES: the sidebar controls a page asks for

PAGES = (
    ("home.py", "Home", ":material/home:"),
    ("pages/1_Tokens.py", "Tokens", ":material/text_fields:"),
    ("pages/2_Positional_encoding.py", "Positional encoding", ":material/pin_drop:"),
    ("pages/3_Attention.py", "Attention", ":material/grid_on:"),
    ("pages/4_Embeddings.py", "Embeddings", ":material/scatter_plot:"),
    ("pages/5_Next_token.py", "Next token", ":material/keyboard_double_arrow_right:"),
    ("pages/6_Train.py", "Train", ":material/model_training:"),
    ("pages/7_Lessons.py", "Lessons", ":material/school:"),
    ("pages/8_Scaling_lab.py", "Scaling lab", ":material/science:"),
    ("pages/9_Heads.py", "Heads", ":material/hub:"),
    ("pages/10_Generate.py", "Generate", ":material/edit_note:"),
    ("pages/11_Why.py", "Why this head looks there", ":material/psychology_alt:"),
    ("pages/12_Corpus.py", "Heads across a corpus", ":material/library_books:"),
)


def page(title: str, controls: tuple[str, ...] = (), body: Callable[[PageContext], None] | None = None, intro: str = "") -> PageContext:
    """Every page starts here: page config, navigation, the view, the sidebar, an open lesson's box and the
    view's notices. `controls`: the sidebar controls this page uses besides sentences and model (SENTENCE,
    ATTENTION, FIGURES). `intro`: markdown above the notices. With `body`, `body(context)` is drawn below
    them, followed by the button that downloads every figure of the view; without, the page draws itself
    after `page` returns."""
    st.set_page_config(page_title=f"{title} · Attention, step by step", page_icon=ICON, layout="wide")
    start_view()
    with st.sidebar:
        load_plotly()
        arrived = arrived_from_elsewhere()  # the tab's process stopped; its widgets came here (ui/view.py)
        for path, label, nav_icon in PAGES:
            st.page_link(path, label=label, icon=nav_icon)
    st.title(title)
    context, notices, problem = resolve(arrived)
    lesson = active_lesson({label: path for path, label, _ in PAGES}.get(title, "home.py"))
    beside_question = lesson.controls if lesson is not None and ATTENTION in controls else ()
    sidebar(context, frozenset(controls), beside_question, problem)
    if arrived:
        follow_the_widgets()
    stylesheet(context.settings.presenting)
    if context.settings.presenting:
        presentation_bar()
    if lesson is not None:
        lesson_box(lesson, context, beside_question)
    if intro:
        st.markdown(intro)
    notices_and_badge(context, notices, ATTENTION in controls)
    if body is not None:
        body(context)
        if arrived:  # a change in the page's own widgets
            follow_the_widgets()
        download_all(title.lower().replace(" ", "-"))
    return context


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
    "formulas",
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
    "table_download",
]
