"""The toy model: the textbook transformer written out by hand, small enough to read in one sitting.

tokens → token embedding + sinusoidal positional encoding
       → n_layers × [ x + MultiHeadAttention(LayerNorm(x));  x + FeedForward(LayerNorm(x)) ]
       → final LayerNorm → language-model head → next-token logits

LayerNorm comes before each sub-layer (as in GPT-2) rather than after the residual sum (as in the
2017 paper): the two compute the same kind of thing, and this order trains more reliably.
Every attention layer calls `attention_stages`, so the stages a page shows are the ones computed.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from torch import Tensor, nn

from model.attention import MaskSpec, ablated, attention_output, attention_stages
from model.positional import sinusoidal_positional_encoding
from model.tokenizers import Tokenizer, WordTokenizer, get_tokenizer


@dataclass
class ToyConfig:
    n_layers: int = 2  # two blocks: enough to show a pattern change from one layer to the next
    n_heads: int = 4  # a handful of heads fits on one slide
    d_model: int = 128  # small enough to train on one core in minutes, large enough for the senses of a word
    d_mlp: int = 512  # the usual 4 × d_model of the feed-forward layer
    n_ctx: int = 512  # longest sequence; the positional encoding is precomputed for it
    pe_base: float = 10000.0  # the paper's base; 10, 100, 1000 make the waves visible on short inputs
    causal: bool = True  # GPT-style: position i sees only positions ≤ i (needed for next-token prediction)
    tokenizer: str = "bpe"  # "bpe" (the toy's own), "word", "char" or "gpt2-bpe"; sets d_vocab
    seed: int = 0  # the same seed always gives the same weights
    layer_norm_eps: float = 1e-5  # keeps LayerNorm finite on a constant vector
    vocabulary: list[str] | None = field(default=None, repr=False)  # word tokenizer's own list, if trained

    def __post_init__(self):
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads


def make_tokenizer(config: ToyConfig) -> Tokenizer:
    if config.tokenizer == "word" and config.vocabulary is not None:
        return WordTokenizer(config.vocabulary)
    return get_tokenizer(config.tokenizer)


class MultiHeadAttention(nn.Module):
    """Per-head projections W_Q, W_K, W_V (d_model × d_head), attention per head, concatenation, W_O."""

    def __init__(self, config: ToyConfig):
        super().__init__()
        h, m, d = config.n_heads, config.d_model, config.d_head
        self.W_Q = nn.Parameter(torch.empty(h, m, d))  # [head, d_model, d_head]
        self.W_K = nn.Parameter(torch.empty(h, m, d))
        self.W_V = nn.Parameter(torch.empty(h, m, d))
        self.b_Q = nn.Parameter(torch.zeros(h, d))  # [head, d_head]
        self.b_K = nn.Parameter(torch.zeros(h, d))
        self.b_V = nn.Parameter(torch.zeros(h, d))
        self.W_O = nn.Parameter(torch.empty(h * d, m))  # [head · d_head, d_model]
        self.b_O = nn.Parameter(torch.zeros(m))

    def qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """`[batch, pos, d_model]` → q, k, v each `[batch, head, pos, d_head]`."""
        q = torch.einsum("bpm,hmd->bhpd", x, self.W_Q) + self.b_Q[:, None, :]
        k = torch.einsum("bpm,hmd->bhpd", x, self.W_K) + self.b_K[:, None, :]
        v = torch.einsum("bpm,hmd->bhpd", x, self.W_V) + self.b_V[:, None, :]
        return q, k, v

    def combine(self, z: Tensor) -> Tensor:
        """Concatenate the heads' outputs and project: `[batch, head, pos, d_head]` → `[batch, pos, d_model]`."""
        batch, n_heads, n_pos, d_head = z.shape
        concatenated = z.transpose(1, 2).reshape(batch, n_pos, n_heads * d_head)
        return concatenated @ self.W_O + self.b_O


class Block(nn.Module):
    def __init__(self, config: ToyConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.attn = MultiHeadAttention(config)
        self.ln2 = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.mlp = nn.Sequential(nn.Linear(config.d_model, config.d_mlp), nn.ReLU(), nn.Linear(config.d_mlp, config.d_model))


class KeyValueCache:
    """Every layer's keys and values so far, `[batch, head, n_tokens, d_head]`, grown by `append`.

    What `ToyTransformer.forward_cached` reads instead of computing the earlier tokens again.
    """

    def __init__(self, n_layers: int):
        self.keys: list[Tensor | None] = [None] * n_layers
        self.values: list[Tensor | None] = [None] * n_layers

    @property
    def n_tokens(self) -> int:
        return 0 if self.keys[0] is None else self.keys[0].shape[-2]

    def append(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Add the new tokens' k and v `[batch, head, n_new, d_head]` to `layer`; returns all its keys and values."""
        if self.keys[layer] is None:
            self.keys[layer], self.values[layer] = k, v
        else:
            self.keys[layer] = torch.cat([self.keys[layer], k], dim=-2)
            self.values[layer] = torch.cat([self.values[layer], v], dim=-2)
        return self.keys[layer], self.values[layer]


class ToyTransformer(nn.Module):
    def __init__(self, config: ToyConfig):
        super().__init__()
        self.config = config
        self.tokenizer = make_tokenizer(config)
        self.d_vocab = self.tokenizer.d_vocab
        self.embed = nn.Embedding(self.d_vocab, config.d_model)  # [d_vocab, d_model]
        self.register_buffer("pe", sinusoidal_positional_encoding(config.n_ctx, config.d_model, config.pe_base), persistent=False)  # [n_ctx, d_model]
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.ln_final = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.unembed = nn.Linear(config.d_model, self.d_vocab)
        self.reset_parameters()
        self.eval()

    def reset_parameters(self) -> None:
        """Seeded weights: query and key projections of unit scale so that random heads still differ."""
        generator = torch.Generator().manual_seed(self.config.seed)
        for name, param in self.named_parameters():
            with torch.no_grad():
                if name.endswith(("b_Q", "b_K", "b_V", "b_O", "bias")):
                    param.zero_()
                elif "ln" in name:
                    param.fill_(1.0)
                elif name == "embed.weight":
                    param.normal_(0.0, 1.0, generator=generator)
                else:
                    fan_in = param.shape[-2] if param.dim() == 3 else param.shape[-1]
                    param.normal_(0.0, fan_in**-0.5, generator=generator)

    def forward(
        self,
        input_ids: Tensor,
        key_valid: Tensor | None = None,
        mask: MaskSpec | None = None,
        scale: bool = True,
        temperature: float = 1.0,
        record: dict | None = None,
        ablate: tuple[tuple[int, int], ...] = (),
        ablate_with: str = "zero",
    ) -> Tensor:
        """input_ids `[batch, pos]` → logits `[batch, pos, d_vocab]`.

        key_valid `[batch, pos]` is True on real tokens (False on padding). `mask`, `scale` and
        `temperature` change the attention of every layer. When `record` is a dict, the embeddings,
        hidden states and every layer's q, k, v are stored in it. `ablate` lists (layer, head) pairs
        whose output z is replaced before W_O: by zeros, or (`ablate_with="mean"`) by the head's mean z
        over the batch's real tokens.
        """
        n_pos = input_ids.shape[1]
        if n_pos > self.config.n_ctx:
            raise ValueError(f"{n_pos} tokens is more than the model's context of {self.config.n_ctx}")
        if key_valid is None:
            key_valid = torch.ones_like(input_ids, dtype=torch.bool)
        mask = mask if mask is not None else MaskSpec(causal=self.config.causal)
        attend = mask.build(key_valid)  # [batch, 1, query_pos, key_pos]

        token_embedding = self.embed(input_ids)  # [batch, pos, d_model]
        x = token_embedding + self.pe[:n_pos]
        hidden, queries, keys, values = [x], [], [], []
        for layer, block in enumerate(self.blocks):
            q, k, v = block.attn.qkv(block.ln1(x))
            stages = attention_stages(q, k, v, attend, scale=scale, temperature=temperature)
            z = stages.z
            heads = [head for (at, head) in ablate if at == layer]
            if heads:
                z = ablated(z, heads, ablate_with, key_valid)
            x = x + block.attn.combine(z)
            x = x + block.mlp(block.ln2(x))
            hidden.append(x)
            queries.append(q), keys.append(k), values.append(v)
        logits = self.unembed(self.ln_final(x))

        if record is not None:
            record.update(
                static_embeddings=token_embedding,
                positional=self.pe[:n_pos],
                hidden_states=torch.stack(hidden),  # [n_layers + 1, batch, pos, d_model]
                q=torch.stack(queries),  # [n_layers, batch, head, pos, d_head]
                k=torch.stack(keys),
                v=torch.stack(values),
                attend=attend,
            )
        return logits

    @torch.no_grad()
    def forward_cached(self, input_ids: Tensor, cache: KeyValueCache, record: dict | None = None) -> Tensor:
        """The next tokens after those `cache` holds: input_ids `[batch, n_new]` → logits `[batch, n_new, d_vocab]`.

        The same layers as `forward`, on the new tokens only: each layer computes q, k and v of the new
        tokens, appends k and v to the cache, and lets the new queries attend to every key so far (a new
        token at position i sees keys j ≤ i). Earlier tokens are not computed again: with a causal mask
        nothing they computed depends on a later token. When `record` is a dict, each layer's pattern
        `[batch, head, n_new, n_keys]` and q `[batch, head, n_new, d_head]` are stored in it (stacked over layers).
        """
        if not self.config.causal:
            raise ValueError("a key/value cache needs a causal model: in a bidirectional one an earlier token's keys change with every new token")
        start, n_new = cache.n_tokens, input_ids.shape[1]
        if start + n_new > self.config.n_ctx:
            raise ValueError(f"{start + n_new} tokens is more than the model's context of {self.config.n_ctx}")
        query_positions = torch.arange(start, start + n_new)
        key_positions = torch.arange(start + n_new)
        attend = (key_positions[None, :] <= query_positions[:, None])[None, None]  # [1, 1, n_new, n_keys]: key j ≤ query i

        x = self.embed(input_ids) + self.pe[start : start + n_new]  # [batch, n_new, d_model]
        patterns, queries = [], []
        for layer, block in enumerate(self.blocks):
            q, k, v = block.attn.qkv(block.ln1(x))  # [batch, head, n_new, d_head]
            keys, values = cache.append(layer, k, v)  # [batch, head, n_keys, d_head]
            pattern, z = attention_output(q, keys, values, attend)
            x = x + block.attn.combine(z)
            x = x + block.mlp(block.ln2(x))
            patterns.append(pattern), queries.append(q)
        if record is not None:
            record.update(pattern=torch.stack(patterns), q=torch.stack(queries))  # [n_layers, batch, head, n_new, ·]
        return self.unembed(self.ln_final(x))

    def save(self, folder: str | Path) -> None:
        """Write `config.json` and `model.safetensors` (weights only; no pickle)."""
        from safetensors.torch import save_file

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.json").write_text(json.dumps({"toy": asdict(self.config)}, indent=1))
        save_file({k: v.contiguous() for k, v in self.state_dict().items()}, str(folder / "model.safetensors"))

    @classmethod
    def load(cls, folder: str | Path) -> ToyTransformer:
        from safetensors.torch import load_file

        folder = Path(folder)
        config = ToyConfig(**json.loads((folder / "config.json").read_text())["toy"])
        model = cls(config)
        model.load_state_dict(load_file(str(folder / "model.safetensors")))
        return model.eval()
