"""Training a toy model from the Train page: one training at a time per server, live progress."""

from __future__ import annotations

import threading

import pandas as pd
import streamlit as st

from model.toy import ToyConfig
from model.adapters import ToyModel
from model.train import TrainConfig, default_model_config, train
from viz.content.settings import SESSION_MODEL


@st.cache_resource
def training_slot() -> threading.Semaphore:
    """One training at a time per server, so a class training at once does not starve everyone else."""
    return threading.Semaphore(1)


def loss_chart(losses: list[float], where=st) -> None:
    where.line_chart(pd.DataFrame({"loss": losses}), x_label="step", y_label="loss (nats)")


def train_here(n_layers: int, n_heads: int, d_model: int, pe_base: int, causal: bool, steps: int, seed: int) -> bool:
    """Train with a live progress bar and loss curve; keep the model for this session.

    Returns False (with a message on the page) when the sizes do not fit or someone else is training.
    """
    if d_model % n_heads:
        st.error(f"d_model ({d_model}) must be divisible by the number of heads ({n_heads}).")
        return False
    slot = training_slot()
    if not slot.acquire(blocking=False):
        st.warning("Someone else on this server is training right now; try again in a minute.")
        return False
    try:
        config = ToyConfig(
            n_layers=n_layers,
            n_heads=n_heads,
            d_model=d_model,
            d_mlp=4 * d_model,
            pe_base=float(pe_base),
            causal=causal,
            seed=seed,
            vocabulary=default_model_config().vocabulary,
        )
        progress = st.progress(0.0, text="starting…")
        chart = st.empty()
        losses_seen: list[float] = []

        def on_step(step: int, loss: float) -> None:
            losses_seen.append(loss)
            if step % 10 == 0 or step == steps - 1:
                progress.progress((step + 1) / steps, text=f"step {step + 1} of {steps} · loss {loss:.3f}")
                loss_chart(losses_seen, chart)

        module, losses = train(config, TrainConfig(steps=steps, seed=seed), on_step)
    finally:
        slot.release()
    st.session_state["session_model"] = ToyModel(module, name=SESSION_MODEL)
    st.session_state["session_losses"] = losses
    return True


def trained_here() -> tuple[ToyModel, list[float]] | None:
    """The model trained in this session and its losses, or None."""
    if "session_losses" not in st.session_state:
        return None
    return st.session_state["session_model"], st.session_state["session_losses"]
