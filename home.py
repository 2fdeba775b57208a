import streamlit as st

from ui import PAGES, page

context = page("Attention, step by step")
st.markdown(
    "Type sentences in the sidebar and follow them through a transformer, one step at a time. "
    "Every setting is in the page's address: copy the link to share this exact view. Every figure has PNG, "
    "SVG, HTML and CSV downloads for slides and handouts, and each page prints as a handout (the sidebar and buttons are left out). "
    "**Numbering:** sentences count from 1, as you read them; token positions, layers and heads count from 0, as in the code: "
    "layer 0 is the first layer, “after layer 0” is its output, and the model input comes before layer 0."
)
WHAT = {
    "pages/1_Tokens.py": "how the text is cut into pieces, and the id of each piece; four tokenizers side by side.",
    "pages/2_Positional_encoding.py": "how a model knows where a token stands: the sinusoidal waves, and similarity between positions.",
    "pages/3_Attention.py": "raw Q·Kᵀ scores, scaled by 1/√d_k, masked, turned into weights by the softmax; every head of every layer.",
    "pages/4_Embeddings.py": "how the vector of one word (say *bank*) changes with its sentence, layer by layer.",
    "pages/5_Next_token.py": "the model's prediction after any token: logits, temperature, probabilities.",
    "pages/6_Train.py": "train a toy model of your own size and watch its loss fall; every page then uses it.",
    "pages/7_Lessons.py": "one-click presets with an explanation and a question for the class.",
    "pages/8_Scaling_lab.py": "why divide by √d_k: random q and k of any size, the spread of q·k, one softmax row with and without the division.",
    "pages/9_Heads.py": "what every head does on your sentence: badges, rollout, what is really sent, knocking heads out, two sentences compared.",
    "pages/10_Generate.py": "the model writes, one token at a time: each pick, the new token's attention, the cache of keys and values growing.",
    "pages/11_Why.py": "why a head looks where it does: each score split into token, position and earlier layers, summing exactly to q·k.",
    "pages/12_Corpus.py": "one head over hundreds of sentences or your own text: its strongest weights, how often each badge holds; every head at once.",
}
for path, label, icon in PAGES[1:]:
    left, right = st.columns([2, 5], vertical_alignment="center")  # the longest name whole on a tablet
    left.page_link(path, label=label, icon=icon)
    right.markdown(WHAT[path])
trace = context.trace
st.caption(
    f"Model: {context.model.name} · {trace.n_layers} layers × {trace.n_heads} heads · d_head = {trace.d_head} · "
    f"{len(trace.texts)} sentence(s), {trace.input_ids.shape[1]} positions."
)
