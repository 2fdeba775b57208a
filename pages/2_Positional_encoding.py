import streamlit as st

from ui import FIGURES, SENTENCE, download_all, formulas, guarded, key, md, page, show, show_notices
from viz.content import positional_page
from viz.content.positional import default_dimensions
from viz.content.settings import PE_BASES, PE_LIMIT

context = page("Positional encoding", (SENTENCE, FIGURES))
s, model = context.settings, context.model
st.markdown(
    "Attention by itself cannot tell *the dog bit the man* from *the man bit the dog*: it compares every "
    "token with every other, whatever their order. So a vector that depends only on the position is added "
    "to each token's embedding. The original transformer uses waves of different wavelengths:"
)
formulas(
    r"PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{base^{2i/d_{model}}}\right)",
    r"PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{base^{2i/d_{model}}}\right)",
    key="av_formulas_pe",
)

with guarded():
    columns = st.columns(3)
    columns[0].slider("Positions", 2, PE_LIMIT, key=key("pe_positions"))
    columns[1].slider("d_model", 2, PE_LIMIT, key=key("pe_d_model"))
    columns[2].select_slider("base", PE_BASES, key=key("pe_base"))
    d = s.pe_d_model
    dims = st.multiselect("Dimensions to plot", list(range(d)), default=default_dimensions(d), key="w_pe_dims")
    content = positional_page(s, context.trace, model, dimensions=dims)
    show(content, "pe-matrix")
    show(content, "pe-curves")

    st.subheader("How alike are two positions?")
    st.markdown(
        "The cosine similarity of two position vectors depends mostly on how far apart they are, "
        "not on where they are: nearby positions look alike, and that is what lets attention learn relative order."
    )
    left, right = st.columns(2)
    with left:
        show(content, "pe-similarity")
    with right:
        show(content, "pe-similarity-by-distance")
    if "learned-position-similarity" in content.figures:
        st.markdown(f"{md(model.name)} **learns** its position vectors instead. Their similarity, beside the sinusoidal one:")
        left, right = st.columns(2)
        with left:
            show(content, "learned-position-similarity")
        with right:
            show(content, "learned-vs-sinusoidal-by-distance")
    if "rotary-angles" in content.figures:
        st.subheader("Rotary position embeddings: position as a rotation of q and k")
        v = content.values
        st.markdown(
            f"{md(model.name)} adds nothing to the token for its position. Inside every attention layer it rotates each of the "
            f"{v['rotary_pairs']} dimension pairs of q and k by the angle position × θᵢ, from a full turn every "
            f"{v['fastest_turn']:.1f} positions to one every {v['slowest_turn']:,.0f}. Rotating q by its position m and k by n "
            "leaves q·k depending on m − n only:"
        )
        formulas(r"\theta_i = base^{-2i/d_{head}}", r"(R_m q)\cdot(R_n k) = q \cdot R_{n-m}\, k", key="av_formulas_rotary")
        left, right = st.columns(2)
        with left:
            show(content, "rotary-angles")
        with right:
            show(content, "rotary-by-distance")

    st.subheader("What the first layer reads")
    show_notices(content, "composition-cut")
    v = content.values
    st.markdown(f"{md(model.name)}: **{md(v['input_recipe'])}**, sentence {s.sentence + 1}.")
    show(content, "input-composition")
    if v["plain_sum_difference"] > 1e-4:
        st.caption(f"Token + position alone differs from what the first layer reads by up to {v['plain_sum_difference']:.2f}.")

download_all("positional-encoding")
