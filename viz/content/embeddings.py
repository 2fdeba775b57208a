"""The Embeddings page: one word static and in context, on one PCA plane, layer by layer."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from model.embeddings import embedding_projection
from viz.content.page import PageContent
from viz.embeddings import projection_figure, trajectory_figure
from viz.labels import safe_label


def embedding_figures(projection, model_name: str) -> dict[str, go.Figure]:
    """Static → contextual arrows on a PCA plane, and the trajectory through the layers."""
    if not projection.arrows:
        return {}
    target, model_name = safe_label(projection.target), safe_label(model_name)
    pc1, pc2 = projection.explained_variance
    return {
        f"projection-{projection.target}-L{projection.layer}": projection_figure(
            projection.points,
            projection.arrows,
            title=f"“{target}”: static → after layer {projection.layer} ({model_name}); PC 1 {pc1:.0%}, PC 2 {pc2:.0%} of variance",
        ),
        f"trajectory-{projection.target}": trajectory_figure(projection.tracks, title=f"“{target}” layer by layer: static, input, then after each layer"),
    }


def similarity_table(similarities: list[dict]) -> pd.DataFrame:
    """One row per layer and occurrence of the word, one column per word it is compared with."""
    table = pd.DataFrame(similarities, columns=["layer", "sentence", "occurrence", "word", "other", "cosine"])
    table["layer"] = table["layer"].astype(str)
    wide = table.pivot_table(index=["layer", "occurrence"], columns="other", values="cosine", sort=False)
    return wide.round(3)


def embeddings_page(settings, trace, model_name: str) -> PageContent:
    """Figures `projection-{word}-L{layer}` and `trajectory-{word}`; table `similarities`; a notice per
    sentence without the word (`missing-s{i}`), and `word-absent` when no sentence has it."""
    content = PageContent()
    target = settings.followed_word
    layer = None if settings.embedding_layer == -1 else settings.embedding_layer
    projection = embedding_projection(trace, target, settings.reference_words, layer=layer)
    content.values.update(target=target, layer=projection.layer)
    for sentence in projection.missing:
        content.notice(f"missing-s{sentence + 1}", f"“{target}” does not occur in sentence {sentence + 1}: {trace.texts[sentence][:80]}")
    if not projection.arrows:
        content.notice("word-absent", f"“{target}” occurs in none of the sentences: type it in a sentence, or choose another word.", "warning")
        return content
    content.figures.update(embedding_figures(projection, model_name))
    if projection.similarities:
        content.tables["similarities"] = similarity_table(projection.similarities)
    return content
