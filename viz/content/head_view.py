"""The head view section of the Attention page: where each token looks, for the chosen layer and heads,
with each drawn head's position share (the Why page's head-level answer) stated beside the heads."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from model.score_parts import CONTENT_MAX, POSITIONAL_MIN, head_position_shares
from model.words import word_groups
from viz.content.page import PageContent
from viz.content.why import SHARE_TOKENS, THRESHOLDS, share_badge, share_measure, share_undefined
from viz.head_view import HeadView, head_view_data, head_view_figure, head_view_table


@dataclass
class SharedHeadView(HeadView):
    """A head view whose note (drawn under the heads' legend, and in every export) starts with each drawn
    head's position share."""

    shares_note: str = ""

    def note(self) -> str:
        return f"{self.shares_note} {super().note()}" if self.shares_note else super().note()


def position_shares(trace, sentence: int, layer: int, heads: list[int]) -> tuple[dict[int, float], str]:
    """The position share of each of `heads` (`model.score_parts.head_position_shares`; {} where it is not
    defined or not computed), and a sentence that states them with the measure and the badges' thresholds,
    or says why there are none."""
    undefined = share_undefined(trace, layer)
    if undefined is not None:
        return {}, f"Position share: none here. {undefined}"
    n = len(trace.tokens[sentence])
    if n > SHARE_TOKENS:
        return {}, f"Position share: computed up to {SHARE_TOKENS} tokens, this sentence has {n} (the Why page gives it for any length)."
    every = head_position_shares(trace, layer, sentence)
    shares = {head: every[head].position_share for head in heads}
    stated = " · ".join(f"head {head}: {'—' if math.isnan(share) else f'{share:.0%} ({share_badge(share)})'}" for head, share in shares.items())
    return shares, f"Position share: {stated} (the net lift from {share_measure(trace, layer)} over the head's whole lift, signed; {THRESHOLDS})."


def with_shares_in_legend(figure: dict, shares: dict[int, float]) -> dict:
    """The drawn head view (`viz.head_view.head_view_figure`, 720 px wide: its one-line subtitle has no room)
    with each head's share in its legend entry, and the thresholds as the legend's title."""
    if not shares:
        return figure
    for trace in figure["data"]:
        head = int(trace["legendgroup"].removeprefix("head ")) if str(trace.get("legendgroup", "")).startswith("head ") else None
        if head in shares and trace.get("showlegend", True):
            share = shares[head]
            trace["name"] = f"head {head}: {'no lift' if math.isnan(share) else f'{share:.0%}'} {share_badge(share)}"
    figure["layout"]["legend"]["title"] = {"text": f"position share (positional ≥ {POSITIONAL_MIN:.0%}, content ≤ {CONTENT_MAX:.0%}) "}
    return figure


def head_view_section(settings, trace, stages=None) -> PageContent:
    """Figure `head-view-L{l}` (the drawing of the interactive view, for PNG/SVG and the zip; its table:
    every weight of the view, `viz.head_view.head_view_table`); values
    `head_view` (what the component draws), `pinned` and `pair` in the view's positions (words with
    `settings.words`), `word_of_token` and `first_piece` (to map positions between tokens and words),
    `position_shares` (head → share, see `position_shares`); notices `head-view` (threshold, word rule,
    focus window) and `head-view-position` (the shares, or why there are none), whose text also opens the
    view's own note."""
    content = PageContent()
    b, layer, heads = settings.sentence, settings.layer, list(settings.heads) or [0]
    plain = head_view_data(trace, b, layer, heads, words=settings.words, stages=stages)
    shares, stated = position_shares(trace, b, layer, heads)
    view = SharedHeadView(**{field.name: getattr(plain, field.name) for field in fields(HeadView)}, shares_note=stated)
    groups = word_groups(trace.tokens[b], trace.texts[b], n_pos=trace.input_ids.shape[1])
    word_of_token = [index for index, group in enumerate(groups.positions) for _ in group]
    first_piece = [group[0] for group in groups.positions]
    to_view = (lambda p: word_of_token[p]) if settings.words else (lambda p: p)
    pinned = settings.pinned if 0 <= settings.pinned < view.n else None
    pair = tuple(to_view(p) for p in settings.cell) if len(settings.cell) == 2 else None
    pair = pair if pair is not None and pair[0] == pinned else None
    content.figures[f"head-view-L{layer}"] = with_shares_in_legend(head_view_figure(plain, pinned, pair), shares)
    content.figure_tables[f"head-view-L{layer}"] = lambda: head_view_table(view)
    content.values.update(head_view=view, pinned=pinned, pair=pair, word_of_token=word_of_token, first_piece=first_piece, position_shares=shares)
    content.notice("head-view", plain.note(), "caption")
    content.notice("head-view-position", stated, "caption")
    return content
