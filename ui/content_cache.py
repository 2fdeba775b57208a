"""A page's content (figures, tables, notices), built once per view and shared by every session.

A toggle flipped back, or a class where everyone starts from the same link, asks again for content already
built: plotly's figure objects cost more server time than the model at small inputs (python -m bench.profile).
The key is the whole frozen `Settings` (the model, the sentences and every control), which with a
built-in or Hub model determines the trace; a model trained in this session is never shared.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import streamlit as st

from viz.content.attention import attention_figures, attention_selection
from viz.content.page import PageContent
from viz.content.settings import SESSION_MODEL, Settings


# 128 views: a class of 40 flipping a toggle keeps its 80 views; at 512 tokens a view holds about 2.5 MB
# of figure data (JSON), so the cache stays well under the 1.5 GB a class may add.
@st.cache_resource(max_entries=128, ttl=1800, show_spinner=False)
def _cached(builder_name: str, view: str, _builder: Callable[..., PageContent], _settings: Settings, _trace, _model=None) -> PageContent:
    return _builder(_settings, _trace) if _model is None else _builder(_settings, _trace, model=_model)


def page_content(builder: Callable[..., PageContent], settings: Settings, trace, model=None) -> PageContent:
    """`builder(settings, trace)` (or with `model=`, which `settings.model` names), cached per builder and
    settings (not for a model trained in this session)."""
    if settings.model == SESSION_MODEL:
        return builder(settings, trace) if model is None else builder(settings, trace, model=model)
    view = repr(settings) + (" with the model" if model is not None else "")
    return _cached(f"{builder.__module__}.{builder.__qualname__}", view, builder, settings, trace, model)


def attention_content(settings: Settings, trace, model=None) -> PageContent:
    """The Attention page's content (`viz.content.attention_page`) from two caches: its figures per view
    without the selection, and the selection (worked example, head view) per whole view. Pinning a token,
    clicking a cell or switching to words then builds only the second, not every figure of the page."""
    unselected = replace(settings, pinned=-1, cell=(), words=False)
    return page_content(attention_figures, unselected, trace, model=model).merge(page_content(attention_selection, settings, trace))
