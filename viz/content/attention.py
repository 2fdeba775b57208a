"""The Attention page: every stage of the chosen heads, why scale, a worked example, every head."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from model.attention import worked_example
from viz.content.common import FULL_RESOLUTION, fit, sentence_labels
from viz.content.page import PageContent
from viz.heatmap import attention_heatmap
from viz.labels import safe_label
from viz.overview import heads_overview
from viz.stages import row_stats_figure, stages_figure

STAGE_NAMES = ("scores_raw", "scores_scaled", "scores_masked", "pattern")


def stages_of_head(trace, sentence: int, layer: int, head: int, stages=None) -> go.Figure:
    """The four stages of one head side by side, masked cells as gaps (block means beyond 128 tokens)."""
    stages = stages if stages is not None else trace.stages(layer)
    labels = sentence_labels(trace, sentence)
    matrices, labels, hidden, block = fit(
        {name: getattr(stages, name)[sentence, head].numpy() for name in STAGE_NAMES}, labels, ~stages.mask[sentence, head].numpy()
    )
    note = f" · means of {block}×{block} blocks" if block > 1 else ""
    return stages_figure(
        matrices,
        labels,
        labels,
        masked=hidden,
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
    hidden = ~trace.attend()[sentence, 0].numpy()
    stats = row_stats_figure(scaled, unscaled, labels, masked=hidden)
    shown, block_labels, block_hidden, block = fit({"pattern": scaled, "unscaled": unscaled}, labels, hidden)
    note = f" · means of {block}×{block} blocks" if block > 1 else ""
    common = dict(colorbar_title="weight", masked=block_hidden, zmin=0, zmax=1, max_hover_cells=4096)
    return {
        f"softmax-scaled-L{layer}-H{head}": attention_heatmap(
            shown["pattern"], block_labels, block_labels, title=f"softmax(QKᵀ/√{trace.d_head}) · layer {layer} · head {head}{note}", **common
        ),
        f"softmax-unscaled-L{layer}-H{head}": attention_heatmap(
            np.where(block_hidden, np.nan, shown["unscaled"]),
            block_labels,
            block_labels,
            title=f"softmax(QKᵀ), no scaling · layer {layer} · head {head}{note}",
            **common,
        ),
        f"row-stats-L{layer}-H{head}": stats,
    }


def overview_figure(trace, sentence: int) -> go.Figure:
    """Every head of every layer as small multiples (downsampled for long inputs)."""
    labels = sentence_labels(trace, sentence)
    patterns = np.stack([trace.stages(layer).pattern[sentence].numpy() for layer in range(trace.n_layers)])
    hidden = ~trace.attend()[sentence, 0].numpy()
    return heads_overview(patterns, labels, labels, masked=hidden, title=f"{safe_label(trace.model_name)}: attention patterns of every head")


def worked_example_table(step: dict, scaling: bool) -> pd.DataFrame:
    """The numbers of one cell, step by step, as the page's table."""
    allowed = step["allowed"]
    rows = [
        ("q · k", "dot product of the query and key vectors", f"{step['raw']:.4f}"),
        (f"÷ {step['scale']:.4g}", "√d_k" if scaling else "no scaling", f"{step['scaled']:.4f}"),
        ("mask", "allowed" if allowed else "masked → −∞", "kept" if allowed else "−∞"),
        (f"÷ T = {step['temperature']:g}", "temperature", f"{step['logit']:.4f}"),
        ("exp(· − row max)", f"row max = {step['shift']:.4f}", f"{step['exp']:.4f}"),
        ("÷ row sum", f"Σ exp over allowed keys = {step['row_sum']:.4f}", f"{step['weight']:.4f}"),
    ]
    return pd.DataFrame(rows, columns=["step", "what", "value"])


def worked_example_content(settings, trace, query: int | None = None, key: int | None = None, stages=None) -> PageContent:
    """Table `worked-example`: one cell of the first chosen head, from q·k to its weight. Defaults:
    query token 2 (or the last), key token 0; values `query`, `key`, `weight`."""
    content = PageContent()
    b, head = settings.sentence, (list(settings.heads) or [0])[0]
    n = len(trace.tokens[b])
    if n == 0:
        content.notice("worked-example-empty", "This sentence has no token: there is no cell to work through.")
        return content
    stages = stages if stages is not None else trace.stages(settings.layer)
    query = min(n - 1, 2) if query is None else min(max(query, 0), n - 1)
    key = 0 if key is None else min(max(key, 0), n - 1)
    step = worked_example(stages, b, head, query, key)
    content.tables["worked-example"] = worked_example_table(step, trace.scale)
    content.values.update(query=query, key=key, weight=step["weight"])
    return content


def attention_page(settings, trace, query: int | None = None, key: int | None = None, overview: bool = True) -> PageContent:
    """Figures `stages-L{l}-H{h}` (and `pattern-L{l}-H{h}` beyond 128 tokens) for each chosen head;
    `softmax-scaled-…`, `softmax-unscaled-…`, `row-stats-…` for the first head; `overview-all-heads`;
    table `worked-example` for one query and key (default: token 2 and token 0) of the first head."""
    content = PageContent()
    b, layer, heads = settings.sentence, settings.layer, list(settings.heads) or [0]
    stages = trace.stages(layer)
    labels = sentence_labels(trace, b)
    n = len(trace.tokens[b])
    content.values.update(d_k=trace.d_head, layer=layer, heads=heads, head=heads[0], labels=labels, n_tokens=n)
    long_input = len(labels) > FULL_RESOLUTION
    for head in heads:
        content.figures[f"stages-L{layer}-H{head}"] = stages_of_head(trace, b, layer, head, stages)
        if long_input:
            content.figures[f"pattern-L{layer}-H{head}"] = pattern_of_head(trace, b, layer, head, stages)
            content.notice(
                f"long-input-H{head}",
                f"More than {FULL_RESOLUTION} tokens: the panels show means of blocks; the full-resolution pattern follows.",
                "caption",
            )
        if bool(stages.fully_masked_rows[b, head].any()):
            content.notice(f"fully-masked-H{head}", "Rows whose every key is masked attend to nothing: their weights are all 0 (no NaN).", "caption")
    content.figures.update(scaling_figures(trace, b, layer, heads[0]))
    worked = worked_example_content(settings, trace, query, key, stages)
    content.tables.update(worked.tables)
    content.notices += worked.notices
    content.values.update(worked.values)
    if overview:
        content.figures["overview-all-heads"] = overview_figure(trace, b)
    content.values["head_options"] = [(lay, h) for lay in range(trace.n_layers) for h in range(trace.n_heads)]
    return content
