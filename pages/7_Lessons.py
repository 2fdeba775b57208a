import streamlit as st

from ui import apply_settings, page
from ui.lessons import LESSONS
from viz.content.settings import Settings

page("Lessons", ":material/school:")
st.markdown(
    "Each lesson sets the sentences, the model, the page and the toggles for one teaching point, with a "
    "question to ask the class. Everything stays adjustable afterwards, and the page's link reproduces it."
)


def open_lesson(settings: dict) -> None:
    apply_settings(Settings(**settings))


for lesson in LESSONS:
    with st.container(border=True):
        st.subheader(lesson.title)
        st.markdown(lesson.explanation)
        st.markdown(f"**Ask the class:** {lesson.question}")
        if st.button("Open this lesson", key=f"lesson_{lesson.key}", on_click=open_lesson, args=(lesson.settings,)):
            st.switch_page(lesson.page)
