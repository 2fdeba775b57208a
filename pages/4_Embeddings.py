import pandas as pd
import streamlit as st

from model.embeddings import embedding_projection
from ui.text import md
from ui import download_all, guarded, page, show_figure
from viz.views import embedding_figures

view = page("Embeddings", ":material/scatter_plot:")
trace, s = view.trace, view.settings
st.markdown(
    "The **static** embedding of a word is one row of the model's embedding table: *bank* gets the same "
    "vector by a river and in a town. Each layer then mixes in the other words of the sentence, giving a "
    "**contextual** embedding. Below, both are projected onto the same plane (PCA); arrows go from the "
    "static point to the contextual one. With a trained model, the two *bank*s move towards their own context."
)

with guarded():
    left, middle, right = st.columns([1, 2, 2])
    left.text_input("Word to follow", key="w_target")
    middle.text_input("Reference words (comma-separated)", key="w_refs")
    layer_names = {-1: f"last ({trace.n_layers})", 0: "0 (input: embedding + position)"}
    right.select_slider(
        "Contextual embedding after layer",
        options=list(range(-1, trace.n_layers + 1)),
        key="w_elayer",
        format_func=lambda layer: layer_names.get(layer, str(layer)),
    )
    target = st.session_state["w_target"].strip() or "bank"
    references = tuple(w.strip() for w in st.session_state["w_refs"].split(",") if w.strip())
    elayer = st.session_state["w_elayer"]
    projection = embedding_projection(trace, target, references, layer=None if elayer == -1 else elayer)

    for sentence in projection.missing:
        st.info(f"“{md(target)}” does not occur in sentence {sentence + 1}: {md(trace.texts[sentence][:80])}", icon="ℹ️")
    if not projection.arrows:
        st.warning(f"“{md(target)}” occurs in none of the sentences: type it in a sentence, or choose another word.")
    else:
        for figure_id, figure in embedding_figures(projection, view.model.name).items():
            show_figure(figure, figure_id)
        st.subheader("The cosine similarities behind the picture")
        st.caption("Each vector is centred on the mean of all tokens in its layer, as in the plot.")
        table = pd.DataFrame(projection.similarities)
        table["occurrence"] = table["sentence"].map(lambda i: f"{target} (s{i + 1})")
        table["layer"] = table["layer"].astype(str)
        wide = table.pivot_table(index=["layer", "occurrence"], columns="other", values="cosine", sort=False)
        st.dataframe(wide.round(3), width="stretch")
        st.download_button("Similarities as CSV", wide.to_csv().encode(), f"similarities-{target}.csv", "text/csv", on_click="ignore")

download_all("embeddings")
