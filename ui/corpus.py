"""The Corpus page's glue: its controls, the corpus read (the user's own text kept in the session only,
never in the link), and the summary of every head over it, built once per model and corpus for every
session (a model trained in this browser session is run directly)."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import streamlit as st

from model import InputError
from model.corpus_heads import CorpusSummary
from model.heads import corpus_summary
from model.own_text import MAX_CHARS
from ui.shared_cache import SharedCache
from ui.text import md
from ui.view import SETTINGS, PageContext, apply_settings, cached_model, key
from viz.content.corpus import NAMES, corpus_page, corpus_texts, example_pages, example_view, examples_csv, examples_range, head_name, statistics_csv
from viz.content.page import PageContent
from viz.content.settings import CORPUS_SOURCES, CORPUS_STATISTICS, SESSION_MODEL, Settings, to_query

TOP = 100  # examples kept per head: five pages of twenty
OWN_TEXT = "corpus_own_text"  # session state: the pasted text (too long for a link)
UPLOAD = "corpus_upload"  # session state: the uploaded .txt file
OPEN = "corpus_open_example"  # session state: the Attention page's view of the example just clicked
SOURCE_LABELS = {"classroom": "classroom", "held-out": "held out", "own text": "my own text"}  # short: the three fit a phone


def corpus_controls(context: PageContext) -> None:
    """The corpus, a head to compare, and the number of the every-head grid."""
    model = context.model
    row = st.container(horizontal=True, vertical_alignment="bottom", gap="medium")
    row.segmented_control(
        "Corpus of sentences",
        CORPUS_SOURCES,
        key=key("corpus"),
        required=True,
        format_func=SOURCE_LABELS.__getitem__,
        help="classroom: the first 500 sentences the toy models learned from; held out: sentences they never saw; "
        "my own text: paste or upload one (kept in this browser session, not in the link).",
    )
    heads = [""] + [f"{layer}.{head}" for layer in range(model.n_layers) for head in range(model.n_heads)]
    row.selectbox(
        "Compare with",
        heads,
        key=key("compare"),
        format_func=lambda pair: "no other head" if not pair else head_name(*map(int, pair.split("."))),
        help="A second head drawn beside the one chosen in the sidebar.",
    )
    row.selectbox("Every head: colour by", CORPUS_STATISTICS, key=key("corpus_statistic"), format_func=NAMES.__getitem__)
    if context.settings.corpus == "own text":
        st.text_area(
            "Your text (sentences are cut at line breaks and after . ! ?)",
            key=OWN_TEXT,
            height=150,
            max_chars=MAX_CHARS,
            placeholder="Paste a text here: a story, an article, a chapter…",
        )
        st.file_uploader("…or upload a .txt file (read instead of the box above)", type=["txt"], key=UPLOAD)


def own_text() -> tuple[str | bytes, str]:
    """The text to read and what it is called: the uploaded file, else the pasted text."""
    upload = st.session_state.get(UPLOAD)
    if upload is not None:
        return upload.getvalue(), f"the file {upload.name}"
    return st.session_state.get(OWN_TEXT, ""), "the pasted text"


def corpus(settings: Settings) -> tuple[list[str], list[str], str] | None:
    """(sentences, notices, a digest of the text) of the chosen corpus; None, with a message shown, when the
    user's own text cannot be read or is still empty."""
    if settings.corpus != "own text":
        sentences, notices = corpus_texts(settings.corpus)
        return sentences, notices, ""
    text, name = own_text()
    if not (text.strip() if isinstance(text, str) else text):
        st.info("Paste a text above, or upload a .txt file, to see what the head does on it.", icon="✍️")
        return None
    try:
        if isinstance(text, bytes):
            from model.own_text import corpus_sentences

            pasted = corpus_sentences(text, name)
            sentences, notices = pasted.sentences, list(pasted.notices)
        else:
            sentences, notices = corpus_texts("own text", text)
    except InputError as error:
        st.warning(md(error), icon="✍️")
        return None
    raw = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    return sentences, notices, hashlib.sha256(raw).hexdigest()


_summaries: SharedCache[CorpusSummary] = SharedCache(max_entries=16)  # per (model, toy tokenizer, corpus, text digest)


def summary(context: PageContext, sentences: list[str], digest: str) -> CorpusSummary | None:
    """The summary of every head over `sentences`, with a progress bar while it runs; None, with the
    reason shown, when no sentence has two tokens."""
    settings = context.settings
    bar = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = st.progress(0.0, text=f"Reading {total:,} sentences with every head…")
        bar.progress(done / max(total, 1), text=f"Read {done:,} of {total:,} sentences")

    try:
        if settings.model == SESSION_MODEL:  # trained in this browser session: not shared, and fast
            return corpus_summary(context.model, sentences, top=TOP, progress=progress)
        tokenizer = settings.tokenizer if settings.model == "toy-random" else ""
        return _summaries.get(
            (settings.model, tokenizer, settings.corpus, digest),
            lambda: corpus_summary(cached_model(settings.model, tokenizer), sentences, top=TOP, progress=progress),
        )
    except InputError as error:
        st.warning(md(error), icon="✍️")
        return None
    finally:
        if bar is not None:
            bar.empty()


def compared(context: PageContext) -> tuple[int, int] | None:
    """The second head, or None; one the model does not have is dropped, with a notice (before the
    controls are drawn)."""
    settings, model = context.settings, context.model
    if not settings.compare:
        return None
    layer, head = map(int, settings.compare.split("."))
    if layer < model.n_layers and head < model.n_heads:
        return layer, head
    st.info(f"This model has no {head_name(layer, head)}; no head is compared.", icon="ℹ️")
    _move(compare="")
    return None


def corpus_content(settings: Settings, result: CorpusSummary, other: tuple[int, int] | None, sentences: list[str]) -> PageContent:
    """The Corpus page's content for the head chosen, on the page of its strongest weights the settings ask
    for (moved back inside the pages there are)."""
    layer, head = settings.layer, settings.heads[0]
    page = shown_page(settings, example_pages(len(result.top_examples(layer, head))))
    return corpus_page(result, layer, head, other, page, statistic=settings.corpus_statistic, view=settings, sentences=sentences)


def shown_page(settings: Settings, pages: int) -> int:
    """The examples' page the settings ask for, moved back inside the examples with a notice."""
    if settings.examples_page < pages:
        return settings.examples_page
    st.info(f"There are {pages} page(s) of examples; showing the last.", icon="ℹ️")
    _move(examples_page=pages - 1)
    return pages - 1


def _move(**changes) -> None:
    """Change the view (and its link) from within the page, before the changed values' widgets are drawn."""
    moved = replace(st.session_state[SETTINGS], **changes)
    st.session_state[SETTINGS] = moved
    for name, value in changes.items():
        st.session_state[key(name)] = value
    st.query_params.from_dict(to_query(moved))


def page_buttons(page: int, pages: int, examples: int) -> None:
    """The examples' page: the buttons before and after, and between them a box that shows which examples
    this is ("21–40 of 100") and goes to any page."""
    if pages <= 1:
        return
    row = st.container(horizontal=True, vertical_alignment="bottom", gap="small")
    row.button("", icon=":material/chevron_left:", key="corpus_previous", on_click=_page_to, args=(page - 1,), disabled=page == 0, help="Stronger examples")
    row.selectbox("Examples", range(pages), key=key("examples_page"), format_func=lambda p: examples_range(p, examples), width=180)
    row.button("", icon=":material/chevron_right:", key="corpus_next", on_click=_page_to, args=(page + 1,), disabled=page == pages - 1, help="Weaker examples")


def _page_to(page: int) -> None:
    st.session_state[key("examples_page")] = page


def open_clicked_example(settings: Settings, sentences: list[str], layer: int, head: int):
    """A callback for `show(..., on_click=...)` on the examples' chart: the clicked bar's customdata is
    [rank, sentence, query, key]; the next run opens that example on the Attention page (`open_example`)."""

    def clicked(selection: dict) -> None:
        points = selection.get("points") or []
        data = points[0].get("customdata") if points else None
        if data and len(data) >= 4 and 0 <= int(data[1]) < len(sentences):
            st.session_state[OPEN] = example_view(settings, sentences[int(data[1])], layer, head, int(data[2]), int(data[3]))

    return clicked


def open_example() -> None:
    """After a click on an example: the Attention page with its view (before this page computes anything)."""
    view = st.session_state.pop(OPEN, None)
    if view is not None:
        apply_settings(view)
        st.switch_page("pages/3_Attention.py")


def examples_table(content: PageContent) -> None:
    """The examples shown, as a table; each row's `open` link, next to its rank (on a phone too), opens it on
    the Attention page in a new tab."""
    link = st.column_config.LinkColumn(
        "open", display_text="open ↗", help="This example on the Attention page, in a new tab: its sentence, this head, the query pinned"
    )
    table = content.tables["top-examples"]
    order = sorted(table.columns, key=lambda name: (name != "rank", name != "open"))  # rank, open, then the others
    st.dataframe(table, hide_index=True, width="stretch", column_config={"open": link}, column_order=order)


def downloads(summary: CorpusSummary) -> None:
    """Every head's top examples and every head's statistics, as tidy CSV."""
    row = st.container(horizontal=True, gap="medium")
    row.download_button(
        "Download the examples (CSV)",
        lambda: examples_csv(summary),
        "corpus-examples.csv",
        "text/csv",
        key="corpus_examples_csv",
        on_click="ignore",
        icon=":material/download:",
    )
    row.download_button(
        "Download the statistics (CSV)",
        lambda: statistics_csv(summary),
        "corpus-statistics.csv",
        "text/csv",
        key="corpus_statistics_csv",
        on_click="ignore",
        icon=":material/download:",
    )
