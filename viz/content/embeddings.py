"""The Embeddings page: one word static and in context, on one PCA plane, layer by layer."""

from __future__ import annotations

import math
from dataclasses import asdict

import pandas as pd

from model.embeddings import embedding_projection
from viz.content import figure_tables as tables
from viz.content.page import PageContent
from viz.embeddings import projection_figure, sense_layers_figure, trajectory_figure
from viz.labels import safe_label


def hidden_state_name(index) -> str:
    """A hidden state by what it is: index 0 is the model input, index k the output of layer k − 1
    (layers count from 0); "static" stays "static"."""
    if not isinstance(index, int):
        return str(index)
    return "the model input" if index == 0 else f"after layer {index - 1}"


def embedding_figures(projection, model_name: str) -> dict[str, dict]:
    """The occurrences on a PCA plane (senses as groups, arrows from the static point), the per-layer
    same-sense / other-sense similarity when senses are given, and the trajectory through the layers."""
    if not projection.arrows:
        return {}
    target, model_name = safe_label(projection.target), safe_label(model_name)
    pc1, pc2 = projection.explained_variance
    split = f"; centre distance ÷ spread {projection.ratio:.1f}" if projection.centroids and math.isfinite(projection.ratio) else ""
    figures = {
        f"projection-{projection.target}-L{projection.layer}": projection_figure(
            projection.points,
            projection.arrows,
            title=f"“{target}” {hidden_state_name(projection.layer)} ({model_name})<br><sup>PC 1 {pc1:.0%}, PC 2 {pc2:.0%}{split}</sup>",
            centroids=projection.centroids,
        ),
    }
    if projection.by_layer:
        figures[f"senses-{projection.target}"] = sense_layers_figure(
            [asdict(b) for b in projection.by_layer],
            title=f"“{target}” layer by layer: similarity to its own sense and to the other ({model_name})",
        )
    figures[f"trajectory-{projection.target}"] = trajectory_figure(projection.tracks, title=f"“{target}” layer by layer: static, input, then after each layer")
    return figures


def embedding_tables(projection) -> dict:
    """What builds the table of each of `embedding_figures`, by the same ids: every point of the plane
    with its hidden state, the senses layer by layer, each occurrence's track."""
    if not projection.arrows:
        return {}
    built = {f"projection-{projection.target}-L{projection.layer}": lambda: tables.projection_table(projection.points, projection.centroids)}
    if projection.by_layer:
        built[f"senses-{projection.target}"] = lambda: tables.senses_table(projection.by_layer)
    built[f"trajectory-{projection.target}"] = lambda: tables.trajectory_table(projection.tracks)
    return built


def sense_table(projection) -> pd.DataFrame:
    """Per layer: mean cosine to the same sense, to the other sense, their difference, and the ratio."""
    rows = [
        dict(layer=str(b.layer), same_sense=b.same, other_sense=b.other, margin=b.same - b.other, centre_distance_over_spread=b.ratio)
        for b in projection.by_layer
    ]
    return pd.DataFrame(rows).round(3)


def what_it_sees(trace, target: str) -> str:
    """Which kind the model is, and what the followed word can see."""
    if trace.mask.causal:
        return (
            f"This model reads left to right (causal): the vector of “{target}” can use only the words before it. A sense given after the word cannot move it."
        )
    return f"This model sees the whole sentence (bidirectional): the vector of “{target}” can use the words on both sides."


def similarity_table(similarities: list[dict]) -> pd.DataFrame:
    """One row per layer and occurrence of the word, one column per word it is compared with."""
    table = pd.DataFrame(similarities, columns=["layer", "sentence", "occurrence", "word", "other", "cosine"])
    table["layer"] = [hidden_state_name(layer) for layer in table["layer"]]
    wide = table.pivot_table(index=["layer", "occurrence"], columns="other", values="cosine", sort=False)
    return wide.round(3)


def embeddings_page(settings, trace, model_name: str, tokenizer=None) -> PageContent:
    """Figures `projection-{word}-L{layer}`, `senses-{word}` (when senses are given) and `trajectory-{word}`;
    tables `similarities` and `sense-layers`; notices: `kind` (what the model can see), `missing-s{i}` per
    sentence without the word, `word-absent`, `references-unknown` / `references-absent`, `senses-hint`.

    `settings.senses`: one sense name per sentence of the trace. `tokenizer`: the model's, to tell a
    reference word it cannot read from one that is not in the sentences."""
    content = PageContent()
    target = settings.followed_word
    layer = None if settings.embedding_layer == -1 else settings.embedding_layer
    projection = embedding_projection(trace, target, settings.reference_words, layer=layer, senses=settings.sense_names, tokenizer=tokenizer)
    content.values.update(target=target, layer=projection.layer, ratio=projection.ratio, senses=projection.senses)
    content.notice("kind", what_it_sees(trace, target), "caption")
    if projection.unknown_references:
        content.notice("references-unknown", "Unknown to this model's tokenizer, so not drawn: " + ", ".join(projection.unknown_references) + ".", "warning")
    if projection.absent_references:
        content.notice("references-absent", "In none of the sentences, so not drawn: " + ", ".join(projection.absent_references) + ".")
    for sentence in projection.missing:
        content.notice(f"missing-s{sentence + 1}", f"“{target}” does not occur in sentence {sentence + 1}: {trace.texts[sentence][:80]}")
    if not projection.arrows:
        content.notice("word-absent", f"“{target}” occurs in none of the sentences: type it in a sentence, or choose another word.", "warning")
        return content
    content.figures.update(embedding_figures(projection, model_name))
    content.figure_tables.update(embedding_tables(projection))
    if projection.by_layer:
        content.tables["sense-layers"] = sense_table(projection)
    else:
        content.notice(
            "senses-hint",
            "Give the sense of the word in each sentence (for example “river, money, river”) to draw the senses as groups and compare them layer by layer.",
            "caption",
        )
    if projection.similarities:
        content.tables["similarities"] = similarity_table(projection.similarities)
    return content
