"""The shared sidebar: settings kept across pages and in the URL, the model and the trace, cached."""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace

import streamlit as st
from streamlit import config

from model import InputError, ModelLoadError, Trace, load_model
from model.loading import check_model
from model.adapters import TracedModel
from ui.text import badge_label, md
from ui.shared_cache import shared
from viz.content.common import hidden_token_label, hidden_with, hide_choices, hide_pills, pill_labels
from viz.content.settings import (
    BUILTIN_MODELS,
    MODEL_NAMES,
    SESSION_MODEL,
    MASKS,
    MAX_TEXT_CHARS,
    follow_edit,
    temperature_options,
    TOY_TOKENIZERS,
    AttentionDisplay,
    Settings,
    clamp_to_model,
    custom_models_allowed,
    from_query,
    model_allowed,
    run_model,
    to_query,
)

log = logging.getLogger("attention_viz")

CUSTOM = "custom"
MASK_LABELS = {
    "model": "the model's own",
    "none": "none",
    "causal": "causal",
    "padding": "padding",
    "causal+padding": "causal + padding",
}
MASK_HELP = (
    "Which keys each query may see. **none**: every key. **causal**: no looking ahead, only the keys up to the query's "
    "own position. **padding**: not the [PAD] keys that fill a shorter sentence of a batch. **the model's own**: the "
    "mask it was trained with (causal + padding for GPT-style models, the toy model among them; padding for BERT-style ones)."
)


def torch_threads(environ=os.environ) -> int:
    """Threads for torch's operations in the app's process: 1 unless ATTENTION_VIZ_TORCH_THREADS says.

    The server shares its cores with its sessions (and, on one machine, with the browser). Measured on the
    2-core machine at load 5: one thread takes a toy run at 16 tokens from 6 to 1 ms of CPU and MiniLM's
    512-token run from 0.93 to 0.20 s of CPU (3.0 to 0.65 s of wall time); the second thread mostly spun."""
    try:
        return max(1, int(environ.get("ATTENTION_VIZ_TORCH_THREADS", "1")))
    except ValueError:
        return 1


def _use_torch_threads() -> None:
    import torch

    torch.set_num_threads(torch_threads())


_use_torch_threads()


@shared(max_entries=4)
def cached_model(name: str, tok: str) -> TracedModel:
    """Models load once per process (and per toy tokenizer)."""
    if name == "toy-random":
        return load_model("toy-random", tokenizer=tok)
    _, allow_local = custom_models_allowed()
    return load_model(name, allow_local=allow_local)


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


def get_trace(settings: Settings, model: TracedModel) -> Trace:
    display, texts = settings.display, tuple(settings.sentences)
    # heads of another model (kept in a link or from before a model switch) are dropped, with a notice, by clamp_to_model
    ablate = tuple((layer, head) for layer, head in display.ablate if layer < model.n_layers and head < model.n_heads)
    display = replace(display, ablate=ablate)
    if settings.model == SESSION_MODEL:  # trained in this session: not shared, and fast to run
        return run_model(model, texts, display)
    return cached_run(settings.model, _tokenizer_key(settings), texts, display)


FIELDS = tuple(field.name for field in fields(Settings))  # each has its widget key, `key(name)`
_MISSING = object()


def _initial_settings() -> Settings:
    if "pending_settings" in st.session_state:  # a lesson or a training replaced the whole view
        settings = st.session_state.pop("pending_settings")
        st.session_state["settings"] = settings
        return settings
    if "settings" not in st.session_state:
        settings, notices = from_query(st.query_params.to_dict())
        st.session_state["settings"] = settings
        st.session_state["link_notices"] = notices
    settings = st.session_state["settings"]
    state = st.session_state
    updates = {name: value for name in FIELDS if (value := state.get(key(name), _MISSING)) is not _MISSING}  # one read a field
    choice = st.session_state.get("w_model_choice")
    if choice == CUSTOM:  # the model shown stays until a typed id passes its check ("Load")
        if "custom_model" in st.session_state:
            updates["model"] = st.session_state.pop("custom_model")
    elif choice is not None:
        updates["model"] = choice
    edited, notices = follow_edit(settings, replace(settings, **updates))
    st.session_state.setdefault("link_notices", []).extend(notices)
    return edited


def _check_custom_model() -> None:
    """The "Load" button of the model box: check the typed id before anything is loaded."""
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


def key(name: str) -> str:
    """The widget key of a setting: a page draws `st.slider(..., key=key("pe_positions"))` and reads
    the value from `context.settings.pe_positions` (the sidebar reads every widget's state first)."""
    return f"w_{name}"


def _put(settings: Settings, only_changed: bool = False) -> None:
    """Write the settings into the widgets' state before the widgets are drawn (`only_changed`: only the
    values that differ, in a fragment's rerun, where the widgets outside it keep theirs)."""
    for name in FIELDS:
        value = getattr(settings, name)
        value = list(value) if isinstance(value, tuple) else value
        if only_changed and st.session_state.get(key(name)) == value:
            continue
        st.session_state[key(name)] = value
    if only_changed:
        return
    typing = st.session_state.get("w_model_choice") == CUSTOM  # the box stays open while an id is typed
    st.session_state["w_model_choice"] = settings.model if settings.model in BUILTIN_MODELS and not typing else CUSTOM
    if settings.model not in BUILTIN_MODELS:
        st.session_state["w_custom_model"] = settings.model


def _load(settings: Settings, notices: list[str]) -> tuple[Settings, TracedModel]:
    if not settings.model:
        notices.append("Type a Hugging Face model id in the sidebar; until then, the toy model.")
        settings = replace(settings, model="toy")
    elif not model_allowed(settings.model):
        notices.append(f"Model {settings.model!r} is not allowed on this server; using the toy model.")
        settings = replace(settings, model="toy")
    if settings.model == SESSION_MODEL:
        if "session_model" in st.session_state:
            return settings, st.session_state["session_model"]
        notices.append("No model has been trained in this session yet (see the Train page); using the toy model.")
        settings = replace(settings, model="toy")
    try:
        first_load = " The first load de-quantises its weights: about a minute." if settings.model == "smollm2" else ""
        with st.spinner(f"Loading {settings.model} (once per server).{first_load}"):
            return settings, cached_model(settings.model, _tokenizer_key(settings))
    except ModelLoadError as error:
        st.error(md(error), icon="⚠️")
        notices.append("Showing the toy model instead.")
        return replace(settings, model="toy"), cached_model("toy", "")


def _tokenizer_key(settings: Settings) -> str:
    """Only the random-weight toy model has a choice of tokenizer; other models share one cache entry."""
    return settings.tokenizer if settings.model == "toy-random" else ""


def _resolve(settings: Settings, model: TracedModel, notices: list[str]) -> tuple[Settings, Trace | None, InputError | None]:
    """The trace of `settings` and the settings clamped to the model and input (notices added)."""
    try:
        trace = get_trace(settings, model)
    except InputError as error:
        return settings, None, error
    lengths = [len(tokens) for tokens in trace.tokens]
    settings, more = clamp_to_model(settings, model.n_layers, model.n_heads, trace.input_ids.shape[1], len(trace.texts), lengths)
    notices += more + trace.notices
    return settings, trace, None


@dataclass
class Sidebar:
    """What `sidebar` drew and what the controls after it need: the caller draws those (`draw_rest`), in
    the page or in a fragment (ui.page)."""

    context: PageContext
    controls: frozenset[str]
    elsewhere: tuple[str, ...]
    notices: list[str]
    rest: object  # the sidebar's container for the controls drawn by `draw_rest`
    # with a page's body (`place_controls`): the places in `rest` of the controls before the hidden tokens,
    # of the hidden tokens' controls, and of those after them
    places: tuple | None = None


def sidebar(controls: frozenset[str] = frozenset(), elsewhere: tuple[str, ...] = ()) -> Sidebar:
    """Draw the sentences and model boxes and return the view they describe, with a place in the sidebar
    for the controls after them, which `draw_rest` draws. Stops the page on unusable input.

    `controls` adds "sentence" (sentence shown), "attention" (layer, heads, mask, hidden tokens, scaling,
    temperature) and "figures" (theme, PNG resolution).
    """
    settings = _initial_settings()
    notices = list(st.session_state.pop("link_notices", []))
    settings, model = _load(settings, notices)
    settings, trace, problem = _resolve(settings, model, notices)
    _put(settings)

    side = st.sidebar
    side.text_area(
        "Sentences, one per line",
        key="w_text",
        height=120,
        max_chars=MAX_TEXT_CHARS,
        help="Each line is one sentence; several lines make a padded batch.",
    )
    allow_hub, allow_local = custom_models_allowed()
    choices = [m for m in BUILTIN_MODELS if m != SESSION_MODEL or "session_model" in st.session_state]
    choices += [CUSTOM] if allow_hub or allow_local else []
    side.selectbox(
        "Model",
        choices,
        key="w_model_choice",
        format_func=lambda name: MODEL_NAMES.get(name, "Another model…"),
    )
    if st.session_state["w_model_choice"] in BUILTIN_MODELS:
        side.caption(BUILTIN_MODELS[st.session_state["w_model_choice"]])
    if st.session_state["w_model_choice"] == CUSTOM:
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
        side.selectbox("Toy tokenizer", list(TOY_TOKENIZERS), key="w_tokenizer", format_func=TOY_TOKENIZERS.get)
    _stop_on(problem, settings)
    # its line on top (ui/style.py) stands for the divider the controls in it began with, sent every rerun
    return Sidebar(PageContext(settings, model, trace), controls, elsewhere, notices, side.container(key=VIEW_CONTROLS))


def _stop_on(problem: InputError | None, settings: Settings) -> None:
    """Input the model cannot run: say so in the page and stop it, keeping the settings (nothing is lost)."""
    if problem is not None:
        st.session_state["settings"] = settings
        st.warning(md(problem), icon="✍️")
        st.stop()


# Set by the full run of a page, taken by the first run of its fragment: the settings just resolved.
FRESH = "_view_resolved_by_the_full_run"
# What only a full run draws (the text box, the model box, the tokenizer, the page's look): a change of
# one of these seen in a fragment's rerun reruns the whole page.
FULL_RUN_FIELDS = ("text", "model", "tokenizer", "presenting")


def rest_of_the_view(drawn: Sidebar) -> Sidebar:
    """In a fragment (ui.page): the view as the controls drawn by `draw_rest` now set it. The fragment's
    first run, within the full run, takes what `sidebar` resolved; its later runs (a control inside it
    changed) read the widgets again and run the model under them (cached), with the model of the full run.
    A change that only the full run draws (presentation mode) reruns the whole page."""
    if st.session_state.pop(FRESH, False):
        return drawn
    if "pending_settings" in st.session_state:  # a whole new view (a lesson, a trained model): the full run draws it
        st.rerun()
    full = drawn.context
    settings = _initial_settings()
    if any(getattr(settings, name) != getattr(full.settings, name) for name in FULL_RUN_FIELDS):
        st.rerun()
    from_link = list(st.session_state.pop("link_notices", []))
    notices = list(from_link)
    settings, trace, problem = _resolve(settings, full.model, notices)
    _put(settings, only_changed=True)
    if _controls_out_of_date():  # a value set here or by a click in the page: the full run draws the controls
        st.session_state["link_notices"] = from_link
        st.rerun()
    _stop_on(problem, settings)
    return replace(drawn, context=PageContext(settings, full.model, trace), notices=notices)


def draw_rest(drawn: Sidebar) -> PageContext:
    """The sidebar's controls after the model box (sentence shown, attention, presentation, figures), the
    link of the view and its notices, in that order (a page without a body: `ui.page` draws the three
    around the body itself)."""
    draw_controls(drawn)
    context = commit_view(drawn)
    draw_notices(drawn, notices_box())
    return context


def commit_view(drawn: Sidebar) -> PageContext:
    """The view becomes the session's and the page's link (what the figures and the zip describe)."""
    st.session_state["settings"] = drawn.context.settings
    st.query_params.from_dict(to_query(drawn.context.settings))
    return drawn.context


def place_controls(drawn: Sidebar) -> Sidebar:
    """In the full run of a page with a body (ui.page), before its fragment: the places of the controls
    after the model box. The hidden tokens' pills and box get a place of their own, which the fragment
    fills (`draw_controls(drawn, "fragment")`); the full run draws the others around it (`"page"`)."""
    if ATTENTION not in drawn.controls or "hidden" in drawn.elsewhere:
        return drawn  # no place of their own: every control in `rest` (draw_controls)
    return replace(drawn, places=tuple(drawn.rest.container() for _ in range(3)))


def draw_controls(drawn: Sidebar, part: str = "all") -> None:
    """The controls after the model box, into the sidebar's place for them (`Sidebar.rest`).

    `part`: "all" (a page without a body); with a body, "page" (the full run: every control but the
    hidden tokens', each of which then reruns the page's fragment alone, `VIEW`) or "fragment" (the hidden
    tokens' pills and box, which the fragment keeps in step with each other on every rerun).

    A control drawn by the full run is not sent again on a toggle: 10 of the Attention page's 13 controls
    (59 → 51 messages a toggle). Streamlit starts a keyed rerun as a full run that it preempts after the
    callbacks, which takes back most of their server CPU (README, speed); a control beside a lesson's
    question, which reran the whole page, saves a third. A value changed without the control (a click in
    the page, "Model's own settings", a clamp to the model) is drawn by a full run (`_controls_out_of_date`).
    Under Streamlit's AppTest, every control reruns the page: AppTest sends back the values of the elements
    it last received, not those a control not drawn again was set to."""
    settings, model, trace = drawn.context.settings, drawn.context.model, drawn.context.trace
    before, hidden, after = drawn.places or (drawn.rest, None, drawn.rest)
    if part == "fragment":
        if hidden is not None:
            draw_control("hidden", hidden, settings, model, trace)
        return
    on_change = view_rerun() if part == "page" else None
    drawn_keys = []  # the widget keys of the controls drawn
    # the container has a line on top, the theme a line above it (ui/style.py): a divider is an element a rerun
    several = "sentence" in drawn.controls and len(trace.texts) > 1
    if several:
        before.selectbox(
            "Sentence shown",
            list(range(len(trace.texts))),
            key=key("sentence"),
            format_func=lambda i: f"{i + 1}: {trace.texts[i]}",
            **_callback(on_change, key("sentence")),
        )
        drawn_keys.append(key("sentence"))
    if ATTENTION in drawn.controls:
        if several:
            before.divider()
        for name in ATTENTION_CONTROLS:
            if name in drawn.elsewhere or (name == "hidden" and hidden is not None):
                continue
            where = before if ATTENTION_CONTROLS.index(name) < ATTENTION_CONTROLS.index("hidden") else after
            drawn_keys.append(draw_control(name, where, settings, model, trace, on_change))
    # a change of presentation mode reruns the whole page (FULL_RUN_FIELDS): its own default, no callback
    after.toggle("Presentation mode", key=key("presenting"), help="Large fonts, no sidebar, one figure per screen; arrow keys move between figures.")
    if FIGURES in drawn.controls:
        # a segmented control, not a radio: Streamlit's radio reads the whole session state on every rerun
        after.segmented_control("Figure theme", ["screen", "print"], key=key("theme"), required=True, **_callback(on_change, key("theme")))
        after.select_slider(
            "PNG resolution",
            options=[1, 2, 3, 4],
            value=2,
            key="png_scale",
            format_func=lambda s: f"{s}× ({96 * s} dpi)",
            **_callback(on_change, "png_scale"),
        )
        drawn_keys += [key("theme"), "png_scale"]
    if on_change is not None:
        remember_shown(drawn_keys)


ATTENTION, FIGURES = "attention", "figures"  # of a page's controls (ui.SENTENCE, ui.ATTENTION, ui.FIGURES)
VIEW = "av_view"  # the key of a page's fragment (ui.page), which the controls drawn by its full run rerun alone
SHOWN = "_controls_as_shown"  # widget key → the value its control shows in the browser, of those the full run drew


def view_rerun():
    """The callback that makes a control drawn by a page's full run rerun the page's fragment alone (`VIEW`);
    None under Streamlit's AppTest (see `draw_controls`)."""
    return None if config.get_option("global.appTest") else _rerun_view


def remember_shown(widget_keys: list[str]) -> None:
    """These controls, drawn with `view_rerun()` (or just changed by the user), show their widgets' values now
    (`SHOWN`); a None among the keys (`draw_control` without a control) is left out."""
    shown = st.session_state.setdefault(SHOWN, {})
    shown.update((name, st.session_state.get(name)) for name in widget_keys if name)


def _callback(on_change, widget_key: str) -> dict:
    """The keyword arguments that call `on_change(widget_key)` when the control changes (none without it)."""
    return {} if on_change is None else {"on_change": on_change, "args": (widget_key,)}


def _rerun_view(widget_key: str) -> None:
    """A control drawn by the full run changed: the browser shows its new value; rerun the fragment alone."""
    remember_shown([widget_key])
    st.rerun(VIEW)


def _controls_out_of_date() -> bool:
    """In a fragment's rerun: a control drawn by the full run holds a value the browser does not show."""
    state = st.session_state
    return any(state.get(name, _MISSING) != value for name, value in state.get(SHOWN, {}).items())


NOTICES = "page_notices"
VIEW_CONTROLS = "av_view_controls"  # the sidebar's container of the controls after the model box (a line on top: ui/style.py)


def notices_box():
    """The page's container of notices and the what-if badge (`draw_notices`): a row that wraps, the notices
    on lines of their own (ui/style.py), the badge and its button on the last (one element, not two)."""
    return st.container(key=NOTICES, horizontal=True, horizontal_alignment="distribute", vertical_alignment="center")


def draw_notices(drawn: Sidebar, box) -> None:
    """The view's notices and the what-if badge into `box`: one container, always there, whatever it holds,
    so the elements below keep their places in the page, and a toggle that brings a notice or the badge
    updates the charts below rather than remounting them."""
    with box:
        for notice in dict.fromkeys(drawn.notices):
            st.info(md(notice), icon="ℹ️")
        if drawn.context.trace.what_ifs or "attention" in drawn.controls:
            what_if_badge(drawn.context.trace, box)


def back_to_the_models_own() -> None:
    """Mask, hidden keys, scaling, temperature and ablations back to the model's own (one click)."""
    own = AttentionDisplay()
    st.session_state[key("mask")] = own.mask
    st.session_state[key("hidden")] = []
    st.session_state[key("scaling")] = own.scaling
    st.session_state[key("temperature")] = own.temperature
    st.session_state[key("ablate")] = []


def what_if_badge(trace: Trace, row) -> None:
    """When the run differs from the model's own, say how, on every page, with one click back. On a page
    with the attention controls, also when it does not (the button then off): the row is always there, so
    a toggle that starts or ends a what-if does not move the page under the user's eyes."""
    # in `row`, a horizontal container (`notices_box`), not in three columns; the button's label whole in presentation mode too
    if trace.what_ifs:
        row.badge(badge_label("what-if: " + "; ".join(trace.what_ifs)), icon=":material/science:", color="orange")
    else:
        row.badge("the model's own settings", icon=":material/check:", color="gray")
    row.button(
        "Model's own settings",
        on_click=back_to_the_models_own,
        key="back_to_own",
        disabled=not trace.what_ifs,
        help="Run the model as it was trained" if trace.what_ifs else "The model runs as it was trained",
    )


def _stop_presenting() -> None:
    st.session_state[key("presenting")] = False


def presentation_bar() -> None:
    """In presentation mode (no sidebar): the way out, and how to move."""
    st.button("Exit presentation", key="stop_presenting", on_click=_stop_presenting)
    st.caption("Arrow keys or Page Up / Page Down move from one figure to the next.")


def _reset_temperature() -> None:
    st.session_state[key("temperature")] = 1.0


def live_controls(live: dict | None, settings: Settings) -> dict | None:
    """`live` (viz.content.attention.stages_in_browser) with where its controls are on the page, for
    the chart to read them (ui/components/chart/live.js): their widget keys, the mask's labels and the
    temperature slider's values in order (the slider's position is an index into them)."""
    if live is None:
        return None
    controls = {
        "scaling": key("scaling"),
        "mask": key("mask"),
        "temperature": key("temperature"),
        "hidden": key("hidden"),
        "hide_here": HIDE_HERE,  # pills, one a token in position order (when the sentence is short enough)
        "heads": key("heads"),  # pills, one a head in head order; none chosen shows head 0 (clamp_to_model)
        "mask_labels": MASK_LABELS,
        "temperatures": temperature_options(settings.temperature),
    }
    return {**live, "controls": controls}


ATTENTION_CONTROLS = ("layer", "heads", "mask", "hidden", "scaling", "temperature", "ablate")


def draw_control(name: str, where, settings: Settings, model: TracedModel, trace: Trace, on_change=None) -> str | None:
    """One attention control (a field of ATTENTION_CONTROLS) in `where` (the sidebar or a lesson's box);
    `on_change(widget_key)`, if given, is called when the user changes it. Returns the control's widget
    key, None where there is no control (a model of one layer)."""
    changes = _callback(on_change, key(name))
    if name == "layer":
        if model.n_layers > 1:
            # a select slider, not a slider: Streamlit's slider without a value reads the whole session state
            where.select_slider("Layer", options=range(model.n_layers), key=key("layer"), **changes)
        else:
            where.caption("Layer 0 (this model has one layer)")
            return None
    elif name == "heads":
        # one click a head (a multiselect took two, and its frontend sent the change 30 ms after the click, not 15)
        where.pills("Heads", list(range(model.n_heads)), selection_mode="multi", key=key("heads"), help="Click a head to show it or hide it", **changes)
    elif name == "mask":
        # pills, not a selectbox: Streamlit's selectbox reads the whole session state on every rerun (0.85 ms here)
        where.pills("Mask", list(MASKS), key=key("mask"), format_func=MASK_LABELS.get, required=True, help=MASK_HELP, **changes)
    elif name == "hidden":
        pills = _hide_pills(where, settings, trace)
        where.multiselect(
            "…or find one in any sentence" if pills else "Hide key tokens",
            hide_choices(trace, settings.sentence, settings.hidden),
            key=key("hidden"),
            format_func=lambda pair: hidden_token_label(trace, pair),
            placeholder="type a word to find it",
            help=HIDE_HELP,
            **changes,
        )
    elif name == "scaling":
        where.toggle("Scale by 1/√d_k", key=key("scaling"), **changes)
    elif name == "temperature":
        row = where.container(horizontal=True, vertical_alignment="bottom")  # one element, not three (columns)
        row.select_slider(
            "Softmax temperature T",
            options=temperature_options(settings.temperature),
            key=key("temperature"),
            format_func=lambda t: f"{t:g}",
            help="A log scale: T = 1 (the model's own softmax) sits in the middle.",
            **changes,
        )
        # its value changed by the server: drawn by a full run (a button outside the fragment reruns the page)
        row.button("T = 1", on_click=_reset_temperature, key="reset_temperature", help="Back to the model's own softmax")
    elif name == "ablate":
        where.multiselect(
            "Ablate heads",
            [(layer, head) for layer in range(model.n_layers) for head in range(model.n_heads)],
            key=key("ablate"),
            format_func=lambda pair: f"layer {pair[0]} head {pair[1]}",
            help="Zero these heads' output before the output projection: the whole model then runs without them.",
            **changes,
        )
    else:
        raise ValueError(f"unknown control {name!r}")
    return key(name)


HIDE_HELP = (
    "The queries of that token's sentence may not attend to it; the other sentences keep it. "
    "The whole model runs without it: later layers and predictions of that sentence change."
)
HIDE_HERE = "w_hide_here"  # the token pills of the sentence shown; the hidden tokens themselves are key("hidden")


def _hide_pills(where, settings: Settings, trace: Trace) -> bool:
    """A row of pills, one a token of the sentence shown: a click hides that key or shows it again, as
    quickly as the heads' pills (Streamlit's multiselect handles a click for 50–80 ms of the browser's
    main thread before it sends it). They show what `key("hidden")` holds for that sentence, and their
    change goes back into it (`_pills_chosen`), so the box below shows it too. False when the sentence is
    too long for a row (`hide_pills`)."""
    positions = hide_pills(trace, settings.sentence)
    if positions is None:
        return False
    chosen = [p for s, p in settings.hidden if s == settings.sentence]
    if st.session_state.get(HIDE_HERE) != chosen:  # before the pills are drawn: another sentence, the box, a link
        st.session_state[HIDE_HERE] = chosen
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


def _pills_chosen(sentence: int) -> None:
    st.session_state[key("hidden")] = hidden_with(st.session_state.get(key("hidden"), ()), sentence, st.session_state.get(HIDE_HERE) or ())


@contextmanager
def guarded():
    """Show an unexpected error as a short message, never as a traceback to the user; the server's
    log gets the traceback (logger "attention_viz"), so the bug is not hidden from tests or operators."""
    try:
        yield
    except Exception as error:
        if type(error).__name__ in ("StopException", "RerunException"):
            raise
        log.exception("a view could not be drawn")
        st.error(f"This view could not be drawn: {error.__class__.__name__}: {md(error)}", icon="⚠️")


def apply_settings(settings: Settings) -> None:
    """Replace the whole view (a lesson, a freshly trained model): the next run draws it."""
    st.session_state["pending_settings"] = settings
    st.session_state.pop("w_model_choice", None)
