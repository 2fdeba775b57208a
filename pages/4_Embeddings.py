import streamlit as st

from ui import ATTENTION, FIGURES, guarded, key, page, show, show_notices, show_table, table_download
from viz.content import embeddings_page
from viz.content.embeddings import hidden_state_name


def body(context):
    trace = context.trace
    with guarded():
        left, middle, right = st.columns([1, 2, 2])
        left.text_input("Word to follow", key=key("target"))
        middle.text_input("Reference words (comma-separated)", key=key("references"))
        right.select_slider(
            "Contextual embedding",
            options=list(range(-1, trace.n_layers + 1)),
            key=key("embedding_layer"),
            format_func=lambda index: f"the last ({hidden_state_name(trace.n_layers)})" if index == -1 else hidden_state_name(index),
        )
        st.text_input("Sense of the word in each sentence (comma-separated, in order; blank = none)", key=key("senses"), placeholder="river, money")
        content = embeddings_page(context.settings, trace, context.model.name, context.model.tokenizer)
        show_notices(content)
        for figure_id in content.figures:
            if figure_id.startswith("senses-"):
                st.subheader("Where in the network the senses part")
                st.caption(
                    "For each layer: the mean cosine similarity of an occurrence to the other occurrences of its own "
                    "sense, and to those of the other sense. The gap between the lines is what the model tells apart."
                )
            show(content, figure_id)
            if figure_id.startswith("senses-"):
                show_table(content, "sense-layers")
        if "similarities" in content.tables:
            st.subheader("The cosine similarities behind the picture")
            st.caption("Each vector is centred on the mean of all tokens in its layer, as in the plot. None: a vector beside itself.")
            show_table(content, "similarities", index=True)
            table_download(content, "similarities", "Similarities as CSV", f"similarities-{content.values['target']}")


INTRO = (
    "The **static** embedding of a word is one row of the model's embedding table: *bank* gets the same "
    "vector by a river and in a town. Each layer then mixes in the other words of the sentence, giving a "
    "**contextual** embedding. Below, the occurrences of the word are drawn on the plane that spreads them "
    "most (PCA), with an arrow from the static point to each. Give the sense of the word in each sentence "
    "to see the senses as groups, and where in the network they part."
)
page("Embeddings", (ATTENTION, FIGURES), body, INTRO)
