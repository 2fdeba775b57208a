"""Training a toy model from the Train page: one training at a time per server, the others waiting in line
with their place and the real wait shown, each training bounded in CPU time; live progress."""

from __future__ import annotations

import functools
import itertools
import json
import os
import threading
import time

import pandas as pd
import streamlit as st

from model.adapters import ToyModel
from model.own_text import MAX_CHARS, OwnText, TextError, decode_upload, training_sentences
from model.toy import ToyConfig
from model.train import CHECKPOINT, TrainConfig, train, word_model_config
from ui.text import md
from viz.content.settings import SESSION_MODEL


MAX_STEPS = 3000  # the most steps the Train page offers; the CPU budget may stop a training sooner


@functools.cache
def shipped_training() -> dict:
    """The shipped toy model's training record (model/checkpoints/training.json: its losses, its settings),
    read once per process."""
    return json.loads((CHECKPOINT / "training.json").read_text(encoding="utf-8"))


def cpu_budget_s(environ=os.environ) -> float:
    """Seconds of one core a training may take (ATTENTION_VIZ_TRAIN_CPU_S, default 120): the server's
    other core stays for the class reading the other pages, and the next student in line waits at most that."""
    try:
        return max(1.0, float(environ.get("ATTENTION_VIZ_TRAIN_CPU_S", "120")))
    except ValueError:
        return 120.0


class TrainingQueue:
    """One training at a time per server; the others wait in line, in the order they asked. The training
    running says how far it is, so a student waiting sees their place and the wait (no Streamlit here)."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.lock = threading.Lock()
        self.line: list[int] = []  # tickets, the one training first
        self.tickets = itertools.count(1)
        self.started = self.done_share = 0.0

    def join(self) -> int:
        with self.lock:
            ticket = next(self.tickets)
            self.line.append(ticket)
            return ticket

    def place(self, ticket: int) -> int:
        """0: this ticket trains now; n: n trainings before it."""
        with self.lock:
            return self.line.index(ticket)

    def start(self) -> None:
        with self.lock:
            self.started, self.done_share = self.clock(), 0.0

    def progress(self, share: float) -> None:
        self.done_share = share

    def leave(self, ticket: int) -> None:
        with self.lock:
            if ticket in self.line:
                self.line.remove(ticket)

    def wait_s(self, ticket: int, budget_s: float) -> float:
        """Seconds until `ticket` trains, at most: what the running training has left (from its pace so far,
        at most its budget), then a whole budget for each one before this ticket."""
        with self.lock:
            before = self.line.index(ticket)
            elapsed = self.clock() - self.started
            share = self.done_share
        if before == 0:
            return 0.0
        left = budget_s if share <= 0 else min(budget_s, elapsed * (1 - share) / share)
        return max(0.0, min(left, max(0.0, budget_s - elapsed))) + (before - 1) * budget_s


@st.cache_resource
def training_queue() -> TrainingQueue:
    """The server's line of trainings, shared by every session."""
    return TrainingQueue()


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
    """Train with a live progress bar and loss curve; keep the model for this browser session (never shared).

    `own`: train on these sentences (their new words added to the vocabulary) instead of the app's.
    Waits in the server's line (`TrainingQueue`) while another session trains, and stops when the training
    has used `cpu_budget_s` of one core. Returns False (with a message on the page) when the sizes do not fit.
    """
    if d_model % n_heads:
        st.error(f"d_model ({d_model}) must be divisible by the number of heads ({n_heads}).")
        return False
    queue, budget = training_queue(), cpu_budget_s()
    ticket, waiting = queue.join(), st.empty()
    try:
        while (place := queue.place(ticket)) > 0:  # each redraw is where a page switch or a new click stops the wait
            waiting.info(
                f"The server trains one model at a time. You are number {place} in line; your training starts in about {queue.wait_s(ticket, budget):.0f} s.",
                icon="⏳",
            )
            time.sleep(0.5)
        waiting.empty()
        queue.start()
        cpu_start = time.thread_time()
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

        def on_step(step: int, loss: float) -> bool:
            losses_seen.append(loss)
            used = time.thread_time() - cpu_start
            queue.progress(max((step + 1) / steps, used / budget))
            if step % 10 == 0 or step == steps - 1:
                progress.progress((step + 1) / steps, text=f"step {step + 1} of {steps} · loss {loss:.3f}")
                loss_chart(losses_seen, chart)
            return used > budget  # the budget spent: stop here, with the model as it is

        module, losses = train(config, TrainConfig(steps=steps, seed=seed), on_step, texts=own.sentences if own is not None else None)
    finally:
        queue.leave(ticket)
    stopped = f" It stopped after {len(losses)} of {steps} steps: a training may use {budget:.0f} s of one core here." if len(losses) < steps else ""
    st.session_state["session_model"] = ToyModel(module, name=SESSION_MODEL)
    st.session_state["session_losses"] = losses
    st.session_state["session_trained_on"] = f"{len(own.sentences):,} of your sentences" if own is not None else "the app's sentences"
    st.session_state["session_trained_note"] = stopped
    return True


def trained_here() -> tuple[ToyModel, list[float], str, str] | None:
    """The model trained in this browser session, its losses, what it was trained on and a note (where it stopped
    early), or None."""
    if "session_losses" not in st.session_state:
        return None
    state = st.session_state
    return state["session_model"], state["session_losses"], state.get("session_trained_on", "the app's sentences"), state.get("session_trained_note", "")


def trained_message(model: ToyModel, losses: list[float], trained_on: str, note: str) -> str:
    """What the session's training did: the model's size, its steps, what it read, and its loss from the
    first step to the mean of the last 20."""
    last = losses[-20:]
    layers, heads = (f"{n} {word}{'' if n == 1 else 's'}" for n, word in ((model.n_layers, "layer"), (model.n_heads, "head")))
    return (
        f"Your model ({layers} × {heads}, d_model {model.d_model}) trained for "
        f"{len(losses)} steps on {trained_on}: loss {losses[0]:.2f} → {sum(last) / len(last):.2f}. "
        "It is now the model on every page (choose it again in the sidebar any time)." + note
    )
