"""Glue of the Heads page: a click on a head of the grid opens it in the sidebar's layer and heads; the grid's
position badges built once per view, whichever head is open."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from ui.content_cache import page_content
from ui.view import PageContext, key
from viz.content.heads import position_section
from viz.content.page import PageContent


def open_clicked_head():
    """A callback for `show(..., on_click=...)`: the clicked point's customdata is [layer, head, …]."""

    def open_head(selection: dict):
        points = selection.get("points") or []
        data = points[0].get("customdata") if points else None
        if data and len(data) >= 2:
            st.session_state[key("layer")], st.session_state[key("heads")] = int(data[0]), [int(data[1])]

    return open_head


def position_badges(context: PageContext) -> PageContent:
    """`position_section` of the view, cached (`ui.content_cache.page_content`) under the settings with no head
    open: opening a head from the grid does not compute the shares again."""
    settings = replace(context.settings, layer=0, heads=(0,), pinned=-1, cell=())
    return page_content(position_section, settings, context.trace)
