"""Helpers the page functions share: token labels of a sentence, and blocks of tokens for long inputs."""

from __future__ import annotations

import numpy as np

from viz.heatmap import block_weights, downsample

FULL_RESOLUTION = 128  # beyond this many tokens, side-by-side panels are drawn in blocks of tokens (`fit`)


def sentence_labels(trace, sentence: int) -> list[str]:
    """Token texts of one sentence, padded with [PAD] to the batch's length."""
    tokens = [t.text for t in trace.tokens[sentence]]
    return tokens + ["[PAD]"] * (trace.input_ids.shape[1] - len(tokens))


HIDE_CHOICES = 512  # tokens offered by the "Hide key tokens" box: every sentence's, up to this many


def hide_choices(trace, shown: int, hidden=()) -> list[tuple[int, int]]:
    """The (sentence, position) pairs the "Hide key tokens" box offers: the tokens of the sentence
    shown first, then the other sentences' (while there are fewer than HIDE_CHOICES), and every pair
    already hidden."""
    order = [shown, *(s for s in range(len(trace.tokens)) if s != shown)]
    choices: list[tuple[int, int]] = []
    for sentence in order:
        pairs = [(sentence, p) for p in range(len(trace.tokens[sentence]))]
        if choices and len(choices) + len(pairs) > HIDE_CHOICES:
            break
        choices += pairs
    return choices + [pair for pair in hidden if pair not in set(choices)]


def token_text(trace, pair: tuple[int, int]) -> str:
    """A (sentence, position) token by its text, leading space dropped ("?" where there is none)."""
    sentence, position = pair
    tokens = trace.tokens[sentence] if 0 <= sentence < len(trace.tokens) else []
    text = tokens[position].text if 0 <= position < len(tokens) else "?"
    return text.strip() or repr(text)


def hidden_token_label(trace, pair: tuple[int, int]) -> str:
    """ "bank (sentence 1, position 5)": a token by its text (leading space dropped), its sentence
    counted from 1 and its position from 0."""
    return f"{token_text(trace, pair)} (sentence {pair[0] + 1}, position {pair[1]})"


HIDE_PILLS = 32  # a sentence of up to this many tokens gets a row of token pills, one click hides one


def hide_pills(trace, sentence: int) -> list[int] | None:
    """The positions that the row of token pills offers (every token of the sentence shown), or None
    for a sentence too long for a row (the "Hide key tokens" box alone then)."""
    n = len(trace.tokens[sentence]) if 0 <= sentence < len(trace.tokens) else 0
    return list(range(n)) if 0 < n <= HIDE_PILLS else None


def pill_labels(trace, sentence: int) -> list[str]:
    """The token pills' labels, one a position: the token's text, with a repeat told apart by zero-width
    spaces after it (Streamlit's pills send the label of a choice, not its index: three "a" pills would all
    stand for the last "a"). The row reads as the sentence."""
    labels: list[str] = []
    for p in range(len(trace.tokens[sentence])):
        label = token_text(trace, (sentence, p))
        while label in labels:  # (a token typed with its own zero-width space too)
            label += "\u200b"
        labels.append(label)
    return labels


def hidden_with(hidden, sentence: int, positions) -> list[tuple[int, int]]:
    """The hidden (sentence, position) pairs with those of `sentence` replaced by `positions` (the token
    pills' choice), the other sentences' kept as they are; sorted."""
    return sorted({*(pair for pair in map(tuple, hidden) if pair[0] != sentence), *((sentence, int(p)) for p in positions)})


def token_rows(tokens) -> list[dict]:
    return [dict(text=t.text, id=t.id, kind=t.kind) for t in tokens]


def fit(matrices: dict[str, np.ndarray], labels: list[str], hidden: np.ndarray, limit: int = FULL_RESOLUTION, weights: tuple[str, ...] = ("pattern",)):
    """`[query_pos, key_pos]` matrices larger than `limit` per side in blocks of tokens, for side-by-side panels.

    `hidden` is True where a cell is masked. The matrices named in `weights` (softmax weights) become
    the weight each block's queries give its keys (`block_weights`: rows still sum to 1), the others
    (scores) block means. Returns the matrices, block labels ("the…" = the block starting at that
    token), the blocks' mask (a block is masked when all its cells are), and the block size (1 when
    nothing changed).
    """
    n = len(labels)
    if n <= limit:
        return matrices, labels, hidden, 1
    starts = np.linspace(0, n, limit + 1).astype(int)[:-1]
    reduced = {
        name: block_weights(m, limit, masked=hidden) if name in weights else downsample(m, limit, masked=hidden if name == "scores_masked" else None)
        for name, m in matrices.items()
    }
    block_hidden = np.isnan(downsample(np.where(hidden, np.nan, 1.0), limit))
    return reduced, [f"{labels[i]}…" for i in starts], block_hidden, int(np.ceil(n / limit))


def last_word(tokens) -> int:
    """The position of a sentence's last word: its last token that is not a special token ([SEP], </s>) and
    holds a letter or a digit, or its last token when none does. The Next token and Why pages start there: a
    model that learned from one sentence at a time, as the toys did, never saw what follows a closing "."."""
    words = [p for p, token in enumerate(tokens) if token.kind != "special" and any(c.isalnum() for c in token.text)]
    return words[-1] if words else len(tokens) - 1
