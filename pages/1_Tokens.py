import streamlit as st

from ui import FIGURES, SENTENCE, download_all, guarded, md, page, page_content, show, show_notices, show_table
from viz.content import tokens_page

context = page("Tokens", (SENTENCE, FIGURES))
st.markdown(
    "A model never sees letters: the text is first cut into **tokens**, and each token becomes an integer "
    "**id**, a row number in the model's embedding table. Whole words, single characters or pieces of words "
    "(sub-words) are all possible; each choice trades vocabulary size against sequence length. "
    "Marked in colour: special tokens the model adds, unknown tokens (`[UNK]`), and sub-word pieces."
)

with guarded():
    content = page_content(tokens_page, context.settings, context.trace, model=context.model)
    st.subheader(f"What {md(context.model.name)} reads")
    for index in range(len(context.trace.texts)):
        show(content, f"tokens-s{index + 1}")
        with st.expander(f"Token ids of sentence {index + 1}"):
            show_table(content, f"token-ids-s{index + 1}")

    st.subheader("The same sentence, four ways")
    show_notices(content)
    show_table(content, "tokenizer-summary")
    compared = content.values["compared"]
    for tab, name in zip(st.tabs(list(compared.values())), compared):
        with tab:
            show(content, f"tokens-compare-{name}")

download_all("tokens")
