import numpy as np
import pandas as pd
import streamlit as st

from ui.text import md
from ui import download_all, guarded, page, show_figure
from ui.settings import TEMPERATURE_RANGE
from viz.labels import safe_label
from viz.prediction import last_row_figure, next_token_figure
from viz.views import sentence_labels

view = page("Next token", ":material/keyboard_double_arrow_right:")
trace, s, model = view.trace, view.settings, view.model
st.markdown(
    "A language model reads the sentence and, at its **last** token, predicts the token that comes next. "
    "The hidden state of that position goes through a final LayerNorm and one linear layer (the "
    "*unembedding*), giving one score (**logit**) per word of the vocabulary; the softmax turns the "
    "logits into probabilities. The **temperature** divides the logits first."
)
st.latex(r"z = W_U \,\mathrm{LayerNorm}(h_{\text{last}}) + b \qquad p_i = \frac{e^{z_i / T}}{\sum_j e^{z_j / T}}")

with guarded():
    if trace.last_logits is None:
        st.info(
            f"{md(model.name)} has no language-model head here: the next-token view needs the toy model "
            "(trained or with random weights).",
            icon="ℹ️",
        )
        st.stop()
    if not model.causal:
        st.warning("This toy model is bidirectional: it was trained to fill in hidden words, so its "
                   "prediction after the last token sees no future to forbid; read it with care.")
    left, right = st.columns(2)
    left.slider("Sampling temperature T", *TEMPERATURE_RANGE, key="w_ntemp", step=0.05)
    right.slider("How many tokens to list", 1, 50, key="w_topk")
    temperature, k = st.session_state["w_ntemp"], st.session_state["w_topk"]
    prediction = trace.next_token(s.sent, model.tokenizer.id_to_text, temperature=temperature, k=k)
    last = trace.tokens[s.sent][-1].text
    show_figure(
        next_token_figure(
            prediction["tokens"],
            prediction["probabilities"],
            title=f"After “{safe_label(trace.texts[s.sent][-50:])}” ({safe_label(model.name)}, T = {temperature:g}): the {k} most likely next tokens",
        ),
        "next-token",
    )
    st.caption(
        f"Entropy of the whole distribution: {prediction['entropy']:.2f} bits "
        f"(uniform over {model.tokenizer.d_vocab} tokens would be {np.log2(model.tokenizer.d_vocab):.2f})."
    )
    st.dataframe(
        pd.DataFrame(
            dict(
                token=prediction["tokens"],
                id=prediction["ids"],
                logit=np.round(prediction["logits"], 4),
                **{"logit / T": np.round(np.array(prediction["logits"]) / temperature, 4)},
                probability=np.round(prediction["probabilities"], 4),
            )
        ),
        hide_index=True,
        width="stretch",
    )

    st.subheader(f"What “{md(last)}” attended to")
    st.markdown("The last row of every head's pattern: the mix of earlier tokens that fed this prediction.")
    labels = sentence_labels(trace, s.sent)[: len(trace.tokens[s.sent])]
    position = len(labels) - 1
    rows = np.concatenate([trace.stages(layer).pattern[s.sent, :, position, : len(labels)].numpy() for layer in range(trace.n_layers)])
    names = [f"L{layer} H{head}" for layer in range(trace.n_layers) for head in range(trace.n_heads)]
    show_figure(last_row_figure(rows, labels, names, title=f"Attention of the last token “{safe_label(last)}”, every head"), "last-token-attention")
    st.page_link("pages/3_Attention.py", label="Open the full attention of this sentence", icon=":material/grid_on:")

download_all("next-token")
