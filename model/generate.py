"""Generation, one token at a time: predict, pick, append, predict again, reading a growing key/value cache.

    run = load_model("smollm2").generate("The capital of France is", max_new_tokens=8)
    run.text                      # " Paris. ..."
    step = run.steps[0]
    step.pattern                  # [n_layers, n_heads, n_keys] the query row of the token the step read
    step.probabilities[step.chosen], step.rank, step.cache_bytes

The first step runs the prompt through the model once and keeps every layer's keys and values; each
later step runs the model on one token only, the one written last. Its query meets the cached keys and
its value mix reads the cached values, so the earlier tokens are never computed again: with a causal
mask nothing an earlier token computed depends on a later one. Each step is the model's own incremental
path (`past_key_values` through the registered attention function for a Hugging Face model, the toy's
`forward_cached`), so the patterns, keys and values here are the ones the model computed.

Picking: temperature 0 takes the most likely token (greedy); a positive temperature draws from
softmax(logits / temperature), after keeping the `top_k` most likely tokens and then the smallest set
whose probabilities add up to `top_p` (the order transformers applies them in). A seed fixes the draw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import Tensor

from model.trace import InputError, prepare_texts

TOP_SHOWN = 10  # candidates kept per step for a page (more when top_k asks for more)


class CannotGenerate(InputError):
    """The model cannot write text one token at a time (bidirectional, or without a next-token head)."""


@dataclass(frozen=True)
class CachedStep:
    """What one incremental forward pass gives back (`TracedModel.cached_step`), for the last token it read."""

    logits: Tensor  # [d_vocab] the prediction after the last token read
    pattern: Tensor  # [n_layers, n_heads, n_keys] the last token's query row in every head
    query: Tensor  # [n_layers, n_heads, d_head] the last token's query vectors
    keys: list[Tensor]  # per layer, the whole cache after the step: [n_kv_heads, n_keys, d_head]
    values: list[Tensor]


@dataclass(frozen=True)
class Candidate:
    """One of the most likely next tokens of a step."""

    rank: int  # 1 = most likely (in the distribution before the cut)
    id: int
    text: str
    probability: float  # softmax(logits / temperature), before the cut
    kept: bool  # survived the top-k / top-p cut (could be drawn)


@dataclass(frozen=True)
class Step:
    """One new token: the position read, its attention over every key so far, and the pick.

    The step reads the token at `position` (the last prompt token for step 0, else the token written by
    the step before) and writes `chosen` at `position + 1`.
    """

    index: int  # 0 for the first new token
    position: int  # the position of the token read (its query row is `pattern`)
    read_id: int  # the id of the token read
    chosen: int  # the id written
    pattern: Tensor  # [n_layers, n_heads, n_keys] the read token's query row, n_keys = position + 1
    query: Tensor  # [n_layers, n_heads, d_head]
    logits: Tensor  # [d_vocab] the model's logits after the token read
    temperature: float  # the softmax temperature of `distribution` (1.0 when greedy)
    kept: Tensor  # [d_vocab] bool: True for the tokens the top-k / top-p cut kept
    kept_probability: float  # the probability the kept tokens hold in `distribution` (1.0 without a cut)
    candidates: tuple[Candidate, ...]  # the most likely tokens, most likely first
    cache_bytes: int  # bytes of every layer's cached keys and values after the step (real tensor sizes)
    keys: Tensor  # [n_layers, n_kv_heads, n_keys, d_head] the cache the step read (a view of the run's)
    values: Tensor

    @property
    def n_keys(self) -> int:
        return self.pattern.shape[-1]

    @property
    def distribution(self) -> Tensor:
        """`[d_vocab]` softmax(logits / temperature): every token's probability before the cut."""
        return torch.softmax(self.logits / self.temperature, dim=-1)

    @property
    def probabilities(self) -> Tensor:
        """`[d_vocab]` what `chosen` was drawn from: `distribution` after the cut, renormalised (0 outside it)."""
        kept = self.distribution * self.kept
        return kept / kept.sum()

    @property
    def probability(self) -> float:
        """The chosen token's probability before the cut."""
        return float(self.distribution[self.chosen])

    @property
    def rank(self) -> int:
        """The chosen token's rank in `distribution` (1 = the most likely)."""
        return rank_of(self.distribution, self.chosen)

    @property
    def n_kept(self) -> int:
        return int(self.kept.sum())


@dataclass(frozen=True)
class Generation:
    """A run: the prompt, the tokens written, one `Step` per new token, and the cache they grew."""

    model_name: str
    prompt: str
    prompt_ids: list[int]
    token_ids: list[int]  # the new tokens, in the order written
    text: str  # the new text
    tokens: list[str]  # the text of every token, prompt and new ones
    steps: list[Step]
    temperature: float
    top_k: int | None
    top_p: float | None
    seed: int
    stopped: str  # "length" (max_new_tokens written), "end" (the model wrote its end token), "context" (no room left)
    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_head: int
    bytes_per_element: int
    keys: Tensor  # [n_layers, n_kv_heads, n_cached, d_head] every row the steps wrote, each written once
    values: Tensor
    cache: object = field(repr=False)  # the model's own cache object (a transformers DynamicCache or the toy's)

    @property
    def ids(self) -> list[int]:
        return self.prompt_ids + self.token_ids

    @property
    def group_size(self) -> int:
        """Query heads per cached key/value head (1 without grouped-query attention)."""
        return self.n_heads // self.n_kv_heads

    def kv_groups(self) -> list[list[int]]:
        """For each cached key/value head, the query heads that read it: SmolLM2 [[0, 1, 2], [3, 4, 5], [6, 7, 8]]."""
        return [list(range(g * self.group_size, (g + 1) * self.group_size)) for g in range(self.n_kv_heads)]

    def cache_bytes_for(self, n_tokens: int, n_kv_heads: int | None = None) -> int:
        """2 · n_layers · n_kv_heads · d_head · bytes_per_element · n_tokens (keys and values of every layer).

        `n_kv_heads=n_heads` gives what the cache would take with one key/value head per query head.
        """
        n_kv = self.n_kv_heads if n_kv_heads is None else n_kv_heads
        return 2 * self.n_layers * n_kv * self.d_head * self.bytes_per_element * n_tokens


def rank_of(distribution: Tensor, token_id: int) -> int:
    """1 + the number of tokens strictly more likely than `token_id`."""
    return int((distribution > distribution[token_id]).sum()) + 1


def cut(distribution: Tensor, top_k: int | None = None, top_p: float | None = None) -> Tensor:
    """`[d_vocab]` bool, True for the tokens a draw may pick: the `top_k` most likely, then of those the
    fewest (most likely first) whose probabilities add up to at least `top_p` of what top-k left.

    The most likely token is always kept. Ties at the top-k border keep the lower id first (torch.topk).
    """
    kept = torch.ones_like(distribution, dtype=torch.bool)
    if top_k is not None and top_k < distribution.shape[-1]:
        kept = torch.zeros_like(kept)
        kept[torch.topk(distribution, top_k).indices] = True
    if top_p is not None and top_p < 1.0:
        left = distribution * kept
        left = left / left.sum()
        ordered, order = torch.sort(left, descending=True)
        before = torch.cumsum(ordered, dim=-1) - ordered  # probability of the tokens more likely than each
        in_nucleus = before < top_p
        in_nucleus[0] = True
        kept = torch.zeros_like(kept)
        kept[order[in_nucleus]] = True
    return kept


def check_sampling(max_new_tokens: int, temperature: float, top_k: int | None, top_p: float | None) -> None:
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be a positive whole number, got {max_new_tokens!r}")
    if not (temperature >= 0 and math.isfinite(temperature)):
        raise ValueError(f"temperature must be 0 (greedy) or positive, got {temperature!r}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be a positive whole number or None, got {top_k!r}")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1] or None, got {top_p!r}")


def check_can_generate(model) -> None:
    """Raise `CannotGenerate`, saying why, for a model that cannot write one token at a time."""
    if not model.causal:
        raise CannotGenerate(
            f"{model.name} is bidirectional: every token attends to the tokens on both sides of it, so a new token would "
            "change what every earlier token computed. There is no cache of earlier keys and values to reuse, and the model "
            "was trained to fill in hidden words, not to write the next one. Choose a causal model (the toy, SmolLM2, GPT-2, Llama)."
        )
    if model.lm_head != "next":
        raise CannotGenerate(f"{model.name} has no next-token head here: it computes attention but cannot say which token comes next.")


def end_ids(model) -> set[int]:
    """The ids after which the model stops writing (its generation config's end tokens; none for the toy)."""
    config = getattr(getattr(model, "module", None), "generation_config", None)
    eos = getattr(config, "eos_token_id", None) if config is not None else None
    if eos is None:
        return set()
    return {int(eos)} if isinstance(eos, int) else {int(i) for i in eos}


def generate(
    model,
    prompt: str,
    max_new_tokens: int,
    temperature: float = 0.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int = 0,
) -> Generation:
    """Write up to `max_new_tokens` tokens after `prompt`, one step per token (see the module's docstring).

    Stops early after the model's end token, or when the model's context is full. Raises `CannotGenerate`
    for a bidirectional model or one without a next-token head, `InputError` for a prompt with no token.
    """
    check_can_generate(model)
    check_sampling(max_new_tokens, temperature, top_k, top_p)
    texts, _ = prepare_texts([prompt])
    (tokens,), _ = model.tokenize(texts)
    prompt_ids = [t.id for t in tokens]
    if not prompt_ids:
        raise InputError("The prompt gives no token: type some words.")
    if len(prompt_ids) >= model.n_ctx:
        raise InputError(f"The prompt has {len(prompt_ids)} tokens; {model.name} reads at most {model.n_ctx}, so there is no room to write.")
    n_steps = min(max_new_tokens, model.n_ctx - len(prompt_ids))  # the whole text stays within the context
    generator = torch.Generator().manual_seed(int(seed))
    greedy = temperature == 0
    softmax_temperature = 1.0 if greedy else float(temperature)
    stop_at = end_ids(model)
    n_rows = len(prompt_ids) + n_steps - 1  # the rows the cache ends with: every token read
    keys = values = None
    cache = model.new_cache()
    steps: list[Step] = []
    new_ids: list[int] = []
    stopped = "length" if n_steps == max_new_tokens else "context"
    reading = prompt_ids
    for index in range(n_steps):
        out = model.cached_step(reading, cache)
        n_keys = out.pattern.shape[-1]
        if keys is None:
            n_kv, d_head = out.keys[0].shape[0], out.keys[0].shape[-1]
            keys = out.keys[0].new_empty((model.n_layers, n_kv, n_rows, d_head))
            values = out.values[0].new_empty((model.n_layers, n_kv, n_rows, d_head))
        first = n_keys - len(reading)  # the rows this step appended
        for layer in range(model.n_layers):
            keys[layer, :, first:n_keys] = out.keys[layer][:, first:]
            values[layer, :, first:n_keys] = out.values[layer][:, first:]
        logits = out.logits.float()
        distribution = torch.softmax(logits / softmax_temperature, dim=-1)
        kept = cut(distribution, top_k, top_p)
        drawn_from = distribution * kept
        kept_probability = float(drawn_from.sum())
        if greedy:
            chosen = int(torch.argmax(distribution))
        else:
            chosen = int(torch.multinomial(drawn_from / kept_probability, 1, generator=generator))
        shown = max(TOP_SHOWN, top_k or 0)
        top = torch.topk(distribution, min(shown, distribution.shape[0]))
        candidates = tuple(
            Candidate(rank + 1, int(i), model.tokenizer.id_to_text(int(i)), float(p), bool(kept[i])) for rank, (p, i) in enumerate(zip(top.values, top.indices))
        )
        cache_bytes = sum(t.numel() * t.element_size() for t in (*out.keys, *out.values))
        steps.append(
            Step(
                index=index,
                position=n_keys - 1,
                read_id=reading[-1],
                chosen=chosen,
                pattern=out.pattern,
                query=out.query,
                logits=logits,
                temperature=softmax_temperature,
                kept=kept,
                kept_probability=kept_probability,
                candidates=candidates,
                cache_bytes=cache_bytes,
                keys=keys[:, :, :n_keys],
                values=values[:, :, :n_keys],
            )
        )
        new_ids.append(chosen)
        if chosen in stop_at:
            stopped = "end"
            break
        reading = [chosen]
    n_cached = steps[-1].n_keys
    return Generation(
        model_name=model.name,
        prompt=prompt,
        prompt_ids=prompt_ids,
        token_ids=new_ids,
        text=model.tokenizer.decode(new_ids),
        tokens=[model.tokenizer.id_to_text(i) for i in prompt_ids + new_ids],
        steps=steps,
        temperature=float(temperature),
        top_k=top_k,
        top_p=top_p,
        seed=int(seed),
        stopped=stopped,
        n_layers=model.n_layers,
        n_heads=model.n_heads,
        n_kv_heads=keys.shape[1],
        d_head=keys.shape[-1],
        bytes_per_element=keys.element_size(),
        keys=keys[:, :, :n_cached],
        values=values[:, :, :n_cached],
        cache=cache,
    )
