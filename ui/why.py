"""The Why page's glue: the pair whose score is split (two sliders bound to the settings `why_query` and
`why_key`, so the pair is in the link), how earlier layers are grouped, and the page's content, built
once per view and shared by every session."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from ui.content_cache import page_content
from ui.view import SETTINGS, PageContext, key
from viz.content.common import sentence_labels
from viz.content.page import PageContent
from viz.content.settings import WHY_GROUPS, Settings, to_query
from viz.content.why import why_page

GROUP_LABELS = {"kind": "attention and MLP", "layer": "by layer", "head": "by head"}
GROUP_HELP = (
    "How the outputs of the earlier layers are split. **attention and MLP**: all attention outputs as one source, "
    "all MLP outputs as another. **by layer**: each layer's attention and MLP apart. **by head**: each head apart."
)
QUERY_SLIDER, KEY_SLIDER = "why_query_slider", "why_key_slider"


def why_view(settings: Settings, trace, model=None) -> PageContent:
    """`why_page` of the view: the pair (-1: the page's default) and the grouping from the settings."""
    return why_page(settings, trace, model, group=settings.why_group)


def pair_in_sentence(context: PageContext) -> Settings:
    """The settings with the pair moved back inside the sentence shown (a link's pair beyond it, a
    shorter sentence typed), with a notice; the link follows."""
    settings = context.settings
    n = len(context.trace.tokens[settings.sentence])
    if settings.why_query < n and settings.why_key < n:
        return settings
    st.info(
        f"The pair ({settings.why_query}, {settings.why_key}) is beyond this sentence ({n} tokens, from 0); "
        "showing the last word and the key it gives the most weight.",
        icon="ℹ️",
    )
    moved = replace(settings, why_query=-1, why_key=-1)
    st.session_state[SETTINGS] = moved
    st.session_state[key("why_query")], st.session_state[key("why_key")] = -1, -1
    st.query_params.from_dict(to_query(moved))
    return moved


def why_content(settings: Settings, context: PageContext) -> PageContent:
    return page_content(why_view, settings, context.trace, model=context.model)


def pair_controls(settings: Settings, context: PageContext, content: PageContent) -> None:
    """The query and key sliders over the sentence's tokens (set to the pair shown), and the grouping of
    earlier layers beyond the first layer."""
    trace = context.trace
    n = len(trace.tokens[settings.sentence])
    labels = sentence_labels(trace, settings.sentence)[:n]
    if "query" not in content.values:  # the decomposition refused this layer (its notice says why)
        return
    row = st.container(horizontal=True, gap="large", vertical_alignment="bottom")
    st.session_state[QUERY_SLIDER], st.session_state[KEY_SLIDER] = content.values["query"], content.values["key"]

    def changed():
        st.session_state[key("why_query")] = st.session_state[QUERY_SLIDER]
        st.session_state[key("why_key")] = st.session_state[KEY_SLIDER]

    options = dict(options=range(n), format_func=lambda i: f"{i}: {labels[i]}", on_change=changed)
    row.select_slider("Query token", key=QUERY_SLIDER, **options)
    row.select_slider("Key token", key=KEY_SLIDER, **options)
    if settings.layer > 0:
        row.segmented_control("Earlier layers", WHY_GROUPS, key=key("why_group"), required=True, format_func=GROUP_LABELS.__getitem__, help=GROUP_HELP)


def masked_pair_caption(settings: Settings, context: PageContext, content: PageContent) -> None:
    """A caption when the mask hides the chosen key from the chosen query: its score exists, the softmax never sees it."""
    if "query" not in content.values:
        return
    query, key_position = content.values["query"], content.values["key"]
    if not bool(context.trace.attend()[settings.sentence, 0, query, key_position]):
        st.caption(
            f"The mask hides key {key_position} from query {query}: its score is computed and split like any other, "
            "but the softmax never sees it, so it gets no weight."
        )
