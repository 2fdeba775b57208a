"""The head view section of the Attention page: where each token looks, for the chosen layer and heads."""

from __future__ import annotations

from model.words import word_groups
from viz.content.page import PageContent
from viz.head_view import head_view_data, head_view_figure, head_view_table


def head_view_section(settings, trace, stages=None) -> PageContent:
    """Figure `head-view-L{l}` (the drawing of the interactive view, for PNG/SVG and the zip; its table:
    every weight of the view, `viz.head_view.head_view_table`); values
    `head_view` (what the component draws), `pinned` and `pair` in the view's positions (words with
    `settings.words`), `word_of_token` and `first_piece` (to map positions between tokens and words);
    notice `head-view` (threshold, word rule, focus window)."""
    content = PageContent()
    b, layer, heads = settings.sentence, settings.layer, list(settings.heads) or [0]
    view = head_view_data(trace, b, layer, heads, words=settings.words, stages=stages)
    groups = word_groups(trace.tokens[b], trace.texts[b], n_pos=trace.input_ids.shape[1])
    word_of_token = [index for index, group in enumerate(groups.positions) for _ in group]
    first_piece = [group[0] for group in groups.positions]
    to_view = (lambda p: word_of_token[p]) if settings.words else (lambda p: p)
    pinned = settings.pinned if 0 <= settings.pinned < view.n else None
    pair = tuple(to_view(p) for p in settings.cell) if len(settings.cell) == 2 else None
    pair = pair if pair is not None and pair[0] == pinned else None
    content.figures[f"head-view-L{layer}"] = head_view_figure(view, pinned, pair)
    content.figure_tables[f"head-view-L{layer}"] = lambda: head_view_table(view)
    content.values.update(head_view=view, pinned=pinned, pair=pair, word_of_token=word_of_token, first_piece=first_piece)
    content.notice("head-view", view.note(), "caption")
    return content
