import streamlit as st

from ui import FIGURES, guarded, md, page, show, show_notices, show_table
from ui.generate import generation, open_on_attention, run_controls, run_download, step_by_step


def step(content):
    """One step of the run: redrawn alone when the step or the layer changes, or the run plays."""
    show_notices(content)
    show(content, "generate-tokens")
    show(content, "generate-candidates")
    with st.expander("The candidates as a table"):
        show_table(content, "candidates")
    show(content, "generate-query-row")
    st.markdown(
        "### The cache of keys and values\n\n"
        "Each step adds one row of keys and values per layer and head: those of the token it reads. The earlier rows "
        "never change: with the causal mask no earlier token attends to a later one, so nothing it computed depends "
        "on what comes after. The new query meets every cached key; the model never recomputes the prompt."
    )
    show(content, "generate-cache")
    show(content, "generate-cache-keys")


def body(context):
    run_controls(context.settings)
    with guarded():
        run = generation(context)
        if run is None:
            return
        st.markdown(f"**{md(run.prompt)}**{md(run.text)}")
        step_by_step(context, run, step)
        left, right = st.columns(2)
        with left:
            open_on_attention(context, run)
        with right:
            run_download(run)


INTRO = (
    "A language model writes one token at a time: it reads the text, predicts the next token, **picks** one "
    "(the most likely, or a draw from the probabilities), appends it, and predicts again. Each step reads only "
    "the newest token: its **query** meets the **keys** of every token so far, kept in a cache, so the text "
    "before it is never computed again. Step through the run, or play it, to see each token's pick, its attention and the cache."
)
page("Generate", (FIGURES,), body, INTRO)
