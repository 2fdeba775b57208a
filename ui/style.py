"""The app's stylesheets (ui/components/page/): a sidebar wide enough for full model names, a print
stylesheet for handouts, and presentation mode (large fonts, no sidebar, one figure per screen, arrow keys
move between figures)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

PAGE = Path(__file__).parent / "components" / "page"
SIDE_BY_SIDE = "av_side_by_side"  # the key of a horizontal container whose two elements share its width in halves
CSS = f"<style>{(PAGE / 'page.css').read_text(encoding='utf-8')}</style>"
PRESENTING = f"<style>{(PAGE / 'presenting.css').read_text(encoding='utf-8')}</style>"
_presentation_keys = st.components.v2.component("attention_viz.presentation_keys", js=(PAGE / "presentation_keys.js").read_text(encoding="utf-8"))


def stylesheet(presenting: bool = False) -> None:
    st.html(CSS)
    if presenting:
        st.html(PRESENTING)
        _presentation_keys(key="av_presentation_keys")
