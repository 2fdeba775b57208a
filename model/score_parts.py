"""Why a head looks where it looks: each raw score q·k split into an exact sum of named parts.

A score is bilinear in what builds its query and its key. When the query is a sum of pieces
q_i = Σ_s q_i^s and the key another k_j = Σ_t k_j^t, then

    q_i · k_j = Σ_s Σ_t q_i^s · k_j^t

and each term has a name: "token·position" is what the query's token embedding contributes against
the key's position embedding. Three ways of splitting are computed here:

- by source (`score_parts(..., by="source")`): the residual stream a layer reads is split into where
  it came from: the token embedding, the position embedding (models that add one), each earlier
  layer's attention output (by head on request) and each earlier MLP output. A pre-norm model
  (the toy, GPT-2, the Llama family) normalises the stream before W_Q and W_K; LayerNorm and RMSNorm
  divide each token's vector by a number computed from that vector, which is not linear. That number
  is held at the value the forward pass used, which makes the norm linear (LayerNorm's centring is
  linear already), so each piece can go through it on its own. The norm's added β and the
  projection's bias b_Q or b_K make one more piece, "bias". Post-norm BERT is split at its first layer:
  LayerNorm(token + position + token type) with the same held divisor.
- by rotary pair (`by="pair"`, Llama family): after the rotation, dimensions (p, p + d_head/2) form
  pair p, turned by the angle position × θ_p. q·k is the sum over pairs of
  |q_p| |k_p| cos(φ_p + (i − j) θ_p), where φ_p is the angle between the pair's unrotated vectors.
  Pair 0 turns fastest (θ = 1 radian a token); the last turns slowest.
- a head-level number (`head_position_shares`): how much of the lift that puts the pattern's mass
  where it is comes from position (see its docstring for the measure and the badge thresholds).

Every function reads a `Trace`; the weights a split needs (W_Q, W_K, W_O, the norms' gains and
biases, the rotary frequencies) travel with it as `trace.score_weights` (references to the model's
own tensors, not copies). Sums are computed in double precision, so that parts that nearly cancel
still add up to the score.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from model.attention import ablated, attention_output

SEPARATOR = "·"  # between a part's query source and its key source: "token·position"
GROUPS = ("layer", "head", "kind")
FAST_PAIR_FRACTION = 0.25  # the fastest quarter of the rotary pairs counts as "position" in the head-level share
POSITIONAL_MIN = 2 / 3  # badge "positional": position makes at least two thirds of the lift
CONTENT_MAX = 1 / 3  # badge "content": position makes at most one third; "mixed" between


@dataclass(frozen=True)
class Norm:
    """A LayerNorm or RMSNorm as the forward pass applied it.

    layer: y = γ ⊙ (x − mean(x)) / √(var(x) + eps) + β      rms: y = γ ⊙ x / √(mean(x²) + eps)
    """

    kind: str  # "layer" or "rms"
    weight: Tensor  # [d_model] the gain γ as the model multiplies it (Gemma's 1 + γ already added)
    bias: Tensor | None  # [d_model] β (LayerNorm), None for RMSNorm
    eps: float

    def divisor(self, x: Tensor) -> Tensor:
        """`[..., pos, 1]` what the norm divides each token's vector by: the one nonlinear step."""
        x = x.double()
        if self.kind == "layer":
            return torch.sqrt(x.var(dim=-1, unbiased=False, keepdim=True) + self.eps)
        return torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)

    def linear(self, piece: Tensor, divisor: Tensor) -> Tensor:
        """The norm with its divisor held: γ ⊙ centre(piece) / divisor, without β (a piece of its own)."""
        piece = piece.double()
        if self.kind == "layer":
            piece = piece - piece.mean(dim=-1, keepdim=True)
        return self.weight.double() * piece / divisor

    def added(self, d_model: int) -> Tensor:
        """`[d_model]` what the norm adds whatever its input: β, or zeros."""
        return self.bias.double() if self.bias is not None else torch.zeros(d_model, dtype=torch.float64)


@dataclass(frozen=True)
class LayerWeights:
    """What turns one layer's residual stream into queries and keys, and its heads' outputs into the stream."""

    norm: Norm | None  # pre-norm: the norm before attention; None when the layer reads the stream as it is
    W_Q: Tensor  # [head, d_model, d_head]
    b_Q: Tensor  # [head, d_head]
    W_K: Tensor  # [kv_head, d_model, d_head] (query head h reads key/value head h // (head / kv_head))
    b_K: Tensor  # [kv_head, d_head]
    W_O: Tensor  # [head, d_head, d_model]: head h writes z_h · W_O[h]
    b_O: Tensor  # [d_model]


@dataclass(frozen=True)
class ScoreWeights:
    """The weights `score_parts` needs, for every layer of one model."""

    layout: str  # "pre-norm" (norm before each sub-layer) or "post-norm" (BERT: norm after the residual sum)
    layers: tuple[LayerWeights, ...]
    input_norm: Norm | None = None  # post-norm: the LayerNorm of the summed embeddings
    token_type: Tensor | None = None  # [d_model] BERT's token-type row (type 0), added to every token
    inv_freq: Tensor | None = None  # [d_head / 2] rotary: θ_p, radians a token, fastest first
    rotary_scale: float = 1.0  # rotary: what the model multiplies cos and sin by (1 for plain RoPE)

    def kv_head(self, layer: int, head: int) -> int:
        weights = self.layers[layer]
        return head // (weights.W_Q.shape[0] // weights.W_K.shape[0])


def part_name(query_source: str, key_source: str) -> str:
    return f"{query_source}{SEPARATOR}{key_source}"


def split_name(part: str) -> tuple[str, str]:
    """`"token·position"` → `("token", "position")`; a rotary pair is its own query and key source."""
    if part.startswith("pair "):
        return part, part
    query_source, key_source = part.split(SEPARATOR)
    return query_source, key_source


def pair_name(pair: int, theta: float) -> str:
    return f"pair {pair} (θ={theta:.3g})"


def _weights(trace) -> ScoreWeights:
    weights = getattr(trace, "score_weights", None)
    if weights is None:
        raise ValueError(f"the trace of {trace.model_name} carries no score weights: trace it again with a model from model.load_model")
    return weights


def _check(trace, layer: int, head: int, sentence: int) -> None:
    if not 0 <= layer < trace.n_layers:
        raise IndexError(f"layer {layer} out of range 0…{trace.n_layers - 1}")
    if not 0 <= head < trace.n_heads:
        raise IndexError(f"head {head} out of range 0…{trace.n_heads - 1}")
    if not 0 <= sentence < len(trace.tokens):
        raise IndexError(f"sentence {sentence} out of range 0…{len(trace.tokens) - 1}")


def layer_attention_z(trace, layer: int, sentence: int) -> Tensor:
    """`[head, pos, d_head]` the z each head of `layer` handed to W_O in the run (one sentence).

    Recomputed from the trace's q, k, v with the settings the model ran with, ablations included.
    """
    mean_ablated = any(at == layer for at, _ in trace.ablate) and trace.ablate_with == "mean"
    rows = slice(None) if mean_ablated else slice(sentence, sentence + 1)
    attend = trace.attend(trace.mask)[rows]
    _, z = attention_output(
        trace.q[layer, rows],
        trace.k[layer, rows],
        trace.v[layer, rows],
        attend,
        scale=trace.scale,
        temperature=trace.temperature,
        divisor=trace.divisors[layer] if trace.divisors else None,
    )
    heads = [head for at, head in trace.ablate if at == layer]
    if heads:
        z = ablated(z, heads, trace.ablate_with, trace.key_valid[rows])
    return z[sentence if mean_ablated else 0]


def stream_sources(trace, layer: int, sentence: int = 0, group: str = "layer") -> dict[str, Tensor]:
    """The residual stream that `layer` reads, split by where it came from: name → `[pos, d_model]`.

    The pieces sum to `trace.hidden_states[layer][sentence]` (double precision). group: "layer"
    gives each earlier layer's attention output and MLP output; "head" splits the attention outputs
    by head (and a "layer l attention bias" for b_O); "kind" sums them into "attention" and "MLP".
    Each MLP output is what the block added after its attention: hidden_{l+1} − hidden_l − attention_l.
    Pre-norm models only (post-norm BERT: see `read_sources`, first layer).
    """
    if group not in GROUPS:
        raise ValueError(f"group must be one of {', '.join(GROUPS)}, got {group!r}")
    weights = _weights(trace)
    hidden = trace.hidden_states[:, sentence].double()  # [n_layers + 1, pos, d_model]
    sources: dict[str, Tensor] = {}
    if trace.positional_kind == "rotary":
        sources["token"] = hidden[0]
    else:
        position = trace.positional.double()[: hidden.shape[1]]
        sources["token"] = hidden[0] - position
        sources["position"] = position
    for earlier in range(layer):
        w = weights.layers[earlier]
        z = layer_attention_z(trace, earlier, sentence)  # [head, pos, d_head]
        by_head = torch.einsum("hpd,hdm->hpm", z, w.W_O).double()  # [head, pos, d_model], as the model's float32
        attention = by_head.sum(dim=0) + w.b_O.double()
        mlp = hidden[earlier + 1] - hidden[earlier] - attention
        if group == "head":
            for head in range(by_head.shape[0]):
                sources[f"layer {earlier} head {head}"] = by_head[head]
            sources[f"layer {earlier} attention bias"] = w.b_O.double().expand_as(attention)
            sources[f"layer {earlier} MLP"] = mlp
        elif group == "layer":
            sources[f"layer {earlier} attention"] = attention
            sources[f"layer {earlier} MLP"] = mlp
        else:
            sources["attention"] = sources.get("attention", 0) + attention
            sources["MLP"] = sources.get("MLP", 0) + mlp
    return sources


def read_sources(trace, layer: int, sentence: int = 0, group: str = "layer") -> dict[str, Tensor]:
    """What `layer`'s W_Q and W_K read, split by source: name → `[pos, d_model]`, double precision.

    Pre-norm: each piece of `stream_sources` through the layer's norm with its divisor held at the
    forward pass's value, and "bias" for the norm's β. Post-norm (BERT) first layer: token, position
    and token type through the embeddings' LayerNorm, held the same way. The pieces sum to the
    normalised stream the projections were applied to.
    """
    weights = _weights(trace)
    n_pos = trace.hidden_states.shape[2]
    d_model = trace.hidden_states.shape[-1]
    if weights.layout == "post-norm":
        if layer != 0:
            raise ValueError(
                "post-norm models (BERT) are split at their first layer only: a later layer reads a stream that has been through two LayerNorms per block"
            )
        norm = weights.input_norm
        token = trace.static_embeddings[sentence].double()
        position = trace.positional.double()[:n_pos]
        pieces = {"token": token, "position": position.expand_as(token)}
        if weights.token_type is not None:
            pieces["token type"] = weights.token_type.double().expand_as(token)
        divisor = norm.divisor(sum(pieces.values()))
        read = {name: norm.linear(piece, divisor) for name, piece in pieces.items()}
        read["bias"] = norm.added(d_model).expand(n_pos, d_model)
        return read
    norm = weights.layers[layer].norm
    stream = stream_sources(trace, layer, sentence, group)
    divisor = norm.divisor(trace.hidden_states[layer, sentence])
    read = {name: norm.linear(piece, divisor) for name, piece in stream.items()}
    read["bias"] = norm.added(d_model).expand(n_pos, d_model)
    return read


def rotate(x: Tensor, inv_freq: Tensor, scale: float = 1.0) -> Tensor:
    """Rotary position encoding as the Llama family applies it to `[pos, d_head]` (position = row index).

    Dimension p and p + d_head/2 form pair p, turned by position × θ_p:
    x·cos + rotate_half(x)·sin, with cos and sin multiplied by `scale`.
    """
    positions = torch.arange(x.shape[-2], dtype=torch.float32)
    angles = positions[:, None] * inv_freq.float()[None, :]  # [pos, d_head / 2], as the model computes them
    angles = torch.cat([angles, angles], dim=-1).double()
    half = x.shape[-1] // 2
    rotated_half = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * angles.cos() * scale + rotated_half * angles.sin() * scale


def query_key_sources(
    trace, layer: int, head: int, sentence: int = 0, group: str = "layer", read: dict[str, Tensor] | None = None
) -> tuple[list[str], Tensor, Tensor]:
    """The query and the key of one head split by source: (names, q `[source, pos, d_head]`, k `[source, pos, d_head]`).

    Summed over the sources, q (or k) is the head's q (or k) as the trace holds it, after any rotation.
    "bias" holds the norm's β through W_Q (or W_K) plus b_Q (or b_K); it is left out when both are zero. `read`: `read_sources` of the
    layer when the caller has it already (it is the same for every head).
    """
    weights = _weights(trace)
    w = weights.layers[layer]
    kv = weights.kv_head(layer, head)
    read = read_sources(trace, layer, sentence, group) if read is None else read
    names = list(read)
    stacked = torch.stack([read[name] for name in names])  # [source, pos, d_model]
    q = stacked @ w.W_Q[head].double()  # [source, pos, d_head]
    k = stacked @ w.W_K[kv].double()
    bias = names.index("bias")
    q[bias] += w.b_Q[head].double()
    k[bias] += w.b_K[kv].double()
    if not (q[bias].any() or k[bias].any()):  # no β and no projection bias (the Llama family): no bias parts
        keep = [index for index in range(len(names)) if index != bias]
        names, q, k = [names[index] for index in keep], q[keep], k[keep]
    if weights.inv_freq is not None:
        q, k = rotate(q, weights.inv_freq, weights.rotary_scale), rotate(k, weights.inv_freq, weights.rotary_scale)
    return names, q, k


def pair_thetas(trace) -> Tensor:
    """`[d_head / 2]` θ_p of each rotary pair (radians a token), fastest first."""
    weights = _weights(trace)
    if weights.inv_freq is None:
        raise ValueError(f"{trace.model_name} adds positions to its tokens; it has no rotary pairs")
    return weights.inv_freq.double()


def score_parts(
    trace, layer: int, head: int, sentence: int = 0, by: str = "source", group: str = "layer", read: dict[str, Tensor] | None = None
) -> dict[str, Tensor]:
    """The raw score q·k of one head split into parts: name → `[query_pos, key_pos]` (double precision).

    The parts sum to `trace.stages(layer).scores_raw[sentence, head]`.

    by="source": one part per (query source, key source), named "query source·key source", e.g.
    "token·position", "layer 0 head 2·token", "bias·position"; sources as in `stream_sources` (`group`
    chooses how finely earlier layers are split). by="pair" (rotary models): one part per dimension
    pair, "pair 5 (θ=0.0316)", fastest pair first. `read`: see `query_key_sources`.
    """
    _check(trace, layer, head, sentence)
    if by == "pair":
        thetas = pair_thetas(trace)
        q = trace.q[layer, sentence, head].double()  # [pos, d_head]
        k = trace.k[layer, sentence, head].double()
        half = q.shape[-1] // 2
        products = q[:, None, :] * k[None, :, :]  # [query_pos, key_pos, d_head]
        per_pair = products[..., :half] + products[..., half:]  # [query_pos, key_pos, d_head / 2]
        return {pair_name(p, float(theta)): per_pair[..., p] for p, theta in enumerate(thetas)}
    if by != "source":
        raise ValueError(f"by must be 'source' or 'pair', got {by!r}")
    names, q, k = query_key_sources(trace, layer, head, sentence, group, read)
    products = torch.einsum("sid,tjd->stij", q, k)  # [query source, key source, query_pos, key_pos]
    return {part_name(qs, ks): products[a, b] for a, qs in enumerate(names) for b, ks in enumerate(names)}


@dataclass(frozen=True)
class PairView:
    """One query and one key of a rotary head, pair by pair (fastest pair first). All `[d_head / 2]`."""

    theta: Tensor  # θ_p, radians a token
    query_norm: Tensor  # |q_p|
    key_norm: Tensor  # |k_p|
    phase: Tensor  # φ_p: the angle between the pair's unrotated query and key, radians
    contribution: Tensor  # |q_p| |k_p| cos(φ_p + distance·θ_p): sums to the score
    distance: int  # i − j

    def at_distance(self, distance) -> Tensor:
        """The score the same query and key would have `distance` tokens apart (a number or `[n]`)."""
        d = torch.as_tensor(distance, dtype=torch.float64)
        angles = self.phase[None, :] + d.reshape(-1, 1) * self.theta[None, :]
        scores = (self.query_norm * self.key_norm * torch.cos(angles)).sum(dim=-1)
        return scores if d.dim() else scores[0]


def rotary_pairs(trace, layer: int, head: int, query: int, key: int, sentence: int = 0) -> PairView:
    """The pairs of one query and one key of a rotary head, with what sliding the key would do.

    With a pair written as a complex number, the rotated q_p = s·e^{i·iθ}·q̃_p and k_p = s·e^{i·jθ}·k̃_p
    (s: the model's rotary scale, 1 for plain RoPE), so q_p·k_p = Re(q_p · conj(k_p)) =
    |q_p| |k_p| cos(φ_p + (i − j)θ_p). Moving the key to distance d changes only the angle.
    """
    _check(trace, layer, head, sentence)
    theta = pair_thetas(trace)
    q = trace.q[layer, sentence, head, query].double()  # [d_head]
    k = trace.k[layer, sentence, head, key].double()
    half = q.shape[-1] // 2
    q_c = torch.complex(q[:half], q[half:])
    k_c = torch.complex(k[:half], k[half:])
    product = q_c * k_c.conj()  # its angle is φ_p + (i − j)θ_p
    distance = query - key
    phase = torch.remainder(torch.angle(product) - distance * theta + math.pi, 2 * math.pi) - math.pi
    return PairView(
        theta=theta,
        query_norm=q_c.abs(),
        key_norm=k_c.abs(),
        phase=phase,
        contribution=product.real,
        distance=distance,
    )


def _allowed(trace, sentence: int) -> Tensor:
    """`[query_pos, key_pos]` bool: keys a real query of the sentence may attend to, as the pattern shown."""
    attend = trace.attend()[sentence, 0]
    return attend & trace.key_valid[sentence][:, None]


def lift(parts: dict[str, Tensor], pattern: Tensor, allowed: Tensor) -> dict[str, float]:
    """Each part's share in lifting the attended keys' scores above the average key's, summed over queries.

    For query i, with pattern p_i over the keys it may see (allowed), a part c lifts by
    Σ_j p_ij c_ij − mean_j c_ij. The lifts of the parts add up to the score's own lift, which is never
    negative (the softmax gives more weight to higher scores). Rows with fewer than two keys lift nothing.
    """
    keep = allowed.sum(dim=-1) >= 2  # [query_pos]
    weights = torch.where(allowed, pattern.double(), 0.0)[keep]
    uniform = allowed.double()[keep] / allowed.sum(dim=-1, keepdim=True).double()[keep]
    return {name: float(((weights - uniform) * torch.where(allowed, part, 0.0)[keep]).sum()) for name, part in parts.items()}


def is_position_only(part: str) -> bool:
    """A part made of position alone: each side position, a constant (bias, token type), and at least one position."""
    sides = split_name(part)
    constant = {"position", "bias", "token type"}
    return all(side in constant for side in sides) and "position" in sides


def fast_pairs(n_pairs: int) -> int:
    """How many of the fastest pairs count as position: a quarter of them (at least one)."""
    return max(1, round(n_pairs * FAST_PAIR_FRACTION))


@dataclass(frozen=True)
class HeadShare:
    layer: int
    head: int
    position_share: float  # the position parts' share of the lift (can leave 0…1 when parts pull apart)
    lift: float  # the score's whole lift, summed over the queries
    badge: str  # "positional", "content" or "mixed"
    measure: str  # "position parts" or "fast pairs"


def badge_for(share: float) -> str:
    if share >= POSITIONAL_MIN:
        return "positional"
    if share <= CONTENT_MAX:
        return "content"
    return "mixed"


def head_position_shares(trace, layer: int, sentence: int = 0) -> list[HeadShare]:
    """For every head of `layer`: the share of its pattern's lift that position makes, and a badge.

    The pattern puts its mass on keys whose scores stand above the others; `lift` measures that,
    query by query, as the pattern-weighted score minus the plain mean score over the keys the query
    may see, and splits it exactly among the score's parts. The share is the lift of the position
    parts over the whole lift:

    - models that add positions: the parts with position on one side and nothing but position or
      a constant (bias, token type) on the other: position·position, bias·position, position·bias…
      Exact in the first layer; in later layers it counts the position embedding as the layer reads
      it directly, not the position that earlier layers wrote into the stream.
    - rotary models: the fastest quarter of the dimension pairs (`FAST_PAIR_FRACTION`).

    Badge: "positional" when the share is at least 2/3 (`POSITIONAL_MIN`), "content" when it is at
    most 1/3 (`CONTENT_MAX`), "mixed" between. The pattern is the trace's own (mask, scaling and
    temperature shown).
    """
    rotary = trace.positional_kind == "rotary"
    allowed = _allowed(trace, sentence)
    pattern = trace.pattern(layer, sentence)
    read = None if rotary else read_sources(trace, layer, sentence, "kind")
    shares = []
    for head in range(trace.n_heads):
        if rotary:
            parts = score_parts(trace, layer, head, sentence, by="pair")
            n_fast = fast_pairs(len(parts))
            positional = set(list(parts)[:n_fast])
        else:
            parts = score_parts(trace, layer, head, sentence, group="kind", read=read)
            positional = {name for name in parts if is_position_only(name)}
        lifts = lift(parts, pattern[head], allowed)
        total = sum(lifts.values())
        share = sum(lifts[name] for name in positional) / total if total > 0 else float("nan")
        shares.append(HeadShare(layer, head, share, total, badge_for(share) if total > 0 else "mixed", "fast pairs" if rotary else "position parts"))
    return shares


def position_share_grid(trace, sentence: int = 0) -> tuple[Tensor, list[list[str]]]:
    """Every head's position share, `[n_layers, n_heads]`, and its badge `[layer][head]` (for a grid of heads).

    See `head_position_shares`; a head whose scores never lift (NaN share) has the badge "mixed".
    """
    rows = [head_position_shares(trace, layer, sentence) for layer in range(trace.n_layers)]
    shares = torch.tensor([[head.position_share for head in row] for row in rows], dtype=torch.float64)
    return shares, [[head.badge for head in row] for row in rows]
