"""The view: one `Settings` per run, read from the URL on a first load and from the widgets after, then
the model and its trace (cached), then the sidebar that shows them.

`st.session_state["settings"]` is the one owner of the view. Widgets hold their values under `key(name)`;
each run writes the settings into those keys before the widgets are drawn, and reads them back at the
start of the next run (`read_settings`). A page switch drops the state of widgets the new page does not
draw: the settings keep their values.

A tab whose server process stopped reconnects (deploy/serve.py: through nginx) to a process that has no
session for it; the user's next change starts one there. That run carries the link (the view before the
change) and every widget's value (the view with it): `arrived_from_elsewhere` tells it apart from a first
load, and the view then follows the widgets, not the link (`resolve`, `follow_the_widgets`). Not a reload
of the page when the connection moves: the browser says nothing to the new process until that change
(Streamlit reconnects without a run), so a reload could come only after it, and would drop it.
"""

from __future__ import annotations

import logging
import os
import secrets
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace

import streamlit as st

from model import InputError, ModelLoadError, Trace, load_model
from model.adapters import TracedModel
from model.loading import check_model
from ui.policy import custom_models_allowed, model_allowed
from ui.shared_cache import shared
from ui.text import badge_label, md
from viz.content.common import hidden_token_label, hidden_with, hide_choices, hide_pills, pill_labels
from viz.content.settings import (
    BUILTIN_MODELS,
    MASKS,
    MAX_TEXT_CHARS,
    MODEL_NAMES,
    SESSION_MODEL,
    TOY_TOKENIZERS,
    AttentionDisplay,
    Settings,
    clamp_to_model,
    follow_edit,
    from_query,
    run_model,
    temperature_options,
    to_query,
)

log = logging.getLogger("attention_viz")

SETTINGS = "settings"  # session state: the view (a frozen Settings)
PENDING = "pending_settings"  # session state: a whole new view (a lesson, a training) for the next run
SESSION_TRAINED = "session_model"  # session state: the toy model trained on the Train page
SESSION_ID = "session_id"  # session state: a random id of the session, made on its first run
TAB_MARK = "av_tab_mark"  # the hidden container of the text box below (its own style hides it)
DRAWN_BY = "av_drawn_by"  # widget key: a hidden text box holding the id of the session that first drew the tab
ATTENTION, FIGURES = "attention", "figures"  # groups of sidebar controls a page asks for (and ui.SENTENCE)
ATTENTION_CONTROLS = ("layer", "heads", "mask", "hidden", "scaling", "temperature", "ablate")
CUSTOM = "custom"
MASK_LABELS = {"model": "the model's own", "none": "none", "causal": "causal", "padding": "padding", "causal+padding": "causal + padding"}
MASK_HELP = (
    "Which keys each query may see. **none**: every key. **causal**: no looking ahead, only the keys up to the query's "
    "own position. **padding**: not the [PAD] keys that fill a shorter sentence of a batch. **the model's own**: the "
    "mask it was trained with (causal + padding for GPT-style models, the toy model among them; padding for BERT-style ones)."
)
HIDE_HELP = (
    "The queries of that token's sentence may not attend to it; the other sentences keep it. "
    "The whole model runs without it: later layers and predictions of that sentence change."
)
HIDE_HERE = "w_hide_here"  # the token pills of the sentence shown; the hidden tokens themselves are key("hidden")
FIELDS = tuple(field.name for field in fields(Settings))


def key(name: str) -> str:
    """The widget key of a setting: a page draws `st.slider(..., key=key("pe_positions"))` and reads the
    value from `context.settings.pe_positions`."""
    return f"w_{name}"


def torch_threads(environ=os.environ) -> int:
    """Threads for torch in the app's process: 1 unless ATTENTION_VIZ_TORCH_THREADS says. The server shares
    its cores with its sessions; one thread cut MiniLM's 512-token run from 0.93 to 0.20 s of CPU
    (docs/performance.md)."""
    try:
        return max(1, int(environ.get("ATTENTION_VIZ_TORCH_THREADS", "1")))
    except ValueError:
        return 1


def _use_torch_threads() -> None:
    import torch

    torch.set_num_threads(torch_threads())


_use_torch_threads()  # once, when the app's glue is imported


@shared(max_entries=4)
def cached_model(name: str, tokenizer: str) -> TracedModel:
    """Models load once per process (and per toy tokenizer)."""
    if name == "toy-random":
        return load_model("toy-random", tokenizer=tokenizer)
    return load_model(name, allow_local=custom_models_allowed()[1])


@shared(max_entries=32)
def cached_run(name: str, tokenizer: str, texts: tuple[str, ...], display: AttentionDisplay) -> Trace:
    """One run of a model under a display (mask, hidden keys, scaling, temperature, ablated heads)."""
    return run_model(cached_model(name, tokenizer), texts, display)


@dataclass(frozen=True)
class PageContext:
    """What a page draws from: the settings, the model, and its trace under those settings."""

    settings: Settings
    model: TracedModel
    trace: Trace


def _tokenizer_key(settings: Settings) -> str:
    """Only the random-weight toy model has a choice of tokenizer; other models share one cache entry."""
    return settings.tokenizer if settings.model == "toy-random" else ""


def get_trace(settings: Settings, model: TracedModel) -> Trace:
    display = settings.display
    ablate = tuple((layer, head) for layer, head in display.ablate if layer < model.n_layers and head < model.n_heads)
    display = replace(display, ablate=ablate)
    if settings.model == SESSION_MODEL:  # trained in this browser session: not shared, and fast to run
        return run_model(model, tuple(settings.sentences), display)
    return cached_run(settings.model, _tokenizer_key(settings), tuple(settings.sentences), display)


# ------------------------------------------------------------------ one read of the view per run


def arrived_from_elsewhere() -> bool:
    """Whether this is the first run of a session in a tab that another session drew: the process behind the
    tab stopped, the browser reconnected to this one, and the user's change that started this run came
    with the values of the tab's widgets. Called once per run, before `resolve` (a page draws it first).

    How it knows: a hidden text box whose initial value is the id of the session drawing it. The browser
    keeps the value of every widget it shows and sends them all with each run, to whichever process its
    connection reaches; the box's value is not in its identity, so a later session's box shows the value
    the tab already holds. On a first load the tab holds none: the box has the new session's own id."""
    state = st.session_state
    first_run = SETTINGS not in state
    own = state.setdefault(SESSION_ID, secrets.token_hex(8))
    with st.container(key=TAB_MARK):
        st.html(f'<style>[data-testid="stLayoutWrapper"]:has(> .st-key-{TAB_MARK}) {{ display: none; }}</style>')  # no room, no gap
        drawn_by = st.text_input("Session", value=own, key=DRAWN_BY, label_visibility="collapsed")
    return first_run and drawn_by != own


def read_settings() -> tuple[Settings, list[str]]:
    """The view this run draws, and notices about it: a whole new view (`apply_settings`), else the
    session's view with the values of the widgets drawn, else (a first load, or a tab that arrived from
    another process) the link's."""
    state = st.session_state
    if PENDING in state:
        return state.pop(PENDING), []
    if SETTINGS not in state:
        return from_query(st.query_params.to_dict(), model_allowed)
    return _with_widgets(state[SETTINGS])


def _with_widgets(settings: Settings) -> tuple[Settings, list[str]]:
    """`settings` with the values of the widgets drawn (those a run has seen), and notices about them."""
    state = st.session_state
    updates = {name: state[key(name)] for name in FIELDS if key(name) in state}
    choice = state.get("w_model_choice")
    if choice == CUSTOM:  # the model shown stays until a typed id passes its check ("Check and load")
        if "custom_model" in state:
            updates["model"] = state.pop("custom_model")
    elif choice is not None:
        updates["model"] = choice
    return follow_edit(settings, replace(settings, **updates))


def apply_settings(settings: Settings) -> None:
    """Replace the whole view (a lesson, a freshly trained model): the next run draws it."""
    st.session_state[PENDING] = settings
    st.session_state.pop("w_model_choice", None)


def _load(settings: Settings, notices: list[str]) -> tuple[Settings, TracedModel]:
    if not settings.model:
        notices.append("Type a Hugging Face model id in the sidebar; until then, the toy model.")
        settings = replace(settings, model="toy")
    elif not model_allowed(settings.model):
        notices.append(f"Model {settings.model!r} is not allowed on this server; using the toy model.")
        settings = replace(settings, model="toy")
    if settings.model == SESSION_MODEL:
        if SESSION_TRAINED in st.session_state:
            return settings, st.session_state[SESSION_TRAINED]
        notices.append("No model has been trained in this browser session yet (see the Train page); using the toy model.")
        settings = replace(settings, model="toy")
    try:
        if cached_model.cache.has((settings.model, _tokenizer_key(settings))):
            return settings, cached_model(settings.model, _tokenizer_key(settings))
        first_load = " The first load de-quantises its weights: about a minute." if settings.model == "smollm2" else ""
        with st.spinner(f"Loading {settings.model} (once per server).{first_load}"):
            return settings, cached_model(settings.model, _tokenizer_key(settings))
    except ModelLoadError as error:
        st.error(md(error), icon="⚠️")
        notices.append("Showing the toy model instead.")
        return replace(settings, model="toy"), cached_model("toy", "")


def resolve(arrived: bool = False) -> tuple[PageContext, list[str], InputError | None]:
    """Settings → model → trace, the settings clamped to what the model and input have. The view then
    becomes the session's and the page's link. On input the model cannot run, the trace is None and the
    problem is returned.

    `arrived` (`arrived_from_elsewhere`): the link's view is drawn, but not written into the widgets,
    which keep the values the tab sent, the user's last change among them; `follow_the_widgets` then
    runs the page again for them."""
    settings, notices = read_settings()
    notices = list(notices)
    settings, model = _load(settings, notices)
    trace, problem = None, None
    try:
        trace = get_trace(settings, model)
    except InputError as error:
        problem = error
    if trace is not None:
        lengths = [len(tokens) for tokens in trace.tokens]
        settings, more = clamp_to_model(settings, model.n_layers, model.n_heads, trace.input_ids.shape[1], len(trace.texts), lengths)
        notices += more + trace.notices
    if not arrived:
        _put(settings)
    st.session_state[SETTINGS] = settings
    query = to_query(settings)
    if st.query_params.to_dict() != query:  # the link follows the view
        st.query_params.from_dict(query)
    return PageContext(settings, model, trace), notices, problem


def follow_the_widgets() -> None:
    """After the widgets of a tab that arrived from another process are drawn (`resolve(arrived=True)`):
    when their values differ from the view drawn (the link's), run again, so that the change the user
    made as the tab moved is drawn (`read_settings` reads it from the widgets) rather than dropped. The
    token pills hand their change to the "Hide key tokens" box in a callback, which such a run does not
    call: their change comes as the next run's whole view."""
    state = st.session_state
    settings = state[SETTINGS]
    followed = _with_widgets(settings)[0]
    pills = sorted(state[HIDE_HERE]) if HIDE_HERE in state else None  # drawn in this run: the tab's own value
    if pills is not None and pills != _hidden_here(settings):
        state[PENDING] = replace(followed, hidden=tuple(hidden_with(followed.hidden, followed.sentence, pills)))
    if followed != settings or PENDING in state:
        st.rerun()


def _put(settings: Settings) -> None:
    """The settings into the widgets' state, before the widgets are drawn."""
    state = st.session_state
    for name in FIELDS:
        value = getattr(settings, name)
        state[key(name)] = list(value) if isinstance(value, tuple) else value
    state[HIDE_HERE] = _hidden_here(settings)
    typing = state.get("w_model_choice") == CUSTOM  # the box stays open while an id is typed
    state["w_model_choice"] = settings.model if settings.model in BUILTIN_MODELS and not typing else CUSTOM
    if settings.model not in BUILTIN_MODELS:
        state["w_custom_model"] = settings.model


# ------------------------------------------------------------------ the sidebar


def sidebar(context: PageContext, controls: frozenset[str], elsewhere: tuple[str, ...], problem: InputError | None) -> None:
    """The sentences and model boxes, then the controls `controls` asks for ("sentence", ATTENTION,
    FIGURES) but those drawn `elsewhere` (a lesson's box). Stops the page, with a message, on input the
    model cannot run: the sentences stay as typed."""
    side = st.sidebar
    side.text_area(
        "Sentences, one per line", key="w_text", height=120, max_chars=MAX_TEXT_CHARS, help="Each line is one sentence; several lines make a padded batch."
    )
    _model_box(side, context.model)
    if problem is not None:
        st.warning(md(problem), icon="✍️")
        st.stop()
    settings, model, trace = context.settings, context.model, context.trace
    box = side.container(key="av_view_controls")  # a line on top (ui/style.py)
    several = "sentence" in controls and len(trace.texts) > 1
    if several:
        box.selectbox("Sentence shown", list(range(len(trace.texts))), key=key("sentence"), format_func=lambda i: f"{i + 1}: {trace.texts[i]}")
    if ATTENTION in controls:
        for name in ATTENTION_CONTROLS:
            if name not in elsewhere:
                draw_control(name, box, settings, model, trace)
    box.toggle("Presentation mode", key=key("presenting"), help="Large fonts, no sidebar, one figure per screen; arrow keys move between figures.")
    if FIGURES in controls:
        box.segmented_control("Figure theme", ["screen", "print"], key=key("theme"), required=True)
        box.select_slider("PNG resolution", options=[1, 2, 3, 4], value=2, key="png_scale", format_func=lambda s: f"{s}× ({96 * s} dpi)")


def _model_box(side, model: TracedModel) -> None:
    allow_hub, allow_local = custom_models_allowed()
    choices = [m for m in BUILTIN_MODELS if m != SESSION_MODEL or SESSION_TRAINED in st.session_state]
    choices += [CUSTOM] if allow_hub or allow_local else []
    side.selectbox("Model", choices, key="w_model_choice", format_func=lambda name: MODEL_NAMES.get(name, "Another model…"))
    choice = st.session_state["w_model_choice"]
    if choice in BUILTIN_MODELS:
        side.caption(BUILTIN_MODELS[choice])
    if choice == CUSTOM:
        side.text_input(
            "Hugging Face id" + (" or local folder" if allow_local else ""),
            key="w_custom_model",
            placeholder="bert-base-uncased",
            help="BERT, DistilBERT, GPT-2, Llama, Qwen2, Mistral and Gemma family models with safetensors weights.",
        )
        side.button("Check and load", key="load_custom_model", on_click=_check_custom_model, type="primary")
        if "custom_model_error" in st.session_state:
            side.error(md(st.session_state["custom_model_error"]), icon="⚠️")
        elif model.name in BUILTIN_MODELS:
            side.caption(f"Until a typed model is checked and loaded: {BUILTIN_MODELS[model.name]}.")
    if model.name == "toy-random":
        side.selectbox("Toy tokenizer", list(TOY_TOKENIZERS), key=key("tokenizer"), format_func=TOY_TOKENIZERS.get)


def _check_custom_model() -> None:
    """The "Check and load" button: check the typed id before anything is loaded."""
    name = st.session_state.get("w_custom_model", "").strip()
    try:
        if name and not model_allowed(name):
            raise ModelLoadError(f"Model {name!r} is not allowed on this server.")
        check_model(name, allow_local=custom_models_allowed()[1])
    except ModelLoadError as error:
        st.session_state["custom_model_error"] = str(error)
        return
    st.session_state.pop("custom_model_error", None)
    st.session_state["custom_model"] = name


def draw_control(name: str, where, settings: Settings, model: TracedModel, trace: Trace) -> None:
    """One attention control (a field of ATTENTION_CONTROLS) in `where` (the sidebar or a lesson's box)."""
    if name == "layer":
        if model.n_layers > 1:
            where.select_slider("Layer", options=range(model.n_layers), key=key("layer"))
        else:
            where.caption("Layer 0 (this model has one layer)")
    elif name == "heads":
        where.pills("Heads", list(range(model.n_heads)), selection_mode="multi", key=key("heads"), help="Click a head to show it or hide it")
    elif name == "mask":
        where.pills("Mask", list(MASKS), key=key("mask"), format_func=MASK_LABELS.get, required=True, help=MASK_HELP)
    elif name == "hidden":
        pills = _hide_pills(where, settings, trace)
        choices = hide_choices(trace, settings.sentence, settings.hidden)
        # the labels, not the trace: the widget's format_func stays in the session (also a closed tab's, until
        # Streamlit lets it go), and a trace in it would keep the trace and its model's weights in memory
        labels = {pair: hidden_token_label(trace, pair) for pair in choices}
        where.multiselect(
            "…or find one in any sentence" if pills else "Hide key tokens",
            choices,
            key=key("hidden"),
            format_func=lambda pair: labels.get(pair, str(pair)),
            placeholder="type a word to find it",
            help=HIDE_HELP,
        )
    elif name == "scaling":
        where.toggle("Scale by 1/√d_k", key=key("scaling"))
    elif name == "temperature":
        row = where.container(horizontal=True, vertical_alignment="bottom")
        row.select_slider(
            "Softmax temperature T",
            options=temperature_options(settings.temperature),
            key=key("temperature"),
            format_func=lambda t: f"{t:g}",
            help="A log scale: T = 1 (the model's own softmax) sits in the middle.",
        )
        row.button("T = 1", on_click=_set, args=({"temperature": 1.0},), key="reset_temperature", help="Back to the model's own softmax")
    elif name == "ablate":
        where.multiselect(
            "Ablate heads",
            [(layer, head) for layer in range(model.n_layers) for head in range(model.n_heads)],
            key=key("ablate"),
            format_func=lambda pair: f"layer {pair[0]} head {pair[1]}",
            help="Zero these heads' output before the output projection: the whole model then runs without them.",
        )
    else:
        raise ValueError(f"unknown control {name!r}")


def _hide_pills(where, settings: Settings, trace: Trace) -> bool:
    """A row of pills, one a token of the sentence shown: a click hides that key or shows it again. They
    show what `key("hidden")` holds for that sentence, and their change goes back into it, so the box
    below shows it too. False when the sentence is too long for a row (`hide_pills`)."""
    positions = hide_pills(trace, settings.sentence)
    if positions is None:
        return False
    labels = pill_labels(trace, settings.sentence)
    where.pills(
        "Hide key tokens",
        positions,
        selection_mode="multi",
        key=HIDE_HERE,
        format_func=labels.__getitem__,
        on_change=_pills_chosen,
        args=(settings.sentence,),
        help="Click a token of the sentence shown to hide it, again to show it. " + HIDE_HELP,
    )
    return True


def _hidden_here(settings: Settings) -> list[int]:
    """The hidden positions of the sentence shown: what the token pills show (`_put` writes them)."""
    return sorted(p for s, p in settings.hidden if s == settings.sentence)


def _pills_chosen(sentence: int) -> None:
    st.session_state[key("hidden")] = hidden_with(st.session_state.get(key("hidden"), ()), sentence, st.session_state.get(HIDE_HERE) or ())


def _set(values: dict) -> None:
    """A callback: these settings' widgets take these values (the next run reads them)."""
    for name, value in values.items():
        st.session_state[key(name)] = value


def live_controls(live: dict | None, settings: Settings) -> dict | None:
    """`live` (viz.content.attention.stages_in_browser) with where its controls are on the page, for the
    chart to read them (ui/components/chart/live.js): their widget keys, the mask's labels and the
    temperature slider's values in order (the slider's position is an index into them)."""
    if live is None:
        return None
    controls = {
        "scaling": key("scaling"),
        "mask": key("mask"),
        "temperature": key("temperature"),
        "hidden": key("hidden"),
        "hide_here": HIDE_HERE,
        "heads": key("heads"),
        "mask_labels": MASK_LABELS,
        "temperatures": temperature_options(settings.temperature),
    }
    return {**live, "controls": controls}


# ------------------------------------------------------------------ notices and the what-if badge

MODELS_OWN = {"mask": AttentionDisplay().mask, "hidden": [], "scaling": True, "temperature": 1.0, "ablate": []}


def notices_and_badge(context: PageContext, notices: list[str], attention: bool) -> None:
    """The view's notices, then, when the run differs from the model's own (or on a page with the
    attention controls), a badge that says how, with one click back: one row, always there, so a toggle
    that starts or ends a what-if does not move the page."""
    row = st.container(key="page_notices", horizontal=True, horizontal_alignment="distribute", vertical_alignment="center")
    for notice in dict.fromkeys(notices):
        row.info(md(notice), icon="ℹ️")
    trace = context.trace
    if not (trace.what_ifs or attention):
        return
    if trace.what_ifs:
        row.badge(badge_label("what-if: " + "; ".join(trace.what_ifs)), icon=":material/science:", color="orange")
    else:
        row.badge("the model's own settings", icon=":material/check:", color="gray")
    row.button(
        "Model's own settings",
        on_click=_set,
        args=(MODELS_OWN,),
        key="back_to_own",
        disabled=not trace.what_ifs,
        help="Run the model as it was trained" if trace.what_ifs else "The model runs as it was trained",
    )


def presentation_bar() -> None:
    """In presentation mode (no sidebar): the way out, and how to move."""
    st.button("Exit presentation", key="stop_presenting", on_click=_set, args=({"presenting": False},))
    st.caption("Arrow keys or Page Up / Page Down move from one figure to the next.")


@contextmanager
def guarded():
    """Show an unexpected error as a short message, never as a traceback to the user; the server's log
    gets the traceback (logger "attention_viz"), so the bug is not hidden from tests or operators."""
    try:
        yield
    except Exception as error:
        if type(error).__name__ in ("StopException", "RerunException"):
            raise
        log.exception("a view could not be drawn")
        st.error(f"This view could not be drawn: {error.__class__.__name__}: {md(error)}", icon="⚠️")
