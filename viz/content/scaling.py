"""The Scaling lab page: "what would happen with d_k = 512?" on random unit-variance q and k."""

from __future__ import annotations

import math

import torch

from model.attention import entropy_bits

from model.scaling import softmax_row, spread_by_dimension
from viz.content import figure_tables as tables
from viz.content.page import PageContent
from viz.scaling import dot_spread_figure, softmax_row_figure

DIMS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
N_KEYS = 8


def scaling_lab_page(d_k: int, model_d_k: int | None = None, n_pairs: int = 2000, seed: int = 0) -> PageContent:
    """Figures `dot-spread` (std of q·k against d_k, with √d_k) and `softmax-row-d{d_k}` (one row of
    8 keys with and without ÷√d_k); values: the measured spread at d_k, each row's largest weight and entropy."""
    content = PageContent()
    dims = sorted({*DIMS, d_k, *([model_d_k] if model_d_k else [])})
    spreads = spread_by_dimension(dims, n=n_pairs, seed=seed)
    spread = spreads[dims.index(d_k)]
    content.figures["dot-spread"] = dot_spread_figure(
        dims, spreads, d_k=d_k, model_d_k=model_d_k, title=f"Spread of q·k for random unit-variance q, k ({n_pairs} pairs per d_k): std ≈ √d_k"
    )
    content.figure_tables["dot-spread"] = lambda: tables.dot_spread_table(dims, spreads, d_k, model_d_k)
    row = softmax_row(d_k, N_KEYS, seed)
    content.figures[f"softmax-row-d{d_k}"] = softmax_row_figure(
        row["with_division"], row["without_division"], title=f"One query over {N_KEYS} random keys, d_k = {d_k}: softmax with and without ÷ √{d_k}"
    )
    content.figure_tables[f"softmax-row-d{d_k}"] = lambda: tables.softmax_row_table(row["with_division"], row["without_division"])
    content.values.update(
        d_k=d_k,
        spread=spread,
        root=math.sqrt(d_k),
        largest_with=max(row["with_division"]),
        largest_without=max(row["without_division"]),
        entropy_with=float(entropy_bits(torch.tensor(row["with_division"], dtype=torch.float64))),
        entropy_without=float(entropy_bits(torch.tensor(row["without_division"], dtype=torch.float64))),
        uniform_entropy=math.log2(N_KEYS),
    )
    if model_d_k:
        content.values["model_d_k"] = model_d_k
    return content
