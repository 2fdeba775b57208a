"""Training a toy model from the Train page: one training at a time per server, live progress."""

from __future__ import annotations

import threading

import pandas as pd
import streamlit as st

from model.adapters import ToyModel
from model.own_text import MAX_CHARS, OwnText, TextError, decode_upload, training_sentences
from model.toy import ToyConfig
from model.train import TrainConfig, train, word_model_config
from ui.text import md
from viz.content.settings import SESSION_MODEL


@st.cache_resource
def training_slot() -> threading.Semaphore:
    """One training at a time per server, so a class training at once does not starve everyone else."""
    return threading.Semaphore(1)


def loss_chart(losses: list[float], where=st) -> None:
    where.line_chart(pd.DataFrame({"loss": losses}), x_label="step", y_label="loss (nats)")


def own_text_box() -> OwnText | None:
    """Pasted text or an uploaded .txt file, checked: the sentences to train on, or None (with the
    reason on the page)."""
    st.text_area(
        "Your sentences",
        key="own_text",
        height=160,
        placeholder="Paste a text: sentences end at a line break or after . ! ?",
        help=f"Up to {MAX_CHARS:,} characters. Words the toy model does not know are added to its vocabulary.",
    )
    upload = st.file_uploader("… or upload a .txt file", type=["txt"], key="own_file", help=f"Plain text in UTF-8, up to {MAX_CHARS:,} characters.")
    try:
        if upload is not None:
            text = decode_upload(upload.getvalue(), f"“{upload.name}”")
            source = f"the file “{upload.name}”" + (" (the pasted text is not used)" if st.session_state.get("own_text", "").strip() else "")
        else:
            text, source = st.session_state.get("own_text", ""), "the pasted text"
        own = training_sentences(text, word_model_config().vocabulary)
    except TextError as error:
        st.warning(md(error), icon="✍️")
        return None
    examples = ", ".join(own.new_words[:8]) + (", …" if len(own.new_words) > 8 else "")
    new = f"{len(own.new_words):,} new word{'s' * (len(own.new_words) != 1)}" + (f" ({examples})" if own.new_words else "")
    st.caption(md(f"From {source}: {len(own.sentences):,} training sentences, {own.n_chars:,} characters, {new}. " + " ".join(own.notices)))
    with st.expander("The training sentences"):
        st.dataframe(pd.DataFrame({"sentence": own.sentences}), height=200, width="stretch")
    return own


def train_here(n_layers: int, n_heads: int, d_model: int, pe_base: int, causal: bool, steps: int, seed: int, own: OwnText | None = None) -> bool:
    """Train with a live progress bar and loss curve; keep the model for this session (never shared).

    `own`: train on these sentences (their new words added to the vocabulary) instead of the app's.
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
            tokenizer="word",  # the readable word-level toy: your own text adds its words to its vocabulary
            vocabulary=word_model_config().vocabulary + (own.new_words if own is not None else []),
        )
        progress = st.progress(0.0, text="starting…")
        chart = st.empty()
        losses_seen: list[float] = []

        def on_step(step: int, loss: float) -> None:
            losses_seen.append(loss)
            if step % 10 == 0 or step == steps - 1:
                progress.progress((step + 1) / steps, text=f"step {step + 1} of {steps} · loss {loss:.3f}")
                loss_chart(losses_seen, chart)

        module, losses = train(config, TrainConfig(steps=steps, seed=seed), on_step, texts=own.sentences if own is not None else None)
    finally:
        slot.release()
    st.session_state["session_model"] = ToyModel(module, name=SESSION_MODEL)
    st.session_state["session_losses"] = losses
    st.session_state["session_trained_on"] = f"{len(own.sentences):,} of your sentences" if own is not None else "the app's sentences"
    return True


def trained_here() -> tuple[ToyModel, list[float], str] | None:
    """The model trained in this session, its losses and what it was trained on, or None."""
    if "session_losses" not in st.session_state:
        return None
    return st.session_state["session_model"], st.session_state["session_losses"], st.session_state.get("session_trained_on", "the app's sentences")
