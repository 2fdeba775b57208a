"""Models that produce a `Trace`: the toy transformer, and Hugging Face models through forward hooks."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from model.attention import MaskSpec
from model.tokenizers import HFTokenizer, Tokenizer
from model.toy import ToyTransformer
from model.trace import InputError, Trace, last_position_logits, pad_batch, prepare_texts


class TracedModel:
    """Common front: `trace(texts, mask=..., hide=..., scale=..., temperature=...)` → `Trace`."""

    name: str
    tokenizer: Tokenizer
    n_layers: int
    n_heads: int
    d_model: int
    n_ctx: int
    causal: bool  # the model's own mask
    positional_kind: str
    is_toy: bool = False  # the toy model runs with the chosen mask, scaling and temperature

    @property
    def key(self) -> str:
        """A short name that identifies the loaded model (for caches)."""
        return self.name

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def default_mask(self) -> str:
        return "causal+padding" if self.causal else "padding"

    def position_matrix(self, n_positions: int) -> Tensor:
        """The first `n_positions` rows of what the model adds for position: `[n_positions, d_model]`."""
        raise NotImplementedError

    def tokenize(self, texts: list[str]) -> tuple[list, list[str]]:
        """Tokens of each sentence, cut to the model's context, with notices of any cut."""
        token_lists, notices = [], []
        for index, text in enumerate(texts):
            tokens = self.tokenizer.encode(text)
            if len(tokens) > self.n_ctx:
                notices.append(f"Sentence {index + 1} has {len(tokens)} tokens; only the first {self.n_ctx} (the model's context) are used.")
                tokens = self._cut(text, tokens)
            token_lists.append(tokens)
        return token_lists, notices

    def _cut(self, text: str, tokens: list) -> list:
        """The tokens of a sentence cut to the model's context."""
        return tokens[: self.n_ctx]

    def trace(
        self,
        texts: list[str] | str,
        mask: MaskSpec | str | None = None,
        hide: tuple[int, ...] = (),
        scale: bool = True,
        temperature: float = 1.0,
    ) -> Trace:
        """Run the model on `texts` and keep every attention internal.

        mask: "none", "causal", "padding", "causal+padding" or a `MaskSpec`; None = the model's own.
        hide: key positions no query may attend to. scale, temperature: see `attention_stages`.
        """
        if not temperature > 0:
            raise ValueError(f"temperature must be positive, got {temperature!r}")
        if isinstance(mask, str) or mask is None:
            mask = MaskSpec.parse(mask or self.default_mask, hide)
        elif hide:
            mask = MaskSpec(mask.causal, mask.padding, tuple(sorted(set(hide))))
        texts, notices = prepare_texts(texts)
        token_lists, cut = self.tokenize(texts)
        if not all(token_lists):
            kept = [(text, tokens) for text, tokens in zip(texts, token_lists) if tokens]
            notices.append(f"{len(texts) - len(kept)} sentence(s) gave no token and were skipped.")
            if not kept:
                raise InputError("None of the sentences gives a single token: type some words.")
            texts, token_lists = [k[0] for k in kept], [k[1] for k in kept]
        input_ids, key_valid = pad_batch(token_lists, self.tokenizer.pad_id)
        with torch.no_grad():
            run = self._run(input_ids, key_valid, mask, scale, temperature)
        return Trace(
            model_name=self.name,
            texts=texts,
            tokens=token_lists,
            input_ids=input_ids,
            key_valid=key_valid,
            positional_kind=self.positional_kind,
            mask=mask,
            scale=scale,
            temperature=float(temperature),
            notices=notices + cut,
            **run,
        )

    def _run(self, input_ids, key_valid, mask, scale, temperature) -> dict:
        raise NotImplementedError


class ToyModel(TracedModel):
    """The hand-written transformer; the chosen mask, scaling and temperature run in its forward pass."""

    is_toy = True
    positional_kind = "sinusoidal"

    def __init__(self, module: ToyTransformer, name: str = "toy"):
        self.module = module
        self.name = name
        config = module.config
        self.tokenizer = module.tokenizer
        self.n_layers, self.n_heads, self.d_model = config.n_layers, config.n_heads, config.d_model
        self.n_ctx, self.causal = config.n_ctx, config.causal

    def position_matrix(self, n_positions: int) -> Tensor:
        return self.module.pe[: min(n_positions, self.n_ctx)]

    def _run(self, input_ids, key_valid, mask, scale, temperature) -> dict:
        record: dict = {}
        logits = self.module(input_ids, key_valid, mask, scale, temperature, record=record)
        record.pop("attend")
        return dict(
            record,
            model_mask=mask,
            model_scale=scale,
            model_temperature=float(temperature),
            last_logits=last_position_logits(logits, key_valid),
        )


@dataclass(frozen=True)
class Architecture:
    """Where a Hugging Face model family keeps its attention projections."""

    layers: str  # attribute path of the list of blocks
    projections: tuple[str, ...]  # q, k, v modules inside a block, or one fused module
    n_heads: str  # config attribute names
    d_model: str
    n_ctx: str
    position_embeddings: str
    causal: bool


ARCHITECTURES = {
    "distilbert": Architecture(
        "transformer.layer",
        ("attention.q_lin", "attention.k_lin", "attention.v_lin"),
        "n_heads",
        "dim",
        "max_position_embeddings",
        "embeddings.position_embeddings",
        causal=False,
    ),
    "bert": Architecture(
        "encoder.layer",
        ("attention.self.query", "attention.self.key", "attention.self.value"),
        "num_attention_heads",
        "hidden_size",
        "max_position_embeddings",
        "embeddings.position_embeddings",
        causal=False,
    ),
    "gpt2": Architecture("h", ("attn.c_attn",), "n_head", "n_embd", "n_positions", "wpe", causal=True),
}


def _get(module: nn.Module, path: str):
    for part in path.split("."):
        module = getattr(module, part)
    return module


class HFModel(TracedModel):
    """A Hugging Face BERT-family encoder or GPT-2-family decoder, traced through forward hooks.

    Hooks on the q/k/v projections record their outputs; nothing of the model's code is changed, and
    the model runs exactly as it was trained (its own mask, √d_head scaling, temperature 1).
    """

    positional_kind = "learned"

    def __init__(self, module: nn.Module, tokenizer, name: str):
        config = module.config
        if config.model_type not in ARCHITECTURES:
            raise ValueError(f"model type {config.model_type!r} is not supported ({', '.join(ARCHITECTURES)})")
        self.module = module.eval()
        self.name = name
        self.architecture = ARCHITECTURES[config.model_type]
        a = self.architecture
        self.n_heads, self.d_model = getattr(config, a.n_heads), getattr(config, a.d_model)
        self.n_layers = len(_get(module, a.layers))
        self.tokenizer = HFTokenizer(tokenizer, name)
        limits = [getattr(config, a.n_ctx), self.tokenizer.model_max_length]
        self.n_ctx = int(min(n for n in limits if n and n < 10**9))
        self.causal = a.causal
        if getattr(config, "scale_attn_by_inverse_layer_idx", False):
            raise ValueError("GPT-2 models that scale attention by 1/layer are not supported")
        self.own_scale = bool(getattr(config, "scale_attn_weights", True))

    def _cut(self, text: str, tokens: list) -> list:
        return self.tokenizer.encode(text, max_length=self.n_ctx)  # keeps the closing [SEP]

    def position_matrix(self, n_positions: int) -> Tensor:
        table = _get(self.module, self.architecture.position_embeddings).weight
        return table[: min(n_positions, self.n_ctx)].detach()

    def _split_heads(self, x: Tensor) -> Tensor:
        """`[batch, pos, d_model]` → `[batch, head, pos, d_head]`."""
        batch, n_pos, _ = x.shape
        return x.view(batch, n_pos, self.n_heads, self.d_head).transpose(1, 2)

    def _run(self, input_ids, key_valid, mask, scale, temperature) -> dict:
        captured: dict[tuple[int, int], Tensor] = {}
        handles = []
        for layer, block in enumerate(_get(self.module, self.architecture.layers)):
            for slot, path in enumerate(self.architecture.projections):

                def hook(_module, _inputs, output, key=(layer, slot)):
                    captured[key] = output

                handles.append(_get(block, path).register_forward_hook(hook))
        try:
            output = self.module(input_ids=input_ids, attention_mask=key_valid.long(), output_hidden_states=True, return_dict=True)
        finally:
            for handle in handles:
                handle.remove()

        qkv = []
        for layer in range(self.n_layers):
            if len(self.architecture.projections) == 1:  # GPT-2: one fused projection [batch, pos, 3·d_model]
                parts = captured[(layer, 0)].split(self.d_model, dim=2)
            else:
                parts = [captured[(layer, slot)] for slot in range(3)]
            qkv.append([self._split_heads(p) for p in parts])
        n_pos = input_ids.shape[1]
        return dict(
            static_embeddings=self.module.get_input_embeddings()(input_ids),
            positional=_get(self.module, self.architecture.position_embeddings).weight[:n_pos].detach(),
            hidden_states=torch.stack(output.hidden_states),  # [n_layers + 1, batch, pos, d_model]
            q=torch.stack([layer[0] for layer in qkv]),  # [n_layers, batch, head, pos, d_head]
            k=torch.stack([layer[1] for layer in qkv]),
            v=torch.stack([layer[2] for layer in qkv]),
            model_mask=MaskSpec(causal=self.causal, padding=True),
            model_scale=self.own_scale,
            model_temperature=1.0,
        )
