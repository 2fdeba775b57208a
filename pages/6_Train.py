from dataclasses import replace

import streamlit as st

from ui import apply_settings, page
from ui.training import MAX_STEPS, cpu_budget_s, loss_chart, own_text_box, shipped_training, train_here, trained_here, trained_message
from viz.content.settings import PE_BASES, SESSION_MODEL

context = page("Train")
st.markdown(
    "The toy model shipped with this app was trained for a minute on sentences the app writes itself: "
    "*bank* by a river and at a counter, *bat* in a cave and in a game, *fair*, *light*. Train one "
    "yourself, on those sentences or on your own text: choose its size, watch the loss (how surprised it "
    "is by the next word) fall, then look at it on every other page. It stays yours while this browser tab is open. "
    f"The server trains one model at a time, each for at most {cpu_budget_s():.0f} s of one core; "
    "if someone else is training, you wait in line and see your place."
)

shipped = shipped_training()
with st.expander("How the shipped model learned"):
    loss_chart(shipped["task_losses"])
    st.caption(
        f"Its next-word loss. It also learned a sense contrast (weight {shipped['train']['sense_weight']:g}), which gathers the "
        "vectors of bank, bat, fair, light, match and spring by the sense each sentence gives them; a model you train "
        "here learns without it."
    )

source = st.radio("Train on", ["the app's sentences", "my own text"], horizontal=True, key="train_source")
own = own_text_box() if source == "my own text" else None

with st.form("train"):
    columns = st.columns(4)
    n_layers = columns[0].selectbox("Layers", [1, 2, 3, 4], index=1)
    n_heads = columns[1].selectbox("Heads", [1, 2, 4, 8], index=2)
    d_model = columns[2].selectbox("d_model", [16, 32, 64, 128], index=2)
    pe_base = columns[3].selectbox("PE base", PE_BASES, index=len(PE_BASES) - 1)
    columns = st.columns(4)
    causal = columns[0].radio("Objective", ["next word (causal)", "hidden word (bidirectional)"]) == "next word (causal)"
    steps = columns[1].number_input("Steps", 20, MAX_STEPS, 600, step=50)
    seed = columns[2].number_input("Seed", 0, 10_000, 0)
    unusable = source == "my own text" and own is None
    start = st.form_submit_button("Train", type="primary", disabled=unusable, help="First give a text with usable sentences" if unusable else None)

if start and train_here(n_layers, n_heads, d_model, pe_base, causal, int(steps), int(seed), own):
    apply_settings(replace(context.settings, model=SESSION_MODEL, layer=0, heads=(0,)))
    st.rerun()

if (done := trained_here()) is not None:
    st.success(trained_message(*done), icon="✅")
    loss_chart(done[1])
