import streamlit as st

from ui import ATTENTION, FIGURES, download_all, guarded, key, page, show, show_notices, show_table
from viz.content import embeddings_page

context = page("Embeddings", ":material/scatter_plot:", (ATTENTION, FIGURES))
trace = context.trace
st.markdown(
    "The **static** embedding of a word is one row of the model's embedding table: *bank* gets the same "
    "vector by a river and in a town. Each layer then mixes in the other words of the sentence, giving a "
    "**contextual** embedding. Below, both are projected onto the same plane (PCA); arrows go from the "
    "static point to the contextual one. With a trained model, the two *bank*s move towards their own context."
)

with guarded():
    left, middle, right = st.columns([1, 2, 2])
    left.text_input("Word to follow", key=key("target"))
    middle.text_input("Reference words (comma-separated)", key=key("references"))
    layer_names = {-1: f"last ({trace.n_layers})", 0: "0 (input: embedding + position)"}
    right.select_slider(
        "Contextual embedding after layer",
        options=list(range(-1, trace.n_layers + 1)),
        key=key("embedding_layer"),
        format_func=lambda layer: layer_names.get(layer, str(layer)),
    )
    content = embeddings_page(context.settings, trace, context.model.name)
    show_notices(content)
    for figure_id in content.figures:
        show(content, figure_id)
    if "similarities" in content.tables:
        st.subheader("The cosine similarities behind the picture")
        st.caption("Each vector is centred on the mean of all tokens in its layer, as in the plot.")
        show_table(content, "similarities", index=True)
        table, target = content.tables["similarities"], content.values["target"]
        st.download_button("Similarities as CSV", table.to_csv().encode(), f"similarities-{target}.csv", "text/csv", on_click="ignore")

download_all("embeddings")
