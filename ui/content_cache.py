"""A page's content (figures, tables, notices), built once per view and shared by every session.

A toggle flipped back, or a class where everyone starts from the same link, asks again for content already
built: plotly's figure objects cost more server time than the model at small inputs (python -m bench.profile).
The key is the frozen `Settings` (the model, the sentences and every control; for a part of a page, the
settings with only the heads that part reads), which with a built-in or Hub model determines the trace; a
model trained in this browser session is never shared.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ui.shared_cache import SharedCache
from viz.content.attention import attention_figures, attention_selection, built
from viz.content.page import PageContent
from viz.content.settings import SESSION_MODEL, Settings


# 512 parts: a view of the Attention page is six or more (`attention_content`), so a class of 40 flipping a
# toggle keeps its 80 views; at 512 tokens a view's parts hold about 2.5 MB of figure data
# (JSON), so the cache stays well under the 1.5 GB a class may add.
_cached: SharedCache[PageContent] = SharedCache(max_entries=512, ttl=1800)


def page_content(builder: Callable[..., PageContent], settings: Settings, trace, model=None, **shared) -> PageContent:
    """`builder(settings, trace)` (or with `model=`, which `settings.model` names), cached per builder and
    settings (not for a model trained in this browser session). `shared`: more arguments for the builder that the
    settings and the trace determine (not part of the key)."""
    if settings.model == SESSION_MODEL:
        return built(builder, settings, trace, model, **shared)
    view = repr(settings) + (" with the model" if model is not None else "")
    return _cached.get((f"{builder.__module__}.{builder.__qualname__}", view), lambda: built(builder, settings, trace, model, **shared))


def attention_content(settings: Settings, trace, model=None) -> PageContent:
    """The Attention page's content (`viz.content.attention_page`) from cached parts: its figures per
    view without the selection, each part of them apart (`attention_figures`: showing one more head
    builds that head's figures only), and the selection (worked example, head view) per whole view.
    Pinning a token, clicking a cell or switching to words then builds only the last, not every figure
    of the page."""
    unselected = replace(settings, pinned=-1, cell=(), words=False)
    figures = attention_figures(unselected, trace, model=model, part=page_content)
    return figures.merge(page_content(attention_selection, settings, trace))
