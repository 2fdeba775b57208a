import json
import threading
from dataclasses import replace

import pandas as pd
import streamlit as st

from model.toy import ToyConfig
from model.adapters import ToyModel
from model.train import CHECKPOINT, TrainConfig, default_model_config, train
from ui import page
from ui.settings import PE_BASES, SESSION_MODEL
from ui.view import apply_settings

MAX_STEPS = 3000


@st.cache_resource
def training_slot() -> threading.Semaphore:
    """One training at a time per server, so a class training at once does not starve everyone else."""
    return threading.Semaphore(1)


view = page("Train", ":material/model_training:")
st.markdown(
    "The toy model shipped with this app was trained for a minute on sentences the app writes itself: "
    "*bank* by a river and at a counter, *bat* in a cave and in a game, *fair*, *light*. Train one "
    "yourself: choose its size, watch the loss (how surprised it is by the next word) fall, then look at "
    "it on every other page. It stays yours for this session."
)

shipped = json.loads((CHECKPOINT / "training.json").read_text())
with st.expander("How the shipped model learned"):
    st.line_chart(pd.DataFrame({"loss": shipped["losses"]}), x_label="step", y_label="loss (nats)")

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
    start = st.form_submit_button("Train", type="primary")

if start:
    if d_model % n_heads:
        st.error(f"d_model ({d_model}) must be divisible by the number of heads ({n_heads}).")
        st.stop()
    slot = training_slot()
    if not slot.acquire(blocking=False):
        st.warning("Someone else on this server is training right now; try again in a minute.")
        st.stop()
    try:
        config = ToyConfig(
            n_layers=n_layers, n_heads=n_heads, d_model=d_model, d_mlp=4 * d_model, pe_base=float(pe_base),
            causal=causal, seed=int(seed), vocabulary=default_model_config().vocabulary,
        )
        progress = st.progress(0.0, text="starting…")
        chart = st.empty()
        losses_seen: list[float] = []

        def on_step(step: int, loss: float) -> None:
            losses_seen.append(loss)
            if step % 10 == 0 or step == steps - 1:
                progress.progress((step + 1) / steps, text=f"step {step + 1} of {steps} · loss {loss:.3f}")
                chart.line_chart(pd.DataFrame({"loss": losses_seen}), x_label="step", y_label="loss (nats)")

        module, losses = train(config, TrainConfig(steps=int(steps), seed=int(seed)), on_step)
    finally:
        slot.release()
    st.session_state["session_model"] = ToyModel(module, name=SESSION_MODEL)
    st.session_state["session_losses"] = losses
    apply_settings(replace(view.settings, model=SESSION_MODEL, layer=0, heads=[0]))
    st.rerun()

if "session_losses" in st.session_state:
    losses = st.session_state["session_losses"]
    model = st.session_state["session_model"]
    st.success(
        f"Your model ({model.n_layers} layers × {model.n_heads} heads, d_model {model.d_model}) trained for "
        f"{len(losses)} steps: loss {losses[0]:.2f} → {sum(losses[-20:]) / min(20, len(losses)):.2f}. "
        "It is now the model on every page (choose it again in the sidebar any time).",
        icon="✅",
    )
    st.line_chart(pd.DataFrame({"loss": losses}), x_label="step", y_label="loss (nats)")
