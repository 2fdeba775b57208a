"""One head across many sentences: what it does in general, not on one example.

`corpus_summary(model, sentences, top=20)` (also `model.heads.corpus_summary`) runs the model over a
corpus in batches and keeps, for every layer × head, running sums and the `top` strongest query → key
pairs. Each batch's patterns are read once and dropped: what the summary holds grows with `top` and the
size of the model, not with the number of sentences.

On one sentence a head's numbers are exactly those of the Heads page (`pattern_statistics`, `badge`):
query rows 1 … n−1 (row 0 is left out, as there), the share of the weight on the previous token, on the
token itself, on the first token, on delimiters and on punctuation, the row entropy, the mean distance,
and the badge. Over the corpus each number is given as
- its mean over the corpus's query tokens (a sentence of n tokens counts n − 1 times);
- the spread of the sentences' own values: standard deviation, and quantiles read from a histogram of
  `BINS` bins on [0, 1] (to within 1 / `BINS`) for the numbers that lie in [0, 1];
and a badge as the share of sentences on which the head gets it.

By offset: for o in −10 … +10, the mean weight α_{i, i+o} over the query tokens i that have a key at
offset o in their sentence (o = −1 is the previous token, 0 the token itself, > 0 a later token, which
a causal model may not see: weight 0).

Top examples: the `top` largest weights α_ij over every query row 1 … n−1 and key j of the corpus, as
`(sentence_index, query_position, key_position, weight)`, strongest first.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from model.head_statistics import BADGES, badge, pattern_statistics
from model.heldout import BANK_AFTER, BANK_BEFORE, EVERYDAY
from model.tokenizers import is_visible_text
from model.trace import MAX_SENTENCES, InputError

OFFSETS = tuple(range(-10, 11))  # key − query
STATISTICS = ("previous", "self", "first", "delimiter", "punctuation", "entropy", "entropy_normalised", "distance")
BOUNDED = ("previous", "self", "first", "delimiter", "punctuation", "entropy_normalised")  # numbers in [0, 1]
UNITS = dict(entropy="bits", distance="tokens")  # the others are shares of a row's weight (0 … 1)
QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)
BINS = 100  # histogram bins on [0, 1]: quantiles to within 0.01
MAX_TOKENS = 256  # a longer sentence is cut (its patterns of every layer at once stay ≤ 71 MB on SmolLM2)
BATCH_BYTES = 64 * 2**20  # what one batch's trace and patterns may take, estimated before running it
CLASSROOM_SIZE = 500
CLASSROOM_SEED = 0  # the generator's seed the toy models were trained with: the first 500 of their sentences

ProgressCallback = Callable[[int, int], None]


def classroom_sentences(n: int = CLASSROOM_SIZE) -> list[str]:
    """The app's classroom sentences: the first `n` of the generated corpus the toy models learned from."""
    from model.corpus import sentences

    return sentences(n, seed=CLASSROOM_SEED)


def heldout_sentences() -> list[str]:
    """The held-out sentences (model/heldout.py): everyday ones, then "bank" with its sense before and after it."""
    return list(EVERYDAY) + [text for group in (BANK_BEFORE, BANK_AFTER) for texts in group.values() for text in texts]


@dataclass(frozen=True)
class Spread:
    """One number of one head over a corpus."""

    mean: float  # over the corpus's query tokens
    sentence_mean: float  # mean of the sentences' own values
    std: float  # standard deviation of the sentences' values
    quantiles: dict[float, float] | None  # of the sentences' values (numbers in [0, 1] only), to within 1 / BINS
    sentences: int  # how many sentences have the number


def _bins(values: Tensor) -> Tensor:
    """The histogram bin of each value in [0, 1] (1 falls in the last bin)."""
    return (values * BINS).long().clamp(0, BINS - 1)


def histogram_quantiles(counts: Tensor) -> dict[float, float] | None:
    """Quantiles of values counted in `counts` `[BINS]`: for q, the bin holding the smallest value v such that at
    least q·N values are ≤ v, read linearly within that bin (so within 1 / BINS of it). None when empty."""
    counts = counts.double()
    total = float(counts.sum())
    if total == 0:
        return None
    cumulative = counts.cumsum(0)
    out = {}
    for q in QUANTILES:
        target = q * total - 1e-9
        index = int(torch.searchsorted(cumulative, torch.tensor([target], dtype=torch.float64))[0].clamp(max=BINS - 1))
        below = float(cumulative[index] - counts[index])
        within = (target - below) / float(counts[index]) if counts[index] > 0 else 0.0
        out[q] = (index + min(max(within, 0.0), 1.0)) / BINS
    return out


@dataclass
class CorpusSummary:
    """Every head of a model over a corpus: running sums and the top examples (see the module's docstring).

    Tensors are `[layer, head, …]`; none has a size that depends on the number of sentences.
    """

    model_name: str
    n_layers: int
    n_heads: int
    top: int
    n_sentences: int = 0  # sentences summarised
    n_rows: int = 0  # query tokens: Σ (n − 1)
    skipped: list[int] = field(default_factory=list)  # indexes of sentences left out (no text, one token)
    notices: list[str] = field(default_factory=list)
    top_weight: Tensor = None  # [layer, head, top] strongest first; −1 in an empty slot
    top_sentence: Tensor = None  # [layer, head, top] index in the corpus; −1 in an empty slot
    top_query: Tensor = None  # [layer, head, top]
    top_key: Tensor = None  # [layer, head, top]
    token_sum: Tensor = None  # [statistic, layer, head] Σ_sentences value · (n − 1)
    sentence_sum: Tensor = None  # [statistic, layer, head] Σ_sentences value
    sentence_squares: Tensor = None  # [statistic, layer, head] Σ_sentences value²
    histogram: Tensor = None  # [bounded statistic, layer, head, BINS] sentences per bin
    offset_sum: Tensor = None  # [layer, head, offset] Σ α_{i, i+o}
    offset_pairs: Tensor = None  # [offset] how many (query, key) pairs at that offset
    offset_sentence_sum: Tensor = None  # [layer, head, offset] Σ_sentences of the sentence's mean at that offset
    offset_sentence_squares: Tensor = None  # [layer, head, offset]
    offset_sentences: Tensor = None  # [offset] sentences with at least one pair at that offset
    offset_histogram: Tensor = None  # [layer, head, offset, BINS]
    badge_counts: Tensor = None  # [layer, head, badge] sentences on which the head gets each badge of BADGES
    tokens: dict[int, list[str]] = field(default_factory=dict)  # the tokens of the sentences that hold a top example

    def __post_init__(self):
        shape, n_stats, n_off = (self.n_layers, self.n_heads), len(STATISTICS), len(OFFSETS)
        empty = dict(
            top_weight=torch.full((*shape, self.top), -1.0),
            top_sentence=torch.full((*shape, self.top), -1, dtype=torch.long),
            top_query=torch.full((*shape, self.top), -1, dtype=torch.long),
            top_key=torch.full((*shape, self.top), -1, dtype=torch.long),
            token_sum=torch.zeros((n_stats, *shape), dtype=torch.float64),
            sentence_sum=torch.zeros((n_stats, *shape), dtype=torch.float64),
            sentence_squares=torch.zeros((n_stats, *shape), dtype=torch.float64),
            histogram=torch.zeros((len(BOUNDED), *shape, BINS), dtype=torch.int32),
            offset_sum=torch.zeros((*shape, n_off), dtype=torch.float64),
            offset_pairs=torch.zeros(n_off, dtype=torch.long),
            offset_sentence_sum=torch.zeros((*shape, n_off), dtype=torch.float64),
            offset_sentence_squares=torch.zeros((*shape, n_off), dtype=torch.float64),
            offset_sentences=torch.zeros(n_off, dtype=torch.long),
            offset_histogram=torch.zeros((*shape, n_off, BINS), dtype=torch.int32),
            badge_counts=torch.zeros((*shape, len(BADGES)), dtype=torch.long),
        )
        for name, tensor in empty.items():
            if getattr(self, name) is None:
                setattr(self, name, tensor)

    # --- reading one sentence -------------------------------------------------------------------------

    def add(self, index: int, patterns: Tensor, tokens) -> None:
        """Fold in one sentence: its patterns `[layer, head, query_pos, key_pos]` cut to its n ≥ 2 tokens.

        `tokens` are its `Token`s (for delimiters and punctuation, and to show a top example).
        """
        n = patterns.shape[-1]
        if n < 2:
            raise ValueError("a sentence of one token gives a head no choice; it is left out")
        rows = n - 1
        stats = pattern_statistics(patterns, tokens)  # each [layer, head], as on the Heads page
        values = torch.stack([stats[name] for name in STATISTICS]).double()  # [statistic, layer, head]
        self.token_sum += values * rows
        self.sentence_sum += values
        self.sentence_squares += values**2
        bounded = values[[STATISTICS.index(name) for name in BOUNDED]]  # [bounded, layer, head]
        self.histogram.scatter_add_(-1, _bins(bounded)[..., None], torch.ones((*bounded.shape, 1), dtype=torch.int32))
        self._add_badges(stats, n)
        p = patterns[..., 1:, :]  # [layer, head, query row 1 … n−1, key_pos]
        self._add_offsets(p, n)
        self._add_top(index, p, n)
        self.tokens[index] = [t.text for t in tokens]
        self.n_sentences += 1
        self.n_rows += rows

    def _add_badges(self, stats: dict[str, Tensor], n: int) -> None:
        """The Heads page's `badge` of every head on this sentence, counted."""
        as_lists = {name: value.tolist() for name, value in stats.items()}  # plain floats: one conversion per number
        chosen = [
            BADGES.index(badge({name: as_lists[name][layer][head] for name in as_lists}, n)) for layer in range(self.n_layers) for head in range(self.n_heads)
        ]
        flat = self.badge_counts.view(-1, len(BADGES))  # [layer · head, badge]
        flat[torch.arange(flat.shape[0]), torch.tensor(chosen)] += 1

    def _add_offsets(self, p: Tensor, n: int) -> None:
        query = torch.arange(1, n)  # [rows]
        key = query[:, None] + torch.tensor(OFFSETS)[None, :]  # [rows, offset]
        exists = (key >= 0) & (key < n)  # a key at that offset is in the sentence
        index = key.clamp(0, n - 1).expand(*p.shape[:2], *key.shape)  # [layer, head, rows, offset]
        weights = p.gather(-1, index) * exists  # [layer, head, rows, offset]
        sums = weights.sum(-2).double()  # [layer, head, offset]
        pairs = exists.sum(0)  # [offset]
        has = pairs > 0
        mean = sums / pairs.clamp_min(1)  # the sentence's own mean at each offset
        self.offset_sum += sums
        self.offset_pairs += pairs
        self.offset_sentence_sum += mean * has
        self.offset_sentence_squares += mean**2 * has
        self.offset_sentences += has
        self.offset_histogram.scatter_add_(-1, _bins(mean)[..., None], has.to(torch.int32).expand_as(mean)[..., None].contiguous())

    def _add_top(self, index: int, p: Tensor, n: int) -> None:
        flat = p.reshape(self.n_layers, self.n_heads, -1)  # [layer, head, rows · key]
        weights, where = flat.topk(min(self.top, flat.shape[-1]), dim=-1)  # strongest of this sentence
        merged = dict(
            weight=torch.cat([self.top_weight, weights.to(self.top_weight.dtype)], -1),
            sentence=torch.cat([self.top_sentence, torch.full_like(where, index)], -1),
            query=torch.cat([self.top_query, where // n + 1], -1),
            key=torch.cat([self.top_key, where % n], -1),
        )
        # a stable sort: between equal weights the example read first stays first (sentences are read shortest first)
        order = torch.sort(merged["weight"], dim=-1, descending=True, stable=True).indices[..., : self.top]
        self.top_weight = merged["weight"].gather(-1, order)
        self.top_sentence = merged["sentence"].gather(-1, order)
        self.top_query = merged["query"].gather(-1, order)
        self.top_key = merged["key"].gather(-1, order)

    def forget_tokens(self) -> None:
        """Drop the tokens of sentences that hold no top example any more."""
        kept = set(self.top_sentence.unique().tolist())
        self.tokens = {index: tokens for index, tokens in self.tokens.items() if index in kept}

    # --- what a page reads ----------------------------------------------------------------------------

    def top_examples(self, layer: int, head: int) -> list[tuple[int, int, int, float]]:
        """`(sentence_index, query_position, key_position, weight)`, strongest first."""
        return [
            (int(s), int(q), int(k), float(w))
            for s, q, k, w in zip(self.top_sentence[layer, head], self.top_query[layer, head], self.top_key[layer, head], self.top_weight[layer, head])
            if s >= 0
        ]

    def by_offset(self, layer: int, head: int) -> dict[int, float]:
        """Offset `key − query` (−10 … +10) → the mean weight over the corpus's query tokens that have a key there."""
        return {o: float(self.offset_sum[layer, head, i] / self.offset_pairs[i]) for i, o in enumerate(OFFSETS) if self.offset_pairs[i] > 0}

    def offset_spread(self, layer: int, head: int) -> dict[int, Spread]:
        """Offset → the mean of `by_offset` with the spread of the sentences' own means at that offset."""
        out = {}
        for i, o in enumerate(OFFSETS):
            n = int(self.offset_sentences[i])
            if n == 0:
                continue
            sentence_mean = float(self.offset_sentence_sum[layer, head, i]) / n
            variance = float(self.offset_sentence_squares[layer, head, i]) / n - sentence_mean**2
            out[o] = Spread(
                mean=float(self.offset_sum[layer, head, i] / self.offset_pairs[i]),
                sentence_mean=sentence_mean,
                std=math.sqrt(max(variance, 0.0)),
                quantiles=histogram_quantiles(self.offset_histogram[layer, head, i]),
                sentences=n,
            )
        return out

    def badge_share(self, layer: int, head: int) -> dict[str, float]:
        """Badge (every one of `BADGES`, in order) → the share of the sentences on which the head gets it."""
        counts = self.badge_counts[layer, head].tolist()
        return {name: count / max(self.n_sentences, 1) for name, count in zip(BADGES, counts)}

    def mean(self, statistic: str) -> Tensor:
        """`[layer, head]` one statistic's mean over the corpus's query tokens."""
        return self.token_sum[STATISTICS.index(statistic)] / max(self.n_rows, 1)

    def spread(self, statistic: str, layer: int, head: int) -> Spread:
        i = STATISTICS.index(statistic)
        n = max(self.n_sentences, 1)
        sentence_mean = float(self.sentence_sum[i, layer, head]) / n
        variance = float(self.sentence_squares[i, layer, head]) / n - sentence_mean**2
        quantiles = histogram_quantiles(self.histogram[BOUNDED.index(statistic), layer, head]) if statistic in BOUNDED else None
        return Spread(float(self.mean(statistic)[layer, head]), sentence_mean, math.sqrt(max(variance, 0.0)), quantiles, self.n_sentences)

    def statistics(self, layer: int, head: int) -> dict[str, Spread]:
        """Every statistic of one head (see `STATISTICS`): its mean over query tokens and its spread over sentences."""
        return {name: self.spread(name, layer, head) for name in STATISTICS}

    def most_common_badge(self) -> tuple[list[list[str]], Tensor]:
        """Per head, the badge it gets most often, `[layer][head]`, and on what share of sentences `[layer, head]`."""
        counts, which = self.badge_counts.max(dim=-1)
        badges = [[BADGES[int(which[layer, head])] for head in range(self.n_heads)] for layer in range(self.n_layers)]
        return badges, counts.double() / max(self.n_sentences, 1)

    def grid(self) -> list[dict]:
        """One record per head (every head at once): its most common badge and share, each statistic's mean
        over query tokens, and the share of sentences of each badge (`share <badge>`)."""
        badges, shares = self.most_common_badge()
        means = {name: self.mean(name) for name in STATISTICS}
        records = []
        for layer in range(self.n_layers):
            for head in range(self.n_heads):
                record = dict(layer=layer, head=head, badge=badges[layer][head], badge_share=float(shares[layer, head]))
                record.update({name: float(means[name][layer, head]) for name in STATISTICS})
                record.update({f"share {name}": share for name, share in self.badge_share(layer, head).items()})
                records.append(record)
        return records

    def sentence_tokens(self, index: int) -> list[str]:
        """The tokens of a sentence that holds a top example (as the model read it)."""
        return self.tokens[index]

    def stored_bytes(self) -> int:
        """Bytes held in tensors (the tokens kept for top examples are bounded by layers × heads × top sentences)."""
        return sum(value.nbytes for value in vars(self).values() if isinstance(value, Tensor))


# --- the pass over a corpus ---------------------------------------------------------------------------


def batch_bytes(model, n_sentences: int, n_tokens: int) -> int:
    """What a batch of `n_sentences` padded to `n_tokens` takes: the trace's q, k, v and hidden states, and
    the patterns of every layer (float32)."""
    per_token = 3 * model.n_layers * model.n_heads * model.d_head + (model.n_layers + 2) * model.d_model
    patterns = model.n_layers * model.n_heads * n_tokens
    return 4 * n_sentences * n_tokens * (per_token + patterns)


def _cut_to(model, text: str, tokens: list, max_tokens: int) -> tuple[str, list]:
    """`text` cut at a token's end so that the model reads at most `max_tokens` tokens of it (special
    tokens such as [CLS] and [SEP] included: the cut moves back one token until they fit)."""
    keep = max_tokens
    while len(tokens) > max_tokens and keep > 1:
        text = text[: max(t.end for t in tokens[:keep])]
        tokens = model.tokenize([text])[0][0]
        keep -= 1
    return text, tokens


def corpus_summary(
    model,
    sentences: Sequence[str],
    top: int = 20,
    progress: ProgressCallback | None = None,
    max_tokens: int = MAX_TOKENS,
    budget_bytes: int = BATCH_BYTES,
) -> CorpusSummary:
    """Every head of `model` over `sentences`, in batches (see the module's docstring).

    Sentences are sorted by length so that a batch holds sentences of about the same length (little
    padding) and as many of them as `budget_bytes` allows (at most `MAX_SENTENCES`). The model runs as
    trained, without its language-model head. A sentence with nothing to read or of one token is left out
    (`skipped`; `InputError` when no sentence is left); a sentence longer than `max_tokens` tokens is cut. `progress(done, total)` is called
    before the first batch and after each one, with the sentences read so far and the number to read.
    Indexes in the result are positions in `sentences`.
    """
    if top < 1:
        raise ValueError(f"top must be at least 1, got {top}")
    summary = CorpusSummary(model.name, model.n_layers, model.n_heads, top)
    items: list[tuple[int, int, str]] = []  # (tokens, index, text)
    n_cut = 0
    for index, text in enumerate(sentences):
        if not isinstance(text, str) or not is_visible_text(text):
            summary.skipped.append(index)
            continue
        tokens = model.tokenize([text])[0][0]
        if len(tokens) > max_tokens:
            text, tokens = _cut_to(model, text, tokens, max_tokens)
            n_cut += 1
        if len(tokens) < 2:
            summary.skipped.append(index)
            continue
        items.append((len(tokens), index, text))
    if summary.skipped:
        summary.notices.append(f"{len(summary.skipped)} sentence(s) left out: empty, or a single token (which gives a head no choice).")
    if n_cut:
        summary.notices.append(f"{n_cut} sentence(s) longer than {max_tokens} tokens cut to their first {max_tokens}.")
    if not items:
        raise InputError("No sentence to read: each needs at least two tokens (a head with one key has no choice to make).")
    items.sort()
    total, done = len(items), 0
    if progress is not None:
        progress(0, total)
    start = 0
    while start < total:
        stop = start + 1
        while stop < total and stop - start < MAX_SENTENCES and batch_bytes(model, stop + 1 - start, items[stop][0]) <= budget_bytes:
            stop += 1
        batch = items[start:stop]
        _summarise_batch(model, summary, batch)
        done += len(batch)
        start = stop
        if progress is not None:
            progress(done, total)
    summary.forget_tokens()
    return summary


def _summarise_batch(model, summary: CorpusSummary, batch: list[tuple[int, int, str]]) -> None:
    """Run one batch and fold each sentence into `summary`; its trace and patterns are dropped on return."""
    trace = model.trace([text for _, _, text in batch], logits=False)
    if len(trace.texts) != len(batch):
        raise RuntimeError("the trace dropped a sentence that was checked to have tokens")
    own = dict(mask=trace.mask, scale=trace.scale, temperature=trace.temperature)  # the model as it ran
    patterns = torch.stack([trace.pattern(layer, **own) for layer in range(trace.n_layers)], dim=1)  # [batch, layer, head, query_pos, key_pos]
    for row, (_, index, _) in enumerate(batch):
        n = len(trace.tokens[row])
        summary.add(index, patterns[row, :, :, :n, :n], trace.tokens[row])
    summary.forget_tokens()
