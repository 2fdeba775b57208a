"""What one head's pattern does on one sentence, in numbers, and the badge those numbers earn: the
statistics behind the Heads page (`model.heads.head_summary`) and the corpus view (`model.corpus_heads`)."""

from __future__ import annotations

import unicodedata

import torch
from torch import Tensor

from model.attention import entropy_bits

# The badge of a head is the first rule below that its numbers meet ("mixed" when none does).
PREVIOUS_MIN = 0.5  # previous-token head: at least half its weight on the token just before
SELF_MIN = 0.5  # self head: at least half on the query's own token
FIRST_MIN = 0.5  # first-token sink: at least half on position 0 ([CLS], <s>, or the first word)
DELIMITER_MIN = 0.5  # delimiter sink: at least half on [SEP]-like tokens and punctuation together
LOCAL_MAX_DISTANCE = 1.5  # local: the mean distance |i − j| it looks over is at most 1.5 tokens
BROAD_MIN_ENTROPY = 0.8  # broad: row entropy at least 80 % of the uniform row's (log2 of keys seen)

BADGES = ("previous-token", "self", "first-token sink", "delimiter sink", "local", "broad", "mixed")
BADGE_RULES = {
    "previous-token": f"share on the previous token ≥ {PREVIOUS_MIN:.0%}",
    "self": f"share on the token itself ≥ {SELF_MIN:.0%}",
    "first-token sink": f"share on the first token ≥ {FIRST_MIN:.0%}",
    "delimiter sink": f"share on [SEP]-like tokens and punctuation ≥ {DELIMITER_MIN:.0%}",
    "local": f"mean distance ≤ {LOCAL_MAX_DISTANCE:g} tokens",
    "broad": f"entropy ≥ {BROAD_MIN_ENTROPY:.0%} of a uniform row's",
    "mixed": "none of the above",
}

SHARES = ("previous", "self", "first", "delimiter", "punctuation")


def is_punctuation(text: str) -> bool:
    """A token made only of punctuation marks (after the tokenizer's space and piece markers)."""
    core = text.replace("##", "").replace("Ġ", "").replace("▁", "").strip()
    return bool(core) and all(unicodedata.category(c).startswith("P") for c in core)


def key_roles(tokens) -> dict[str, Tensor]:
    """Boolean masks `[pos]` of the positions that are delimiters ([SEP]-like) and punctuation.

    A delimiter is a special token anywhere but position 0 (which counts as the first token).
    """
    n = len(tokens)
    delimiter = torch.tensor([t.kind == "special" and i > 0 for i, t in enumerate(tokens)], dtype=torch.bool)
    punctuation = torch.tensor([is_punctuation(t.text) and t.kind != "special" for t in tokens], dtype=torch.bool)
    return dict(delimiter=delimiter.reshape(n), punctuation=punctuation.reshape(n))


def model_patterns(trace, sentence: int = 0) -> Tensor:
    """The model's own attention of one sentence, `[layer, head, query_pos, key_pos]`, cut to its tokens.

    Computed with the mask, scaling and temperature the model ran with (not a what-if of the page).
    """
    n = len(trace.tokens[sentence])
    own = dict(mask=trace.mask, scale=trace.scale, temperature=trace.temperature)
    return torch.stack([trace.pattern(layer, sentence, **own)[:, :n, :n] for layer in range(trace.n_layers)])


def pattern_statistics(patterns: Tensor, tokens) -> dict[str, Tensor]:
    """Per-head numbers of patterns `[..., head, query_pos, key_pos]` over one sentence's tokens.

    Shares are the mean over query rows 1 … n−1 of the weight on a kind of key (row 0 is left out: in
    a causal model its only key is itself, which would count as self, first and every other role at
    once). A one-token sentence uses its only row. Entropy is in bits, the mean over rows; the
    normalised entropy divides each row's by log2 of the number of keys it may see (rows seeing one
    key are left out of it). Distance is the mean over rows of Σ_j α_ij·|i − j|.
    """
    n = patterns.shape[-1]
    rows = slice(1, n) if n > 1 else slice(0, 1)
    positions = torch.arange(n, dtype=patterns.dtype)
    p = patterns[..., rows, :]  # [..., head, rows, key_pos]
    query = positions[rows]

    row_entropy = entropy_bits(p)  # [..., head, rows]
    # A row's uniform entropy is log2 of the keys it may see: all n keys, or i + 1 in a causal model.
    causal = bool((patterns[..., 0, 1:] == 0).all()) if n > 1 else False
    n_keys = (query + 1) if causal else torch.full_like(query, float(n))
    uniform = torch.log2(n_keys)
    has_choice = n_keys > 1
    normalised = torch.where(has_choice, row_entropy / uniform.clamp_min(1e-30), torch.zeros_like(row_entropy))
    n_choice = has_choice.sum().clamp_min(1)

    distance = (p * (query[:, None] - positions[None, :]).abs()).sum(-1)  # [..., head, rows]
    query_index = torch.arange(n)[rows]
    previous = p[..., torch.arange(p.shape[-2]), (query_index - 1).clamp_min(0)]
    if n == 1:
        previous = torch.zeros_like(previous)
    self_share = p[..., torch.arange(p.shape[-2]), query_index]
    roles = key_roles(tokens)
    return dict(
        entropy=row_entropy.mean(-1),
        entropy_normalised=(normalised * has_choice).sum(-1) / n_choice,
        distance=distance.mean(-1),
        previous=previous.mean(-1),
        self=self_share.mean(-1),
        first=p[..., 0].mean(-1),
        delimiter=(p * roles["delimiter"]).sum(-1).mean(-1),
        punctuation=(p * roles["punctuation"]).sum(-1).mean(-1),
    )


def badge(stats: dict[str, float], n_tokens: int) -> str:
    """The badge of one head from its numbers (see `BADGE_RULES`); rules are tried in order."""
    if n_tokens > 1 and stats["previous"] >= PREVIOUS_MIN:
        return "previous-token"
    if stats["self"] >= SELF_MIN:
        return "self"
    if n_tokens > 1 and stats["first"] >= FIRST_MIN:
        return "first-token sink"
    if stats["delimiter"] + stats["punctuation"] >= DELIMITER_MIN:
        return "delimiter sink"
    if n_tokens > 2 and stats["distance"] <= LOCAL_MAX_DISTANCE:
        return "local"
    if n_tokens > 1 and stats["entropy_normalised"] >= BROAD_MIN_ENTROPY:
        return "broad"
    return "mixed"
