"""Glue of the Heads page: a click on a head of the grid opens it in the sidebar's layer and heads."""

from __future__ import annotations

import streamlit as st

from ui.view import key


def open_clicked_head():
    """A callback for `show(..., on_click=...)`: the clicked point's customdata is [layer, head, …]."""

    def open_head(selection: dict):
        points = selection.get("points") or []
        data = points[0].get("customdata") if points else None
        if data and len(data) >= 2:
            st.session_state[key("layer")], st.session_state[key("heads")] = int(data[0]), [int(data[1])]

    return open_head
