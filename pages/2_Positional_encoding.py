import streamlit as st

from model import cosine_similarity_matrix, similarity_by_distance, sinusoidal_positional_encoding
from ui.text import md
from ui import download_all, guarded, page, show_figure
from ui.settings import PE_BASES, PE_LIMIT
from viz import input_composition_figure, similarity_by_distance_figure
from viz.labels import safe_label
from viz.views import COMPOSITION_TOKENS, positional_figures, sentence_labels, similarity_figure

view = page("Positional encoding", ":material/pin_drop:")
st.markdown(
    "Attention by itself cannot tell *the dog bit the man* from *the man bit the dog*: it compares every "
    "token with every other, whatever their order. So a vector that depends only on the position is added "
    "to each token's embedding. The original transformer uses waves of different wavelengths:"
)
st.latex(r"PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{base^{2i/d_{model}}}\right),\qquad PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{base^{2i/d_{model}}}\right)")

with guarded():
    columns = st.columns(3)
    columns[0].slider("Positions", 2, PE_LIMIT, key="w_pe_n")
    columns[1].slider("d_model", 2, PE_LIMIT, key="w_pe_d")
    columns[2].select_slider("base", PE_BASES, key="w_pe_base")
    n, d, base = st.session_state["w_pe_n"], st.session_state["w_pe_d"], st.session_state["w_pe_base"]
    pe = sinusoidal_positional_encoding(n, d, float(base))
    similarity = cosine_similarity_matrix(pe)
    distances, means = similarity_by_distance(similarity)
    default_dims = list(dict.fromkeys(dim for dim in (0, 1, d // 2, d - 2) if 0 <= dim < d))
    dims = st.multiselect("Dimensions to plot", list(range(d)), default=default_dims, key="w_pe_dims")
    figures = positional_figures(pe.numpy(), similarity.numpy(), distances.numpy(), means.numpy(), base, dims)
    show_figure(figures["pe-matrix"], "pe-matrix")
    show_figure(figures["pe-curves"], "pe-curves")

    st.subheader("How alike are two positions?")
    st.markdown(
        "The cosine similarity of two position vectors depends mostly on how far apart they are, "
        "not on where they are: nearby positions look alike, and that is what lets attention learn relative order."
    )
    model = view.model
    left, right = st.columns(2)
    with left:
        show_figure(figures["pe-similarity"], "pe-similarity")
    with right:
        show_figure(figures["pe-similarity-by-distance"], "pe-similarity-by-distance")
    if not model.is_toy:
        st.markdown(f"{md(model.name)} **learns** its position vectors instead. Their similarity, beside the sinusoidal one:")
        learned_similarity = cosine_similarity_matrix(model.position_matrix(n))
        learned_distances, learned_means = similarity_by_distance(learned_similarity)
        left, right = st.columns(2)
        with left:
            show_figure(
                similarity_figure(learned_similarity.numpy(), f"{safe_label(model.name)}: learned position embeddings"),
                "learned-position-similarity",
            )
        with right:
            show_figure(
                similarity_by_distance_figure(
                    distances.numpy(), means.numpy(), label=f"sinusoidal, base {base}",
                    series={f"{model.name}: learned": (learned_distances.numpy(), learned_means.numpy())},
                ),
                "learned-vs-sinusoidal-by-distance",
            )

    trace, s = view.trace, view.settings
    st.subheader("Token embedding + position = what the first layer reads")
    count = min(len(trace.tokens[s.sent]), COMPOSITION_TOKENS)
    labels = sentence_labels(trace, s.sent)[:count]
    if len(trace.tokens[s.sent]) > count:
        st.caption(f"The first {count} tokens of {len(trace.tokens[s.sent])}.")
    if model.is_toy:
        st.markdown(f"For the toy model (d_model = {model.d_model}, base {model.module.config.pe_base:g}), sentence {s.sent + 1}:")
    else:
        st.markdown(f"{md(model.name)} learns its position vectors instead of computing them; sentence {s.sent + 1}:")
    show_figure(
        input_composition_figure(trace.static_embeddings[s.sent, :count].numpy(), trace.positional[:count].numpy(), labels),
        "input-composition",
    )

download_all("positional-encoding")
