"""The app's stylesheet: a sidebar wide enough for full model names, and a print stylesheet for handouts."""

from __future__ import annotations

import streamlit as st

CSS = """
<style>
section[data-testid="stSidebar"] { min-width: 22rem; }
@media print {
  section[data-testid="stSidebar"], header[data-testid="stHeader"], [data-testid="stToolbar"],
  [data-testid="stSidebarCollapsedControl"], [data-testid="stDownloadButton"], [data-testid="stButton"],
  [data-testid="stElementToolbar"], .modebar-container, [data-testid="stPageLink"], [data-testid="stDecoration"]
  { display: none !important; }
  [data-testid="stMain"], [data-testid="stAppViewContainer"] { margin-left: 0 !important; width: 100% !important; }
  [data-testid="stMainBlockContainer"] { max-width: 100% !important; padding: 0.5rem 1rem !important; }
  [data-testid="stPlotlyChart"] { break-inside: avoid; }
}
</style>
"""


def stylesheet() -> None:
    st.html(CSS)
