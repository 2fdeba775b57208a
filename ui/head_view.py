"""The head view as a Streamlit custom component (v2), with its downloads.

The JavaScript and CSS live in ui/components/head_view/; the app serves the JavaScript itself at
app/static/ (ui/assets.py; inline where it cannot): no CDN, no iframe, the view works
offline. The component reports one-off events as triggers (a token pinned or unpinned, a key clicked
for the worked example) and keeps its focus window as state. Who owns the pinned token and the chosen
pair is the caller's business: it passes them in and gets callbacks, which run before the script
reruns, so the rerun already draws the new row.

The component echoes a sequence number with every event; Python hands it back with the data, so the
browser ignores data that is older than what the user has already done (fast arrow keys).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from ui import assets
from ui.chart import SERVED, file_to_send, keep_file
from ui.shared_cache import shared
from viz.export import figure_to_png, figure_to_svg, safe_filename, static_export_available
from viz.head_view import HeadView, component_data, head_view_figure, head_view_html, pinned_row_csv

ASSETS = Path(__file__).parent / "components" / "head_view"
JS = assets.code("av-head-view")  # the whole code: the standalone HTML export embeds it
CSS = (ASSETS / "head_view.css").read_text(encoding="utf-8") + (ASSETS.parent / "exports.css").read_text(encoding="utf-8")  # its buttons look like a chart's

_component = st.components.v2.component("attention_viz.head_view", js=assets.component_js("av-head-view", SERVED), css=CSS)


def _seq_key(key: str) -> str:
    return f"{key}__seq"


def _event(key: str, name: str):
    value = st.session_state[key][name]
    if isinstance(value, dict) and isinstance(value.get("seq"), int):
        st.session_state[_seq_key(key)] = max(st.session_state.get(_seq_key(key), 0), value["seq"])
    return value


def _valid(index, n: int) -> bool:
    return isinstance(index, int) and not isinstance(index, bool) and 0 <= index < n


@dataclass(frozen=True)
class Downloads:
    """The head view's own export buttons, drawn by the component under the view: PNG and SVG (rendered
    on the server from `figure`, the view drawn as a plotly figure; made from the view when None),
    standalone HTML, and the pinned row as CSV, each file `name`.format. A file is made when its button is
    clicked and sent once with the view's next data; the browser saves it."""

    name: str
    figure: object = None
    scale: float = 2.0


FORMATS = ("png", "svg", "html", "csv")


def head_view(
    view: HeadView,
    *,
    pinned: int | None,
    pair: tuple[int, int] | None,
    on_pin: Callable[[int | None], None],
    on_pair: Callable[[int, int], None],
    key: str = "head_view",
    downloads: Downloads | None = None,
) -> None:
    """Draw the head view of `view`; `on_pin(index or None)` and `on_pair(query, key)` run on the user's
    clicks; `downloads`: its export buttons (none without)."""
    n = view.n

    def pin_changed():
        value = _event(key, "pin")
        if isinstance(value, dict) and (value.get("index") is None or _valid(value.get("index"), n)):
            on_pin(value.get("index"))

    def pair_changed():
        value = _event(key, "pair")
        if isinstance(value, dict) and _valid(value.get("query"), n) and _valid(value.get("key"), n):
            on_pair(value["query"], value["key"])

    pinned = pinned if _valid(pinned, n) else None
    pair = tuple(pair) if pair is not None and all(_valid(i, n) for i in pair) else None

    can_render, why = _static_export() if downloads is not None else (False, "")
    formats = FORMATS if can_render else FORMATS[2:]  # PNG and SVG need the server's browser (kaleido)

    def exported():
        value = st.session_state[key]["export"]
        form = value.get("format") if isinstance(value, dict) else None
        made = head_view_file(view, downloads, form, pinned=pinned, pair=pair) if downloads is not None and form in formats else None
        if made is not None:
            keep_file(key, made)

    data = component_data(view, pinned, pair, seq=st.session_state.get(_seq_key(key), 0))
    if downloads is not None:
        data["exports"] = {"name": safe_filename(downloads.name), "formats": list(formats), "csv": pinned is not None, "why": None if can_render else why}
    file = file_to_send(key)
    if file is not None:
        data["file"] = {"base64": base64.b64encode(file["bytes"]).decode("ascii"), "name": file["name"], "mime": file["mime"], "nonce": file["nonce"]}
    _component(
        key=key,
        data=data,
        default={"window": 0},
        on_pin_change=pin_changed,
        on_pair_change=pair_changed,
        on_export_change=exported,
        on_window_change=lambda: None,
    )


@shared(max_entries=1)
def _static_export() -> tuple[bool, str]:
    return static_export_available()


def head_view_file(view: HeadView, downloads: Downloads, form, *, pinned: int | None, pair=None) -> tuple[bytes, str, str] | None:
    """(bytes, file name, mime type) of the head view as `form` (PNG, SVG, HTML, or the pinned row as CSV);
    None for another format, or CSV with no token pinned."""
    name = safe_filename(downloads.name)
    figure = lambda: downloads.figure if downloads.figure is not None else head_view_figure(view, pinned, pair)  # noqa: E731
    if form == "png":
        return figure_to_png(figure(), scale=downloads.scale), f"{name}.png", "image/png"
    if form == "svg":
        return figure_to_svg(figure()), f"{name}.svg", "image/svg+xml"
    if form == "html":
        return head_view_html(view, JS, CSS, pinned), f"{name}.html", "text/html"
    if form == "csv" and pinned is not None and 0 <= pinned < view.n:
        return pinned_row_csv(view, pinned).encode("utf-8"), f"{name}-row-{pinned}.csv", "text/csv"
    return None
