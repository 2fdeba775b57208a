"""Static versus contextual embeddings of one word, projected to 2-D, and how its senses part.

The static embedding of "bank" is one row of the embedding table: the same in every sentence. Its
contextual embedding is the hidden state at "bank" after some layers, which depends on the words
around it. To compare vectors, each space (the embedding table, the output of each layer) is centred
on the mean of all the tokens of the batch in that space, and every vector scaled to length 1; the
cosine similarity of two such vectors is their dot product.

The plane: a PCA fitted on the contextual vectors of the word's occurrences after the layer shown
(with the reference words too when there are fewer than three occurrences), so that the plane
spreads what differs between the occurrences. The reference words, the static point and the other
layers are projected onto the same plane.

Senses: when the sense of the word in each sentence is given, the occurrences form groups, and two
numbers say how far the groups part:
- per layer, the mean similarity of an occurrence to the others of its own sense and to those of the
  other senses (`SenseLayer`);
- on the plane, the distance between the sense centroids divided by the mean distance of a point to
  its own sense's centroid (`sense_ratio`): ≥ 2 reads as two separate groups.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import torch
from torch import Tensor

from model.trace import Trace

STATIC = None  # the "layer" of the static embeddings in `Trace.word_vectors`


@dataclass
class SenseLayer:
    """How the occurrences of one sense group at one layer."""

    layer: str | int  # "static", then 0 (the input) … n_layers
    same: float  # mean cosine of an occurrence with the other occurrences of its own sense
    other: float  # mean cosine with the occurrences of the other senses
    ratio: float  # sense_ratio on this layer's own PCA plane (nan when it cannot be computed)


@dataclass
class Projection:
    target: str
    layer: int  # the layer whose contextual embeddings are drawn
    points: list[dict]  # {label, group, sentence, sense, layer, x, y}; group: static, contextual, reference
    arrows: list[dict]  # {x0, y0, x1, y1, label}: static point → contextual point
    tracks: dict[str, list[tuple[float, float]]]  # "bank (s1)" → static point, then the input and each layer
    similarities: list[dict]  # {layer, sentence, occurrence, word, other, cosine}
    missing: list[int]  # sentences (0-based) in which the target does not occur
    explained_variance: tuple[float, float]  # share of the fitted vectors' variance along PC 1 and PC 2
    unknown_references: list[str] = field(default_factory=list)  # the tokenizer reads them as unknown tokens
    absent_references: list[str] = field(default_factory=list)  # in no sentence
    senses: list[str] = field(default_factory=list)  # the sense names, in order of first appearance
    by_layer: list[SenseLayer] = field(default_factory=list)  # empty unless two senses have occurrences
    ratio: float = float("nan")  # sense_ratio of the contextual points on the plane shown
    centroids: dict[str, tuple[float, float]] = field(default_factory=dict)  # sense → centroid on the plane


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
    axes = axes * torch.where(signs == 0, torch.ones_like(signs), signs)
    variance = s**2 / (s**2).sum().clamp_min(1e-12)
    padded = torch.cat([variance, torch.zeros(2, dtype=variance.dtype)])[:2]
    if axes.shape[0] < 2:
        axes = torch.cat([axes, torch.zeros(2 - axes.shape[0], axes.shape[1], dtype=axes.dtype)])
    return axes.float(), (float(padded[0]), float(padded[1]))


def sense_ratio(xy: Tensor, senses: list[str]) -> tuple[float, dict[str, tuple[float, float]]]:
    """Mean distance between sense centroids ÷ mean distance of a point to its own sense's centroid.

    xy `[n, 2]`, one sense name per row. nan with fewer than two senses; inf when every point sits on
    its centroid. Also returns the centroids.
    """
    names = list(dict.fromkeys(senses))
    centroids = {name: xy[[i for i, s in enumerate(senses) if s == name]].mean(dim=0) for name in names}
    as_pairs = {name: (float(c[0]), float(c[1])) for name, c in centroids.items()}
    if len(names) < 2:
        return float("nan"), as_pairs
    between = torch.stack([torch.dist(centroids[a], centroids[b]) for a, b in combinations(names, 2)]).mean()
    within = torch.stack([torch.dist(xy[i], centroids[s]) for i, s in enumerate(senses)]).mean()
    if within == 0:  # every point on its centroid: apart if the centroids differ, undefined if not
        return (float("inf") if between > 0 else float("nan")), as_pairs
    return float(between / within), as_pairs


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
    senses: list[str | None] | None = None,
    tokenizer=None,
) -> Projection:
    """Where `target` sits, static and in context, beside the reference words of the same sentences.

    layer: the layer whose output is drawn as "contextual" (default: the last); the PCA plane is fitted
    on that layer's vectors of the target's occurrences. senses: one name per sentence of the trace
    (None or "" for none), grouping the occurrences. tokenizer: the model's, to tell unknown reference
    words from absent ones.

    Every occurrence is its own point: "bank (s2)", or "bank (s2#1)" and "bank (s2#2)" when a sentence
    holds the word twice. A word whose pieces differ between sentences (GPT-2's "Bank" and " bank")
    has one static point per set of pieces. Each occurrence of the target is compared (cosine) with
    every other drawn word of the same layer and with its own static embedding, so the table behind
    the picture is never empty when the target occurs, even alone and without reference words.
    """
    target = target.strip().lower()
    layers = list(range(trace.n_layers + 1))
    layer = trace.n_layers if layer is None else max(0, min(int(layer), trace.n_layers))
    references = tuple(dict.fromkeys(r.strip().lower() for r in references if r.strip() and r.strip().lower() != target))
    wanted = {target, *references}
    sense_of = [((senses[i] or "").strip() if senses is not None and i < len(senses) else "") for i in range(len(trace.texts))]

    # one entry per occurrence of a wanted word: (word, sentence, label, token ids, positions)
    occurrences: list[tuple[str, int, str, tuple[int, ...], list[int]]] = []
    missing = []
    present = set()
    for sentence in range(len(trace.texts)):
        all_words = _occurrences(trace, sentence)
        present.update(w for w, _ in all_words)
        words = [(w, positions) for w, positions in all_words if w in wanted]
        if not any(w == target for w, _ in words):
            missing.append(sentence)
        counts = {w: sum(1 for other, _ in words if other == w) for w, _ in words}
        seen: dict[str, int] = {}
        for word, positions in words:
            seen[word] = seen.get(word, 0) + 1
            label = f"{word} (s{sentence + 1})" if counts[word] == 1 else f"{word} (s{sentence + 1}#{seen[word]})"
            ids = tuple(int(trace.input_ids[sentence, p]) for p in positions)
            occurrences.append((word, sentence, label, ids, positions))
    unknown = [w for w in references if tokenizer is not None and any(t.kind == "unknown" for t in tokenizer.encode(w))]
    absent = [w for w in references if w not in unknown and w not in present]
    targets = [index for index, occurrence in enumerate(occurrences) if occurrence[0] == target]
    if not targets:
        return Projection(target, layer, [], [], {}, [], missing, (0.0, 0.0), unknown, absent)

    # unit vectors, each centred in its own space: [space (static, then each layer), occurrence, d_model]
    units = []
    for space_layer in [STATIC, *layers]:
        space = _space(trace, space_layer)
        vectors = trace.static_embeddings if space_layer is STATIC else trace.hidden_states[space_layer]
        stacked = torch.stack([vectors[sentence, positions].mean(dim=0) for _, sentence, _, _, positions in occurrences])
        units.append(_normalised(stacked, space))
    units = torch.stack(units)
    # The plane spreads the target's occurrences at the layer shown; with fewer than three, the
    # reference words help. Everything else is projected onto it.
    fitted = units[1 + layer, targets if len(targets) >= 3 else list(range(len(occurrences)))]
    axes, variance = pca_2d(fitted)
    xy = ((units - fitted.mean(dim=0)) @ axes.T).tolist()  # [space, occurrence, 2]

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
            points.append(dict(label=name, group="static", sentence=None, sense=None, layer=None, x=static_x, y=static_y))
        x, y = xy[1 + layer][index]
        is_target = word == target
        points.append(
            dict(
                label=label,
                group="contextual" if is_target else "reference",
                sentence=sentence,
                sense=(sense_of[sentence] or None) if is_target else None,
                layer=layer,
                x=x,
                y=y,
            )
        )
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

    projection = Projection(target, layer, points, arrows, tracks, similarities, missing, variance, unknown, absent)
    tagged = [index for index in targets if sense_of[occurrences[index][1]]]
    labels = [sense_of[occurrences[index][1]] for index in tagged]
    projection.senses = list(dict.fromkeys(labels))
    if len(projection.senses) >= 2:
        xy_shown = torch.tensor([xy[1 + layer][index] for index in tagged])
        projection.ratio, projection.centroids = sense_ratio(xy_shown, labels)
        projection.by_layer = [sense_layer(units[space, tagged], labels, space_layer) for space, space_layer in enumerate([STATIC, *layers])]
    return projection


def sense_layer(unit: Tensor, senses: list[str], layer: int | None) -> SenseLayer:
    """Same-sense and other-sense mean cosines of unit vectors `[n, d]`, and their ratio on their own plane."""
    cosine = unit @ unit.T
    same, other = [], []
    for i, sense in enumerate(senses):
        mates = [j for j, s in enumerate(senses) if s == sense and j != i]
        others = [j for j, s in enumerate(senses) if s != sense]
        if mates:
            same.append(float(cosine[i, mates].mean()))
        other.append(float(cosine[i, others].mean()))
    axes, _ = pca_2d(unit)
    ratio, _ = sense_ratio((unit - unit.mean(dim=0)) @ axes.T, senses)
    name = "static" if layer is STATIC else layer
    mean = lambda values: sum(values) / len(values) if values else float("nan")  # noqa: E731
    return SenseLayer(name, mean(same), mean(other), ratio)


def sense_margins(trace: Trace, target: str, senses: list, layer: int | None = None) -> dict:
    """How well the contextual vectors of `target` group by sense.

    `senses[i]` is the sense (any label) of `target` in sentence i. For each sentence: the mean
    centred cosine of its `target` with the other sentences' `target` of the same sense, minus the
    mean with those of the other senses. Returns the margins, their mean, and the share of sentences
    whose margin is positive.
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
    labels = [str(s) for s in senses]
    margins = []
    for i, sense in enumerate(labels):
        same = [j for j, s in enumerate(labels) if s == sense and j != i]
        other = [j for j, s in enumerate(labels) if s != sense]
        margins.append(float(cosine[i, same].mean() - cosine[i, other].mean()))
    return dict(margins=margins, mean=sum(margins) / len(margins), accuracy=sum(m > 0 for m in margins) / len(margins))
