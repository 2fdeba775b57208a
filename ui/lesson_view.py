"""Lessons in the app: opening one (asking before it replaces typed sentences), its box on the page it
opens (explanation, question, the controls it talks about), undo and close."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from viz.content.lessons import LESSONS_BY_KEY, Lesson
from ui.text import md
from ui.view import PageContext, apply_settings, draw_control
from viz.content.settings import DEFAULT_TEXT, Settings

ACTIVE, BEFORE, ASKING = "active_lesson", "settings_before_lesson", "lesson_to_confirm"


def active_lesson(page_path: str) -> Lesson | None:
    """The lesson opened on this page, if any."""
    lesson = LESSONS_BY_KEY.get(st.session_state.get(ACTIVE, ""))
    return lesson if lesson is not None and lesson.page == page_path else None


def lesson_settings(lesson: Lesson) -> Settings:
    return Settings(**lesson.settings)


def replaces_typed_sentences(lesson: Lesson, settings: Settings) -> bool:
    """True when the teacher typed sentences of their own that the lesson would replace."""
    return settings.text not in (DEFAULT_TEXT, lesson_settings(lesson).text)


def _open(lesson: Lesson, current: Settings, keep_sentences: bool) -> None:
    new = lesson_settings(lesson)
    st.session_state[BEFORE] = current
    st.session_state[ACTIVE] = lesson.key
    st.session_state.pop(ASKING, None)
    apply_settings(replace(new, text=current.text) if keep_sentences else new)


def lesson_card(lesson: Lesson, current: Settings) -> None:
    """A lesson on the Lessons page: explanation, question, and a button that opens it (asking first
    when it would replace the sentences typed in the sidebar)."""
    with st.container(border=True):
        st.subheader(lesson.title)
        st.markdown(lesson.explanation)
        st.markdown(f"**Ask the class:** {lesson.question}")
        if st.button("Open this lesson", key=f"lesson_{lesson.key}"):
            if not replaces_typed_sentences(lesson, current):
                _open(lesson, current, keep_sentences=False)
                st.switch_page(lesson.page)
            st.session_state[ASKING] = lesson.key
        if st.session_state.get(ASKING) == lesson.key:
            st.warning(
                f"This lesson replaces your sentences (“{md(current.text[:80])}…”) with its own. You can undo it from the lesson's box on the page it opens.",
                icon="✍️",
            )
            left, middle, right = st.columns(3)
            if left.button("Open it, use its sentences", key=f"lesson_replace_{lesson.key}", type="primary"):
                _open(lesson, current, keep_sentences=False)
                st.switch_page(lesson.page)
            if middle.button("Open it, keep my sentences", key=f"lesson_keep_{lesson.key}"):
                _open(lesson, current, keep_sentences=True)
                st.switch_page(lesson.page)
            if right.button("Cancel", key=f"lesson_cancel_{lesson.key}"):
                st.session_state.pop(ASKING, None)
                st.rerun()


def _undo() -> None:
    before = st.session_state.pop(BEFORE, None)
    st.session_state.pop(ACTIVE, None)
    if before is not None:
        apply_settings(before)


def _close() -> None:
    st.session_state.pop(ACTIVE, None)
    st.session_state.pop(BEFORE, None)


def lesson_box(lesson: Lesson, context: PageContext, controls: tuple[str, ...]) -> None:
    """The open lesson, at the top of its page: what it shows, the question, and `controls` (the ones it
    talks about, drawn here instead of in the sidebar)."""
    with st.container(border=True):
        st.markdown(f"**Lesson: {lesson.title}**  \n{lesson.explanation}")
        st.markdown(f"**Ask the class:** {lesson.question}")
        if controls:
            for name, column in zip(controls, st.columns(max(len(controls), 3))):
                draw_control(name, column, context.settings, context.model, context.trace)
        left, right, _ = st.columns([2, 1, 3])
        if BEFORE in st.session_state:
            left.button("Undo: back to my sentences and settings", key="lesson_undo", on_click=_undo)
        right.button("Close the lesson", key="lesson_close", on_click=_close)
