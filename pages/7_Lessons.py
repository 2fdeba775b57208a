import streamlit as st

from ui import page
from ui.lesson_view import lesson_card
from viz.content.lessons import LESSONS

context = page("Lessons")
st.markdown(
    "Each lesson sets the sentences, the model, the page and the toggles for one teaching point, with a "
    "question to ask the class. The explanation, the question and the controls it talks about stay at the top "
    "of the page it opens. Everything stays adjustable afterwards, the page's link reproduces it, and the "
    "lesson's box has an undo that brings back your own sentences and settings."
)

for lesson in LESSONS:
    lesson_card(lesson, context.settings)
