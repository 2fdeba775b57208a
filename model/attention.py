"""The maths of attention: `attention_stages` keeps every stage, `attention_output` the same operations in place.

For one head, with queries q and keys k of size d_head:

    scores_raw    = q · kᵀ                              # how well each query matches each key
    scores_scaled = scores_raw / √d_head                # keeps the spread of scores independent of d_head
    scores_masked = scores_scaled, −inf where the mask forbids a key
    pattern       = softmax(scores_masked / temperature) # each row sums to 1
    z             = pattern · v                          # the weighted mix of values

`attention_stages` returns every stage separately, so that a page can show each one. The toy model calls
it in every layer; a Hugging Face model calls `attention_output` (see `model.interface`), and a page takes
a layer's stages from the q, k and v the pass recorded (`Trace.stages`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class AttentionStages:
    """The stages of attention for a batch of heads.

    Score tensors are shaped `[..., head, query_pos, key_pos]`, `z` is `[..., head, query_pos, d_head]`.
    """

    scores_raw: Tensor  # [..., head, query_pos, key_pos]  q·kᵀ
    scores_scaled: Tensor  # [..., head, query_pos, key_pos]  q·kᵀ / √d_head, or q·kᵀ when unscaled
    scores_masked: Tensor  # [..., head, query_pos, key_pos]  −inf where the mask is False
    pattern: Tensor  # [..., head, query_pos, key_pos]  softmax over key_pos; 0 on a fully masked row
    z: Tensor  # [..., head, query_pos, d_head]  pattern · v
    mask: Tensor  # [..., head, query_pos, key_pos]  bool, True = may attend (broadcast to full shape)
    scale: float  # the divisor used: √d_head, or 1.0 when unscaled
    temperature: float

    @property
    def fully_masked_rows(self) -> Tensor:
        """`[..., head, query_pos]` True where a query may attend to no key at all."""
        return ~self.mask.any(dim=-1)


def attention_stages(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    scale: bool = True,
    temperature: float = 1.0,
    divisor: float | None = None,
) -> AttentionStages:
    """Compute every stage of scaled dot-product attention.

    q, k, v: `[..., head, pos, d_head]` (q may have a different pos from k and v).
    mask: bool, broadcastable to `[..., head, query_pos, key_pos]`, True = may attend. Masking is by
    position, never by looking at a score's value: a score of exactly 0 is an ordinary score.
    scale: divide by √d_head (the size of one head, not of the model) before the softmax.
    divisor: what to divide by when `scale` is on, for a model whose own divisor is not √d_head
    (Gemma divides by √query_pre_attn_scalar); None = √d_head.
    temperature: the softmax input is divided by it; 1 is the model's own behaviour.

    A query row whose keys are all masked has no distribution to take. Its `pattern` row is all
    zeros (it attends to nothing) and so its `z` is the zero vector; `fully_masked_rows` marks such
    rows. No NaN is produced.
    """
    scores_raw, divisor = _raw_scores(q, k, scale, temperature, divisor)
    scores_scaled = scores_raw * (1.0 / divisor)  # ÷ divisor, rounded as the models themselves do it

    if mask is None:
        mask = torch.ones((), dtype=torch.bool, device=q.device)
    mask = mask.to(torch.bool)  # as given (often [batch, 1, query, key]): the checks below stay small
    if bool(mask.all()):  # nothing hidden: the masked scores are the scaled ones (no copy)
        scores_masked = scores_scaled
    else:  # one pass, where a copy and a fill would take two
        scores_masked = torch.where(mask, scores_scaled, torch.tensor(float("-inf"), dtype=scores_scaled.dtype))
    pattern = masked_softmax(scores_scaled.clone(), mask, temperature)
    mask = mask.expand_as(scores_scaled)

    z = pattern @ v  # [..., head, query_pos, key_pos] @ [..., head, key_pos, d_head]
    return AttentionStages(
        scores_raw=scores_raw,
        scores_scaled=scores_scaled,
        scores_masked=scores_masked,
        pattern=pattern,
        z=z,
        mask=mask,
        scale=divisor,
        temperature=float(temperature),
    )


def _raw_scores(q: Tensor, k: Tensor, scale: bool, temperature: float, divisor: float | None) -> tuple[Tensor, float]:
    """q·kᵀ `[..., head, query_pos, key_pos]` and what to divide it by (1.0 when unscaled), arguments checked."""
    if not temperature > 0 or not math.isfinite(temperature):
        raise ValueError(f"temperature must be a positive number, got {temperature!r}")
    d_head = q.shape[-1]
    if k.shape[-1] != d_head:
        raise ValueError(f"q and k must share d_head, got {d_head} and {k.shape[-1]}")
    scores = q @ k.transpose(-1, -2)  # [..., head, query_pos, d_head] @ [..., head, d_head, key_pos]
    return scores, (math.sqrt(d_head) if divisor is None else float(divisor)) if scale else 1.0


def masked_softmax(scores: Tensor, mask: Tensor, temperature: float = 1.0) -> Tensor:
    """softmax(scores / temperature) over keys where `mask` allows (True); 0 where it forbids.

    `scores` `[..., query_pos, key_pos]` is overwritten (pass a tensor of your own). A forbidden score
    becomes the most negative float rather than −∞: exp of it is exactly 0 all the same (the weights are
    bit for bit those of −∞), the CPU's vectorised exp takes its fast path, and a row whose keys are all
    forbidden stays finite, so it is zeroed instead of turning into NaN.
    """
    if temperature != 1.0:
        scores.div_(temperature)  # before the fill: the lowest float ÷ a temperature below 1 would be −∞
    every_key = bool(mask.all())
    if not every_key:
        scores.masked_fill_(~mask, torch.finfo(scores.dtype).min)
    if scores.requires_grad and torch.is_grad_enabled():  # training: autograd needs the out-of-place softmax
        pattern = torch.softmax(scores, dim=-1)
    else:  # in place: no second pos² tensor to allocate (the same result, bit for bit)
        pattern = torch.softmax(scores, dim=-1, out=scores)
    if not every_key:
        has_key = mask.any(dim=-1, keepdim=True)  # [..., query_pos, 1]
        if not bool(has_key.all()):
            pattern.mul_(has_key)
    return pattern


def attention_output(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    scale: bool = True,
    temperature: float = 1.0,
    divisor: float | None = None,
) -> tuple[Tensor, Tensor]:
    """`(pattern, z)` of `attention_stages` with the same arguments, bit for bit, without keeping the stages.

    What a model's forward pass needs in every layer: the same operations in the same order, done in
    place on one score tensor, so that a traced forward pass costs about what the model's own does. A page
    shows the stages of a layer with `attention_stages`, from the q, k and v the pass recorded.
    """
    pattern = attention_pattern(q, k, mask, scale, temperature, divisor)
    return pattern, pattern @ v


def attention_pattern(
    q: Tensor,
    k: Tensor,
    mask: Tensor | None = None,
    scale: bool = True,
    temperature: float = 1.0,
    divisor: float | None = None,
) -> Tensor:
    """The pattern of `attention_output`, bit for bit (the same operations), without the value step: what a
    figure of the weights alone needs (every head of every layer: 30 layers of SmolLM2 at 512 tokens)."""
    scores, divisor = _raw_scores(q, k, scale, temperature, divisor)
    scores.mul_(1.0 / divisor)
    mask = torch.ones((), dtype=torch.bool, device=q.device) if mask is None else mask.to(torch.bool)
    return masked_softmax(scores, mask, temperature)


def ablated(z: Tensor, heads: list[int], how: str = "zero", key_valid: Tensor | None = None) -> Tensor:
    """z `[batch, head, pos, d_head]` with the output of `heads` replaced (a copy).

    how="zero": by zeros. how="mean": by the head's mean output over the batch's real tokens
    (`key_valid` `[batch, pos]`, True on real tokens; None = every position).
    """
    z = z.clone()
    for head in heads:
        if how == "mean":
            rows = z[:, head] if key_valid is None else z[:, head][key_valid.to(torch.bool)]  # [..., d_head]
            z[:, head] = rows.reshape(-1, z.shape[-1]).mean(dim=0)
        elif how == "zero":
            z[:, head] = 0.0
        else:
            raise ValueError(f"unknown ablation {how!r}; choose zero or mean")
    return z


def entropy_bits(probabilities: Tensor, dim: int = -1) -> Tensor:
    """Entropy in bits of distributions along `dim`: −Σ p log2 p, with 0 · log 0 = 0.

    The one entropy of the project: attention rows (a fully masked row, all zeros, has entropy 0) and
    next-token distributions.
    """
    p = probabilities.to(torch.float64)
    return -(p * torch.log2(p.clamp_min(1e-300))).sum(dim=dim).to(probabilities.dtype)


@dataclass(frozen=True)
class MaskSpec:
    """Which keys a query may attend to.

    causal: a query at position i sees keys j ≤ i only (GPT-style).
    padding: padded keys (beyond a sentence's end in a batch) are hidden.
    hidden_keys: key positions hidden from every query of every sentence.
    hidden_in: (sentence, key position) pairs, each hidden from the queries of that sentence (that row
    of the batch) only: "what if this token were not there?", asked of one sentence.
    """

    causal: bool = False
    padding: bool = True
    hidden_keys: tuple[int, ...] = ()
    hidden_in: tuple[tuple[int, int], ...] = ()  # (sentence, key_pos)

    NAMES = ("none", "causal", "padding", "causal+padding")

    @classmethod
    def parse(cls, name: str, hidden_keys=()) -> MaskSpec:
        """`"none"`, `"causal"`, `"padding"` or `"causal+padding"`.

        hidden_keys: key positions (hidden in every sentence) or (sentence, position) pairs (hidden in
        that sentence only), mixed as needed.
        """
        if name not in cls.NAMES:
            raise ValueError(f"unknown mask {name!r}; choose one of {', '.join(cls.NAMES)}")
        pairs = {(int(h[0]), int(h[1])) for h in hidden_keys if isinstance(h, (tuple, list))}
        return cls(
            causal="causal" in name,
            padding="padding" in name,
            hidden_keys=tuple(sorted({int(h) for h in hidden_keys if not isinstance(h, (tuple, list))})),
            hidden_in=tuple(sorted(pairs)),
        )

    def hidden_for(self, sentence: int) -> tuple[int, ...]:
        """The key positions hidden from the queries of one sentence (row of the batch)."""
        return tuple(sorted({*self.hidden_keys, *(j for s, j in self.hidden_in if s == sentence)}))

    @property
    def name(self) -> str:
        parts = [p for p, on in (("causal", self.causal), ("padding", self.padding)) if on]
        return "+".join(parts) or "none"

    def build(self, key_valid: Tensor) -> Tensor:
        """The boolean mask `[batch, 1, query_pos, key_pos]` for a batch.

        key_valid: `[batch, pos]` True where the token is real (not padding).
        """
        batch, n_pos = key_valid.shape
        mask = torch.ones(batch, 1, n_pos, n_pos, dtype=torch.bool, device=key_valid.device)
        if self.causal:
            positions = torch.arange(n_pos, device=key_valid.device)
            mask &= positions[None, :] <= positions[:, None]  # key j ≤ query i
        if self.padding:
            mask &= key_valid[:, None, None, :].to(torch.bool)
        for j in self.hidden_keys:
            if 0 <= j < n_pos:
                mask[..., j] = False
        for sentence, j in self.hidden_in:  # one row of the batch: the other sentences keep that key
            if 0 <= sentence < batch and 0 <= j < n_pos:
                mask[sentence, ..., j] = False
        return mask


def worked_example(stages: AttentionStages, batch: int, head: int, query: int, key: int) -> dict:
    """The numbers of one cell, step by step: q·k, ÷ scale, mask, exp, normalise.

    `exp` and `row_sum` are taken after subtracting the row's largest (unmasked) logit, as a softmax
    does to stay finite; the ratio `weight = exp / row_sum` is the same either way.
    """
    raw = float(stages.scores_raw[batch, head, query, key])
    scaled = float(stages.scores_scaled[batch, head, query, key])
    allowed = bool(stages.mask[batch, head, query, key])
    row_allowed = stages.mask[batch, head, query]
    logits = stages.scores_scaled[batch, head, query] / stages.temperature
    if row_allowed.any():
        shift = float(logits[row_allowed].max())
        exps = torch.exp(logits - shift) * row_allowed
        row_sum = float(exps.sum())
        exp = float(exps[key])
    else:
        shift, row_sum, exp = 0.0, 0.0, 0.0
    return dict(
        raw=raw,
        scale=stages.scale,
        scaled=scaled,
        allowed=allowed,
        temperature=stages.temperature,
        logit=scaled / stages.temperature if allowed else float("-inf"),
        shift=shift,
        exp=exp,
        row_sum=row_sum,
        weight=float(stages.pattern[batch, head, query, key]),
    )
