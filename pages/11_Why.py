import streamlit as st

from ui import ATTENTION, FIGURES, SENTENCE, guarded, page, show, show_notices, show_table
from ui.why import masked_pair_caption, pair_controls, pair_in_sentence, why_content


def body(context):
    with guarded():
        settings = pair_in_sentence(context)
        content = why_content(settings, context)
        show_notices(content, "post-norm")
        pair_controls(settings, context, content)
        if "score-parts" in content.figures:
            st.markdown("### One pair\n\nThe bars are the parts of the chosen query's score for the chosen key; they add up to q·k, the last bar.")
            show(content, "score-parts")
        masked_pair_caption(settings, context, content)
        show_notices(content, "held-norm")
        show_notices(content, "position-at-pair")
        if "part-maps" in content.figures:
            st.markdown("### Every pair\n\nEach map is one part for every query (row) and key (column); the maps add up to the last one, the raw score.")
            show(content, "part-maps")
        if "pair-maps" in content.figures:
            st.markdown("### Rotary pairs\n\nThe same score split by how fast each pair of dimensions turns with position; the two maps add up to the third.")
            show(content, "pair-maps")
            show(content, "pair-parts")
            show_notices(content, "pairs-at-pair")
            st.markdown("The score the same query and key would have at other distances, from every pair and from each group of pairs.")
            show(content, "score-by-distance")
        if "head-shares" in content.figures:
            st.markdown("### Every head of this layer\n\nEach head's net lift from position as a share of its whole lift (signed), with its badge.")
            show(content, "head-shares")
            show_notices(content, "share-measure")
        if "parts" in content.tables:
            with st.expander("The parts as a table"):
                show_notices(content, "parts-one-row")
                show_table(content, "parts")


INTRO = (
    "A raw score q·k is built from what the query and the key are made of: the **token**, its **position**, and "
    "what each **earlier layer** added. Each norm's per-token scale is held at the value the run used, which "
    "makes the norm linear, so the score is an **exact sum of parts**, one per (query source, key source). "
    "The sidebar's layer and first head choose the head; the sliders choose the pair."
)
page("Why this head looks there", (SENTENCE, ATTENTION, FIGURES), body, INTRO)
