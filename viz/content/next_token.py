"""The Next token page: final LayerNorm → logits → softmax(logits / T), and what the chosen token attended to."""

from __future__ import annotations

import numpy as np
import pandas as pd

from viz.content.common import last_word, sentence_labels
from viz.content import figure_tables as tables
from viz.content.page import PageContent
from viz.labels import safe_label
from viz.prediction import last_row_figure, next_token_figure


def prediction_position(settings, trace) -> int:
    """The position the page predicts at: the setting, or the sentence's last word (-1 or out of range)."""
    tokens = trace.tokens[settings.sentence]
    return settings.position if 0 <= settings.position < len(tokens) else last_word(tokens)


def next_token_page(settings, trace, model) -> PageContent:
    """Figures `next-token` and `last-token-attention` (the attention of the chosen position), table
    `predictions`, values `entropy`, `uniform_entropy` (bits), `position`, `token`, `head`. A model
    without a language-model head gives the notice `no-lm-head` only.

    A next-token head (the toy, SmolLM2, GPT-2 and Llama checkpoints) predicts after every token in
    one pass, so any position can be shown; a masked-word head (a BERT checkpoint with one) says which
    token it expects at the position."""
    content = PageContent()
    if trace.logits is None and trace.last_logits is None:
        content.notice(
            "no-lm-head",
            f"{model.name} has no language-model head here. Predictions need a model with one: the toy model, SmolLM2, "
            "a GPT-2 or Llama checkpoint with its head, or a BERT checkpoint with its masked-word head.",
        )
        return content
    if model.is_toy and not model.causal:
        content.notice(
            "bidirectional",
            "This toy model is bidirectional: it was trained to fill in hidden words, so its prediction after the last "
            "token sees no future to forbid; read it with care.",
            "warning",
        )
    b, temperature, k = settings.sentence, settings.sampling_temperature, settings.top_k
    position = prediction_position(settings, trace)
    labels = sentence_labels(trace, b)[: len(trace.tokens[b])]
    masked_head = trace.lm_head == "masked" and not model.is_toy
    prediction = trace.prediction(b, position, model.tokenizer.id_to_text, temperature=temperature, k=k)
    if masked_head:
        heading = f"At position {position} (“{safe_label(labels[position])}”), the masked-word head of {safe_label(model.name)} (T = {temperature:g})"
        content.notice(
            "masked-head", "A masked-word head says which token it expects at a position (it reads both sides); it is made for [MASK] tokens.", "caption"
        )
    else:
        shown = safe_label(trace.texts[b][: trace.tokens[b][position].end][-50:]) if trace.tokens[b][position].end else safe_label(labels[position])
        heading = f"After “{shown}” ({safe_label(model.name)}, T = {temperature:g})"
    content.figures["next-token"] = next_token_figure(
        prediction["tokens"], prediction["probabilities"], title=f"{heading}: the {k} most likely {'tokens' if masked_head else 'next tokens'}"
    )
    content.figure_tables["next-token"] = lambda: tables.prediction_table(prediction)
    content.tables["predictions"] = pd.DataFrame(
        {
            "token": prediction["tokens"],
            "id": prediction["ids"],
            "logit": np.round(prediction["logits"], 4),
            "logit / T": np.round(np.array(prediction["logits"]) / temperature, 4),
            "probability": np.round(prediction["probabilities"], 4),
        }
    )
    d_vocab = model.tokenizer.d_vocab
    content.values.update(
        entropy=prediction["entropy"], uniform_entropy=float(np.log2(d_vocab)), d_vocab=d_vocab, position=position, head="masked" if masked_head else "next"
    )

    rows = np.concatenate([trace.pattern(layer, b)[:, position, : len(labels)].numpy() for layer in range(trace.n_layers)])
    names = [f"L{layer} H{head}" for layer in range(trace.n_layers) for head in range(trace.n_heads)]
    token = labels[position]
    title = f"Attention of “{safe_label(token)}” (position {position}), every head"
    content.figures["last-token-attention"] = last_row_figure(rows, labels, names, title=title)
    content.figure_tables["last-token-attention"] = lambda: tables.query_row_table(rows, trace.n_heads, position, labels)
    content.values.update(last_token=token, token=token, labels=labels)
    return content
