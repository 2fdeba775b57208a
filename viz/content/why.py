"""The "Why does this head look there?" page: one head's raw scores split into named parts.

See `model.score_parts` for the maths. The page shows maps of the parts (one colour scale), the parts of
the score of one (query, key) pair, for rotary models the pairs of dimensions and the score slid to
other distances, and every head's position share with its badge (`share_measure`, `share_undefined` and
`shares_figure` also serve the Heads page's grid and the Attention page's head view).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import torch

from model.score_parts import (
    CONTENT_MAX,
    badge_for,
    FAST_PAIR_FRACTION,
    POSITIONAL_MIN,
    fast_pairs,
    head_position_shares,
    is_position_only,
    rotary_pairs,
    split_name,
)
from viz._common import DECORATION_META
from viz.content.common import fit, last_word, sentence_labels
from viz.content import figure_tables as tables
from viz.content.page import PageContent
from viz.labels import safe_label
from viz.score_parts import distance_curve_figure, head_shares_figure, pair_bar_figure, part_maps_figure, parts_bar_figure

FIRST_LAYER_MAPS = ("token·token", "token·position", "position·token", "position·position")
TOP_MAPS = 4  # later layers and rotary models: the parts with the largest mean size get a map each
BAR_PARTS = 12  # the bar of one score names this many parts; the rest are summed
MIN_DISTANCES = 64  # the score-against-distance curve reaches at least this far
TABLE_TOKENS = 64  # beyond this many tokens the CSV holds the chosen query's row only
TIDY_COLUMNS = ("layer", "head", "query_position", "key_position", "query_source", "key_source", "value")
SHARE_TOKENS = 64  # the Heads grid and the head view compute shares up to this many tokens (SmolLM2: 270 heads of 32 pairs)
NO_LIFT = "no lift"  # a head whose scores lift nothing on the sentence (each query sees one key or none, or level scores)
THRESHOLDS = f"positional at {POSITIONAL_MIN:.0%} or more, content at {CONTENT_MAX:.0%} or less (negative shares too), mixed between"
SIGNED = (
    "The share is signed: below 0 % the position parts score the keys the head looks at lower than the average key "
    "(the head looks there in spite of them); above 100 % the other parts pull the other way."
)


def share_measure(trace, layer: int) -> str:
    """What a position share of `layer` counts as position, in words."""
    if not _adds_position(trace):
        return f"the fastest {FAST_PAIR_FRACTION:.0%} of the rotary pairs"
    return "the parts made of position alone" + ("" if layer == 0 else " (the position embedding as this layer reads it directly)")


def share_undefined(trace, layer: int) -> str | None:
    """None where a head's position share answers "is this head positional?" (every layer of a rotary model,
    the first layer of a model that adds positions), else why it does not, as a sentence."""
    if trace.score_weights is None:
        return f"{trace.model_name} carries no weights to split its scores with, so no head has a position share."
    if trace.score_weights.layout == "post-norm" and layer > 0:
        return "A post-norm model's scores are split at its first layer only, so only its heads there have a position share."
    if _adds_position(trace) and layer > 0:
        return (
            "A head's position share is measured in the first layer of a model that adds positions to its tokens: "
            "a later layer reads position already mixed with content by the layers before."
        )
    return None


def share_badge(share: float) -> str:
    """The badge of a share (`model.score_parts.badge_for`), or `NO_LIFT` for a NaN share."""
    return NO_LIFT if math.isnan(share) else badge_for(share)


def shares_figure(shares: list[float], layer: int, measure: str) -> dict:
    """`head_shares_figure` of one layer, worded for a signed share, with a captioned gap for each head that
    has no lift (NaN share)."""
    badges = [share_badge(share) for share in shares]
    with warnings.catch_warnings():  # every share NaN: the axis keeps its 0 … 100 % range
        warnings.simplefilter("ignore", RuntimeWarning)
        figure = head_shares_figure(
            shares,
            badges,
            thresholds=(CONTENT_MAX, POSITIONAL_MIN),
            title=f"Layer {layer}: each head's net lift from {measure}, as a share of its whole lift",
        )
    figure["layout"]["yaxis"]["title"] = {"text": "position parts' net lift ÷ whole lift"}
    for trace in figure["data"]:
        trace["hovertemplate"] = "%{x}: the position parts' net lift is %{y:.1%} of the whole lift<extra>" + trace["name"] + "</extra>"
    gaps = [f"head {head}" for head, share in enumerate(shares) if math.isnan(share)]
    if gaps:  # the gaps keep their place on the axis and say why they are empty
        figure["data"].append(  # no data: it holds the gaps' places on the axis (not in the CSV)
            dict(type="bar", x=gaps, y=[None] * len(gaps), name=NO_LIFT, showlegend=False, hoverinfo="skip", meta=dict(DECORATION_META))
        )
        figure["layout"]["xaxis"]["type"] = "category"
        figure["layout"].setdefault("annotations", []).extend(
            dict(
                x=gap,
                y=0,
                xref="x",
                yref="y",
                text=NO_LIFT,
                showarrow=False,
                yanchor="bottom",
                font=dict(size=12, color="#444444"),
                hovertext="each query sees one key or none, or the head's scores are level: nothing to share out",
            )
            for gap in gaps
        )
    return figure


def default_pair(trace, layer: int, head: int, sentence: int, query: int = -1, key: int = -1) -> tuple[int, int]:
    """(query, key), each -1 filled in: the query with the sentence's last word (`last_word`: not a closing
    "." or [SEP]), the key with the one the query gives the most weight."""
    query = query if query >= 0 else last_word(trace.tokens[sentence])
    key = key if key >= 0 else int(trace.pattern(layer, sentence)[head, query].argmax())
    return query, key


def _adds_position(trace) -> bool:
    return trace.positional_kind != "rotary"


def map_panels(trace, parts: dict[str, torch.Tensor], layer: int, allowed: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    """The panels of the maps, which sum to the score: the four first-layer parts and the bias terms, or
    the largest parts and the rest."""
    if _adds_position(trace) and layer == 0 and set(FIRST_LAYER_MAPS) <= set(parts):
        chosen = list(FIRST_LAYER_MAPS)
        rest_name = "bias and token-type terms" if any("token type" in name for name in parts) else "bias terms"
    else:
        size = {name: float(part[allowed].abs().mean()) for name, part in parts.items()}
        chosen = sorted(parts, key=size.get, reverse=True)[:TOP_MAPS]
        rest_name = "every other part"
    panels = [(name, parts[name]) for name in chosen]
    rest = [part for name, part in parts.items() if name not in chosen]
    if rest:
        panels.append((rest_name, sum(rest)))
    panels.append(("q·k (the sum)", sum(parts.values())))
    return panels


def pair_panels(pairs: dict[str, torch.Tensor]) -> list[tuple[str, torch.Tensor]]:
    """Rotary: the fastest pairs' part of the score and the other pairs' part (they sum to the score)."""
    n_fast = fast_pairs(len(pairs))
    values = list(pairs.values())
    return [(f"the {n_fast} fastest pairs", sum(values[:n_fast])), (f"the other {len(values) - n_fast} pairs", sum(values[n_fast:]))]


def tidy_parts(parts: dict[str, torch.Tensor], layer: int, head: int, queries=None) -> pd.DataFrame:
    """One row per part and (query, key) of the sentence's tokens (`queries`: the query positions kept,
    default all): layer, head, query_position, key_position, query_source, key_source, value."""
    n_tokens = next(iter(parts.values())).shape[-1]
    rows = np.arange(n_tokens) if queries is None else np.asarray(queries)
    query_positions, key_positions = np.meshgrid(rows, np.arange(n_tokens), indexing="ij")
    frames = []
    for name, part in parts.items():
        query_source, key_source = split_name(name)
        frames.append(
            pd.DataFrame(
                {
                    "layer": layer,
                    "head": head,
                    "query_position": query_positions.ravel(),
                    "key_position": key_positions.ravel(),
                    "query_source": query_source,
                    "key_source": key_source,
                    "value": part[rows].numpy().ravel(),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)[list(TIDY_COLUMNS)]


def maps_figure(panels: list[tuple[str, torch.Tensor]], labels: list[str], masked: np.ndarray, title: str):
    """`part_maps_figure` of the panels, as means of blocks of tokens beyond `FULL_RESOLUTION` tokens
    (means over the cells a query may attend to, so the panels' blocks still add up to the sum's)."""
    matrices = {name: np.where(masked, np.nan, matrix.numpy()) for name, matrix in panels}
    reduced, block_labels, block_masked, block = fit(matrices, labels, masked, weights=())
    if block > 1:
        title += f" (means of {block}×{block} blocks)"
    return part_maps_figure(list(reduced.items()), block_labels, block_labels, masked=block_masked, title=title)


def why_page(settings, trace, model=None, pair: tuple[int, int] | None = None, group: str | None = None) -> PageContent:
    """Figures `part-maps` and `score-parts` (when the score has more than one source part), `head-shares`;
    for rotary models also `pair-maps`, `pair-parts` and `score-by-distance`. Table `parts` (tidy CSV). Values `score`, `query`, `key`, `parts` (name → value
    at the pair), `shares`, `badges`.

    The layer, head (the first of `settings.heads`) and sentence come from `settings`; `pair` is the
    (query, key) of the bar (default: `settings.why_query` and `why_key`, -1 filled in by `default_pair`); `group` how
    finely earlier layers are split ("layer", "head" or "kind"; default "kind" beyond the first layer).
    """
    content = PageContent()
    layer, sentence = settings.layer, settings.sentence
    head = settings.heads[0] if settings.heads else 0
    n = len(trace.tokens[sentence])
    labels = sentence_labels(trace, sentence)[:n]
    if trace.score_weights is not None and trace.score_weights.layout == "post-norm" and layer > 0:
        content.notice(
            "post-norm-later-layer",
            f"{model.name if model else trace.model_name} normalises after each sub-layer (post-norm); its scores are split at the first layer only.",
            "warning",
        )
        return content
    group = group or ("layer" if layer == 0 else "kind")
    query, key = pair if pair is not None else default_pair(trace, layer, head, sentence, settings.why_query, settings.why_key)
    if not (0 <= query < n and 0 <= key < n):
        raise IndexError(f"(query, key) = ({query}, {key}) out of range 0…{n - 1}")

    parts = {name: part[:n, :n] for name, part in trace.score_parts(layer, head, sentence, group=group).items()}
    allowed = (trace.attend()[sentence, 0] & trace.key_valid[sentence][:, None])[:n, :n]
    score = float(sum(part[query, key] for part in parts.values()))
    where = f"layer {layer}, head {head}"
    masked = ~allowed.numpy()
    if len(parts) > 1:  # a single part (the first layer of a rotary model without biases) is the score itself
        map_parts = map_panels(trace, parts, layer, allowed)
        content.figures["part-maps"] = maps_figure(
            map_parts,
            labels,
            masked,
            f"Raw score q·k of {where}, split by where query and key come from (one colour scale)",
        )
        drawn = [(name, values.numpy().copy()) for name, values in map_parts]
        content.figure_tables["part-maps"] = lambda: tables.panels_table(drawn, labels, masked)
    if not _adds_position(trace):
        pairs = {name: part[:n, :n] for name, part in trace.score_parts(layer, head, sentence, by="pair").items()}
        panels = pair_panels(pairs) + [("q·k (the sum)", sum(pairs.values()))]
        content.figures["pair-maps"] = maps_figure(
            panels, labels, masked, f"Raw score q·k of {where}, split by how fast the rotary pairs turn (one colour scale)"
        )
        pair_drawn = [(name, values.numpy().copy()) for name, values in panels]
        content.figure_tables["pair-maps"] = lambda: tables.panels_table(pair_drawn, labels, masked)
    ranked = sorted(parts, key=lambda name: abs(float(parts[name][query, key])), reverse=True)
    named, others = ranked[:BAR_PARTS], ranked[BAR_PARTS:]
    bar_values = [float(parts[name][query, key]) for name in named]
    if others:
        named = [*named, f"the other {len(others)} parts"]
        bar_values.append(sum(float(parts[name][query, key]) for name in others))
    query_label, key_label = safe_label(labels[query]), safe_label(labels[key])
    if len(parts) > 1:
        content.figures["score-parts"] = parts_bar_figure(
            named, bar_values, score, title=f"Query “{query_label}” ({query}) and key “{key_label}” ({key}), {where}: q·k = {score:.4g}"
        )
        bars = {"part": [*named, "q·k (the sum)"], "score": [*bar_values, score]}
        content.figure_tables["score-parts"] = lambda: pd.DataFrame(bars)
    if n <= TABLE_TOKENS:
        content.tables["parts"] = tidy_parts(parts, layer, head)
    else:
        content.tables["parts"] = tidy_parts(parts, layer, head, queries=[query])
        every_row = n * n * len(parts)
        content.notice("parts-one-row", f"The table of parts holds query {query}'s row only (every row would be {every_row:,} lines).", "caption")
    content.values.update(score=score, query=query, key=key, parts=dict(zip(named, bar_values)), group=group)

    norm = "LayerNorm" if _adds_position(trace) else "RMSNorm"
    content.notice(
        "held-norm",
        f"Each part is computed with the {norm}'s divisor of every token held at the value this run used, which makes "
        f"the norm linear; the parts add up to q·k = {score:.4g} at the pair shown.",
        "caption",
    )
    position_parts = [name for name in parts if is_position_only(name)]
    if position_parts and layer == 0:
        position_value = sum(float(parts[name][query, key]) for name in position_parts)
        content.notice("position-at-pair", f"Parts made of position alone give {position_value:+.4g} of the {score:.4g} at this pair.", "caption")

    if not _adds_position(trace):
        view = rotary_pairs(trace, layer, head, query, key, sentence)
        n_fast = fast_pairs(len(view.theta))
        pair_rows = {"pair": np.arange(len(view.theta)), "theta": view.theta.numpy().copy(), "contribution": view.contribution.numpy().copy()}
        content.figure_tables["pair-parts"] = lambda: pd.DataFrame(pair_rows)
        content.figures["pair-parts"] = pair_bar_figure(
            view.theta.numpy(),
            view.contribution.numpy(),
            n_fast=n_fast,
            title=f"q·k of “{query_label}” and “{key_label}” ({where}) pair by pair: |q_p| |k_p| cos(φ_p + {view.distance}·θ_p)",
        )
        distances = np.arange(0, max(MIN_DISTANCES, 2 * n))
        fast = view.theta >= view.theta[n_fast - 1]
        curves = {
            "every pair": view.at_distance(distances).numpy(),
            f"the {n_fast} fastest pairs": _pairs_at(view, fast, distances),
            f"the other {len(view.theta) - n_fast} pairs": _pairs_at(view, ~fast, distances),
        }
        content.figure_tables["score-by-distance"] = lambda: tables.curves_table(distances, curves)
        content.figures["score-by-distance"] = distance_curve_figure(
            distances,
            curves,
            actual_distance=view.distance,
            actual_score=float(view.contribution.sum()),
            title=f"The same query and key slid apart: q·k against distance ({where})",
        )
        fast_value = float(view.contribution[fast].sum())
        content.notice(
            "pairs-at-pair",
            f"At distance {view.distance}, the {n_fast} fastest pairs give {fast_value:+.4g} and the other pairs "
            f"{float(view.contribution[~fast].sum()):+.4g} of q·k = {float(view.contribution.sum()):.4g}.",
            "caption",
        )
        content.values.update(pair_contributions=view.contribution.tolist(), thetas=view.theta.tolist())

    shares = head_position_shares(trace, layer, sentence)
    values = [s.position_share for s in shares]
    badges = [share_badge(value) for value in values]
    share_rows = {"layer": layer, "head": np.arange(len(shares)), "position_share": values, "badge": badges}
    content.figure_tables["head-shares"] = lambda: pd.DataFrame(share_rows)
    content.figures["head-shares"] = shares_figure(values, layer, share_measure(trace, layer))
    without = [head for head, value in enumerate(values) if math.isnan(value)]
    gaps = ""
    if without:
        heads = "every head" if len(without) == len(values) else "head " + ", ".join(map(str, without))
        gaps = f" On this sentence {heads} has no lift (each query sees one key or none, or its scores are level): a gap marked “{NO_LIFT}”."
    content.notice(
        "share-measure",
        "Lift: for each query, the pattern-weighted score minus the mean score over the keys it may see, summed over "
        "the queries; a head's whole lift is never negative, and its parts' lifts add up to it. The bar is the position "
        f"parts' net lift over the whole lift. {SIGNED} Badge: {THRESHOLDS}.{gaps}",
        "caption",
    )
    content.values.update(shares=values, badges=badges)
    return content


def _pairs_at(view, chosen: torch.Tensor, distances) -> np.ndarray:
    """The score at each distance from the chosen pairs only."""
    d = torch.as_tensor(distances, dtype=torch.float64)[:, None]
    angles = view.phase[chosen][None, :] + d * view.theta[chosen][None, :]
    return (view.query_norm[chosen] * view.key_norm[chosen] * torch.cos(angles)).sum(dim=-1).numpy()
