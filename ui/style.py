"""The app's stylesheets: a sidebar wide enough for full model names, a print stylesheet for handouts,
and presentation mode (large fonts, no sidebar, one figure per screen, arrow keys move between figures)."""

from __future__ import annotations

import streamlit as st

SIDE_BY_SIDE = "av_side_by_side"  # the key of a horizontal container whose two elements share its width in halves

CSS = """
<style>
section[data-testid="stSidebar"] { min-width: 22rem; }
/* the row of formulas (one markdown element): each as wide as it is, wrapping to a second line rather
   than cut, at the size of st.latex's (presentation mode enlarges the text around them, not them) */
.st-key-av_formulas [data-testid="stMarkdownContainer"] p {
  display: flex; flex-wrap: wrap; align-items: center; column-gap: 2.5rem; row-gap: 0.5rem; font-size: 1rem !important;
}
/* two figures side by side (a horizontal container, one element where columns took three): halves */
.st-key-av_side_by_side > * { flex: 1 1 0 !important; min-width: 0; }
/* lines where a divider was (one element less a rerun): above the sidebar's controls after the model box
   (ui.view.VIEW_CONTROLS), above the figures' theme, above a page's zip button */
.st-key-av_view_controls, .st-key-w_theme, [class*="st-key-zip_"] { border-top: 1px solid rgba(128, 128, 128, 0.3); }
.st-key-av_view_controls { padding-top: 1.5rem; }
.st-key-w_theme, [class*="st-key-zip_"] { padding-top: 1.5rem; margin-top: 0.5rem; width: 100% !important; }
[class*="st-key-zip_"] [data-testid="stDownloadButton"], [class*="st-key-zip_"] button { width: fit-content !important; }
/* the page's notices (ui.view.notices_box, a row): each notice on a line of its own, the what-if badge after them */
.st-key-page_notices { flex-wrap: wrap; }
.st-key-page_notices > :has([data-testid="stAlert"]), .st-key-page_notices > :has([data-testid="stCaptionContainer"]) { flex: 1 0 100%; }
@page { size: A4 landscape; margin: 10mm; }
@media print {
  section[data-testid="stSidebar"], header[data-testid="stHeader"], [data-testid="stToolbar"],
  [data-testid="stSidebarCollapsedControl"], [data-testid="stDownloadButton"], [data-testid="stButton"],
  [data-testid="stElementToolbar"], .modebar-container, [data-testid="stPageLink"], [data-testid="stDecoration"],
  [data-testid="stBaseButton-secondary"], [data-testid="stBaseButton-primary"], iframe, .av-chart-exports, [class*="st-key-zip_"]
  { display: none !important; }
  [data-testid="stMain"], [data-testid="stAppViewContainer"] { margin-left: 0 !important; width: 100% !important; }
  [data-testid="stMainBlockContainer"] { max-width: 100% !important; padding: 0.5rem 1rem !important; }
  .av-chart { break-inside: avoid; zoom: 0.85; }  /* a figure drawn for the screen fits the page */
}
</style>
"""

PRESENTING = """
<style>
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stDownloadButton"], .av-chart-exports,
[class*="st-key-zip_"] { display: none !important; }
html, [data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li { font-size: 1.45rem !important; }
h1 { font-size: 3.2rem !important; }
.av-chart { min-height: 88vh !important; scroll-margin-top: 70px; }
/* the enlarged text needs the width: narrow side margins */
[data-testid="stMainBlockContainer"] { padding-left: 1.5rem !important; padding-right: 1.5rem !important; max-width: 100% !important; }
/* widget labels wrap instead of ending in "…" */
[data-testid="stWidgetLabel"] .stMarkdownEllipsis, [data-testid="stWidgetLabel"] .stMarkdownEllipsis p {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
}
</style>
"""

# Arrow keys, Page Up/Down and space move from one figure to the next.
_presentation_keys = st.components.v2.component(
    "attention_viz.presentation_keys",
    js="""
export default function presentationKeys() {
  if (document.presentationKeys) return;
  document.presentationKeys = true;
  document.addEventListener("keydown", (event) => {
    const forward = ["ArrowRight", "ArrowDown", "PageDown", " "].includes(event.key);
    const back = ["ArrowLeft", "ArrowUp", "PageUp"].includes(event.key);
    if (!forward && !back) return;
    if (["INPUT", "TEXTAREA"].includes(event.target.tagName)) return;
    const charts = [...document.querySelectorAll(".av-chart:not(.av-chart-hidden)")]; // not a head's hidden chart
    if (!charts.length) return;
    const tops = charts.map((c) => c.getBoundingClientRect().top);
    let index = forward ? tops.findIndex((t) => t > 80) : tops.map((t) => t < 60).lastIndexOf(true);
    if (index < 0) index = forward ? charts.length - 1 : 0;
    charts[index].scrollIntoView({ behavior: "smooth", block: "start" });
    event.preventDefault();
  });
}
""",
)


def stylesheet(presenting: bool = False) -> None:
    st.html(CSS)
    if presenting:
        st.html(PRESENTING)
        _presentation_keys(key="av_presentation_keys")
