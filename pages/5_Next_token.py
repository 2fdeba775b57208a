import streamlit as st

from ui import ATTENTION, FIGURES, SENTENCE, download_all, guarded, key, md, page, show, show_notices, show_table
from viz.content import next_token_page
from viz.content.settings import temperature_options

context = page("Next token", ":material/keyboard_double_arrow_right:", (SENTENCE, ATTENTION, FIGURES))
st.markdown(
    "A language model reads the sentence and, at its **last** token, predicts the token that comes next. "
    "The hidden state of that position goes through a final LayerNorm and one linear layer (the "
    "*unembedding*), giving one score (**logit**) per word of the vocabulary; the softmax turns the "
    "logits into probabilities. The **temperature** divides the logits first."
)
st.latex(r"z = W_U \,\mathrm{LayerNorm}(h_{\text{last}}) + b \qquad p_i = \frac{e^{z_i / T}}{\sum_j e^{z_j / T}}")

with guarded():
    if context.trace.last_logits is not None:
        left, right = st.columns(2)
        options = temperature_options(context.settings.sampling_temperature)
        left.select_slider("Sampling temperature T (log scale)", options, key=key("sampling_temperature"), format_func=lambda t: f"{t:g}")
        right.slider("How many tokens to list", 1, 50, key=key("top_k"))
    content = next_token_page(context.settings, context.trace, context.model)
    show_notices(content)
    if "next-token" in content.figures:
        show(content, "next-token")
        v = content.values
        st.caption(f"Entropy of the whole distribution: {v['entropy']:.2f} bits (uniform over {v['d_vocab']} tokens would be {v['uniform_entropy']:.2f}).")
        show_table(content, "predictions")
        st.subheader(f"What “{md(v['last_token'])}” attended to")
        st.markdown("The last row of every head's pattern: the mix of earlier tokens that fed this prediction.")
        show(content, "last-token-attention")
        st.page_link("pages/3_Attention.py", label="Open the full attention of this sentence", icon=":material/grid_on:")

download_all("next-token")
