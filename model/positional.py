"""Sinusoidal positional encoding and how positions relate to each other."""

from __future__ import annotations

import torch
from torch import Tensor


def sinusoidal_positional_encoding(n_positions: int, d_model: int, base: float = 10000.0) -> Tensor:
    """The encoding of "Attention Is All You Need", `[n_positions, d_model]`.

    PE(pos, 2i)   = sin(pos / base^(2i / d_model))
    PE(pos, 2i+1) = cos(pos / base^(2i / d_model))

    Column pairs (2i, 2i+1) share one angle. When d_model is odd the last column 2i = d_model − 1
    is a sine with no cosine partner.
    """
    if n_positions < 0 or d_model < 1:
        raise ValueError(f"need n_positions ≥ 0 and d_model ≥ 1, got {n_positions}, {d_model}")
    if not base > 1:
        raise ValueError(f"base must be greater than 1, got {base}")
    position = torch.arange(n_positions, dtype=torch.float64)[:, None]  # [pos, 1]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # [ceil(d_model / 2)]
    angle = position / base ** (two_i / d_model)  # [pos, ceil(d_model / 2)]
    pe = torch.zeros(n_positions, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe.to(torch.float32)


def cosine_similarity_matrix(vectors: Tensor) -> Tensor:
    """`[n, n]` cosine similarity between the rows of `[n, d]` (a zero row has similarity 0)."""
    unit = torch.nn.functional.normalize(vectors.to(torch.float32), dim=-1)
    return unit @ unit.T


def similarity_by_distance(similarity: Tensor) -> tuple[Tensor, Tensor]:
    """Mean similarity between positions i and i + d, for each distance d = 0 … n − 1.

    Returns `(distances [n], mean_similarity [n])`.
    """
    n = similarity.shape[0]
    distances = torch.arange(n)
    means = torch.stack([torch.diagonal(similarity, offset=int(d)).mean() for d in distances]) if n else torch.zeros(0)
    return distances, means
