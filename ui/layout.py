"""Showing a page's content (`viz.content.PageContent`) in Streamlit: figures, tables, notices."""

from __future__ import annotations

import contextlib

import streamlit as st

from ui.figures import made_once, show_figure
from ui.text import md
from viz.content.page import PageContent
from viz.export import safe_filename

ICONS = {"info": "ℹ️", "warning": "✍️"}


def show(content: PageContent, figure_id: str, *, exports: bool = True, on_click=None, per_head: bool = False) -> None:
    """Draw one figure of the content, with its downloads (`on_click`, `per_head`: see `show_figure`); its
    CSV is the content's table of it when it has one."""
    table = content.figure_tables.get(figure_id)
    show_figure(content.figures[figure_id], figure_id, exports=exports, on_click=on_click, per_head=per_head, table=table)


def formulas(*latex: str, key: str) -> None:
    """Formulas as one row that wraps, each as wide as it is (ui/components/page/page.css): on a phone the
    second goes under the first rather than off the screen, as one st.latex would. `key` starts with
    "av_formulas", which the stylesheet finds."""
    if not key.startswith("av_formulas"):
        raise ValueError(f"the key of a row of formulas starts with 'av_formulas', not {key!r}")
    st.container(key=key).markdown(" ".join(rf"$\displaystyle {formula}$" for formula in latex))


def show_table(content: PageContent, table_id: str, *, index: bool = False) -> None:
    st.dataframe(_arrow_of(content.tables[table_id]), hide_index=not index, width="stretch")


def table_download(content: PageContent, table_id: str, label: str, name: str) -> None:
    """A button that downloads one of the content's tables as CSV (with its index), named `name` reduced to
    a safe file name (it may hold a word the user typed)."""
    csv = content.tables[table_id].to_csv().encode()
    st.download_button(label, csv, f"{safe_filename(name)}.csv", "text/csv", on_click="ignore")


def _arrow_of(frame):
    """`frame` as the pyarrow table st.dataframe sends, made once per table (`made_once`: a page's tables are
    shared by sessions and never changed); Streamlit converts a DataFrame again on every run (py-spy: 5 % of
    a toggle's script time on the Attention page). The DataFrame itself where pyarrow cannot convert it."""
    import pyarrow as pa

    try:
        return made_once(frame, "arrow", lambda: pa.Table.from_pandas(frame))
    except (TypeError, ValueError, pa.ArrowException):  # columns of mixed types: Streamlit fixes them
        return frame


def show_notices(content: PageContent, prefix: str = "", *, holds_place: bool = True) -> None:
    """The content's notices whose id starts with `prefix`, escaped (they may hold what a user typed).

    In one container, there even when empty: a toggle that brings or removes a notice leaves the elements
    below in their places, so their charts are updated rather than drawn anew (ui/chart.py). Not with
    `holds_place=False`, where nothing below can move when they come or go (they are last in their parent,
    or come and go only with the sentence, which draws everything anew): one element less a rerun."""
    with st.container() if holds_place else contextlib.nullcontext():
        for notice in content.notices_for(prefix):
            if notice.level == "caption":
                st.caption(md(notice.text))
            elif notice.level == "warning":
                st.warning(md(notice.text), icon=ICONS["warning"])
            else:
                st.info(md(notice.text), icon=ICONS["info"])
