import streamlit as st

from ui import ATTENTION, FIGURES, SENTENCE, guarded, key, md, page, page_content, show, show_notices, show_table
from viz.content import last_word, next_token_page
from viz.content.settings import temperature_options


def body(context):
    with guarded():
        trace = context.trace
        if trace.logits is not None or trace.last_logits is not None:
            tokens = [t.text for t in trace.tokens[context.settings.sentence]]
            word = last_word(trace.tokens[context.settings.sentence])
            st.selectbox(
                "Predict after the token at position",
                [-1, *range(len(tokens))],
                key=key("position"),
                format_func=lambda p: f"{word}: {tokens[word]} (the last word)" if p == -1 else f"{p}: {tokens[p]}",
            )
            left, right = st.columns(2)
            options = temperature_options(context.settings.sampling_temperature)
            left.select_slider("Sampling temperature T (log scale)", options, key=key("sampling_temperature"), format_func=lambda t: f"{t:g}")
            right.slider("How many tokens to list", 1, 50, key=key("top_k"))
        content = page_content(next_token_page, context.settings, trace, model=context.model)
        show_notices(content)
        if "next-token" in content.figures:
            show(content, "next-token")
            v = content.values
            st.caption(f"Entropy of the whole distribution: {v['entropy']:.2f} bits (uniform over {v['d_vocab']} tokens would be {v['uniform_entropy']:.2f}).")
            show_table(content, "predictions")
            st.subheader(f"What “{md(v['token'])}” attended to")
            st.markdown("This token's row of every head's pattern: the mix of tokens that fed this prediction.")
            show(content, "last-token-attention")
            st.page_link("pages/3_Attention.py", label="Open the full attention of this sentence", icon=":material/grid_on:")


INTRO = (
    "A language model reads the sentence and, at **every** token, predicts the token that comes next (a causal "
    "model does it for all positions in one pass). The hidden state of a position goes through a final norm and "
    "one linear layer (the *unembedding*), giving one score (**logit**) per word of the vocabulary; the softmax "
    "turns the logits into probabilities. The **temperature** divides the logits first.\n\n"
    r"$$\displaystyle z = W_U \,\mathrm{norm}(h_{\text{position}}) + b$$"
    "\n\n"
    r"$$\displaystyle p_i = \frac{e^{z_i / T}}{\sum_j e^{z_j / T}}$$"
)
page("Next token", (SENTENCE, ATTENTION, FIGURES), body, INTRO)
