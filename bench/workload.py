"""What the benchmark runs: the two models, inputs of exactly N tokens, and each page's server work.

Each page's work is the page function the app calls (`viz.content`), without Streamlit: the figures
it returns are what the chart component (ui/chart.py) is sent, as plotly JSON.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import bench  # noqa: F401  (sets the offline / quiet environment first)

SENTENCE = "the farmer sat on the river bank with his dog and the woman took money from the bank in town"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
NOTES: dict[str, str] = {}  # what the benchmark had to work around in the app, for the report


# ---------------------------------------------------------------------------------------- models


def wordpiece_vocabulary() -> list[str]:
    """Special tokens and the toy model's words: every word of `SENTENCE` is one WordPiece token."""
    from model.vocab import TOY_WORDS

    return list(dict.fromkeys(SPECIALS + list(TOY_WORDS)))


def build_distilbert_folder(folder: Path | None = None, seed: int = 0) -> Path:
    """A DistilBERT-size model (`DistilBertConfig()` defaults) with random weights, saved with a WordPiece tokenizer."""
    import torch
    from transformers import DistilBertConfig, DistilBertModel, DistilBertTokenizerFast
    from transformers.utils import logging

    logging.disable_progress_bar()
    folder = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="bench-distilbert-"))
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    DistilBertModel(DistilBertConfig()).save_pretrained(folder)
    vocab = {piece: index for index, piece in enumerate(wordpiece_vocabulary())}
    DistilBertTokenizerFast(vocab=vocab, do_lower_case=True).save_pretrained(folder)
    return folder


def load(kind: str, folder: Path | None = None):
    """`"toy"` → `load_model("toy")`; `"distilbert"` → `load_model(folder)` (the user's path)."""
    from model import load_model

    if kind == "toy":
        return load_model("toy")
    if kind == "distilbert":
        if folder is None:
            raise ValueError("the DistilBERT-size model needs its folder (see build_distilbert_folder)")
        return load_model(str(folder))
    raise ValueError(f"unknown model {kind!r}")


def n_tokens(model, text: str) -> int:
    token_lists, _ = model.tokenize([text])
    return len(token_lists[0])


def text_of_tokens(model, n: int) -> str:
    """`SENTENCE` repeated and cut so that `model` reads exactly `n` tokens (special tokens included)."""
    words = SENTENCE.split()
    specials = n_tokens(model, words[0]) - 1  # [CLS] and [SEP] for DistilBERT, none for the toy model
    count = n - specials
    if count < 1:
        raise ValueError(f"{n} tokens leave no room for a word")
    text = " ".join(words[i % len(words)] for i in range(count))
    got = n_tokens(model, text)
    if got != n:
        raise RuntimeError(f"expected {n} tokens, the tokenizer made {got}: is every word of SENTENCE in the vocabulary?")
    token_lists, _ = model.tokenize([text])
    unknown = [t.text for t in token_lists[0] if t.kind == "unknown"]
    if unknown:
        raise RuntimeError(f"unknown tokens in the benchmark text: {unknown[:5]}")
    return text


def bare_inputs(model, text: str):
    """input_ids and key_valid exactly as `model.trace` builds them (taken from a trace)."""
    trace = model.trace([text])
    return trace.input_ids, trace.key_valid


def bare_forward(model, input_ids, key_valid):
    """The model's own forward pass: no hooks, no recorded internals, no attention outputs."""
    import torch

    with torch.no_grad():
        if model.is_toy:
            return model.module(input_ids, key_valid)
        return model.module(input_ids=input_ids, attention_mask=key_valid.long())


def trace_for(model, texts: list[str], settings):
    """The run a page starts from, as the app gets it (`viz.content.run_model`)."""
    from viz.content import run_model

    return run_model(model, texts, settings.display)


def view_of(run, settings, model):
    """A pretrained model's cached run shown with the settings' mask, scaling and temperature."""
    from viz.content import shown_as

    return shown_as(run, model, settings.display)


# ----------------------------------------------------------------------------------------- pages


def attention_figures(trace, settings) -> dict:
    """The Attention page's figures (its table and notices are built too, as in the app)."""
    from viz.content import attention_page

    return attention_page(settings, trace).figures


class TokensPage:
    """The Tokens page, with its comparison tokenizers made once (the app caches them too)."""

    def __init__(self, model):
        from viz.content.tokens import comparison_tokenizers

        self.tokenizers = comparison_tokenizers(model)
        self.model = model

    def figures(self, trace, settings) -> dict:
        from viz.content import tokens_page

        return tokens_page(settings, trace, self.model, self.tokenizers).figures


def positional_figures(model, trace, settings, n_positions: int) -> dict:
    """The Positional encoding page with its sliders at `n_positions` positions and the model's d_model (≤ 512)."""
    from dataclasses import replace

    from viz.content import positional_page
    from viz.content.settings import PE_LIMIT

    n = max(2, min(n_positions, PE_LIMIT))
    d = max(2, min(model.d_model, PE_LIMIT))
    return positional_page(replace(settings, pe_positions=n, pe_d_model=d), trace, model).figures


def embeddings_figures(model, trace, settings) -> dict:
    """The Embeddings page with its defaults: "bank", the default reference words, the last layer."""
    from viz.content import embeddings_page

    return embeddings_page(settings, trace, model.name).figures


def serialise(figures: dict) -> dict[str, int]:
    """Bytes of each figure's JSON, as the chart component is sent it (`viz.payload.browser_json`)."""
    from viz.payload import browser_json

    return {name: len(browser_json(figure).encode("utf-8")) for name, figure in figures.items()}
