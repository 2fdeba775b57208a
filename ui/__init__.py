"""Streamlit glue shared by the pages: settings, sidebar, cached model runs, figures with exports."""

import streamlit as st

from ui.figures import download_all, show_figure, start_view
from ui.view import View, guarded, sidebar


def page(title: str, icon: str) -> View:
    """Every page starts here: page config, the shared sidebar, and the view it describes."""
    st.set_page_config(page_title=f"{title} · Attention, step by step", page_icon=icon, layout="wide")
    start_view()
    st.title(f"{icon} {title}")
    return sidebar()


__all__ = ["View", "download_all", "guarded", "page", "show_figure"]
