"""The figures of each view, built from a trace: shared by the app's pages and the export command.

A trace is read through its attributes (`tokens`, `stages(layer)`, …) only; nothing here runs a model.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.heatmap import attention_heatmap, downsample
from viz.overview import heads_overview
from viz.stages import row_stats_figure, stages_figure
from viz.embeddings import projection_figure, trajectory_figure
from viz.positional import pe_curves, pe_heatmap, position_similarity_heatmap, similarity_by_distance_figure
from viz.labels import safe_label
from viz.tokens import tokens_figure

STAGE_NAMES = ("scores_raw", "scores_scaled", "scores_masked", "pattern")
FULL_RESOLUTION = 128  # beyond this many tokens, side-by-side panels are averaged in blocks
COMPOSITION_TOKENS = 64  # rows of the token embedding + position figure


def fit(matrices: dict[str, np.ndarray], labels: list[str], masked: np.ndarray, limit: int = FULL_RESOLUTION):
    """Block-average `[query_pos, key_pos]` matrices larger than `limit` per side, for side-by-side panels.

    Returns the matrices, block labels ("the…" = the block starting at that token), the blocks'
    mask (a block is masked when all its cells are), and the block size (1 when nothing changed).
    """
    n = len(labels)
    if n <= limit:
        return matrices, labels, masked, 1
    starts = np.linspace(0, n, limit + 1).astype(int)[:-1]
    reduced = {name: downsample(np.where(masked, np.nan, m) if name in ("scores_masked", "pattern") else m, limit) for name, m in matrices.items()}
    block_masked = np.isnan(downsample(np.where(masked, np.nan, 1.0), limit))
    return reduced, [f"{labels[i]}…" for i in starts], block_masked, int(np.ceil(n / limit))


def sentence_labels(trace, sentence: int) -> list[str]:
    """Token texts of one sentence, padded with [PAD] to the batch's length."""
    tokens = [t.text for t in trace.tokens[sentence]]
    return tokens + ["[PAD]"] * (trace.input_ids.shape[1] - len(tokens))


def token_rows(tokens) -> list[dict]:
    return [dict(text=t.text, id=t.id, kind=t.kind) for t in tokens]


def tokens_figures(trace, label: str) -> dict[str, go.Figure]:
    return {
        f"tokens-s{i + 1}": tokens_figure(token_rows(tokens), title=f"Sentence {i + 1}: {len(tokens)} tokens ({safe_label(label)})")
        for i, tokens in enumerate(trace.tokens)
    }


def stages_of_head(trace, sentence: int, layer: int, head: int, stages=None) -> go.Figure:
    """The four stages of one head side by side, masked cells as gaps (block means beyond 128 tokens)."""
    stages = stages if stages is not None else trace.stages(layer)
    labels = sentence_labels(trace, sentence)
    matrices, labels, masked, block = fit(
        {name: getattr(stages, name)[sentence, head].numpy() for name in STAGE_NAMES}, labels, ~stages.mask[sentence, head].numpy()
    )
    note = f" · means of {block}×{block} blocks" if block > 1 else ""
    return stages_figure(
        matrices,
        labels,
        labels,
        masked=masked,
        title=f"{safe_label(trace.model_name)} · layer {layer} · head {head} · mask {trace.mask.name}{note}",
    )


def pattern_of_head(trace, sentence: int, layer: int, head: int, stages=None) -> go.Figure:
    """One head's softmax pattern at full resolution (for inputs too long for side-by-side panels)."""
    stages = stages if stages is not None else trace.stages(layer)
    labels = sentence_labels(trace, sentence)
    return attention_heatmap(
        stages.pattern[sentence, head].numpy(),
        labels,
        labels,
        title=f"{safe_label(trace.model_name)} · layer {layer} · head {head}: softmax pattern, every token",
        colorbar_title="weight",
        masked=~stages.mask[sentence, head].numpy(),
        zmin=0,
        zmax=1,
    )


def scaling_figures(trace, sentence: int, layer: int, head: int) -> dict[str, go.Figure]:
    """The softmax with and without 1/√d_k, and how peaked each row is in both."""
    labels = sentence_labels(trace, sentence)
    scaled = trace.stages(layer, scale=True).pattern[sentence, head].numpy()
    unscaled = trace.stages(layer, scale=False).pattern[sentence, head].numpy()
    masked = ~trace.attend()[sentence, 0].numpy()
    stats = row_stats_figure(scaled, unscaled, labels, masked=masked)
    shown, block_labels, block_masked, block = fit({"pattern": scaled, "unscaled": unscaled}, labels, masked)
    note = f" · means of {block}×{block} blocks" if block > 1 else ""
    common = dict(colorbar_title="weight", masked=block_masked, zmin=0, zmax=1, max_hover_cells=4096)
    return {
        f"softmax-scaled-L{layer}-H{head}": attention_heatmap(
            shown["pattern"], block_labels, block_labels, title=f"softmax(QKᵀ/√{trace.d_head}) · layer {layer} · head {head}{note}", **common
        ),
        f"softmax-unscaled-L{layer}-H{head}": attention_heatmap(
            np.where(block_masked, np.nan, shown["unscaled"]), block_labels, block_labels,
            title=f"softmax(QKᵀ), no scaling · layer {layer} · head {head}{note}", **common
        ),
        f"row-stats-L{layer}-H{head}": stats,
    }


def overview_figure(trace, sentence: int) -> go.Figure:
    """Every head of every layer as small multiples (downsampled for long inputs)."""
    labels = sentence_labels(trace, sentence)
    patterns = np.stack([trace.stages(layer).pattern[sentence].numpy() for layer in range(trace.n_layers)])
    masked = ~trace.attend()[sentence, 0].numpy()
    return heads_overview(patterns, labels, labels, masked=masked, title=f"{safe_label(trace.model_name)}: attention patterns of every head")


SIMILARITY_CELLS = 256  # a position-similarity matrix larger than this per side is sent as block means


def similarity_figure(similarity, title: str) -> go.Figure:
    """Cosine similarity between positions, `[pos, pos]`, as block means beyond 256 positions."""
    n = similarity.shape[0]
    if n > SIMILARITY_CELLS:
        similarity = downsample(similarity, SIMILARITY_CELLS)
        title += f" (means of {int(np.ceil(n / SIMILARITY_CELLS))}×{int(np.ceil(n / SIMILARITY_CELLS))} blocks)"
    return position_similarity_heatmap(similarity, title=title)


def positional_figures(pe, similarity, distances, by_distance, base: float, dims: list[int]) -> dict[str, go.Figure]:
    """The sinusoidal matrix `[pos, d_model]`, chosen dimensions as curves, and similarity between positions."""
    n, d = pe.shape
    return {
        "pe-matrix": pe_heatmap(pe, title=f"Sinusoidal positional encoding ({n} positions × {d} dimensions, base {base:g})"),
        "pe-curves": pe_curves(pe, dims),
        "pe-similarity": similarity_figure(similarity, "Sinusoidal: cosine similarity between positions"),
        "pe-similarity-by-distance": similarity_by_distance_figure(distances, by_distance, label=f"sinusoidal, base {base:g}"),
    }


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
        f"trajectory-{projection.target}": trajectory_figure(
            projection.tracks, title=f"“{target}” layer by layer: static, input, then after each layer"
        ),
    }
