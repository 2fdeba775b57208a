"""Static versus contextual embeddings of one word, projected to 2-D.

The static embedding of "bank" is one row of the embedding table: the same in every sentence. Its
contextual embedding is the hidden state at "bank" after some layers, which depends on the words
around it. To draw both on one plane they must first be made comparable: each space (the embedding
table, the output of each layer) is centred on the mean of all the tokens of the batch in that space,
and every vector scaled to length 1. One PCA is then fitted on all of them together.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from model.trace import Trace

STATIC = None  # the "layer" of the static embeddings in `Trace.word_vectors`


@dataclass
class Projection:
    target: str
    layer: int  # the layer whose contextual embeddings are drawn
    points: list[dict]  # {label, group, sentence, layer, x, y}; group: static, contextual, reference
    arrows: list[dict]  # {x0, y0, x1, y1, label}: static point → contextual point
    tracks: dict[str, list[tuple[float, float]]]  # "bank (s1)" → static point, then the input and each layer
    similarities: list[dict]  # {layer, sentence, word, other, cosine}
    missing: list[int]  # sentences (0-based) in which the target does not occur
    explained_variance: tuple[float, float]  # share of variance along PC 1 and PC 2


def _normalised(vectors: Tensor, space: Tensor) -> Tensor:
    """Centre `vectors` on the mean of `space`, then scale each to unit length."""
    return torch.nn.functional.normalize(vectors - space.mean(dim=0), dim=-1)


def _space(trace: Trace, layer: int | None) -> Tensor:
    """All real tokens of the batch in one space: `[n_tokens, d_model]`."""
    vectors = trace.static_embeddings if layer is STATIC else trace.hidden_states[layer]
    return vectors[trace.key_valid]


def pca_2d(x: Tensor) -> tuple[Tensor, tuple[float, float]]:
    """The first two principal axes `[2, d]` of the rows of `x`, each signed so that its largest entry is positive."""
    centred = x - x.mean(dim=0)
    _, s, vh = torch.linalg.svd(centred.double(), full_matrices=False)
    axes = vh[:2]
    signs = torch.sign(axes.gather(1, axes.abs().argmax(dim=1, keepdim=True)))
    axes = axes * signs
    variance = s**2 / (s**2).sum().clamp_min(1e-12)
    padded = torch.cat([variance, torch.zeros(2)])[:2]
    if axes.shape[0] < 2:
        axes = torch.cat([axes, torch.zeros(2 - axes.shape[0], axes.shape[1], dtype=axes.dtype)])
    return axes.float(), (float(padded[0]), float(padded[1]))


def embedding_projection(
    trace: Trace,
    target: str = "bank",
    references: tuple[str, ...] = ("river", "water", "money", "deposit"),
    layer: int | None = None,
) -> Projection:
    """Where `target` sits, static and in context, beside the reference words of the same sentences.

    layer: the layer whose output is drawn as "contextual" (default: the last). The PCA is fitted on
    the static and every layer's vectors of the target and the references, so the same plane serves
    every layer and the trajectory.
    """
    target = target.strip().lower()
    layers = list(range(trace.n_layers + 1))
    layer = trace.n_layers if layer is None else max(0, min(int(layer), trace.n_layers))
    wanted = {target, *(r.strip().lower() for r in references)}

    # (label, group, sentence, layer, unit vector)
    entries: list[tuple[str, str, int, int | None, Tensor]] = []
    missing = []
    for space_layer in [STATIC, *layers]:
        space = _space(trace, space_layer)
        for sentence in range(len(trace.texts)):
            words = trace.word_vectors(sentence, space_layer)
            if space_layer is STATIC and not any(w == target for w, _ in words):
                missing.append(sentence)
            for word, vector in words:
                if word in wanted:
                    group = "target" if word == target else "reference"
                    entries.append((word, group, sentence, space_layer, _normalised(vector[None], space)[0]))

    if not entries:
        return Projection(target, layer, [], [], {}, [], missing, (0.0, 0.0))
    stacked = torch.stack([e[4] for e in entries])
    axes, variance = pca_2d(stacked)
    xy = (stacked - stacked.mean(dim=0)) @ axes.T  # [n_entries, 2]

    points, arrows, tracks = [], [], {}
    position = {}
    for (word, group, sentence, space_layer, _), (x, y) in zip(entries, xy.tolist()):
        position[(word, sentence, space_layer)] = (x, y)
        label = f"{word} (s{sentence + 1})"
        if group == "target":
            tracks.setdefault(label, []).append((x, y))  # static first, then the input and each layer
        if space_layer is STATIC:
            if group == "target" and any(p["label"] == word and p["group"] == "static" for p in points):
                continue  # the static embedding of a word is the same in every sentence: draw it once
            points.append(dict(label=word, group="static", sentence=None, layer=None, x=x, y=y))
        elif space_layer == layer:
            points.append(
                dict(label=label, group="contextual" if group == "target" else "reference", sentence=sentence, layer=layer, x=x, y=y)
            )
    for sentence in range(len(trace.texts)):
        if sentence in missing:
            continue
        x0, y0 = position[(target, sentence, STATIC)]
        x1, y1 = position[(target, sentence, layer)]
        arrows.append(dict(x0=x0, y0=y0, x1=x1, y1=y1, label=f"{target} (s{sentence + 1})"))

    similarities = []
    by_key = {(e[0], e[2], e[3]): e[4] for e in entries}
    for space_layer in [STATIC, *layers]:
        for sentence in range(len(trace.texts)):
            mine = by_key.get((target, sentence, space_layer))
            if mine is None:
                continue
            for (word, other_sentence, other_layer), vector in by_key.items():
                if other_layer != space_layer or (word, other_sentence) == (target, sentence):
                    continue
                similarities.append(
                    dict(
                        layer="static" if space_layer is STATIC else space_layer,
                        sentence=sentence,
                        word=target,
                        other=f"{word} (s{other_sentence + 1})",
                        cosine=float(mine @ vector),
                    )
                )
    return Projection(target, layer, points, arrows, tracks, similarities, missing, variance)


def sense_margins(trace: Trace, target: str, senses: list[int], layer: int | None = None) -> dict:
    """How well the contextual vectors of `target` group by sense.

    `senses[i]` is the sense (any integer label) of `target` in sentence i. For each sentence: the
    mean centred cosine of its `target` with the other sentences' `target` of the same sense, minus
    the mean with those of the other senses. Returns the margins, their mean, and the share of
    sentences whose nearest same-sense centroid is their own (leave-one-out).
    """
    layer = trace.n_layers if layer is None else layer
    space = _space(trace, layer)
    vectors = []
    for sentence in range(len(trace.texts)):
        found = [v for w, v in trace.word_vectors(sentence, layer) if w == target]
        if not found:
            raise ValueError(f"“{target}” is not in sentence {sentence + 1}")
        vectors.append(_normalised(found[0][None], space)[0])
    unit = torch.stack(vectors)  # [sentence, d_model]
    cosine = unit @ unit.T
    labels = torch.tensor(senses)
    margins, correct = [], 0
    for i in range(len(senses)):
        same = (labels == labels[i]) & (torch.arange(len(senses)) != i)
        other = labels != labels[i]
        margins.append(float(cosine[i, same].mean() - cosine[i, other].mean()))
        correct += margins[-1] > 0
    return dict(margins=margins, mean=sum(margins) / len(margins), accuracy=correct / len(senses))
