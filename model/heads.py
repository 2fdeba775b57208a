"""What heads do, computed on the sentence at hand: summaries, rollout, value norms, sentence diffs.

Everything here reads a `Trace` (the model's own q, k, v of every layer) and, for value norms, the
model's output projection. No number is precomputed: a page calls these on the user's sentence.

- `head_summary`: for every layer × head, the entropy of its rows, the mean distance it looks over,
  and the share of its weight on the previous token, the same token, the first token, delimiters
  ([SEP], </s>) and punctuation; a badge from the thresholds in `BADGE_RULES`.
- `rollout`: Abnar & Zuidema (2020), Â_l = ½·mean_h(A_l) + ½·I, R = Â_L ⋯ Â_1.
- `attention_flow`: the same graph read as a flow network (max-flow from one output token to each
  input token); costly, see `bench/heads.py`.
- `value_weighted`: Kobayashi et al. (2020), ‖α_ij · f(x_j)‖ with f(x_j) = v_j · W_O[head].
- `sentence_diff`: two sentences aligned token by token; how far each head's rows move.
- `corpus_summary`: the same numbers over hundreds of sentences, with the badges' shares and the top
  examples, in one batched pass that keeps no pattern (`model/corpus_heads.py`).
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from model import imports
from model.corpus_heads import corpus_summary as _corpus_summary
from model.head_statistics import (  # noqa: F401  (re-exported: model.heads is their public home)
    PREVIOUS_MIN,
    SELF_MIN,
    FIRST_MIN,
    DELIMITER_MIN,
    LOCAL_MAX_DISTANCE,
    BROAD_MIN_ENTROPY,
    BADGES,
    BADGE_RULES,
    SHARES,
    is_punctuation,
    key_roles,
    model_patterns,
    pattern_statistics,
    badge,
)


@dataclass
class HeadSummary:
    """Numbers of every head of one sentence; each array is `[n_layers, n_heads]`."""

    tokens: list[str]
    entropy: Tensor  # bits, mean over rows
    entropy_normalised: Tensor  # 0 … 1, of a uniform row's
    distance: Tensor  # tokens, mean over rows of Σ_j α_ij·|i − j|
    previous: Tensor  # share of weight on key i − 1
    self: Tensor  # share on key i
    first: Tensor  # share on key 0
    delimiter: Tensor  # share on [SEP]-like special tokens after position 0
    punctuation: Tensor  # share on punctuation tokens
    badges: list[list[str]] = field(default_factory=list)  # [layer][head]

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.entropy.shape)

    def rows(self) -> list[dict]:
        """One record per head, for a table or a CSV."""
        out = []
        for layer in range(self.shape[0]):
            for head in range(self.shape[1]):
                record = dict(layer=layer, head=head, badge=self.badges[layer][head])
                for name in ("entropy", "entropy_normalised", "distance", *SHARES):
                    record[name] = float(getattr(self, name)[layer, head])
                out.append(record)
        return out


def summarise_patterns(patterns: Tensor, tokens) -> HeadSummary:
    """`HeadSummary` of patterns `[layer, head, query_pos, key_pos]` of one sentence."""
    stats = pattern_statistics(patterns, tokens)
    n = patterns.shape[-1]
    n_layers, n_heads = patterns.shape[:2]
    badges = [[badge({k: float(v[layer, head]) for k, v in stats.items()}, n) for head in range(n_heads)] for layer in range(n_layers)]
    return HeadSummary(tokens=[t.text for t in tokens], badges=badges, **stats)


def head_summary(trace, sentence: int = 0) -> HeadSummary:
    """The summary of every head of the model on one sentence of the trace."""
    return summarise_patterns(model_patterns(trace, sentence), trace.tokens[sentence])


def corpus_summary(model, sentences, top: int = 20, progress=None, **options):
    """Every head of `model` over a corpus of `sentences`: `model.corpus_heads.corpus_summary`.

    The result's `.top_examples(layer, head)`, `.by_offset(layer, head)` and `.badge_share(layer, head)`
    read the same statistics and badges as `head_summary`, over every sentence at once.
    """
    return _corpus_summary(model, sentences, top=top, progress=progress, **options)


# --- rollout and flow -------------------------------------------------------------------------------


def residual_adjusted(patterns: Tensor, residual: float = 0.5) -> Tensor:
    """Â_l = (1 − residual)·mean_h(A_l) + residual·I, rows renormalised: `[layer, q, k]`.

    The identity stands for the residual connection (x + Attention(x)): half of what a token carries
    to the next layer is itself.
    """
    mean = patterns.mean(dim=1)  # [layer, query_pos, key_pos]
    n = mean.shape[-1]
    adjusted = (1 - residual) * mean + residual * torch.eye(n, dtype=mean.dtype)
    return adjusted / adjusted.sum(-1, keepdim=True).clamp_min(1e-30)


def rollout(patterns: Tensor, residual: float = 0.5) -> Tensor:
    """Attention rollout after each layer, `[layer, query_pos, key_pos]`: R_l = Â_l · R_{l−1}, R_0 = Â_0.

    Row i of the last one is what output token i finally draws on from the input tokens.
    """
    adjusted = residual_adjusted(patterns, residual)
    out, current = [], None
    for a in adjusted:
        current = a if current is None else a @ current
        out.append(current)
    return torch.stack(out)


FLOW_RESOLUTION = 1_000_000  # max-flow works on integers: capacities are counted in millionths


def attention_flow(patterns: Tensor, query: int, residual: float = 0.5) -> Tensor:
    """Attention flow (Abnar & Zuidema 2020) from output token `query` to every input token, `[key_pos]`.

    The layers form a graph: node (l, i) feeds (l − 1, j) with capacity Â_l[i, j]. The flow to input
    token j is the maximum flow from (L, query) to (0, j): one max-flow per input token (scipy's
    Dinic's algorithm on capacities rounded to millionths).
    """
    import numpy as np

    with imports.LOCK:
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import maximum_flow

    adjusted = residual_adjusted(patterns, residual).double().numpy()
    n_layers, n, _ = adjusted.shape
    capacity = np.rint(adjusted * FLOW_RESOLUTION).astype(np.int32)  # [layer, i, j]
    layer, i, j = np.nonzero(capacity)
    sources = (layer + 1) * n + i  # node (l + 1, i) …
    targets = layer * n + j  # … feeds node (l, j)
    size = (n_layers + 1) * n
    graph = csr_matrix((capacity[layer, i, j], (sources, targets)), shape=(size, size))
    source = n_layers * n + query
    flows = [maximum_flow(graph, source, key).flow_value / FLOW_RESOLUTION for key in range(n)]
    return torch.tensor(flows, dtype=patterns.dtype)


# --- value-weighted attention -----------------------------------------------------------------------


def _get(module, path: str):
    for part in path.split("."):
        module = getattr(module, part)
    return module


def _output_projections(model) -> list[nn.Module]:
    """Each block's attention output projection (W_O) of a Hugging Face model."""
    blocks = _get(model.base, model.architecture.layers)
    return [_get(block, model.architecture.output_projection) for block in blocks]


def head_output_weights(model, layer: int) -> Tensor:
    """W_O split by head, `[head, d_head, d_model]`: head h's output is z_h · W_O[h] (plus a shared bias)."""
    if getattr(model, "is_toy", False):
        w = model.module.blocks[layer].attn.W_O.detach()  # [head · d_head, d_model]
    else:
        projection = _output_projections(model)[layer]
        if isinstance(projection, nn.Linear):
            w = projection.weight.detach().T  # Linear keeps [out, in]
        else:
            w = projection.weight.detach()  # GPT-2's Conv1D keeps [in, out]
    n_heads = model.n_heads
    return w.reshape(n_heads, w.shape[0] // n_heads, w.shape[1])


@dataclass
class ValueWeighted:
    """α and ‖α·f(x)‖ of every head of one layer of one sentence."""

    pattern: Tensor  # [head, query_pos, key_pos] α_ij
    transformed_norm: Tensor  # [head, key_pos] ‖f(x_j)‖ = ‖v_j · W_O[head]‖
    weighted_norm: Tensor  # [head, query_pos, key_pos] ‖α_ij · f(x_j)‖ = α_ij · ‖f(x_j)‖

    def key_shares(self, head: int) -> tuple[Tensor, Tensor]:
        """Per key `[key_pos]`: its share of all the head's weight, and its share of all the norm sent."""
        weight = self.pattern[head].sum(0)
        norm = self.weighted_norm[head].sum(0)
        return weight / weight.sum().clamp_min(1e-30), norm / norm.sum().clamp_min(1e-30)


def value_weighted(trace, model, layer: int, sentence: int = 0) -> ValueWeighted:
    """Kobayashi et al. (2020): the size of what each key actually sends, not just its weight."""
    n = len(trace.tokens[sentence])
    own = dict(mask=trace.mask, scale=trace.scale, temperature=trace.temperature)
    pattern = trace.pattern(layer, sentence, **own)[:, :n, :n]
    v = trace.v[layer, sentence, :, :n]  # [head, key_pos, d_head]; a shared key/value head is repeated per query head
    w_o = head_output_weights(model, layer).to(v.dtype)  # [head, d_head, d_model]
    f = v @ w_o  # [head, key_pos, d_model]
    f_norm = f.norm(dim=-1)
    return ValueWeighted(pattern=pattern, transformed_norm=f_norm, weighted_norm=pattern * f_norm[:, None, :])


# --- sentence diff ----------------------------------------------------------------------------------


def align_tokens(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """Pairs (i, j) of positions holding the same token in the two sentences, in order (difflib)."""
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    pairs = []
    for block in matcher.get_matching_blocks():
        pairs.extend((block.a + k, block.b + k) for k in range(block.size))
    return pairs


@dataclass
class SentenceDiff:
    pairs: list[tuple[int, int]]  # aligned positions (in a, in b)
    tokens_a: list[str]
    tokens_b: list[str]
    change: Tensor  # [layer, head] mean over aligned queries of the rows' total-variation distance
    difference: Tensor  # [layer, head, aligned, aligned] α_b − α_a on aligned queries and keys

    def top_heads(self, k: int = 10) -> list[tuple[int, int, float]]:
        flat = self.change.flatten()
        order = torch.argsort(flat, descending=True, stable=True)[:k]
        n_heads = self.change.shape[1]
        return [(int(i) // n_heads, int(i) % n_heads, float(flat[i])) for i in order]


def diff_patterns(patterns_a: Tensor, patterns_b: Tensor, pairs: list[tuple[int, int]]) -> tuple[Tensor, Tensor]:
    """How far each head's rows move between two aligned sentences.

    For an aligned query (i, i'), the two rows are compared key by key over aligned keys; a key found
    in one sentence only adds its whole weight. Half the sum of absolute differences is the rows'
    total-variation distance (0 = the same row, 1 = no weight in common). Returns the mean over
    aligned queries `[layer, head]` and the differences on aligned cells `[layer, head, m, m]`.
    """
    ia = torch.tensor([p[0] for p in pairs], dtype=torch.long)
    ib = torch.tensor([p[1] for p in pairs], dtype=torch.long)
    rows_a = patterns_a[..., ia, :]  # [layer, head, m, n_a]
    rows_b = patterns_b[..., ib, :]
    aligned_a, aligned_b = rows_a[..., ia], rows_b[..., ib]  # [layer, head, m, m]
    unaligned = (rows_a.sum(-1) - aligned_a.sum(-1)) + (rows_b.sum(-1) - aligned_b.sum(-1))
    tv = 0.5 * ((aligned_b - aligned_a).abs().sum(-1) + unaligned)  # [layer, head, m]
    change = tv.mean(-1) if len(pairs) else torch.zeros(patterns_a.shape[:2])
    return change, aligned_b - aligned_a


def sentence_diff(trace, a: int = 0, b: int = 1) -> SentenceDiff:
    """Align sentences a and b of the trace token by token and compare every head."""
    tokens_a = [t.text for t in trace.tokens[a]]
    tokens_b = [t.text for t in trace.tokens[b]]
    pairs = align_tokens(tokens_a, tokens_b)
    change, difference = diff_patterns(model_patterns(trace, a), model_patterns(trace, b), pairs)
    return SentenceDiff(pairs=pairs, tokens_a=tokens_a, tokens_b=tokens_b, change=change, difference=difference)


# --- ablation -----------------------------------------------------------------------------------------


@dataclass
class AblationRun:
    """A batch of runs of one sentence, each with a set of heads knocked out (z_h = 0 before W_O)."""

    head_sets: list[list[tuple[int, int]]]
    final_hidden: Tensor  # [run, pos, d_model] the residual stream after the last block
    last_logits: Tensor | None  # [run, d_vocab] next-token logits at the last token, for a language model


def ablated_runs(model, text: str, head_sets: list[list[tuple[int, int]]]) -> AblationRun:
    """Run `text` once per head set in one batch; each run zeroes its heads' z before the output projection.

    A forward pre-hook on each layer's output projection multiplies its input, the heads' outputs
    concatenated `[run, pos, head · d_head]`, by a 0/1 mask per run and head: the same as the engine's
    `model.trace(text, ablate=heads)` (which knocks out the same heads in every sentence of a batch),
    with a different set per run. The toy model (small) runs `model.trace(..., ablate=...)` per set.
    """
    if getattr(model, "is_toy", False):
        traces = [model.trace(text, ablate=heads) for heads in head_sets]
        return AblationRun(
            head_sets=head_sets,
            final_hidden=torch.cat([t.hidden_states[-1] for t in traces]),
            last_logits=torch.cat([t.last_logits for t in traces]) if traces[0].last_logits is not None else None,
        )
    tokens = model.tokenizer.encode(text)[: model.n_ctx]
    n_runs = len(head_sets)
    input_ids = torch.tensor([[t.id for t in tokens]] * n_runs, dtype=torch.long)
    keep = torch.ones(model.n_layers, n_runs, model.n_heads)
    for run, heads in enumerate(head_sets):
        for layer, head in heads:
            keep[layer, run, head] = 0.0
    final: list[Tensor] = []
    handles = []
    for layer, projection in enumerate(_output_projections(model)):

        def hook(_module, inputs, layer=layer):
            z = inputs[0]  # [run, pos, head · d_head]
            runs, n_pos, width = z.shape
            per_head = z.view(runs, n_pos, model.n_heads, width // model.n_heads)
            return (per_head * keep[layer][:, None, :, None].to(z.dtype)).view(runs, n_pos, width), *inputs[1:]

        handles.append(projection.register_forward_pre_hook(hook))
    last_block = _get(model.base, model.architecture.layers)[-1]
    handles.append(last_block.register_forward_hook(lambda _m, _a, output: final.append(output if isinstance(output, Tensor) else output[0])))
    try:
        with torch.no_grad():
            output = model.module(**model._forward_kwargs(input_ids, torch.ones_like(input_ids, dtype=torch.bool)))
    finally:
        for handle in handles:
            handle.remove()
    logits = getattr(output, "logits", None) if model.lm_head == "next" else None
    return AblationRun(
        head_sets=head_sets,
        final_hidden=final[-1],  # the residual stream after the last block, as `trace.hidden_states[-1]`
        last_logits=None if logits is None else logits[:, -1],
    )


def cosine_rows(a: Tensor, b: Tensor) -> Tensor:
    """Cosine similarity of matching rows, `[..., d]` × `[..., d]` → `[...]`."""
    return torch.nn.functional.cosine_similarity(a, b, dim=-1, eps=1e-12)


def kl_divergence(logits_p: Tensor, logits_q: Tensor) -> Tensor:
    """KL(p ‖ q) in bits between the softmax distributions of two logit vectors `[..., d_vocab]`."""
    log_p = torch.log_softmax(logits_p, dim=-1)
    log_q = torch.log_softmax(logits_q, dim=-1)
    return (log_p.exp() * (log_p - log_q)).sum(-1) / math.log(2)


@dataclass
class HeadRanking:
    measure: str  # what `effect` holds
    effect: Tensor  # [layer, head]

    def top(self, k: int = 10) -> list[tuple[int, int, float]]:
        flat = self.effect.flatten()
        order = torch.argsort(flat, descending=True, stable=True)[:k]
        n_heads = self.effect.shape[1]
        return [(int(i) // n_heads, int(i) % n_heads, float(flat[i])) for i in order]


KL_MEASURE = "KL(before ‖ after) of the next-token distribution, bits"
HIDDEN_MEASURE = "1 − cosine of the last hidden state, mean over tokens"


def rank_heads(model, text: str, batch_size: int = 24) -> HeadRanking:
    """Knock out every head alone and measure how far the output moves, in batches of `batch_size` runs.

    With a language-model head: KL(before ‖ after) of the next-token distribution at the last token.
    Without: 1 − cosine between the last hidden states before and after, averaged over tokens.
    """
    heads = [(layer, head) for layer in range(model.n_layers) for head in range(model.n_heads)]
    baseline = ablated_runs(model, text, [[]])
    effects = []
    for start in range(0, len(heads), batch_size):
        chunk = [[h] for h in heads[start : start + batch_size]]
        run = ablated_runs(model, text, chunk)
        if baseline.last_logits is not None:
            effects.append(kl_divergence(baseline.last_logits, run.last_logits))
        else:
            effects.append((1 - cosine_rows(baseline.final_hidden, run.final_hidden)).mean(-1))
    measure = KL_MEASURE if baseline.last_logits is not None else HIDDEN_MEASURE
    return HeadRanking(measure=measure, effect=torch.cat(effects).reshape(model.n_layers, model.n_heads))
