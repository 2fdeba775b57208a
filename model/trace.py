"""The trace: everything a page shows about one run of a model on a batch of sentences.

A trace keeps what is small (tokens, embeddings, hidden states, every layer's q, k, v) and computes
the attention stages of one layer on demand: the stages of every head of every layer at once would be
4 × n_layers × n_heads × pos² floats (about 300 MB for DistilBERT at 512 tokens).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from model.attention import AttentionStages, MaskSpec, attention_pattern, attention_stages, entropy_bits
from model.score_parts import ScoreWeights
from model.score_parts import score_parts as split_score
from model.tokenizers import Token, is_visible_text

MAX_SENTENCES = 32  # a batch larger than a class can read is cut, with a notice


def token_name(text: str) -> str:
    """A token's text quoted for a sentence of prose: 'bank' (a BPE token's leading space dropped)."""
    return f"'{text.strip()}'" if text.strip() else repr(text)


class InputError(ValueError):
    """Input the model cannot run on; the message is written for the person who typed it."""


@dataclass(frozen=True)
class Trace:
    model_name: str
    texts: list[str]  # the sentences as run (after dropping empty ones)
    tokens: list[list[Token]]  # per sentence, without padding
    input_ids: Tensor  # [batch, pos]
    key_valid: Tensor  # [batch, pos] bool, True on real tokens, False on padding
    static_embeddings: Tensor  # [batch, pos, d_model] the learned embedding of each token id
    positional: Tensor  # [pos, d_model] sinusoidal encoding or learned position embeddings (zeros for rotary)
    positional_kind: str  # "sinusoidal", "learned" or "rotary"
    hidden_states: Tensor  # [n_layers + 1, batch, pos, d_model] the input, then each layer's output
    q: Tensor  # [n_layers, batch, head, pos, d_head]
    k: Tensor  # [n_layers, batch, head, pos, d_head] (a key/value head shared by several query heads is repeated)
    v: Tensor  # [n_layers, batch, head, pos, d_head]
    mask: MaskSpec  # the mask the forward pass used (a what-if, or the model's own)
    scale: bool  # whether the forward pass divided the scores by √d_head
    temperature: float  # the attention softmax's temperature in the forward pass
    last_logits: Tensor | None = None  # [batch, d_vocab] next-token logits at each sentence's last token
    notices: list[str] = field(default_factory=list)  # what was changed in the input, for the page
    logits: Tensor | None = None  # [batch, pos, d_vocab] the language-model head at every position
    lm_head: str | None = None  # "next" (next-token head), "masked" (masked-word head) or None
    ablate: tuple[tuple[int, int], ...] = ()  # (layer, head) whose output z was replaced in the run
    ablate_with: str = "zero"  # "zero" or "mean"
    own_mask: MaskSpec | None = None  # the model's own settings (as trained); None = same as mask
    own_scale: bool = True
    own_temperature: float = 1.0
    n_kv_heads: int | None = None  # key/value heads (fewer than heads with grouped-query attention)
    divisors: tuple[float, ...] = ()  # per layer, what the model divides scores by; () = √d_head
    # the model's W_Q, W_K, W_O and norms (see score_parts): references to the model's own tensors, not owned
    score_weights: ScoreWeights | None = field(default=None, metadata={"owned": False})

    @property
    def n_layers(self) -> int:
        return self.q.shape[0]

    @property
    def n_heads(self) -> int:
        return self.q.shape[2]

    @property
    def d_head(self) -> int:
        return self.q.shape[-1]

    def kv_head(self, head: int) -> int:
        """The key/value head that query head `head` reads (itself without grouped-query attention)."""
        n_kv = self.n_kv_heads or self.n_heads
        return head // (self.n_heads // n_kv)

    @property
    def what_ifs(self) -> list[str]:
        """How the forward pass differs from the model's own settings (empty when it ran as trained)."""
        own_mask = self.own_mask or self.mask
        changes = []
        if (self.mask.causal, self.mask.padding) != (own_mask.causal, own_mask.padding):
            changes.append(f"mask {self.mask.name} (model: {own_mask.name})")
        if self.mask.hidden_keys or self.mask.hidden_in:
            changes.append("hidden: " + self.hidden_tokens())
        if self.scale != self.own_scale:
            changes.append(f"scaling {'on' if self.scale else 'off'}")
        if self.temperature != self.own_temperature:
            changes.append(f"temperature {self.temperature:g}")
        if self.ablate:
            heads = ", ".join(f"{layer}.{head}" for layer, head in self.ablate)
            changes.append(f"head{'s' * (len(self.ablate) > 1)} {heads} ablated ({self.ablate_with})")
        return changes

    def hidden_tokens(self) -> str:
        """The keys hidden in the run, named: "'bank' in sentence 1 and 'to' in sentence 2" (sentences
        counted from 1); positions hidden in every sentence by number."""
        mask = self.mask
        parts = [f"position{'s' * (len(mask.hidden_keys) > 1)} {', '.join(map(str, mask.hidden_keys))} in every sentence"] if mask.hidden_keys else []
        by_sentence: dict[int, list[str]] = {}
        for sentence, j in mask.hidden_in:
            tokens = self.tokens[sentence] if sentence < len(self.tokens) else []
            by_sentence.setdefault(sentence, []).append(token_name(tokens[j].text) if j < len(tokens) else f"position {j}")
        parts += [f"{', '.join(names)} in sentence {sentence + 1}" for sentence, names in by_sentence.items()]
        return " and ".join(parts)

    def attend(self, mask: MaskSpec | None = None) -> Tensor:
        """The boolean mask `[batch, 1, query_pos, key_pos]` for this batch, True = may attend."""
        return (mask or self.mask).build(self.key_valid)

    def stages(
        self,
        layer: int,
        mask: MaskSpec | None = None,
        scale: bool | None = None,
        temperature: float | None = None,
    ) -> AttentionStages:
        """The attention stages of every head of `layer`, `[batch, head, query_pos, key_pos]`.

        By default with the trace's own mask, scaling and temperature; any of them can be overridden.
        """
        if not 0 <= layer < self.n_layers:
            raise IndexError(f"layer {layer} out of range 0…{self.n_layers - 1}")
        return attention_stages(
            self.q[layer],
            self.k[layer],
            self.v[layer],
            self.attend(mask),
            scale=self.scale if scale is None else scale,
            temperature=self.temperature if temperature is None else temperature,
            divisor=self.divisors[layer] if self.divisors else None,
        )

    def score_parts(self, layer: int, head: int, sentence: int = 0, by: str = "source", group: str = "layer") -> dict[str, Tensor]:
        """The raw score of one head split into named parts, name → `[query_pos, key_pos]`, whose sum is
        `stages(layer).scores_raw[sentence, head]`: "token·position", "layer 0 head 2·token", or with
        `by="pair"` (rotary models) "pair 5 (θ=0.0316)". See `model.score_parts`."""
        return split_score(self, layer, head, sentence, by=by, group=group)

    def pattern(
        self,
        layer: int,
        sentence: int | None = None,
        mask: MaskSpec | None = None,
        scale: bool | None = None,
        temperature: float | None = None,
    ) -> Tensor:
        """`stages(layer, ...).pattern` bit for bit, without keeping the other stages: `[batch, head, query_pos,
        key_pos]`, or `[head, query_pos, key_pos]` for one sentence (computed for that sentence only)."""
        if not 0 <= layer < self.n_layers:
            raise IndexError(f"layer {layer} out of range 0…{self.n_layers - 1}")
        rows = slice(None) if sentence is None else slice(sentence, sentence + 1)
        pattern = attention_pattern(
            self.q[layer, rows],
            self.k[layer, rows],
            self.attend(mask)[rows],
            scale=self.scale if scale is None else scale,
            temperature=self.temperature if temperature is None else temperature,
            divisor=self.divisors[layer] if self.divisors else None,
        )
        return pattern if sentence is None else pattern[0]

    def next_token(self, sentence: int, id_to_text, temperature: float = 1.0, k: int = 10) -> dict:
        """The model's prediction after the last token of one sentence (see `prediction`)."""
        if self.last_logits is None:
            raise ValueError("this model has no language-model head")
        return self.prediction(sentence, None, id_to_text, temperature, k)

    def prediction(self, sentence: int, position: int | None, id_to_text, temperature: float = 1.0, k: int = 10) -> dict:
        """What the language-model head predicts at `position` of one sentence (None: its last token).

        logits = W_U · norm(h) + b;  p = softmax(logits / temperature). A next-token head predicts the
        token after `position`; a masked-word head the token at it. Returns the top `k` tokens with their
        logits and probabilities, and the entropy (bits) of the whole distribution.
        """
        if self.logits is None and self.last_logits is None:
            raise ValueError("this model has no language-model head")
        if not temperature > 0:
            raise ValueError(f"temperature must be positive, got {temperature!r}")
        n_tokens = len(self.tokens[sentence])
        if position is None:
            position = n_tokens - 1
        if not 0 <= position < n_tokens:
            raise IndexError(f"position {position} out of range 0…{n_tokens - 1}")
        if self.logits is not None:
            logits = self.logits[sentence, position]  # [d_vocab]
        else:
            logits = self.last_logits[sentence]
        probabilities = torch.softmax(logits / temperature, dim=-1)
        top = torch.topk(probabilities, min(k, probabilities.shape[0]))
        return dict(
            tokens=[id_to_text(int(i)) for i in top.indices],
            ids=[int(i) for i in top.indices],
            logits=[float(logits[i]) for i in top.indices],
            probabilities=[float(p) for p in top.values],
            entropy=float(entropy_bits(probabilities)),
            temperature=float(temperature),
            position=position,
        )

    def word_vectors(self, sentence: int, layer: int | None) -> list[tuple[str, Tensor]]:
        """The words of one sentence with one vector each (the mean of its pieces).

        layer None gives static embeddings; 0 … n_layers the hidden state after that many layers.
        """
        vectors = self.static_embeddings if layer is None else self.hidden_states[layer]
        text = self.texts[sentence]
        groups: dict[int, list[int]] = {}
        for position, token in enumerate(self.tokens[sentence]):
            if token.word is not None:
                groups.setdefault(token.word, []).append(position)
        words = []
        for positions in groups.values():
            first, last = self.tokens[sentence][positions[0]], self.tokens[sentence][positions[-1]]
            surface = text[first.start : last.end].strip().lower()
            words.append((surface, vectors[sentence, positions].mean(dim=0)))
        return words


def prepare_texts(texts: list[str] | str) -> tuple[list[str], list[str]]:
    """Drop sentences with nothing to read, cap the batch; returns (texts, notices)."""
    if isinstance(texts, str):
        texts = [texts]
    notices = []
    kept = [t for t in texts if is_visible_text(t)]
    if len(kept) < len(texts):
        notices.append(f"{len(texts) - len(kept)} empty sentence(s) skipped.")
    if not kept:
        raise InputError("There is nothing to read: type at least one sentence with a visible character.")
    if len(kept) > MAX_SENTENCES:
        notices.append(f"Only the first {MAX_SENTENCES} of {len(kept)} sentences are used.")
        kept = kept[:MAX_SENTENCES]
    return kept, notices


def pad_batch(sequences: list[list[int]] | list[list[Token]], pad_id: int) -> tuple[Tensor, Tensor]:
    """Right-pad token ids (or `Token`s): returns input_ids `[batch, pos]` and key_valid `[batch, pos]`.

    The one padding helper, for tracing and for training.
    """
    ids = [[t if isinstance(t, int) else t.id for t in sequence] for sequence in sequences]
    n_pos = max(len(sequence) for sequence in ids)
    input_ids = torch.full((len(ids), n_pos), pad_id, dtype=torch.long)
    key_valid = torch.zeros((len(ids), n_pos), dtype=torch.bool)
    for row, sequence in enumerate(ids):
        input_ids[row, : len(sequence)] = torch.tensor(sequence, dtype=torch.long)
        key_valid[row, : len(sequence)] = True
    return input_ids, key_valid


def last_position_logits(logits: Tensor, key_valid: Tensor) -> Tensor:
    """`[batch, pos, d_vocab]` → `[batch, d_vocab]` at each sentence's last real token."""
    last = key_valid.sum(dim=1) - 1
    return logits[torch.arange(logits.shape[0]), last]
