"""Drawing a figure in a page with its export buttons (drawn by the chart component, ui/chart.py), and the
zip of every figure of the view. A figure is a plotly dict (viz.plain)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import asdict
from typing import TypeVar
from urllib.parse import urlencode

import streamlit as st

from ui.chart import chart_data, draw_chart
from ui.shared_cache import SharedCache, size_of
from viz import apply_print_theme
from viz.payload import browser_json
from viz.content.settings import to_query
from viz.export import figure_to_csv, figure_to_html, figures_zip, plotly_config, safe_filename
from viz.export.bundle import archive_name, describe
from viz.export.image import export_size
from viz.export.names import stamped_stem

REGISTRY = "figures_of_view"  # session state: {figure id: figure} drawn by this view (the zip's figures)
ABOUT = "about_of_view"  # session state: {"about": the view's description}, for the zip's manifest (`describe_view`)
TABLES = "figure_tables_of_view"  # session state: {figure id: what builds its tidy table} (PageContent.figure_tables)
T = TypeVar("T")


class _Made:
    """What was made from one figure (`made_once`), kept with the figure that its key's id names."""

    def __init__(self, fig: dict):
        self.fig, self.made = fig, {}


_MADE: SharedCache[_Made] = SharedCache(max_entries=4096)


def made_once(fig: dict, what: str, make: Callable[[], T], variant=None) -> T:
    """`make()`, once per figure, `what` and `variant` (only the latest variant is kept).

    A page's content is shared between runs and sessions (ui.content_cache), so the same figures come back
    on every rerun: what the page derives from them (the print-themed copy, the bytes sent to the browser,
    a copy with click targets) is made the first time only, and counts in the process's memory budget
    (ui.shared_cache). An entry holds its figure, so the id that keys it is not reused while it is kept."""
    entry = _MADE.get(id(fig), lambda: _Made(fig))
    if entry.fig is not fig:  # an entry of a figure since gone, whose id was given to this one
        _MADE.drop(id(fig))
        entry = _MADE.get(id(fig), lambda: _Made(fig))
    found = entry.made.get(what)
    if found is not None and found[0] == variant:
        return found[1]
    made = make()
    entry.made[what] = (variant, made)
    _MADE.grew(id(fig), size_of(made))
    return made


def sent_to_browser(fig: dict, config, *, clickable: bool, variant, export=None, live: dict | None = None) -> bytes:
    """What the chart component is sent for `fig` (its plotly JSON, how to draw it, how to export it, maybe
    how to redraw it: `live`), made once per figure and `variant`. `config` (plotly's) and `export`
    (`export_of`) may be functions that make them, called only when the bytes are made."""

    def make() -> bytes:
        made = [value() if callable(value) else value for value in (config, export)]
        spec = made_once(fig, "json", lambda: browser_json(fig))
        return chart_data(fig, spec, made[0], clickable=clickable, export=made[1], live=live)

    return made_once(fig, "chart", make, variant=variant)


def export_of(fig: dict, name: str, scale: float) -> dict:
    """How the chart component exports `fig`: file `name`, PNG and SVG at the size the server's export
    (and the zip) uses, PNG at `scale`."""
    width, height = export_size(fig["layout"])
    return {"name": name, "width": width, "height": height, "scale": scale}


def server_file(fig: dict, name: str, form: str, table: Callable | None = None) -> tuple[bytes, str, str] | None:
    """(bytes, file name, mime type) of `fig` as standalone HTML or CSV, made when its button is clicked.
    `table`: what builds the figure's tidy table (PageContent.figure_tables), the CSV when given."""
    if form == "html":
        return figure_to_html(fig, filename=name), f"{name}.html", "text/html"
    if form == "csv":
        return figure_to_csv(fig, table() if table is not None else None).encode("utf-8"), f"{name}.csv", "text/csv"
    return None


def start_view() -> None:
    """Forget the figures and chart keys of the previous run: each run registers what it draws."""
    st.session_state[REGISTRY] = {}
    st.session_state[TABLES] = {}
    st.session_state[KEYS] = set()


def themed(fig: dict) -> dict:
    settings = st.session_state.get("settings")
    if settings is None or settings.theme != "print":
        return fig
    return made_once(fig, "print theme", lambda: apply_print_theme(fig))


def about_view() -> dict | None:
    """The model, sentences, every setting and the link of the view shown, for manifests and file names
    (the same dict for the same view: not to be changed)."""
    settings = st.session_state.get("settings")
    if settings is None:
        return None
    return _described(settings, _address(), png_scale())


def _address() -> str:
    """The app's address in the browser, without the query string."""
    return str(getattr(st.context, "url", "") or "").split("?")[0]


@functools.lru_cache(maxsize=256)
def _described(settings, address: str, png_scale: float) -> dict:
    # once per view, not once per figure: `asdict` and the query string took 0.5 ms a figure (8 a run)
    every = asdict(settings)
    every.pop("text")
    every["png_scale"] = png_scale
    return describe(settings.model, settings.sentences, every, f"{address}?{urlencode(to_query(settings))}")


@functools.lru_cache(maxsize=1024)
def _stem(figure_id: str, settings, address: str, png_scale: float) -> str:
    # a figure's file name in a view, once: the settings' hash took 0.1 ms a figure, seven a run
    return stamped_stem(figure_id, _described(settings, address, png_scale))


LAYER = re.compile(r"-L\d+(?=-|$)")
LAYER_HEAD = re.compile(r"-[LH]\d+(?=-|$)")
KEYS = "chart_keys_of_run"  # session state: the chart keys this run has drawn (`chart_key`)


def chart_key(figure_id: str, per_head: bool = False) -> str:
    """The widget key of a figure's chart: its place on the page, not which layer and head it shows. The id
    without its layer and head ("stages-L0-H2" → "stages"), numbered by its turn among this run's charts of
    that kind ("value-step", "value-step-2", …): another layer or head draws over the chart in the same
    place (Plotly.react) rather than into a new one. `per_head`: a chart in its head's own box
    (ui.head_view.head_box), whose place is the head's: the id without its layer ("stages-h2")."""
    if per_head:
        return f"chart_{safe_filename(LAYER.sub('', figure_id))}"
    base = f"chart_{safe_filename(LAYER_HEAD.sub('', figure_id))}"
    drawn = st.session_state.setdefault(KEYS, set())
    key, turn = base, 1
    while key in drawn:
        turn += 1
        key = f"{base}-{turn}"
    drawn.add(key)
    return key


def show_figure(
    fig: dict,
    figure_id: str,
    *,
    exports: bool = True,
    on_click: Callable[[dict], None] | None = None,
    live: dict | None = None,
    per_head: bool = False,
    table: Callable | None = None,
) -> None:
    """Draw `fig` and, under it, PNG / SVG / HTML / CSV buttons, named for the figure, the model and the
    settings (two views never share a file name). PNG and SVG are rendered by the browser, HTML and CSV
    made here when clicked (`server_file`).

    `on_click(selection)`: run when a point of the chart is clicked, with the selection in the shape of
    `st.plotly_chart`'s. `live`: what the browser needs to redraw a stages figure the moment the mask,
    scaling, temperature or hidden keys change (ui/components/chart/live.js); not in the print theme.
    `per_head`: the chart sits in its head's box (`chart_key`). `table`: what builds the figure's tidy
    table (PageContent.figure_tables), its CSV here and in the zip."""
    settings = st.session_state.get("settings")
    if live is not None and settings is not None and settings.theme == "print":
        live = None
    fig = themed(fig)
    register(figure_id, fig, table)
    scale, clickable = png_scale(), on_click is not None
    name = _stem(figure_id, settings, _address(), scale) if settings is not None else stamped_stem(figure_id, None)
    config = lambda: plotly_config(name, scale=scale)  # noqa: E731
    export = (lambda: export_of(fig, name, scale)) if exports else None
    data = sent_to_browser(fig, config, clickable=clickable, variant=(name, scale, clickable, exports, live is not None), export=export, live=live)
    on_export = (lambda form: server_file(fig, name, form, table)) if exports else None
    draw_chart(data, key=chart_key(figure_id, per_head), on_click=on_click, on_export=on_export)


def register(figure_id: str, fig: dict, table: Callable | None = None) -> None:
    """Count `fig` among this view's figures (the zip's), with what builds its table if it has one."""
    st.session_state.setdefault(REGISTRY, {})[figure_id] = fig
    tables = st.session_state.setdefault(TABLES, {})
    if table is not None:
        tables[figure_id] = table
    else:
        tables.pop(figure_id, None)


def png_scale() -> float:
    return float(st.session_state.get("png_scale", 2))


def describe_view() -> None:
    """The view changed in a fragment's rerun (a pin, a cell): the page's zip describes it as now shown."""
    st.session_state.setdefault(ABOUT, {})["about"] = about_view()


def download_all(page: str) -> None:
    """One button: every figure of this view in PNG, SVG, HTML and CSV, with a manifest (model,
    sentences, every setting, the link back to this view)."""
    figures = st.session_state.get(REGISTRY, {})
    if not figures:
        return
    tables = st.session_state.setdefault(TABLES, {})  # the dicts themselves: the Attention page's fragment redraws into them
    described = st.session_state.setdefault(ABOUT, {})
    described["about"] = about = about_view()
    scale = png_scale()
    st.download_button(
        f"Download all {len(figures)} figures of this view (zip)",
        lambda: figures_zip(dict(figures), scale=scale, about=described["about"], tables=dict(tables)),
        archive_name(page, about),
        "application/zip",
        key=f"zip_{safe_filename(page)}",
        on_click="ignore",
        type="primary",
    )
