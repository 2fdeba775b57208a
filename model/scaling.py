"""Why attention divides by √d_k, on random vectors: the maths behind the scaling lab.

If the entries of q and k are independent with mean 0 and variance 1, then q·k = Σ_i q_i k_i is a sum
of d_k terms of variance 1, so its variance is d_k and its spread (standard deviation) is √d_k.
Dividing by √d_k brings the spread back to 1 whatever d_k is. Without the division, the scores of
one query row spread further apart as d_k grows, and the softmax of that row saturates: nearly all
its weight goes to the largest score.
"""

from __future__ import annotations

import math

import torch

from model.attention import attention_stages


def random_qk(d_k: int, n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """`n` pairs of random vectors with unit-variance entries: q and k `[n, d_k]`."""
    if d_k < 1 or n < 1:
        raise ValueError(f"d_k and n must be at least 1, got {d_k} and {n}")
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(n, d_k, generator=generator, dtype=torch.float64)
    k = torch.randn(n, d_k, generator=generator, dtype=torch.float64)
    return q, k


def dot_products(d_k: int, n: int = 2000, seed: int = 0) -> torch.Tensor:
    """`[n]` dot products q·k of independent random pairs."""
    q, k = random_qk(d_k, n, seed)
    return (q * k).sum(dim=-1)


def spread_by_dimension(dims: list[int], n: int = 2000, seed: int = 0) -> list[float]:
    """The standard deviation of q·k for each d_k in `dims` (≈ √d_k), measured on `n` random pairs."""
    return [float(dot_products(d, n, seed).std()) for d in dims]


def softmax_row(d_k: int, n_keys: int = 8, seed: int = 0) -> dict:
    """One query against `n_keys` random keys, through the model's own attention function:
    the raw scores q·kᵀ, and the softmax of the row with and without the division by √d_k."""
    q, k = random_qk(d_k, n_keys + 1, seed)
    query, keys = q[:1].float(), k[1:].float()  # [1, d_k], [n_keys, d_k]
    values = torch.zeros(n_keys, 1)
    scaled = attention_stages(query, keys, values, scale=True)
    unscaled = attention_stages(query, keys, values, scale=False)
    return dict(
        scores_raw=scaled.scores_raw[0].tolist(),
        divisor=math.sqrt(d_k),
        with_division=scaled.pattern[0].tolist(),
        without_division=unscaled.pattern[0].tolist(),
    )
