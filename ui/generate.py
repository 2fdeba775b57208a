"""The Generate page's glue: its controls, the run (one per model and settings, shared by every session),
the step shown, and the way to the Attention page with the text the run wrote."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import streamlit as st

from model import InputError
from model.generate import Generation
from ui.figures import KEYS, describe_view
from ui.shared_cache import SharedCache, shared
from ui.text import md
from ui.view import SETTINGS, PageContext, apply_settings, cached_model, guarded, key
from viz.content.generate import generate_page, plain_token, run_table
from viz.content.page import PageContent
from viz.content.settings import MAX_NEW_TOKENS, MAX_PROMPT_CHARS, SESSION_MODEL, Settings, temperature_options, to_query

_steps: SharedCache[PageContent] = SharedCache(max_entries=256, ttl=1800)  # a step's figures, per run, step and layer


def run_arguments(settings: Settings) -> tuple:
    """(prompt, max_new_tokens, temperature, top_k, top_p, seed) for `model.generate`. Greedy runs ignore
    the draw's settings, so changing them while greedy reuses the same run."""
    if not settings.sample:
        return (settings.prompt, settings.new_tokens, 0.0, None, None, 0)
    top_k = settings.sample_top_k or None
    top_p = settings.sample_top_p if settings.sample_top_p < 1 else None
    return (settings.prompt, settings.new_tokens, settings.sampling_temperature, top_k, top_p, settings.seed)


@shared(max_entries=16)
def cached_generation(name: str, tokenizer: str, arguments: tuple) -> Generation:
    """One run of a built-in or Hub model, built once per server."""
    return cached_model(name, tokenizer).generate(*arguments)


def run_key(context: PageContext) -> tuple:
    s = context.settings
    return (s.model, s.tokenizer if s.model == "toy-random" else "", run_arguments(s))


def generation(context: PageContext) -> Generation | None:
    """The run the settings ask for; None, with the reason shown, when the model cannot write (a
    bidirectional model) or the prompt gives nothing to continue."""
    try:
        if context.settings.model == SESSION_MODEL:  # trained in this browser session: not shared, and fast
            return context.model.generate(*run_arguments(context.settings))
        with st.spinner("Writing, one token at a time…"):
            return cached_generation(*run_key(context))
    except InputError as error:
        st.warning(md(error), icon="✍️")
        return None


def run_controls(settings: Settings) -> None:
    """The prompt, how many tokens, and how each is picked."""
    st.text_area("Prompt", key=key("prompt"), height=68, max_chars=MAX_PROMPT_CHARS, help="The model continues this text.")
    row = st.container(horizontal=True, vertical_alignment="bottom", gap="medium")
    row.slider("New tokens", 1, MAX_NEW_TOKENS, key=key("new_tokens"))
    row.segmented_control(
        "Pick",
        [False, True],
        key=key("sample"),
        required=True,
        format_func=lambda sample: "sample" if sample else "greedy",
        help="greedy: always the most likely token. sample: draw from the probabilities (after the temperature and the cut).",
    )
    if settings.sample:
        row = st.container(horizontal=True, vertical_alignment="bottom", gap="medium")
        options = temperature_options(settings.sampling_temperature)
        row.select_slider("Temperature T", options, key=key("sampling_temperature"), format_func=lambda t: f"{t:g}")
        row.number_input("Top-k (0 = no cut)", 0, 1000, key=key("sample_top_k"), help="Draw only from the k most likely tokens.")
        row.slider("Top-p", 0.01, 1.0, step=0.01, key=key("sample_top_p"), help="Then only from the fewest tokens whose probabilities add up to p.")
        row.number_input("Seed", 0, 2**31 - 1, key=key("seed"), help="The same seed draws the same tokens: a link writes the same text.")


PLAYING = "generate_playing"  # session state: the run plays, a step every TICK_S
TICK_S = 0.7  # seconds between two steps while playing


def _move(to: int) -> None:
    """A step chosen by hand (a button): playing stops."""
    st.session_state[key("step")] = to
    st.session_state[PLAYING] = False


def _stop() -> None:
    """The slider moved by hand (a drag, an arrow key): playing stops."""
    st.session_state[PLAYING] = False


def _play(on: bool, step: int, last: int) -> None:
    """Play (from the first step again when the last is shown) or pause."""
    st.session_state[PLAYING] = on
    if on and step == last:
        st.session_state[key("step")] = 0


def step_by_step(context: PageContext, run: Generation, draw: Callable[[PageContent], None]) -> None:
    """The step controls and `draw(content)` of the step shown, as a fragment: a step (the slider, its arrow
    keys, the buttons) or a layer reruns only this part; the prompt, the run and the sidebar stay. The
    settings and the link follow the step.

    Play reruns the part every TICK_S (`st.fragment(run_every=...)`), one step further each time, until the
    last step; Pause, a step chosen by hand or the last step stops it. The timer is the page's: starting or
    stopping it takes one rerun of the whole page (`st.rerun()`), which declares the fragment again with or
    without `run_every`."""
    state = st.session_state
    last = len(run.steps) - 1
    ticking = bool(state.get(PLAYING)) and last > 0
    state[PLAYING] = ticking
    page_run = [True]  # taken by the part's first call, in the page's run: the part's own reruns find it empty
    keys_before = frozenset(state.get(KEYS, ()))  # the chart keys drawn above this part in the page's run

    @st.fragment(run_every=TICK_S if ticking else None)
    def step_part():
        from_page = bool(page_run) and page_run.pop()
        if state.get(PLAYING, False) != ticking:  # Play or Pause was pressed, a step chosen, or the end reached
            st.rerun()
        state[KEYS] = set(keys_before)  # this part's charts keep their keys, and so their drawings (ui.figures.chart_key)
        if ticking and not from_page:  # a tick of the timer
            step = min(state.get(key("step"), 0) + 1, last)
            state[key("step")] = step
            state[PLAYING] = step < last
        with guarded():
            settings = replace(context.settings, step=state.get(key("step"), context.settings.step), layer=state.get(key("layer"), context.settings.layer))
            step = shown_step(settings, run)
            if state.get(SETTINGS) != (now := replace(settings, step=step)):
                state[SETTINGS] = now
                st.query_params.from_dict(to_query(now))
                describe_view()
            draw(step_content(context, run, step, layer_control(context)))

    step_part()


def shown_step(settings: Settings, run: Generation) -> int:
    """The step `settings` asks for, moved back inside the run (a link's step beyond it, a run that
    stopped early) with a notice; then the step controls: the button before, the slider over the steps,
    the button after, Play or Pause."""
    last = len(run.steps) - 1
    step = settings.step
    if step > last:
        st.info(f"Step {step + 1} is beyond this run ({last + 1} steps); showing the last.", icon="ℹ️")
        step = last
        st.session_state[key("step")] = step
    if last == 0:
        return step
    playing = bool(st.session_state.get(PLAYING))
    row = st.container(horizontal=True, vertical_alignment="bottom", gap="small")
    row.button("", icon=":material/chevron_left:", key="generate_previous", on_click=_move, args=(step - 1,), disabled=step == 0, help="The step before")
    labels = [f"{i + 1} · {plain_token(run.tokens[run.steps[i].position + 1])}" for i in range(len(run.steps))]
    row.select_slider("Step (←/→ when the slider is focused)", range(len(run.steps)), key=key("step"), format_func=labels.__getitem__, on_change=_stop)
    row.button("", icon=":material/chevron_right:", key="generate_next", on_click=_move, args=(step + 1,), disabled=step == last, help="The step after")
    row.button(
        "Pause" if playing else "Play",
        icon=":material/pause:" if playing else ":material/play_arrow:",
        key="generate_play",
        on_click=_play,
        args=(not playing, step, last),
        help=f"Step through the run, a step every {TICK_S:g} s" + (" (from the first step again)" if step == last else ""),
    )
    return step


def layer_control(context: PageContext) -> int:
    """The layer of the query row and the cached keys (a select slider: the arrow keys step it too)."""
    if context.model.n_layers > 1:
        st.select_slider("Layer of the query row and the cached keys", range(context.model.n_layers), key=key("layer"))
    return st.session_state.get(key("layer"), context.settings.layer)


def step_content(context: PageContext, run: Generation, step: int, layer: int) -> PageContent:
    """`generate_page` of the step, built once per run, step and layer."""
    if context.settings.model == SESSION_MODEL:
        return generate_page(run, step, layer)
    return _steps.get((run_key(context), step, layer), lambda: generate_page(run, step, layer))


def run_download(run: Generation) -> None:
    """The whole run as a tidy CSV: a row per step and candidate."""
    st.download_button(
        "Download the run (CSV)",
        lambda: run_table(run).to_csv(index=False),
        "generate-run.csv",
        "text/csv",
        key="generate_run_csv",
        on_click="ignore",
        icon=":material/download:",
    )


def attention_text(run: Generation) -> str:
    """The prompt and what the run wrote, as one sentence for the Attention page (a line break would start another)."""
    return " ".join((run.prompt + run.text).splitlines())


def open_on_attention(context: PageContext, run: Generation) -> None:
    """A button: the Attention page with the prompt and the written text as its sentence."""
    if st.button(
        "Open the generated text on the Attention page",
        icon=":material/grid_on:",
        key="generate_open_attention",
        help="The prompt and the tokens written as the Attention page's sentence: every query row of every head at once.",
    ):
        apply_settings(replace(context.settings, text=attention_text(run), sentence=0, hidden=(), cell=(), pinned=-1, focus=-1))
        st.switch_page("pages/3_Attention.py")
