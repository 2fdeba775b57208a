"""The Next token page: final LayerNorm → logits → softmax(logits / T), and what the last token attended to."""

from __future__ import annotations

import numpy as np
import pandas as pd

from viz.content.common import sentence_labels
from viz.content.page import PageContent
from viz.labels import safe_label
from viz.prediction import last_row_figure, next_token_figure


def next_token_page(settings, trace, model) -> PageContent:
    """Figures `next-token` and `last-token-attention`, table `predictions`, values `entropy` and
    `uniform_entropy` (bits). A model without a language-model head gives the notice `no-lm-head` only."""
    content = PageContent()
    if trace.last_logits is None:
        content.notice(
            "no-lm-head",
            f"{model.name} has no language-model head here: the next-token view needs the toy model (trained or with random weights).",
        )
        return content
    if not model.causal:
        content.notice(
            "bidirectional",
            "This toy model is bidirectional: it was trained to fill in hidden words, so its prediction after the last "
            "token sees no future to forbid; read it with care.",
            "warning",
        )
    b, temperature, k = settings.sentence, settings.sampling_temperature, settings.top_k
    prediction = trace.next_token(b, model.tokenizer.id_to_text, temperature=temperature, k=k)
    content.figures["next-token"] = next_token_figure(
        prediction["tokens"],
        prediction["probabilities"],
        title=f"After “{safe_label(trace.texts[b][-50:])}” ({safe_label(model.name)}, T = {temperature:g}): the {k} most likely next tokens",
    )
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
    content.values.update(entropy=prediction["entropy"], uniform_entropy=float(np.log2(d_vocab)), d_vocab=d_vocab)

    labels = sentence_labels(trace, b)[: len(trace.tokens[b])]
    last = labels[-1]
    position = len(labels) - 1
    rows = np.concatenate([trace.stages(layer).pattern[b, :, position, : len(labels)].numpy() for layer in range(trace.n_layers)])
    names = [f"L{layer} H{head}" for layer in range(trace.n_layers) for head in range(trace.n_heads)]
    content.figures["last-token-attention"] = last_row_figure(rows, labels, names, title=f"Attention of the last token “{safe_label(last)}”, every head")
    content.values["last_token"] = last
    return content
