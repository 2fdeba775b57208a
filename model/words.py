"""Attention between words instead of sub-word pieces.

A tokenizer may cut one word into several pieces ("withdraw", "##ing"). To read attention word by
word, the pieces of a word are merged:

    word_pattern[a, b] = mean over query pieces i of word a ( sum over key pieces j of word b of pattern[i, j] )

Summing over a word's key pieces keeps the total weight a query gives to that word; averaging over a
word's query pieces keeps every row a distribution: a row of the merged pattern sums to the same
value as the rows it merges (1, or 0 for a fully masked row).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from model.tokenizers import Token


@dataclass(frozen=True)
class WordGroups:
    """The positions of one sentence grouped into words, in order.

    A word is a run of consecutive tokens with the same `Token.word`; a token without a word (special
    tokens, spaces) and every padding position stays a group of its own.
    """

    positions: list[list[int]]  # per word, the token positions it covers
    labels: list[str]  # per word, its text as typed ("withdrawing"), or the token's text

    def __len__(self) -> int:
        return len(self.positions)

    def word_of(self, position: int) -> int:
        """The index of the word that holds token `position`."""
        for index, group in enumerate(self.positions):
            if position in group:
                return index
        raise IndexError(f"position {position} is in no word")


def word_groups(tokens: list[Token], text: str, n_pos: int | None = None, pad_label: str = "[PAD]") -> WordGroups:
    """Group a sentence's tokens into words; positions from len(tokens) to n_pos are padding, one group each."""
    positions: list[list[int]] = []
    labels: list[str] = []
    previous = None
    for position, token in enumerate(tokens):
        if token.word is not None and token.word == previous:
            positions[-1].append(position)
            first = tokens[positions[-1][0]]
            labels[-1] = text[first.start : token.end].strip() or labels[-1] + token.text
        else:
            positions.append([position])
            labels.append(token.text if token.word is None else (text[token.start : token.end].strip() or token.text))
        previous = token.word
    for position in range(len(tokens), n_pos if n_pos is not None else len(tokens)):
        positions.append([position])
        labels.append(pad_label)
        previous = None
    return WordGroups(positions, labels)


def membership(groups: WordGroups, n_pos: int) -> Tensor:
    """`[n_words, pos]` with 1 where the position belongs to the word, else 0."""
    matrix = torch.zeros(len(groups), n_pos, dtype=torch.float64)
    for index, group in enumerate(groups.positions):
        matrix[index, group] = 1.0
    return matrix


def word_pattern(pattern: Tensor, groups: WordGroups) -> Tensor:
    """Merge `[..., query_pos, key_pos]` attention weights into `[..., query_word, key_word]`.

    Keys: the weights of a word's pieces are summed. Queries: the rows of a word's pieces are averaged.
    """
    n_pos = pattern.shape[-1]
    if pattern.shape[-2] != n_pos:
        raise ValueError(f"expected a square pattern, got {tuple(pattern.shape[-2:])}")
    member = membership(groups, n_pos)  # [n_words, pos]
    covered = member.sum(dim=0)
    if not torch.equal(covered, torch.ones_like(covered)):
        raise ValueError("every position must belong to exactly one word")
    query_mean = member / member.sum(dim=1, keepdim=True)  # [n_words, pos], rows average a word's pieces
    merged = query_mean @ pattern.double() @ member.T  # [..., n_words, n_words]
    return merged.to(pattern.dtype)
