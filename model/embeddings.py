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
    similarities: list[dict]  # {layer, sentence, occurrence, word, other, cosine}
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


def _occurrences(trace: Trace, sentence: int) -> list[tuple[str, list[int]]]:
    """The words of one sentence in order, each with the positions of its pieces.

    A word cut into several pieces is one occurrence (its vector is the mean of its pieces); a special
    token the model adds ([CLS], [SEP]) is an occurrence of its own text, so it can be followed too.
    """
    tokens, text = trace.tokens[sentence], trace.texts[sentence]
    words: dict[object, list[int]] = {}
    for position, token in enumerate(tokens):
        if token.word is not None:
            words.setdefault(("word", token.word), []).append(position)
        elif token.kind == "special":
            words[("special", position)] = [position]
    found = []
    for (kind, _), positions in words.items():
        first, last = tokens[positions[0]], tokens[positions[-1]]
        surface = first.text if kind == "special" else text[first.start : last.end]
        if surface.strip():
            found.append((surface.strip().lower(), positions))
    return found


def embedding_projection(
    trace: Trace,
    target: str = "bank",
    references: tuple[str, ...] = ("river", "water", "money", "deposit"),
    layer: int | None = None,
) -> Projection:
    """Where `target` sits, static and in context, beside the reference words of the same sentences.

    layer: the layer whose output is drawn as "contextual" (default: the last). The PCA is fitted on
    the static and every layer's vectors of the target and the references, so the same plane serves
    every layer and the trajectory. Every occurrence is its own point: "bank (s2)", or "bank (s2#1)"
    and "bank (s2#2)" when a sentence holds the word twice. A word whose pieces differ between
    sentences (GPT-2's "Bank" and " bank") has one static point per set of pieces.

    Each occurrence of the target is compared (cosine) with every other drawn word of the same layer
    and with its own static embedding, so the table behind the picture is never empty when the
    target occurs, even alone and without reference words.
    """
    target = target.strip().lower()
    layers = list(range(trace.n_layers + 1))
    layer = trace.n_layers if layer is None else max(0, min(int(layer), trace.n_layers))
    wanted = {target, *(r.strip().lower() for r in references if r.strip())}

    # one entry per occurrence of a wanted word: (word, sentence, label, token ids)
    occurrences: list[tuple[str, int, str, tuple[int, ...], list[int]]] = []
    missing = []
    for sentence in range(len(trace.texts)):
        words = [(w, positions) for w, positions in _occurrences(trace, sentence) if w in wanted]
        if not any(w == target for w, _ in words):
            missing.append(sentence)
        counts = {w: sum(1 for other, _ in words if other == w) for w, _ in words}
        seen: dict[str, int] = {}
        for word, positions in words:
            seen[word] = seen.get(word, 0) + 1
            label = f"{word} (s{sentence + 1})" if counts[word] == 1 else f"{word} (s{sentence + 1}#{seen[word]})"
            ids = tuple(int(trace.input_ids[sentence, p]) for p in positions)
            occurrences.append((word, sentence, label, ids, positions))
    if not occurrences:
        return Projection(target, layer, [], [], {}, [], missing, (0.0, 0.0))

    # unit vectors, each centred in its own space: [space (static, then each layer), occurrence, d_model]
    units = []
    for space_layer in [STATIC, *layers]:
        space = _space(trace, space_layer)
        vectors = trace.static_embeddings if space_layer is STATIC else trace.hidden_states[space_layer]
        stacked = torch.stack([vectors[sentence, positions].mean(dim=0) for _, sentence, _, _, positions in occurrences])
        units.append(_normalised(stacked, space))
    units = torch.stack(units)
    flat = units.reshape(-1, units.shape[-1])
    axes, variance = pca_2d(flat)
    xy = ((flat - flat.mean(dim=0)) @ axes.T).reshape(units.shape[0], units.shape[1], 2).tolist()

    variants: dict[str, list[tuple[int, ...]]] = {}
    for word, _, _, ids, _ in occurrences:
        variants.setdefault(word, [])
        if ids not in variants[word]:
            variants[word].append(ids)
    points, arrows, tracks, drawn = [], [], {}, set()
    for index, (word, sentence, label, ids, positions) in enumerate(occurrences):
        static_x, static_y = xy[0][index]
        if (word, ids) not in drawn:  # a static embedding depends only on the token ids: draw each once
            drawn.add((word, ids))
            pieces = "·".join(trace.tokens[sentence][p].text for p in positions)
            name = word if len(variants[word]) == 1 else f"{word} [{pieces}]"
            points.append(dict(label=name, group="static", sentence=None, layer=None, x=static_x, y=static_y))
        x, y = xy[1 + layer][index]
        is_target = word == target
        points.append(dict(label=label, group="contextual" if is_target else "reference", sentence=sentence, layer=layer, x=x, y=y))
        if is_target:
            tracks[label] = [tuple(xy[space][index]) for space in range(len(xy))]  # static, the input, each layer
            arrows.append(dict(x0=static_x, y0=static_y, x1=x, y1=y, label=label))

    similarities = []
    for space, space_layer in enumerate([STATIC, *layers]):
        cosines = units[space] @ units[space].T
        for index, (word, sentence, label, _, _) in enumerate(occurrences):
            if word != target:
                continue
            name = "static" if space_layer is STATIC else space_layer
            row = dict(layer=name, sentence=sentence, occurrence=label, word=target)
            for other, (_, _, other_label, _, _) in enumerate(occurrences):
                if other != index:
                    similarities.append(dict(row, other=other_label, cosine=float(cosines[index, other])))
            if space_layer is not STATIC:
                similarities.append(dict(row, other="its static embedding", cosine=float(units[space, index] @ units[0, index])))
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
