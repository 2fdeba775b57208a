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


def rotary_frequencies(d_head: int, base: float = 10000.0) -> Tensor:
    """`[d_head / 2]` rotary position embedding (RoPE) speeds: θ_i = base^(−2i / d_head).

    A Llama-family model rotates each pair of q and k dimensions by the angle position × θ_i (its own
    frequencies are `HFModel.rotary_inverse_frequencies()`, which include any rope scaling).
    """
    if d_head < 2 or d_head % 2:
        raise ValueError(f"d_head must be even and ≥ 2, got {d_head}")
    two_i = torch.arange(0, d_head, 2, dtype=torch.float64)
    return (1.0 / base ** (two_i / d_head)).to(torch.float32)


def rotary_angles(n_positions: int, frequencies: Tensor) -> Tensor:
    """`[n_positions, d_head / 2]` the rotation angle (radians) of each dimension pair at each position."""
    position = torch.arange(n_positions, dtype=torch.float64)[:, None]
    return (position * frequencies.to(torch.float64)[None, :]).to(torch.float32)


def rotate(x: Tensor, positions: Tensor, frequencies: Tensor) -> Tensor:
    """Rotary position embedding of `x` `[..., pos, d_head]` at `positions` `[pos]`.

    Dimension i is paired with i + d_head/2 (the layout of Llama-family checkpoints in transformers):
    (x_i, x_{i+d/2}) → (x_i cos a − x_{i+d/2} sin a, x_{i+d/2} cos a + x_i sin a), a = position × θ_i.
    """
    angle = positions.to(torch.float64)[:, None] * frequencies.to(torch.float64)[None, :]  # [pos, d/2]
    cos, sin = torch.cos(angle).to(x.dtype), torch.sin(angle).to(x.dtype)
    half = x.shape[-1] // 2
    first, second = x[..., :half], x[..., half:]
    return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)


def rotary_dot_by_distance(frequencies: Tensor, n_distances: int) -> tuple[Tensor, Tensor]:
    """How a rotated q·k depends on the distance d between query and key, for q = k = all ones.

    q·k = Σ_i 2 cos(d θ_i) over the pairs, here divided by its value at d = 0, so it starts at 1:
    the score depends on the distance only, not on where the two tokens are. Returns
    `(distances [n], relative q·k [n])`.
    """
    distances = torch.arange(n_distances, dtype=torch.float64)
    dots = torch.cos(distances[:, None] * frequencies.to(torch.float64)[None, :]).mean(dim=1)
    return distances.to(torch.long), dots.to(torch.float32)
