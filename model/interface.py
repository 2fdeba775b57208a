"""`attention_stages` registered with transformers, so that a Hugging Face model computes its attention with it.

transformers 5 routes the attention of BERT, DistilBERT, GPT-2, Llama, Qwen2, Mistral, Gemma… through a
registry: a model loaded with `attn_implementation="attention_stages"` calls `stages_attention` below in
every layer, with q, k and v as the model uses them (after any rotary position encoding, before the
output projection), the model's own mask and its own scaling. A matching mask function hands it the
mask as booleans (True = may attend), never as a float bias.

Outside a `run` the function behaves as the model was trained. Inside one (see `TracedRun`), it can
use another mask, scaling or temperature, zero the output of chosen heads, and records each layer's
q, k and v: the what-if runs through the whole model, and the trace holds what it computed.
"""

from __future__ import annotations

import contextvars
import math
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import Tensor

from model import imports
from model.attention import ablated, attention_output

NAME = "attention_stages"


@dataclass
class TracedRun:
    """The settings of one traced forward pass, and what it records.

    mask: `[batch, 1, query_pos, key_pos]` bool (True = may attend), or None for the model's own.
    scale: divide scores by the model's own divisor (True) or by nothing (False).
    temperature: softmax temperature; 1 is the model's own.
    ablate: (layer, head) pairs whose output z is replaced before the output projection.
    ablate_with: "zero", or "mean" (the head's mean z over the batch's real tokens).
    key_valid: `[batch, pos]` True on real tokens (for mean ablation).
    """

    mask: Tensor | None = None
    scale: bool = True
    temperature: float = 1.0
    ablate: frozenset = frozenset()
    ablate_with: str = "zero"
    key_valid: Tensor | None = None
    n_layers: int = 0  # how many layers will call: q, k and v are written into one tensor each
    q: Tensor | None = None  # [n_layers, batch, head, pos, d_head]
    k: Tensor | None = None  # one per query head (a shared key/value head is repeated)
    v: Tensor | None = None
    divisors: list = field(default_factory=list)  # per layer, the divisor the model itself uses
    record_kv: bool = True  # False: keep q only (a cached step reads every key so far: copying them each step costs)
    patterns: list | None = None  # a list: each layer's pattern `[batch, head, q_pos, k_pos]` is appended to it

    def record(self, query: Tensor, key: Tensor, value: Tensor, divisor: float) -> tuple[Tensor, Tensor]:
        """Write this layer's q, k, v into the run's tensors; returns k and v with one head per query head.

        Writing into tensors allocated once for every layer costs one copy, where keeping the layers'
        tensors and stacking them at the end would cost a second one. With `record_kv` off only q is kept.
        """
        layer = len(self.divisors)
        if layer >= self.n_layers:
            raise RuntimeError(f"the model called attention {layer + 1} times; the run was set up for {self.n_layers} layers")
        if self.q is None:
            self.q = query.new_empty((self.n_layers, *query.shape))
            if self.record_kv:
                self.k, self.v = (query.new_empty((self.n_layers, *query.shape[:-2], key.shape[-2], t.shape[-1])) for t in (key, value))
        self.q[layer].copy_(query)
        self.divisors.append(divisor)
        if not self.record_kv:
            return _one_per_query_head(query, key, value)
        batch, n_kv = key.shape[:2]
        n_repeat = query.shape[1] // n_kv
        for tensor, stored in ((key, self.k[layer]), (value, self.v[layer])):
            # query head h reads key/value head h // n_repeat, as the model's own repeat_kv does
            stored.view(batch, n_kv, n_repeat, *tensor.shape[2:]).copy_(tensor[:, :, None])
        return self.k[layer], self.v[layer]


_RUN: contextvars.ContextVar[TracedRun | None] = contextvars.ContextVar("attention_stages_run", default=None)


@contextmanager
def traced_run(run: TracedRun):
    """Within this block, every registered attention call uses `run`'s settings and records into it."""
    token = _RUN.set(run)
    try:
        yield run
    finally:
        _RUN.reset(token)


def stages_attention(module, query: Tensor, key: Tensor, value: Tensor, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """The function transformers calls in every attention layer: attention's stages, then z back to the model.

    query `[batch, head, q_pos, d_head]`; key, value `[batch, kv_head, k_pos, d_head]` (grouped-query
    attention shares one key/value head between several query heads). Returns `([batch, q_pos, head,
    d_head], pattern)` as transformers expects.
    """
    own_divisor = math.sqrt(query.shape[-1]) if scaling is None else 1.0 / float(scaling)
    if attention_mask is not None and attention_mask.dtype != torch.bool:
        raise TypeError("attention_stages expects a boolean mask; load the model with attn_implementation='attention_stages'")
    run = _RUN.get()
    if run is None:
        key, value = _one_per_query_head(query, key, value)
        pattern, z = attention_output(query, key, value, attention_mask, scale=True, divisor=own_divisor)
        return z.transpose(1, 2).contiguous(), pattern

    layer = len(run.divisors)
    mask = attention_mask if run.mask is None else run.mask[..., -query.shape[2] :, -key.shape[2] :]
    key, value = run.record(query, key, value, own_divisor)
    pattern, z = attention_output(query, key, value, mask, scale=run.scale, temperature=run.temperature, divisor=own_divisor)
    heads = sorted(head for (at, head) in run.ablate if at == layer)
    if heads:
        z = ablated(z, heads, run.ablate_with, run.key_valid)
    if run.patterns is not None:
        run.patterns.append(pattern)
    return z.transpose(1, 2).contiguous(), pattern


def _one_per_query_head(query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
    """Grouped-query attention: query head h reads key/value head h // n_repeat, as the model's repeat_kv does."""
    n_repeat = query.shape[1] // key.shape[1]
    if n_repeat == 1:
        return key, value
    return key.repeat_interleave(n_repeat, dim=1), value.repeat_interleave(n_repeat, dim=1)


def boolean_mask(*args, **kwargs):
    """The model's own mask as booleans `[batch, 1, query_pos, key_pos]`, True = may attend (never skipped)."""
    with imports.LOCK:
        from transformers.masking_utils import sdpa_mask

    kwargs.pop("allow_is_causal_skip", None)
    kwargs.pop("allow_is_bidirectional_skip", None)
    return sdpa_mask(*args, allow_is_causal_skip=False, allow_is_bidirectional_skip=False, **kwargs)


_registered = False


def register() -> str:
    """Register the function and its mask with transformers (once); returns the name to load models with."""
    global _registered
    if not _registered:
        with imports.LOCK:
            from transformers import AttentionInterface
            from transformers.masking_utils import AttentionMaskInterface

        AttentionInterface.register(NAME, stages_attention)
        AttentionMaskInterface.register(NAME, boolean_mask)
        _registered = True
    return NAME
