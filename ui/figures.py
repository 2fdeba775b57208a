"""Drawing a figure in a page with its export buttons, and the zip of every figure of the view."""

from __future__ import annotations

from dataclasses import asdict
from urllib.parse import urlencode

import plotly.graph_objects as go
import streamlit as st

from viz import apply_print_theme
from viz.content.settings import to_query
from viz.export import (
    figure_to_csv,
    figure_to_html,
    figure_to_png,
    figure_to_svg,
    figures_zip,
    plotly_config,
    safe_filename,
    static_export_available,
)
from viz.export.bundle import archive_name, describe
from viz.export.names import stamped_stem

REGISTRY = "_figures_of_view"


def start_view() -> None:
    """Forget the figures of the previous run: each run registers what it draws."""
    st.session_state[REGISTRY] = {}


@st.cache_resource(show_spinner=False)
def _static_export() -> tuple[bool, str]:
    return static_export_available()


def themed(fig: go.Figure) -> go.Figure:
    settings = st.session_state.get("settings")
    return apply_print_theme(fig) if settings is not None and settings.theme == "print" else fig


def about_view() -> dict | None:
    """The model, sentences, every setting and the link of the view shown, for manifests and file names."""
    settings = st.session_state.get("settings")
    if settings is None:
        return None
    every = asdict(settings)
    every.pop("text")
    address = str(getattr(st.context, "url", "") or "").split("?")[0]
    every["png_scale"] = _png_scale()
    return describe(settings.model, settings.sentences, every, f"{address}?{urlencode(to_query(settings))}")


def chart_key(figure_id: str) -> str:
    """The widget key of a figure's chart (its click selection is kept under it)."""
    return f"chart_{safe_filename(figure_id)}"


def show_figure(fig: go.Figure, figure_id: str, *, exports: bool = True, on_select=None) -> None:
    """Draw `fig` and, under it, PNG / SVG / HTML / CSV downloads made when clicked, named for the
    figure, the model and the settings (two views never share a file name).

    `on_select`: a callback run when a point of the chart is clicked (its selection is in
    `st.session_state[chart_key(figure_id)]`)."""
    fig = themed(fig)
    st.session_state.setdefault(REGISTRY, {})[figure_id] = fig
    name = stamped_stem(figure_id, about_view())
    clicks = dict(on_select=on_select, selection_mode="points") if on_select is not None else {}
    # a figure with its own width (labels placed in pixels) is drawn at that width, not stretched
    width = "content" if fig.layout.width else "stretch"
    st.plotly_chart(fig, key=chart_key(figure_id), config=plotly_config(name, scale=_png_scale()), width=width, **clicks)
    if not exports:
        return
    can_render, why = _static_export()
    columns = st.columns([1, 1, 1, 1, 3])
    if can_render:
        columns[0].download_button(
            "PNG", lambda: figure_to_png(fig, scale=_png_scale()), f"{name}.png", "image/png", key=f"png_{safe_filename(figure_id)}", on_click="ignore"
        )
        columns[1].download_button("SVG", lambda: figure_to_svg(fig), f"{name}.svg", "image/svg+xml", key=f"svg_{safe_filename(figure_id)}", on_click="ignore")
    else:
        columns[4].caption(why)
    columns[2].download_button(
        "HTML", lambda: figure_to_html(fig, filename=name), f"{name}.html", "text/html", key=f"html_{safe_filename(figure_id)}", on_click="ignore"
    )
    columns[3].download_button("CSV", lambda: figure_to_csv(fig), f"{name}.csv", "text/csv", key=f"csv_{safe_filename(figure_id)}", on_click="ignore")


def _png_scale() -> float:
    return float(st.session_state.get("png_scale", 2))


def download_all(page: str) -> None:
    """One button: every figure of this view in PNG, SVG, HTML and CSV, with a manifest (model,
    sentences, every setting, the link back to this view)."""
    figures = dict(st.session_state.get(REGISTRY, {}))
    if not figures:
        return
    about = about_view()
    st.divider()
    st.download_button(
        f"Download all {len(figures)} figures of this view (zip)",
        lambda: figures_zip(figures, scale=_png_scale(), about=about),
        archive_name(page, about),
        "application/zip",
        key=f"zip_{safe_filename(page)}",
        on_click="ignore",
        type="primary",
    )
