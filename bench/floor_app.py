"""The page `python -m bench.floor` toggles: a sidebar toggle, then `k` elements of one kind (`?kind=…&k=…`,
the kinds of bench.floor.KINDS), sent again on every run as the app's controls and texts are. Not part of
the app; a script Streamlit runs, not a module to import."""

import streamlit as st


def element(kind: str, i: int, on: bool) -> None:
    side = st.sidebar
    if kind == "markdown":  # in the main area, as the pages' headings and texts are
        st.markdown(f"### Heading {i}\n\nA paragraph with **bold** words, as the pages have{'.' if on else ':'}")
    elif kind == "toggle":
        side.toggle(f"Toggle {i}", key=f"toggle{i}")
    elif kind == "pills":
        side.pills(f"Pills {i}", list(range(8)), selection_mode="multi", key=f"pills{i}")
    elif kind == "select_slider":
        side.select_slider(f"Slider {i}", options=list(range(12)), key=f"slider{i}")
    elif kind == "multiselect":
        side.multiselect(f"Choices {i}", list(range(40)), key=f"multiselect{i}")
    elif kind == "selectbox":
        side.selectbox(f"Choice {i}", list(range(10)), key=f"selectbox{i}")
    elif kind == "page_link":  # as the app's own list of pages in the sidebar
        side.page_link(f"https://example.org/page{i}", label=f"Page {i}", icon=":material/home:")
    else:
        raise ValueError(f"unknown kind {kind!r}")


kind, k = st.query_params.get("kind", "markdown"), int(st.query_params.get("k", "0"))


def flip_page() -> None:
    on = st.sidebar.toggle("Flip", key="flip")
    for i in range(k if kind != "navigation" else 0):
        element(kind, i, on)
    st.markdown("on" if on else "off")


if kind == "navigation":  # the same number of pages in Streamlit's own navigation, not as elements
    others = [st.Page(lambda: None, title=f"Page {i}", url_path=f"page{i}", icon=":material/home:") for i in range(k)]
    st.navigation([st.Page(flip_page, title="Flip", default=True), *others]).run()
else:
    flip_page()
