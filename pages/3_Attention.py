import streamlit as st

from ui import ATTENTION, FIGURES, SENTENCE, SIDE_BY_SIDE, attention_content, guarded, key, md, open_head_box, page, show, show_notices, show_table
from ui.attention import attention_head_view, clicks_rerun_only, formula_row, show_clickable_overview, show_stages_of_heads
from ui.attention import worked_example_intro, worked_example_picker
from viz.content.common import FULL_RESOLUTION

COLOURS = {"fixed": "0 to 1", "own": "0 to its largest"}


def body(context):
    trace, s = context.trace, context.settings
    with guarded():
        content = attention_content(s, trace, model=context.model)
        d_k, head, labels, n = (content.values[name] for name in ("d_k", "head", "labels", "n_tokens"))
        row = st.container(horizontal=True, gap="large", vertical_alignment="bottom")  # one element, not four (columns)
        row.segmented_control(
            "Colour of the weights",
            ["fixed", "own"],
            key=key("pattern_colour"),
            format_func=COLOURS.get,
            required=True,
            help="0 to 1: every figure on the same scale, comparable. "
            "0 to its largest: each figure's colours stretched to its own largest weight, for faint patterns.",
        )
        row.toggle(f"Also hide {', '.join(f'“{md(t)}”' for t in content.values['sinks'])} and renormalise", key=key("sinks"))
        if len(labels) > FULL_RESOLUTION:
            row.selectbox(
                "Focus window around", [-1, *range(len(labels))], key=key("focus"), format_func=lambda i: "the middle" if i < 0 else f"{i}: {labels[i]}"
            )
        formula_row(d_k, s.scaling, s.temperature)

        def clicked_part(content):  # a click on a token, a cell or "Word level" reruns only this part
            show_stages_of_heads(content, s.layer)
            attention_head_view(content)
            worked_example_intro(content, head, s.layer)
            if n:
                worked_example_picker(content)
                show_table(content, "worked-example")
            show_notices(content, "worked-example", holds_place=False)

        clicks_rerun_only(clicked_part, s, trace, context.model)
        st.markdown(  # the heading and its text in one element
            "### Why divide by √d_k?\n\n"
            f"Without scaling, dot products of {d_k}-dimensional vectors grow with d_k, and the softmax of large "
            "numbers puts almost all weight on one key. Compare the two patterns and how peaked each row is: "
            "**entropy** (bits, higher = spread out) and the **largest weight** of the row."
        )
        with st.container(horizontal=True, key=SIDE_BY_SIDE):  # one element, not three (columns); halves (ui/style.py)
            for scaled in ("scaled", "unscaled"):
                show(content, f"softmax-{scaled}-L{s.layer}-H{head}")
        show(content, f"row-stats-L{s.layer}-H{head}")
        st.page_link("pages/8_Scaling_lab.py", label="What if d_k = 512? Try it in the scaling lab", icon=":material/science:")

        st.markdown(
            "### After the softmax: the values\n\n"
            "Each query row of **z = A · V** is the pattern's weighted average of the keys' value vectors. The heads' z are "
            "laid side by side and multiplied by **W_O**: that is what the layer adds to each token."
        )
        for figure_id in [*(f"value-step-L{s.layer}-H{h}" for h in s.heads), f"output-step-L{s.layer}"]:
            if figure_id in content.figures:
                show(content, figure_id)

        st.markdown(
            "### Every head of every layer\n\n"
            "Small multiples of the softmax pattern. In a long input a cell is a block of tokens: the weight its queries give its keys, "
            "so each row still sums to 1. Click a tile to open that layer and head above."
        )
        show_clickable_overview(content)
        open_head_box(content.values["head_options"])


INTRO = (
    "Each token asks a **query** (q) and offers a **key** (k). Their dot product says how well they match; "
    "dividing by √d_k keeps those scores in a range where the softmax still spreads its attention; the mask "
    "removes keys a query must not see; the softmax turns each row into weights that sum to 1. "
    "Below, every step of the layer and heads chosen in the sidebar, for the sentence shown."
)
page("Attention", (SENTENCE, ATTENTION, FIGURES), body, INTRO)
