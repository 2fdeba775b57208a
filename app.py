import streamlit as st

from ui import page

context = page("Attention, step by step", ":material/home:")
st.markdown(
    """
Type sentences in the sidebar and follow them through a transformer, one step at a time:

- **Tokens**: how the text is cut into pieces, and the id of each piece.
- **Positional encoding**: how a model knows where a token stands.
- **Attention**: raw Q·Kᵀ scores, scaled by 1/√d_k, masked, turned into weights by the softmax.
- **Embeddings**: how the vector of one word (say *bank*) changes with its sentence, layer by layer.

**Numbering.** Sentences count from 1, as you read them. Token positions, layers and heads count from 0,
as in the code: layer 0 is the first layer, “after layer 0” is its output, and the model input comes
before layer 0.

Every control lives in the sidebar and in the page's address: copy the link to share this exact view.
Every figure has PNG, SVG, HTML and CSV downloads for slides and handouts.
"""
)
st.page_link("pages/1_Tokens.py", label="Start with the tokens", icon=":material/arrow_forward:")
trace = context.trace
st.caption(
    f"Model: {context.model.name} · {trace.n_layers} layers × {trace.n_heads} heads · d_head = {trace.d_head} · "
    f"{len(trace.texts)} sentence(s), {trace.input_ids.shape[1]} positions."
)
