"""What the benchmark runs: the two models, inputs of exactly N tokens, and each page's server work.

The page functions replay what `pages/*.py` compute for one run of the script, through the same
`model/` and `viz.views` calls, without Streamlit: the figures they return are what `st.plotly_chart`
serialises and sends.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import bench  # noqa: F401  (sets the offline / quiet environment first)

SENTENCE = "the fisher sat on the river bank with his dog and the woman took money from the bank in town"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
REFERENCES = ("river", "water", "money", "deposit")  # the Embeddings page's default reference words
TARGET = "bank"
NOTES: dict[str, str] = {}  # what the benchmark had to work around in the app, for the report


@dataclass(frozen=True)
class Settings:
    """The view the benchmark draws: the app's defaults (first sentence, layer 0, head 0)."""

    sentence: int = 0
    layer: int = 0
    head: int = 0
    mask: str | None = None  # None: the model's own
    scale: bool = True
    temperature: float = 1.0


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
    """input_ids and key_valid exactly as `model.trace` builds them."""
    from model.trace import pad_batch

    token_lists, _ = model.tokenize([text])
    return pad_batch(token_lists, model.tokenizer.pad_id)


def bare_forward(model, input_ids, key_valid):
    """The model's own forward pass: no hooks, no recorded internals, no attention outputs."""
    import torch

    with torch.no_grad():
        if model.is_toy:
            return model.module(input_ids, key_valid)
        return model.module(input_ids=input_ids, attention_mask=key_valid.long())


def trace_for(model, texts: list[str], settings: Settings):
    """The run a page starts from, as `ui.view.get_trace` gets it.

    The toy model runs with the chosen mask, scaling and temperature; a pretrained model runs as
    trained and the view is changed afterwards (`with_view`).
    """
    mask_name = settings.mask or model.default_mask
    if model.is_toy:
        return model.trace(texts, mask=mask_name, scale=settings.scale, temperature=settings.temperature)
    run = model.trace(texts)
    return view_of(run, settings, model)


def view_of(run, settings: Settings, model):
    from model import MaskSpec

    mask = MaskSpec.parse(settings.mask or model.default_mask)
    return run.with_view(mask, settings.scale, settings.temperature)


# ----------------------------------------------------------------------------------------- pages


def attention_figures(trace, settings: Settings) -> dict:
    """The figures of pages/3_Attention.py for one head, with the rest of its server work."""
    from model.attention import worked_example
    from viz.views import FULL_RESOLUTION, overview_figure, pattern_of_head, scaling_figures, sentence_labels, stages_of_head

    b, layer, head = settings.sentence, settings.layer, settings.head
    stages = trace.stages(layer)
    figures = {f"stages-L{layer}-H{head}": stages_of_head(trace, b, layer, head, stages)}
    if len(sentence_labels(trace, b)) > FULL_RESOLUTION:  # long inputs: block means, then one full pattern
        figures[f"pattern-L{layer}-H{head}"] = pattern_of_head(trace, b, layer, head, stages)
    bool(stages.fully_masked_rows[b, head].any())
    figures.update(scaling_figures(trace, b, layer, head))
    n = len(trace.tokens[b])
    worked_example(stages, b, head, min(n - 1, 2), 0)
    figures["overview-all-heads"] = overview_figure(trace, b)
    return figures


class TokensPage:
    """pages/1_Tokens.py: the model's own token strip, then the same sentence four ways."""

    def __init__(self, model):
        from model.loading import wordpiece_tokenizer
        from model.tokenizers import get_tokenizer

        # What the page keeps in st.cache_resource / lru_cache: made once, outside the timing.
        self.tokenizers = {name: get_tokenizer(name) for name in ("word", "char", "gpt2-bpe")}
        if not model.is_toy:
            self.tokenizers[model.name] = model.tokenizer
        else:
            wordpiece = wordpiece_tokenizer()
            if wordpiece is not None:
                self.tokenizers["wordpiece"] = wordpiece
        self.model = model

    def figures(self, trace, settings: Settings) -> dict:
        from viz import tokens_figure
        from viz.views import token_rows, tokens_figures

        figures = dict(tokens_figures(trace, self.model.tokenizer.label))
        text = trace.texts[settings.sentence]
        for name, tokenizer in self.tokenizers.items():
            tokens = tokenizer.encode(text)
            figures[f"tokens-compare-{name}"] = tokens_figure(
                token_rows(tokens), title=f"{tokenizer.label}: {len(tokens)} tokens"
            )
        return figures


def positional_figures(model, trace, settings: Settings, n_positions: int) -> dict:
    """pages/2_Positional_encoding.py with its sliders at `n_positions` positions and the model's d_model (≤ 512)."""
    from model import cosine_similarity_matrix, similarity_by_distance, sinusoidal_positional_encoding
    from ui.settings import PE_LIMIT
    from viz import input_composition_figure, position_similarity_heatmap, similarity_by_distance_figure
    from viz import views
    from viz.views import positional_figures as pe_figures
    from viz.views import COMPOSITION_TOKENS, sentence_labels

    n = max(2, min(n_positions, PE_LIMIT))
    d = max(2, min(model.d_model, PE_LIMIT))
    base = 10000
    pe = sinusoidal_positional_encoding(n, d, float(base))
    similarity = cosine_similarity_matrix(pe)
    distances, means = similarity_by_distance(similarity)
    dims = list(dict.fromkeys(dim for dim in (0, 1, d // 2, d - 2) if 0 <= dim < d))
    figures = dict(pe_figures(pe.numpy(), similarity.numpy(), distances.numpy(), means.numpy(), base, dims))
    if not model.is_toy:
        learned = cosine_similarity_matrix(model.position_matrix(n))
        learned_distances, learned_means = similarity_by_distance(learned)
        title = f"{model.name}: learned position embeddings"
        if hasattr(views, "similarity_figure"):
            figures["learned-position-similarity"] = views.similarity_figure(learned.numpy(), title)
        else:
            figures["learned-position-similarity"] = position_similarity_heatmap(learned.numpy(), title=title)
        figures["learned-vs-sinusoidal-by-distance"] = similarity_by_distance_figure(
            distances.numpy(),
            means.numpy(),
            label=f"sinusoidal, base {base}",
            series={f"{model.name}: learned": (learned_distances.numpy(), learned_means.numpy())},
        )
    b = settings.sentence
    count = len(trace.tokens[b])
    count = min(count, COMPOSITION_TOKENS)
    labels = sentence_labels(trace, b)[:count]
    arrays = trace.static_embeddings[b, :count].numpy(), trace.positional[:count].numpy()
    figures["input-composition"] = input_composition_figure(*arrays, labels)
    return figures


def embeddings_figures(model, trace, settings: Settings) -> dict:
    """pages/4_Embeddings.py with its defaults: "bank", the default reference words, the last layer."""
    from model.embeddings import embedding_projection
    from viz.views import embedding_figures

    projection = embedding_projection(trace, TARGET, REFERENCES, layer=None)
    return dict(embedding_figures(projection, model.name))


def serialise(figures: dict) -> dict[str, int]:
    """Bytes of each figure's JSON, as `fig.to_json()` gives it (what Streamlit sends)."""
    return {name: len(figure.to_json().encode("utf-8")) for name, figure in figures.items()}
