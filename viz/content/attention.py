"""The Attention page: every stage of the chosen heads, why scale, a worked example, every head."""

from __future__ import annotations

import base64
import math
from dataclasses import replace

import numpy as np
import pandas as pd

from model.attention import MaskSpec, worked_example
from viz.content import figure_tables as tables
from viz.content.common import FULL_RESOLUTION, fit, hidden_token_label, sentence_labels
from viz.content.head_view import head_view_section
from viz.content.page import PageContent
from viz.focus import FOCUS_TOKENS, OVERVIEW_CELLS, focus_figure, focus_range, renormalised_figure, renormalised_without
from viz.heatmap import MAX_MARKED_SIDE, attention_heatmap, block_edges, block_weights, weight_scale
from viz.labels import safe_label, spaces_named
from viz.overview import heads_overview_and_table
from viz.stages import row_entropy, row_stats_figure, stage_titles, stages_figure, stages_panel_px
from viz.theme import MASK_MARK_COLOR
from viz.values import output_step_figure, value_step_figure

STAGE_NAMES = ("scores_raw", "scores_scaled", "scores_masked", "pattern")


def sink_positions(trace, sentence: int) -> list[int]:
    """The keys a sink-heavy head piles its weight on: the first token and any special token ([CLS], [SEP], <s>)."""
    tokens = trace.tokens[sentence]
    return sorted({0, *(p for p, t in enumerate(tokens) if t.kind == "special")}) if tokens else []


def hidden_labels(trace, labels: list[str], sentence: int) -> tuple[str, ...]:
    """The keys hidden from this sentence's queries, quoted: (“bank”,)."""
    return tuple(f"“{safe_label(labels[p].strip() or labels[p])}”" for p in trace.mask.hidden_for(sentence) if p < len(labels))


def state_note(trace, labels: list[str], sentence: int) -> str:
    """What the figures of one sentence show beyond the model's plain forward pass, for their titles:
    the keys hidden in that sentence, scaling off, temperature, and "what-if" when the model ran otherwise."""
    parts = []
    if hidden := hidden_labels(trace, labels, sentence):
        parts.append("hidden " + ", ".join(hidden))
    if not trace.scale:
        parts.append("scaling off")
    if trace.temperature != 1.0:
        parts.append(f"T = {trace.temperature:g}")
    if trace.what_ifs:  # the run, or the view of it, differs from the model as trained
        parts.append("what-if")
    return "".join(f" · {part}" for part in parts)


def head_title(trace, layer: int, head: int, labels: list[str], sentence: int) -> str:
    return f"{safe_label(trace.model_name)} · layer {layer} · head {head} · mask {trace.mask.name}{state_note(trace, labels, sentence)}"


def stages_of_head(trace, sentence: int, layer: int, head: int, stages=None, *, pattern_colour: str = "fixed", focus: int | None = None) -> dict:
    """The four stages of one head side by side, masked cells as gaps (in blocks of tokens beyond 128).

    Panel titles follow the state: the divisor used (or "no scaling"), the mask and hidden keys, the
    temperature. Raw and scaled scores share one colour scale."""
    return stages_and_table(trace, sentence, layer, head, stages, pattern_colour=pattern_colour, focus=focus)[0]


def stages_and_table(trace, sentence: int, layer: int, head: int, stages=None, *, pattern_colour: str = "fixed", focus: int | None = None) -> tuple:
    """`stages_of_head`'s figure and what builds its table: every cell of every stage drawn
    (`figure_tables.attention_table`; blocks of tokens named by their first position and token)."""
    stages = stages if stages is not None else trace.stages(layer)
    labels = sentence_labels(trace, sentence)
    titles = stage_titles(
        divisor=float(stages.scale),
        d_head=trace.d_head,
        temperature=float(stages.temperature),
        mask_name=trace.mask.name,
        hidden=hidden_labels(trace, labels, sentence),
    )
    title = head_title(trace, layer, head, labels, sentence)
    matrices, shown_labels, hidden, block = fit(
        {name: getattr(stages, name)[sentence, head].numpy() for name in STAGE_NAMES}, labels, ~stages.mask[sentence, head].numpy()
    )
    positions = None
    if block > 1:
        title += f" · blocks of {block}×{block} tokens"  # what a block holds: the long-input notice (head_part)
        starts = [int(p) for p in np.linspace(0, len(labels), len(shown_labels) + 1).astype(int)[:-1]]
        positions = (starts, starts)
    keep = (focus, focus) if focus is not None and block == 1 else (None, None)
    drawn = {name: np.array(matrix, dtype=np.float32) for name, matrix in matrices.items()}  # copies: the table keeps one head's, not the layer's
    starts = positions[0] if positions is not None else None
    figure = stages_figure(
        matrices,
        shown_labels,
        shown_labels,
        masked=hidden,
        title=title,
        titles=titles,
        pattern_colour=pattern_colour,
        layer=layer,
        head=head,
        positions=positions,
        keep=keep,
    )
    return figure, lambda: tables.attention_table(drawn, shown_labels, layer=layer, head=head, masked=hidden, positions=starts)


MASK_CHOICES = ("model", *MaskSpec.NAMES)  # the Mask control's choices (viz.content.settings.MASKS)


def stages_in_browser(trace, sentence: int, layer: int, head: int, stages, *, pattern_colour: str = "fixed") -> dict | None:
    """What the chart of `stages_of_head` needs to redraw itself for another mask, scaling, temperature or
    set of hidden keys the moment that control changes, before the server's figure for it arrives
    (ui/components/chart/live.js).

    Only where the browser can know the answer: in the first layer, whose Q and K come from the embeddings
    alone (in a later layer they depend on the layers before, which the model runs with these settings,
    so its raw scores change too), and at full resolution (block means cannot be redone from their
    means). None elsewhere. The raw scores go at full precision (float32, as the model computed them);
    the browser divides, masks and takes the softmax as `model.attention.attention_stages` does.
    Per mask choice: its name and its masked cells before any hidden key (bits, row by row), as
    `MaskSpec.build` makes them; per token of the sentence, the label the "Hide key tokens" box gives it
    (`hidden_token_label`) and its name in the titles.
    """
    labels = sentence_labels(trace, sentence)
    n = len(labels)
    if not drawn_in_browser(trace, layer, n):
        return None
    own = trace.own_mask or trace.mask
    masks = {}
    for choice in MASK_CHOICES:
        name = own.name if choice == "model" else choice
        spec = MaskSpec(causal="causal" in name, padding="padding" in name)
        hidden = ~spec.build(trace.key_valid)[sentence, 0].numpy()
        bits = base64.b64encode(np.packbits(hidden.ravel())).decode("ascii")
        masks[choice] = {"name": spec.name, "bits": bits, "causal": spec.causal, "padding": spec.padding}
    positions = range(len(trace.tokens[sentence]))
    return {
        **head_in_browser(trace, sentence, layer, head, stages),
        "d_head": trace.d_head,
        "divisor": float(trace.divisors[layer]) if trace.divisors else math.sqrt(trace.d_head),
        "masks": masks,
        "hide": {
            "labels": {hidden_token_label(trace, (sentence, p)): p for p in positions},
            "quoted": [f"“{safe_label(labels[p].strip() or labels[p])}”" for p in positions],
        },
        "own": {"mask": [own.causal, own.padding], "scaling": bool(trace.own_scale), "temperature": float(trace.own_temperature)},
        "what_if": bool(trace.ablate),  # beyond these controls
        "pattern_colour": pattern_colour,
        "marks": {"colour": MASK_MARK_COLOR, "max_side": MAX_MARKED_SIDE, "panel_px": stages_panel_px(n)},
        "now": {
            "scaling": bool(trace.scale),
            "mask": trace.mask.name,
            "temperature": float(trace.temperature),
            "hidden": list(trace.mask.hidden_for(sentence)),
            "hiding": bool(trace.mask.hidden_in),  # in any sentence: the run is a what-if
        },
    }


def drawn_in_browser(trace, layer: int, n: int) -> bool:
    """Whether the browser can draw a head's stages ahead of the server (`stages_in_browser`)."""
    return layer == 0 and n <= FULL_RESOLUTION and not trace.mask.hidden_keys


def head_in_browser(trace, sentence: int, layer: int, head: int, stages) -> dict:
    """What is a head's own in `stages_in_browser`: its number, its raw scores Q·Kᵀ (float32, row by
    row, as the model computed them) and the start of its figure's title (model · layer · head). The
    rest is the same for every head of the layer, so the chart of a head not shown (`attention_figures`,
    "stage_heads") is sent only this, and the browser draws it from a shown head's figure."""
    raw = np.ascontiguousarray(stages.scores_raw[sentence, head].numpy(), dtype="<f4")
    labels = sentence_labels(trace, sentence)
    return {
        "head": head,
        "raw": base64.b64encode(raw.tobytes()).decode("ascii"),
        "title": head_title(trace, layer, head, labels, sentence).split(" · mask ")[0],
        # what the browser matches a placeholder to the figure of a shown head by
        "model": trace.model_name,
        "layer": layer,
        "sentence": sentence,
        "n": len(labels),
    }


# The heads not shown are drawn ahead too (a click on a head shows its stages at once) while the raw scores
# of every head of the layer together are at most this many values (64 KB of float32): MiniLM up to 36
# tokens, the toy model up to 64.
AHEAD_HEAD_CELLS = 16_384


def pattern_of_head(trace, sentence: int, layer: int, head: int, stages=None, *, pattern_colour: str = "fixed") -> dict:
    """One head's softmax pattern at full resolution, every token."""
    stages = stages if stages is not None else trace.stages(layer)
    labels = sentence_labels(trace, sentence)
    pattern, hidden = stages.pattern[sentence, head].numpy(), ~stages.mask[sentence, head].numpy()
    low, high, bar = weight_scale(np.where(hidden, np.nan, pattern), colour=pattern_colour)
    return attention_heatmap(
        pattern,
        labels,
        labels,
        title=head_title(trace, layer, head, labels, sentence) + ": softmax pattern",
        colorbar_title=bar,
        masked=hidden,
        zmin=low,
        zmax=high,
        cells=dict(stage="pattern", layer=layer, head=head),
    )


def focus_of_head(trace, sentence: int, layer: int, head: int, centre: int, stages=None, *, pattern_colour: str = "fixed") -> dict:
    """For long inputs: 40 tokens around `centre` at full resolution, beside the whole pattern."""
    stages = stages if stages is not None else trace.stages(layer)
    labels = sentence_labels(trace, sentence)
    return focus_figure(
        stages.pattern[sentence, head].numpy(),
        labels,
        centre=centre,
        masked=~stages.mask[sentence, head].numpy(),
        title=head_title(trace, layer, head, labels, sentence) + ": focus window",
        pattern_colour=pattern_colour,
        cells=dict(layer=layer, head=head),
    )


def focus_table_of_head(trace, sentence: int, layer: int, head: int, centre: int, stages=None):
    """What builds `focus_of_head`'s table from the pattern it draws: the whole input's blocks (stage
    "pattern (weights of blocks of tokens)", each named by its first position and token, "the…"), then
    every cell of the window (stage "pattern"); masked cells empty."""
    stages = stages if stages is not None else trace.stages(layer)
    tokens = sentence_labels(trace, sentence)
    values = np.where(~stages.mask[sentence, head].numpy(), np.nan, stages.pattern[sentence, head].numpy()).astype(np.float32)  # [query_pos, key_pos], a copy

    def table():
        n = values.shape[0]
        start, stop = focus_range(n, centre, FOCUS_TOKENS)
        starts = [int(p) for p in block_edges(n, OVERVIEW_CELLS)[:-1]]
        blocks = [tokens[p] + ("…" if n > OVERVIEW_CELLS else "") for p in starts]
        whole = tables.attention_cells(
            block_weights(values, OVERVIEW_CELLS), "pattern (weights of blocks of tokens)", starts, blocks, starts, blocks, layer=layer, head=head
        )
        window = range(start, stop)
        shown = tables.attention_cells(
            values[start:stop, start:stop], "pattern", window, tokens[start:stop], window, tokens[start:stop], layer=layer, head=head
        )
        return pd.concat([whole, shown], ignore_index=True)

    return table


def renormalised_table_of_head(trace, sentence: int, layer: int, head: int, stages=None):
    """What builds `renormalised_of_head`'s table: the pattern without the sink keys, rows renormalised
    (stage "pattern renormalised"), the kept keys by their positions."""
    stages = stages if stages is not None else trace.stages(layer)
    tokens = sentence_labels(trace, sentence)
    values = np.where(~stages.mask[sentence, head].numpy(), np.nan, stages.pattern[sentence, head].numpy()).astype(np.float32)  # a copy
    hidden = sink_positions(trace, sentence)

    def table():
        shown, kept = renormalised_without(values, hidden)  # [query_pos, kept key]
        queries = range(values.shape[0])
        return tables.attention_cells(shown, "pattern renormalised", queries, tokens, kept, [tokens[k] for k in kept], layer=layer, head=head)

    return table


def renormalised_of_head(trace, sentence: int, layer: int, head: int, stages=None, *, pattern_colour: str = "fixed") -> dict:
    """The pattern with the first token, [CLS] and [SEP] hidden and every row renormalised (a view)."""
    stages = stages if stages is not None else trace.stages(layer)
    labels = sentence_labels(trace, sentence)
    return renormalised_figure(
        stages.pattern[sentence, head].numpy(),
        labels,
        labels,
        hidden=sink_positions(trace, sentence),
        masked=~stages.mask[sentence, head].numpy(),
        title=head_title(trace, layer, head, labels, sentence),
        pattern_colour=pattern_colour,
        cells=dict(layer=layer, head=head),
    )


def value_step_of_head(trace, sentence: int, layer: int, head: int, stages=None, *, pattern_colour: str = "fixed") -> dict:
    """z = pattern · V for one head (the model's own z)."""
    return value_step_and_table(trace, sentence, layer, head, stages, pattern_colour=pattern_colour)[0]


def value_step_and_table(trace, sentence: int, layer: int, head: int, stages=None, *, pattern_colour: str = "fixed") -> tuple:
    """`value_step_of_head`'s figure and what builds its table (`figure_tables.value_step_table`:
    `matrix` pattern, V or z, and its axes named)."""
    stages = stages if stages is not None else trace.stages(layer)
    labels = sentence_labels(trace, sentence)
    # copies: the table must not keep the whole layer's tensors alive
    pattern, v, z = (np.array(m, dtype=np.float32) for m in (stages.pattern[sentence, head], trace.v[layer, sentence, head], stages.z[sentence, head]))
    masked = ~stages.mask[sentence, head].numpy()
    figure = value_step_figure(
        pattern,
        v,
        z,
        labels,
        layer=layer,
        head=head,
        masked=masked,
        title=head_title(trace, layer, head, labels, sentence) + ": z = pattern · V",
        pattern_colour=pattern_colour,
    )
    return figure, lambda: tables.value_step_table(pattern, v, z, labels, layer=layer, head=head, masked=masked)


def output_step(trace, model, sentence: int, layer: int, heads: list[int], stages=None) -> dict:
    """Every head's z side by side, the layer's W_O, and the model's own attention output."""
    return output_step_and_table(trace, model, sentence, layer, heads, stages)[0]


def output_step_and_table(trace, model, sentence: int, layer: int, heads: list[int], stages=None) -> tuple:
    """`output_step`'s figure and what builds its table (`figure_tables.output_step_table`: `matrix` z,
    W_O or output, and its axes named)."""
    stages = stages if stages is not None else trace.stages(layer)
    labels = sentence_labels(trace, sentence)
    w_o, _ = model.output_projection(layer)
    output = model.attention_output(layer, stages.z[sentence : sentence + 1])[0]  # [pos, d_model]
    z_heads = np.array(stages.z[sentence], dtype=np.float32)  # [head, pos, d_head], a copy (see value_step_and_table)
    # a copy of W_O: a view would keep the model's weights alive with the page's content (a mapped
    # safetensors file is one storage: 0.5 GB of SmolLM2 held by one layer's W_O in a closed tab's session)
    weights, out = np.array(w_o.numpy(), dtype=np.float32), output.numpy()  # [head · d_head, d_model], [pos, d_model]
    figure = output_step_figure(
        z_heads,
        weights,
        out,
        labels,
        heads=heads,
        layer=layer,
        title=f"{safe_label(trace.model_name)} · layer {layer}{state_note(trace, labels, sentence)}: heads side by side · W_O",
    )
    return figure, lambda: tables.output_step_table(z_heads, weights, out, labels, layer=layer)


def scaling_figures(trace, sentence: int, layer: int, head: int, *, pattern_colour: str = "fixed") -> dict[str, dict]:
    """The softmax with and without 1/√d_k on one colour scale, and how peaked each row is in both."""
    return scaling_content(trace, sentence, layer, head, pattern_colour=pattern_colour).figures


def scaling_content(trace, sentence: int, layer: int, head: int, *, pattern_colour: str = "fixed") -> PageContent:
    """`scaling_figures` with their tables: each softmax's cells (blocks named by their first position),
    and each row's entropy and largest weight, scaled and unscaled (`figure_tables.row_stats_table`)."""
    labels = sentence_labels(trace, sentence)
    scaled = trace.pattern(layer, sentence, scale=True)[head].numpy()
    unscaled = trace.pattern(layer, sentence, scale=False)[head].numpy()
    hidden = ~trace.attend()[sentence, 0].numpy()
    stats = row_stats_figure(scaled, unscaled, labels, masked=hidden)
    kept = {"scaled": np.array(scaled), "unscaled": np.array(unscaled)}  # copies of this head's rows, not every head's

    def stats_table():
        return tables.row_stats_table({name: (row_entropy(p), np.nan_to_num(p).max(axis=-1)) for name, p in kept.items()}, labels)

    shown, block_labels, block_hidden, block = fit({"pattern": scaled, "unscaled": unscaled}, labels, hidden, weights=("pattern", "unscaled"))
    note = f" · {block}×{block} blocks" if block > 1 else ""  # (two titles side by side: short)
    low, high, bar = weight_scale(*(np.where(block_hidden, np.nan, shown[name]) for name in ("pattern", "unscaled")), colour=pattern_colour)
    common = dict(colorbar_title=bar, masked=block_hidden, zmin=low, zmax=high, max_hover_cells=4096, height=520)  # two side by side
    state = state_note(trace, labels, sentence).replace(" · scaling off", "")
    temperature = f" ÷ {trace.temperature:g}" if trace.temperature != 1.0 else ""
    starts = [int(p) for p in np.linspace(0, len(labels), len(block_labels) + 1).astype(int)[:-1]] if block > 1 else None

    def table(stage: str, matrix: np.ndarray):
        return lambda: tables.attention_table(
            {stage: matrix}, block_labels, layer=layer, head=head, masked=block_hidden, masked_stages=(stage,), positions=starts
        )

    figures = {
        f"softmax-scaled-L{layer}-H{head}": attention_heatmap(
            shown["pattern"],
            block_labels,
            block_labels,
            title=f"softmax(QKᵀ/√{trace.d_head}{temperature}) · layer {layer} · head {head}{state}{note}",
            cells=dict(stage="pattern scaled", layer=layer, head=head),
            **common,
        ),
        f"softmax-unscaled-L{layer}-H{head}": attention_heatmap(
            np.where(block_hidden, np.nan, shown["unscaled"]),
            block_labels,
            block_labels,
            title=f"softmax(QKᵀ{temperature}), no scaling · layer {layer} · head {head}{state}{note}",
            cells=dict(stage="pattern unscaled", layer=layer, head=head),
            **common,
        ),
        f"row-stats-L{layer}-H{head}": stats,
    }
    tables_of = {
        f"softmax-scaled-L{layer}-H{head}": table("pattern scaled", np.array(shown["pattern"], dtype=np.float32)),
        f"softmax-unscaled-L{layer}-H{head}": table("pattern unscaled", np.array(shown["unscaled"], dtype=np.float32)),
        f"row-stats-L{layer}-H{head}": stats_table,
    }
    return PageContent(figures=figures, figure_tables=tables_of)


def overview_figure(trace, sentence: int, *, pattern_colour: str = "fixed") -> dict:
    """Every head of every layer as small multiples (in blocks of tokens for long inputs)."""
    return overview_and_table(trace, sentence, pattern_colour=pattern_colour)[0]


def overview_and_table(trace, sentence: int, *, pattern_colour: str = "fixed") -> tuple:
    """`overview_figure` and what builds its table from the weights it draws (`viz.overview.overview_table`)."""
    labels = sentence_labels(trace, sentence)
    hidden = ~trace.attend()[sentence, 0].numpy()
    return heads_overview_and_table(
        _LayerPatterns(trace, sentence),
        labels,
        labels,
        masked=hidden,
        pattern_colour=pattern_colour,
        title=f"{safe_label(trace.model_name)}: attention patterns of every head{state_note(trace, labels, sentence)}",
    )


class _LayerPatterns:
    """The sentence's pattern `[head, query_pos, key_pos]` of each layer, computed when `heads_overview` reads
    it: one layer in memory at a time, not all of them (280 MB for SmolLM2 at 512 tokens)."""

    def __init__(self, trace, sentence: int):
        self.trace, self.sentence = trace, sentence

    def __len__(self) -> int:
        return self.trace.n_layers

    def __getitem__(self, layer: int) -> np.ndarray:
        return self.trace.pattern(layer, self.sentence).numpy()


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


def attention_page(settings, trace, query: int | None = None, key: int | None = None, overview: bool = True, model=None) -> PageContent:
    """Figures, for each chosen head: `stages-L{l}-H{h}`, `value-step-L{l}-H{h}` (z = pattern · V),
    `focus-L{l}-H{h}` beyond 128 tokens (a window around `settings.focus` beside the whole input),
    `renormalised-L{l}-H{h}` when `settings.sinks`; `output-step-L{l}` (heads concatenated · W_O,
    given the `model`); `softmax-scaled-…`, `softmax-unscaled-…`, `row-stats-…` for the first head;
    `head-view-L{l}` and its values (see `head_view_section`); `overview-all-heads`; table `worked-example`
    for one query and key (default: `settings.cell`, else token 2 and token 0).

    The two parts, `attention_figures` and `attention_selection`, can be built (and cached) apart: the
    first does not read the pinned token, the cell or the word level, which a click changes."""
    return attention_figures(settings, trace, overview=overview, model=model).merge(attention_selection(settings, trace, query, key))


def built(builder, settings, trace, model=None, **shared) -> PageContent:
    """A part of a page, built as it is asked (`attention_figures`' default `part`)."""
    return builder(settings, trace, **shared) if model is None else builder(settings, trace, model=model, **shared)


def attention_figures(settings, trace, overview: bool = True, model=None, part=built) -> PageContent:
    """The Attention page without what a click on a token or a cell changes (see `attention_selection`):
    it reads neither `settings.pinned`, `settings.cell` nor `settings.words`.

    Made of parts that each read less of the settings: what one head shows (`head_part`, for each head
    shown), the scaling comparison of the first head (`first_head_part`), the heads side by side
    (`output_part`), and what does not depend on the heads (`layer_part`, `overview_part`). Each part is
    `part(builder, settings, trace, model, stages=…)`: the app caches each apart (ui.content_cache), so
    that showing one more head builds that head's figures only (at 512 tokens on the toy model, 0.14 of
    the whole page's 0.43 s), not the overview and the other heads again. Every part is given the
    settings with only the heads it reads, and the layer's stages (computed once, when a part needs them)."""
    heads = list(settings.heads) or [0]
    stages = _Stages(trace, settings.layer)
    content = PageContent()
    layer = part(layer_part, replace(settings, heads=()), trace, stages=stages)
    each = {head: part(head_part, replace(settings, heads=(head,)), trace, stages=stages) for head in heads}
    content.values.update(layer.values, heads=heads, head=heads[0])
    # every head of the layer in head order, and whether it is shown (each has its place on the page, so a
    # chart stays where it is when heads or layers change)
    content.values["stage_heads"] = [(head, head in heads) for head in range(trace.n_heads)]
    for head in heads:  # in the order the page had them before it was made of parts: every head's stages, then…
        shown = each[head]
        content.figures.update((name, fig) for name, fig in shown.figures.items() if not name.startswith("value-step-"))
        content.figure_tables.update(shown.figure_tables)
        content.values.update(shown.values)
        content.notices += shown.notices
    first = part(first_head_part, replace(settings, heads=(heads[0],)), trace, stages=stages)
    content.figures.update(first.figures)
    content.figure_tables.update(first.figure_tables)
    for head in heads:  # …the scaling comparison, then every head's value step
        content.figures.update((name, fig) for name, fig in each[head].figures.items() if name.startswith("value-step-"))
    if model is not None and hasattr(model, "attention_output"):
        output = part(output_part, replace(settings, heads=tuple(heads)), trace, model, stages=stages)
        content.figures.update(output.figures)
        content.figure_tables.update(output.figure_tables)
    if overview:
        whole = part(overview_part, replace(settings, heads=()), trace)
        content.figures.update(whole.figures)
        content.figure_tables.update(whole.figure_tables)
    content.values["head_options"] = [(lay, h) for lay in range(trace.n_layers) for h in range(trace.n_heads)]
    for head in heads:  # a head shown has its chart: no placeholder for it
        content.values.pop(f"placeholder-stages-L{settings.layer}-H{head}", None)
    return content


def focus_centre(settings, labels: list[str]) -> int:
    """The token the focus window is around: `settings.focus`, or the middle of the sentence."""
    return min(settings.focus, len(labels) - 1) if settings.focus >= 0 else len(labels) // 2


class _Stages:
    """`trace.stages(layer)`, computed the first time a part asks for it (a part found in the cache does not)."""

    def __init__(self, trace, layer: int):
        self.trace, self.layer, self._stages = trace, layer, None

    def get(self):
        if self._stages is None:
            self._stages = self.trace.stages(self.layer)
        return self._stages


def layer_part(settings, trace, stages: _Stages) -> PageContent:
    """What the Attention page's figures say whatever heads are shown: sizes, labels, the focus window,
    the attention sinks, and each head's raw scores for the browser (`placeholder-…`) where it can draw
    the heads not shown (first layer, within AHEAD_HEAD_CELLS)."""
    content = PageContent()
    b, layer = settings.sentence, settings.layer
    labels = sentence_labels(trace, b)
    centre = focus_centre(settings, labels)
    content.values.update(d_k=trace.d_head, layer=layer, labels=labels, n_tokens=len(trace.tokens[b]), focus=centre)
    content.values["sinks"] = [spaces_named(labels[p]) for p in sink_positions(trace, b)]  # quoted in the page's text
    if drawn_in_browser(trace, layer, len(labels)) and trace.n_heads * len(labels) ** 2 <= AHEAD_HEAD_CELLS:
        for head in range(trace.n_heads):
            content.values[f"placeholder-stages-L{layer}-H{head}"] = head_in_browser(trace, b, layer, head, stages.get())
    return content


def head_part(settings, trace, stages: _Stages) -> PageContent:
    """What the head `settings.heads[0]` shows: its stages (and their data for the browser), its focus
    window beyond FULL_RESOLUTION tokens, its renormalised view without the sinks, its value step."""
    content = PageContent()
    b, layer, head, colour = settings.sentence, settings.layer, settings.heads[0], settings.pattern_colour
    labels = sentence_labels(trace, b)
    centre = focus_centre(settings, labels)
    layer_stages = stages.get()
    name = f"stages-L{layer}-H{head}"
    content.figures[name], content.figure_tables[name] = stages_and_table(trace, b, layer, head, layer_stages, pattern_colour=colour, focus=centre)
    content.values[f"live-stages-L{layer}-H{head}"] = stages_in_browser(trace, b, layer, head, layer_stages, pattern_colour=colour)
    if len(labels) > FULL_RESOLUTION:
        content.figures[f"focus-L{layer}-H{head}"] = focus_of_head(trace, b, layer, head, centre, layer_stages, pattern_colour=colour)
        content.figure_tables[f"focus-L{layer}-H{head}"] = focus_table_of_head(trace, b, layer, head, centre, layer_stages)
        content.notice(
            f"long-input-H{head}",
            f"More than {FULL_RESOLUTION} tokens: the panels show blocks of tokens. A block's scores are their mean; its weight is what "
            "its queries give its keys (summed over the keys, averaged over the queries), so each row still sums to 1. "
            "The focus window below shows every token around the one chosen.",
            "caption",
        )
    if settings.sinks:
        content.figures[f"renormalised-L{layer}-H{head}"] = renormalised_of_head(trace, b, layer, head, layer_stages, pattern_colour=colour)
        content.figure_tables[f"renormalised-L{layer}-H{head}"] = renormalised_table_of_head(trace, b, layer, head, layer_stages)
    if bool(layer_stages.fully_masked_rows[b, head].any()):
        content.notice(f"fully-masked-H{head}", "Rows whose every key is masked attend to nothing: their weights are all 0 (no NaN).", "caption")
    name = f"value-step-L{layer}-H{head}"
    content.figures[name], content.figure_tables[name] = value_step_and_table(trace, b, layer, head, layer_stages, pattern_colour=colour)
    return content


def first_head_part(settings, trace, stages: _Stages) -> PageContent:
    """The softmax with and without scaling, and how peaked their rows are, for the first head shown."""
    return scaling_content(trace, settings.sentence, settings.layer, settings.heads[0], pattern_colour=settings.pattern_colour)


def output_part(settings, trace, model, stages: _Stages) -> PageContent:
    """The heads side by side, the layer's W_O and its output (the heads shown are marked)."""
    figure, table = output_step_and_table(trace, model, settings.sentence, settings.layer, list(settings.heads), stages.get())
    return PageContent(figures={f"output-step-L{settings.layer}": figure}, figure_tables={f"output-step-L{settings.layer}": table})


def overview_part(settings, trace) -> PageContent:
    """Every head of every layer (the sentence shown, the colour of the weights)."""
    figure, table = overview_and_table(trace, settings.sentence, pattern_colour=settings.pattern_colour)
    return PageContent(figures={"overview-all-heads": figure}, figure_tables={} if table is None else {"overview-all-heads": table})


def attention_selection(settings, trace, query: int | None = None, key: int | None = None) -> PageContent:
    """What the pinned token, the chosen cell and the word level decide: table `worked-example` (default
    cell: `settings.cell`, else token 2 and token 0) and the head view section (`head_view_section`)."""
    stages = trace.stages(settings.layer)
    if query is None and key is None and len(settings.cell) == 2:  # the cell chosen in the head view or a heatmap
        query, key = settings.cell
    return worked_example_content(settings, trace, query, key, stages).merge(head_view_section(settings, trace, stages))
