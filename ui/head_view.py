"""The head view as a Streamlit custom component (v2), with its downloads.

The JavaScript and CSS live in ui/components/head_view/ and are passed inline: no CDN, no iframe, the
view works offline. The component reports one-off events as triggers (a token pinned or unpinned, a
key clicked for the worked example) and keeps its focus window as state. Who owns the pinned token
and the chosen pair is the caller's business: it passes them in and gets callbacks, which run before
the script reruns, so the rerun already draws the new row.

The component echoes a sequence number with every event; Python hands it back with the data, so the
browser ignores data that is older than what the user has already done (fast arrow keys).
"""

from __future__ import annotations

from pathlib import Path
from collections.abc import Callable

import streamlit as st

from viz.export import figure_to_png, figure_to_svg, safe_filename, static_export_available
from viz.head_view import HeadView, component_data, head_view_figure, head_view_html, pinned_row_csv

ASSETS = Path(__file__).parent / "components" / "head_view"
JS = (ASSETS / "head_view.js").read_text(encoding="utf-8")
CSS = (ASSETS / "head_view.css").read_text(encoding="utf-8")

_component = st.components.v2.component("attention_viz.head_view", js=JS, css=CSS)


def _seq_key(key: str) -> str:
    return f"{key}__seq"


def _event(key: str, name: str):
    value = st.session_state[key][name]
    if isinstance(value, dict) and isinstance(value.get("seq"), int):
        st.session_state[_seq_key(key)] = max(st.session_state.get(_seq_key(key), 0), value["seq"])
    return value


def _valid(index, n: int) -> bool:
    return isinstance(index, int) and not isinstance(index, bool) and 0 <= index < n


def head_view(
    view: HeadView,
    *,
    pinned: int | None,
    pair: tuple[int, int] | None,
    on_pin: Callable[[int | None], None],
    on_pair: Callable[[int, int], None],
    key: str = "head_view",
) -> None:
    """Draw the head view of `view`; `on_pin(index or None)` and `on_pair(query, key)` run on the user's clicks."""
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
    data = component_data(view, pinned, pair, seq=st.session_state.get(_seq_key(key), 0))
    _component(
        key=key,
        data=data,
        default={"window": 0},
        on_pin_change=pin_changed,
        on_pair_change=pair_changed,
        on_window_change=lambda: None,
    )


@st.cache_resource(show_spinner=False)
def _static_export() -> tuple[bool, str]:
    return static_export_available()


def head_view_downloads(view: HeadView, name: str, *, pinned: int | None, pair=None, theme=lambda fig: fig, scale: float = 2.0):
    """PNG and SVG (rendered on the server from the same drawing as a plotly figure), standalone HTML, and
    the pinned row as CSV. Returns the figure, so a page can add it to its zip."""
    fig = theme(head_view_figure(view, pinned, pair))
    name = safe_filename(name)
    columns = st.columns([1, 1, 1, 1, 3])
    can_render, why = _static_export()
    if can_render:
        columns[0].download_button("PNG", lambda: figure_to_png(fig, scale=scale), f"{name}.png", "image/png", key=f"png_{name}", on_click="ignore")
        columns[1].download_button("SVG", lambda: figure_to_svg(fig), f"{name}.svg", "image/svg+xml", key=f"svg_{name}", on_click="ignore")
    else:
        columns[4].caption(why)
    columns[2].download_button(
        "HTML",
        lambda: head_view_html(view, JS, CSS, pinned),
        f"{name}.html",
        "text/html",
        key=f"html_{name}",
        on_click="ignore",
        help="The interactive head view as one file that works offline.",
    )
    if pinned is not None and 0 <= pinned < view.n:
        columns[3].download_button(
            "CSV",
            lambda: pinned_row_csv(view, pinned),
            f"{name}-row-{pinned}.csv",
            "text/csv",
            key=f"csv_{name}",
            on_click="ignore",
            help="The pinned row: its weight to every key, per head.",
        )
    else:
        columns[3].button("CSV", key=f"csv_{name}", disabled=True, help="Pin a token to download its row.")
    return fig


_scroll = st.components.v2.component(
    "attention_viz.scroll_here",
    html="<span class='scroll-here'></span>",
    js="""
export default function scrollHere({ data, parentElement }) {
  // scroll once per request (the token changes with every click that asks for it), also across remounts
  const done = (window.__attentionVizScrolled = window.__attentionVizScrolled || {});
  if (!data || !data.token || done[data.name] === data.token) return;
  done[data.name] = data.token;
  const anchor = parentElement.querySelector(".scroll-here") || parentElement;
  setTimeout(() => anchor.scrollIntoView({ behavior: "smooth", block: "start" }), 200);
}
""",
    isolate_styles=False,
)


def scroll_here(token: int, key: str) -> None:
    """Scroll the page to this point once for each new `token` (e.g. a count of clicks)."""
    _scroll(key=key, data={"token": token, "name": key})
