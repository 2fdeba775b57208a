"""The Heads page: what every head does on this sentence, rollout, value norms, ablation, sentence diffs.

Each section is a function `settings, trace, model, … → PageContent`; `heads_page` merges the ones that
need no extra input. Numbers come from `model.heads`; nothing is precomputed.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from model.heads import (
    BADGE_RULES,
    head_summary,
    kl_divergence,
    model_patterns,
    rank_heads,
    rollout,
    attention_flow,
    sentence_diff,
    value_weighted,
)
from model.score_parts import CONTENT_MAX, POSITIONAL_MIN, head_position_shares
from viz._common import DECORATION_META
from viz.content import figure_tables as tables
from viz.content.page import PageContent
from viz.content.why import NO_LIFT, SHARE_TOKENS, THRESHOLDS, share_badge, share_measure, share_undefined
from viz.heads import (
    change_grid_figure,
    cosine_by_layer_figure,
    diff_figure,
    distribution_change_figure,
    flow_figure,
    head_grid_figure,
    key_totals_figure,
    ranking_figure,
    rollout_figure,
    value_norm_figure,
)
from viz.labels import safe_label

FLOW_MAX_TOKENS = 64  # attention flow: one max-flow per input token, ≈ 0.3 s at 64 tokens on 6 layers
TOP_TOKENS = 8  # tokens listed in a before/after distribution
# The grid's position badges: one mark per class (a plotly marker symbol, the same shape as a character)
POSITION_MARKS = {"positional": ("triangle-up", "▲"), "mixed": ("diamond", "◆"), "content": ("circle", "●")}
POSITION_BADGE_NAMES = {
    "positional": f"position: positional (≥ {POSITIONAL_MIN:.0%})",
    "mixed": "position: mixed",
    "content": f"position: content (≤ {CONTENT_MAX:.0%})",
}


def open_head(settings, trace) -> tuple[int, int]:
    """The layer and head the sidebar has open (the first of its heads)."""
    layer = min(max(settings.layer, 0), trace.n_layers - 1)
    head = min(max(settings.heads[0] if settings.heads else 0, 0), trace.n_heads - 1)
    return layer, head


def position_section(settings, trace) -> PageContent:
    """The position share of every head where it is defined (`viz.content.why.share_undefined`: every layer
    of a rotary model, the first layer of a model that adds positions) and the sentence has at most
    `SHARE_TOKENS` tokens, from `model.score_parts.head_position_shares`: values `position_shares` and
    `position_badges` (`[layer][head]`, None where not computed), table `position-shares`, notice
    `position-badges` (the measure, the thresholds, and what has no badge)."""
    content = PageContent()
    b = settings.sentence
    n = len(trace.tokens[b])
    layers = [layer for layer in range(trace.n_layers) if share_undefined(trace, layer) is None]
    if n > SHARE_TOKENS:
        layers = []
    shares: list[list[float | None]] = [[None] * trace.n_heads for _ in range(trace.n_layers)]
    for layer in layers:
        for head_share in head_position_shares(trace, layer, b):
            shares[layer][head_share.head] = head_share.position_share
    badges = [[None if share is None else share_badge(share) for share in row] for row in shares]
    rows = [dict(layer=l, head=h, position_share=shares[l][h], badge=badges[l][h]) for l in layers for h in range(trace.n_heads)]
    content.tables["position-shares"] = pd.DataFrame(rows, columns=["layer", "head", "position_share", "badge"]).round(3)
    content.values.update(position_shares=shares, position_badges=badges)
    marks = "▲ positional, ◆ mixed, ● content"
    if n > SHARE_TOKENS and any(share_undefined(trace, layer) is None for layer in range(trace.n_layers)):
        text = f"Position badges are computed for sentences of up to {SHARE_TOKENS} tokens; this one has {n} (the Why page gives one layer's for any length)."
    elif not layers:
        text = f"No position badges: {share_undefined(trace, 0)}"
    else:
        where = "every layer." if len(layers) == trace.n_layers else f"layer 0 only. {share_undefined(trace, 1)}"
        text = (
            f"Marks {marks}: the share of a head's lift (how far its pattern's weighted score stands above the mean score of the keys) "
            f"that {share_measure(trace, layers[0])} make, as on the Why page; {THRESHOLDS}. On {where}"
        )
        without = [f"{l}.{h}" for l in layers for h in range(trace.n_heads) if badges[l][h] == NO_LIFT]
        if without:
            text += f" Heads with no lift on this sentence, no mark: {', '.join(without)}."
    content.notice("position-badges", text, "caption")
    return content


def position_marks(figure: dict, shares: list[list[float | None]]) -> dict:
    """The grid of `head_grid_figure` with each head's position badge marked on its square, one legend entry
    per badge. A square large enough to hold its behaviour badge's word gets the mark as a second line under
    the word (so it stays inside the square at whatever size the browser draws it); a smaller square gets a
    black mark of its own at its centre, which a click opens like the square (customdata [layer, head, …])."""
    squares = [trace for trace in figure["data"] if trace.get("marker", {}).get("symbol") == "square"]
    if not squares:
        return figure
    worded = "text" in squares[0]["mode"]
    if worded:
        for trace in squares:
            marks = [shares[l][h] for l, h, *_ in trace["customdata"]]
            trace["text"] = [
                word if share is None or share_badge(share) == NO_LIFT else f"{word}<br>{POSITION_MARKS[share_badge(share)][1]}"
                for word, share in zip(trace["text"], marks)
            ]
    size = max(8, round(squares[0]["marker"]["size"] * 0.6))
    for badge, (symbol, _) in POSITION_MARKS.items():
        cells = [(l, h) for l, row in enumerate(shares) for h, share in enumerate(row) if share is not None and share_badge(share) == badge]
        if not cells:
            continue
        mark = dict(type="scatter", mode="markers", name=POSITION_BADGE_NAMES[badge])
        mark["marker"] = dict(symbol=symbol, size=min(size, 12) if worded else size, color="black", line=dict(width=1, color="white"))
        if worded:  # the legend's entry only: the marks are in the squares' words
            mark.update(x=[None], y=[None], hoverinfo="skip", meta=dict(DECORATION_META))  # no data: not in the CSV
        else:
            mark.update(
                x=[h for _, h in cells],
                y=[l for l, _ in cells],
                customdata=[[l, h, f"{shares[l][h]:.0%}"] for l, h in cells],
                hovertemplate=f"layer %{{customdata[0]}}, head %{{customdata[1]}}: position share %{{customdata[2]}}, {badge}<extra></extra>",
            )
        figure["data"].append(mark)
    return figure


def summary_section(settings, trace, positions: PageContent | None = None) -> PageContent:
    """Figure `head-grid` (every head by badge, clickable; with `positions`, a `position_section`, each head's
    position badge marked on it and its share in the hover), table `head-summary`, value `badge_counts`."""
    content = PageContent()
    b = settings.sentence
    summary = head_summary(trace, b)
    shares = positions.values["position_shares"] if positions is not None else [[None] * trace.n_heads for _ in range(trace.n_layers)]

    def position(l: int, h: int) -> str:
        share = shares[l][h]
        if share is None:
            return ""
        return f" · position {'—' if math.isnan(share) else f'{share:.0%}'} ({share_badge(share)})"

    hover = [
        [
            f"entropy {summary.entropy[l, h]:.2f} bits · distance {summary.distance[l, h]:.1f} · prev {summary.previous[l, h]:.0%} · "
            f"self {summary.self[l, h]:.0%} · first {summary.first[l, h]:.0%} · delim {summary.delimiter[l, h]:.0%} · punct {summary.punctuation[l, h]:.0%}"
            f"{position(l, h)}"
            for h in range(trace.n_heads)
        ]
        for l in range(trace.n_layers)
    ]
    grid = head_grid_figure(
        summary.badges, hover, title=f"Every head of {safe_label(trace.model_name)} on sentence {b + 1}, by badge", selected=open_head(settings, trace)
    )
    content.figures["head-grid"] = position_marks(grid, shares)
    rows = summary.rows()
    content.figure_tables["head-grid"] = lambda: tables.head_grid_table(rows)
    table = pd.DataFrame(rows)
    content.tables["head-summary"] = table.round(3)
    content.tables["badge-rules"] = pd.DataFrame({"badge": list(BADGE_RULES), "rule (first that holds)": list(BADGE_RULES.values())})
    content.values["badge_counts"] = table["badge"].value_counts().to_dict()
    return content


def open_head_section(settings, trace, model) -> PageContent:
    """For the open head: `value-norms-L{l}-H{h}` (α beside ‖α·f(x)‖) and `value-shares-L{l}-H{h}`."""
    content = PageContent()
    b = settings.sentence
    layer, head = open_head(settings, trace)
    tokens = [t.text for t in trace.tokens[b]]
    result = value_weighted(trace, model, layer, b)
    pattern, norms = np.array(result.pattern[head]), np.array(result.weighted_norm[head])  # copies: the tables keep one head's
    masked = ~trace.attend(trace.mask)[b, 0, : len(tokens), : len(tokens)].numpy()
    content.figures[f"value-norms-L{layer}-H{head}"] = value_norm_figure(
        pattern, norms, tokens, title=f"Layer {layer}, head {head}: the weight α beside what is actually sent ‖α·f(x)‖", masked=masked
    )
    content.figure_tables[f"value-norms-L{layer}-H{head}"] = lambda: tables.value_norms_table(pattern, norms, tokens, layer=layer, head=head, masked=masked)
    weight_share, norm_share = result.key_shares(head)
    content.figures[f"value-shares-L{layer}-H{head}"] = key_totals_figure(
        weight_share.numpy(), norm_share.numpy(), tokens, title=f"Layer {layer}, head {head}: each key's share of the weight and of what is sent"
    )
    content.figure_tables[f"value-shares-L{layer}-H{head}"] = lambda: tables.key_shares_table(
        weight_share.numpy(), norm_share.numpy(), tokens, layer=layer, head=head
    )
    top = int(torch.argmax(weight_share))
    content.values.update(
        open_layer=layer,
        open_head=head,
        top_key=tokens[top],
        top_key_weight=float(weight_share[top]),
        top_key_norm=float(norm_share[top]),
        f_norm_top=float(result.transformed_norm[head, top]),
        f_norm_median=float(result.transformed_norm[head].median()),
    )
    return content


def rollout_section(settings, trace) -> PageContent:
    """Figures `rollout` (last layer) and `flow` (the last token: rollout beside flow, when short enough)."""
    content = PageContent()
    b = settings.sentence
    tokens = [t.text for t in trace.tokens[b]]
    patterns = model_patterns(trace, b)
    rolled = rollout(patterns)[-1].clone()  # [output token, input token] of the last layer alone (the tables keep it)
    content.figures["rollout"] = rollout_figure(rolled.numpy(), tokens, title="Rollout: what each token of the last layer finally draws on")
    content.figure_tables["rollout"] = lambda: tables.token_grid(rolled.numpy(), tokens, tokens, "share")
    last = len(tokens) - 1
    flow = None
    if len(tokens) <= FLOW_MAX_TOKENS:
        raw = attention_flow(patterns, last)
        flow = (raw / raw.sum().clamp_min(1e-30)).numpy()
    else:
        content.notice(
            "flow-too-long", f"Attention flow is drawn up to {FLOW_MAX_TOKENS} tokens (one max-flow per token); this sentence has {len(tokens)}.", "caption"
        )
    content.figures["flow"] = flow_figure(
        rolled[last].numpy(), flow, tokens, title=f"What the last token “{safe_label(tokens[last])}” draws on: rollout and flow"
    )
    content.figure_tables["flow"] = lambda: tables.flow_table(rolled[last].numpy(), flow, tokens)
    content.values["rollout_top"] = tokens[int(rolled[last].argmax())]
    return content


def prediction_position(trace, sentence: int) -> tuple[int | None, str]:
    """Where the model's head predicts: the last token (next-token head) or the first [MASK] (masked-word head)."""
    if trace.logits is None and trace.last_logits is None:
        return None, "none"
    if trace.lm_head == "masked":
        masks = [i for i, t in enumerate(trace.tokens[sentence]) if t.text == "[MASK]"]
        return (masks[0], "masked") if masks else (None, "masked-absent")
    return len(trace.tokens[sentence]) - 1, "next"


def ablation_section(settings, trace, model, heads: list[tuple[int, int]], word: int) -> PageContent:
    """Knock out `heads` and compare: `ablation-prediction` (next token or [MASK]), `ablation-word`
    (cosine of token `word`'s vector before/after, per layer), values `kl_bits`, `cosine_last`."""
    content = PageContent()
    b = settings.sentence
    if not heads:
        content.notice("ablation-none", "Choose one or more heads to knock out.", "caption")
        return content
    after = model.trace(list(trace.texts), mask=trace.mask, scale=trace.scale, temperature=trace.temperature, ablate=heads)
    names = ", ".join(f"{l}.{h}" for l, h in heads)
    position, kind = prediction_position(trace, b)
    if position is not None:
        logits_before = trace.logits[b, position] if trace.logits is not None else trace.last_logits[b]
        logits_after = after.logits[b, position] if after.logits is not None else after.last_logits[b]
        p_before, p_after = torch.softmax(logits_before, -1), torch.softmax(logits_after, -1)
        ids = list(dict.fromkeys(torch.topk(p_before, TOP_TOKENS).indices.tolist() + torch.topk(p_after, 3).indices.tolist()))
        words = [model.tokenizer.id_to_text(i) for i in ids]
        what = "next token" if kind == "next" else f"masked word at position {position}"
        kept_before, kept_after = p_before[ids].numpy(), p_after[ids].numpy()  # the candidates drawn
        content.figures["ablation-prediction"] = distribution_change_figure(words, kept_before, kept_after, title=f"The {what} with heads {names} knocked out")
        content.figure_tables["ablation-prediction"] = lambda: tables.before_after_table(words, kept_before, kept_after)
        content.values.update(
            kl_bits=float(kl_divergence(logits_before, logits_after)), top_before=words[0], top_after=model.tokenizer.id_to_text(int(p_after.argmax()))
        )
    elif kind == "masked-absent":
        content.notice("ablation-no-mask", "This model predicts masked words: put [MASK] in the sentence to see its prediction change.", "caption")
    else:
        content.notice("ablation-no-head", f"{model.name} has no prediction head here; the change shows in the contextual vectors below.", "caption")
    n = len(trace.tokens[b])
    word = min(max(word, 0), n - 1)
    before_h, after_h = trace.hidden_states[:, b, word], after.hidden_states[:, b, word]  # [layer + 1, d_model]
    cosines = torch.nn.functional.cosine_similarity(before_h, after_h, dim=-1).numpy()
    token = trace.tokens[b][word].text
    content.figures["ablation-word"] = cosine_by_layer_figure(
        cosines, title=f"The vector of “{safe_label(token)}” with heads {names} knocked out: cosine with the model's own, per layer"
    )
    content.figure_tables["ablation-word"] = lambda: tables.cosine_by_state_table(cosines)
    content.values.update(cosine_last=float(cosines[-1]), word=token)
    return content


def ranking_section(settings, trace, model) -> PageContent:
    """Every head knocked out alone: figure `head-ranking` (top 15), table `ranking`, value `measure`."""
    content = PageContent()
    text = trace.texts[settings.sentence]
    ranking = rank_heads(model, text)
    top = ranking.top(15)
    content.figures["head-ranking"] = ranking_figure(
        [f"layer {l} · head {h}" for l, h, _ in top], [v for _, _, v in top], title="Heads ranked by their effect on this sentence", value_title=ranking.measure
    )
    content.figure_tables["head-ranking"] = lambda: tables.ranking_table(top)
    content.figures["head-effects"] = change_grid_figure(ranking.effect.numpy(), title="Effect of knocking out each head alone", value_title="effect")
    content.figure_tables["head-effects"] = lambda: tables.per_head_table(ranking.effect.numpy(), "effect")
    content.tables["ranking"] = pd.DataFrame([dict(layer=l, head=h, effect=round(v, 6)) for l, h, v in ranking.top(ranking.effect.numel())])
    content.values["measure"] = ranking.measure
    return content


def diff_section(settings, trace, other: int) -> PageContent:
    """Sentences `settings.sentence` (a) and `other` (b) aligned: `diff-change` (every head), `diff-L{l}-H{h}`
    (the open head's α(b) − α(a) on aligned tokens), table `diff-top`, values `aligned`, `unaligned`."""
    content = PageContent()
    a = settings.sentence
    if len(trace.texts) < 2 or other == a or not 0 <= other < len(trace.texts):
        content.notice("diff-one-sentence", "Type a second sentence (one per line) that differs in a few words to compare them head by head.", "caption")
        return content
    diff = sentence_diff(trace, a, other)
    if not diff.pairs:
        content.notice("diff-nothing-aligned", "The two sentences have no token in common: nothing to align.", "warning")
        return content
    content.figures["diff-change"] = change_grid_figure(
        diff.change.numpy(), title=f"How far each head's rows move from sentence {a + 1} to sentence {other + 1}", value_title="mean TV distance"
    )
    change = diff.change.numpy()
    content.figure_tables["diff-change"] = lambda: tables.per_head_table(change, "mean_tv_distance")
    layer, head = open_head(settings, trace)
    labels = [diff.tokens_a[i] for i, _ in diff.pairs]
    difference = np.array(diff.difference[layer, head], dtype=np.float32)  # [aligned query, aligned key], a copy of one head's
    content.figures[f"diff-L{layer}-H{head}"] = diff_figure(
        difference, labels, title=f"Layer {layer}, head {head}: α(sentence {other + 1}) − α(sentence {a + 1}) on the aligned tokens"
    )
    content.figure_tables[f"diff-L{layer}-H{head}"] = lambda: tables.token_grid(difference, labels, labels, "difference", layer=layer, head=head)
    content.tables["diff-top"] = pd.DataFrame([dict(layer=l, head=h, change=round(v, 4)) for l, h, v in diff.top_heads(10)])
    paired_a = {i for i, _ in diff.pairs}
    paired_b = {j for _, j in diff.pairs}
    content.values.update(
        aligned=len(diff.pairs),
        unaligned_a=[diff.tokens_a[i] for i in range(len(diff.tokens_a)) if i not in paired_a],
        unaligned_b=[diff.tokens_b[j] for j in range(len(diff.tokens_b)) if j not in paired_b],
        max_change=float(diff.change.max()),
    )
    return content


def heads_page(settings, trace, model, positions: PageContent | None = None) -> PageContent:
    """The sections that need no extra choice: summary (with `positions`, a `position_section`, merged in and
    marked on the grid; built here when None), the open head, rollout and flow, the diff of the sentence shown
    with the next one."""
    other = (settings.sentence + 1) % max(len(trace.texts), 1)
    positions = position_section(settings, trace) if positions is None else positions
    content = (
        summary_section(settings, trace, positions).merge(positions).merge(open_head_section(settings, trace, model)).merge(rollout_section(settings, trace))
    )
    return content.merge(diff_section(settings, trace, other))
