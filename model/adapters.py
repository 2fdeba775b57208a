"""Models that produce a `Trace`: the toy transformer, and Hugging Face models whose attention is ours.

A Hugging Face model is loaded with `attn_implementation="attention_stages"` (see `model.interface`):
its own forward pass calls `model.interface.stages_attention` in every layer, which records q, k and v and
computes the layer's output with `attention_output` (the operations of `attention_stages`, in place, bit for
bit). `Trace.stages` computes a layer's stages from the recorded q, k and v with `attention_stages`. A what-if (another mask, no scaling, a
temperature, hidden keys, ablated heads) therefore runs through the whole model, as it does for the toy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import torch
from torch import Tensor, nn

from model import imports
from model.attention import MaskSpec
from model.generate import CachedStep, Generation
from model.interface import TracedRun, traced_run
from model.score_parts import LayerWeights, Norm, ScoreWeights
from model.tokenizers import HFTokenizer, Token, Tokenizer
from model.toy import KeyValueCache, ToyTransformer
from model.trace import InputError, Trace, last_position_logits, pad_batch, prepare_texts

MAX_CONTEXT = 1024  # positions traced at most (longer contexts are cut, with a notice)
ABLATIONS = ("zero", "mean")


@dataclass(frozen=True)
class InputRecipe:
    """What the first layer reads, built from its parts: `result` equals the trace's `hidden_states[0]`."""

    formula: str  # e.g. "LayerNorm(token + position + token type)"
    terms: dict  # name → [batch, pos, d_model] (or [pos, d_model]) tensor, in the order they are added
    result: Tensor  # [batch, pos, d_model]


class TracedModel:
    """Common front: `trace(texts, mask=..., hide=..., scale=..., temperature=..., ablate=...)` → `Trace`."""

    name: str
    tokenizer: Tokenizer
    n_layers: int
    n_heads: int
    n_kv_heads: int  # key/value heads (fewer than n_heads with grouped-query attention)
    d_model: int
    d_head: int
    n_ctx: int
    causal: bool  # the model's own mask
    positional_kind: str  # "sinusoidal", "learned" or "rotary"
    lm_head: str | None  # "next" (predicts the next token), "masked" (a masked word) or None
    is_toy: bool = False  # the toy model (its own code, no transformers)

    @property
    def default_mask(self) -> str:
        return "causal+padding" if self.causal else "padding"

    @property
    def own_mask(self) -> MaskSpec:
        return MaskSpec(causal=self.causal, padding=True)

    def kv_head(self, head: int) -> int:
        """The key/value head a query head reads (grouped-query attention shares one between several)."""
        return head // (self.n_heads // self.n_kv_heads)

    def position_matrix(self, n_positions: int) -> Tensor:
        """The first `n_positions` rows of what the model adds for position: `[n_positions, d_model]`."""
        raise NotImplementedError

    def input_recipe(self, input_ids: Tensor, key_valid: Tensor | None = None) -> InputRecipe:
        """How the first layer's input is made from the token ids, term by term."""
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

    def _check_ablate(self, ablate) -> tuple[tuple[int, int], ...]:
        pairs = []
        for pair in ablate:
            layer, head = (int(x) for x in pair)
            if not (0 <= layer < self.n_layers and 0 <= head < self.n_heads):
                raise ValueError(f"head {layer}.{head} does not exist: layers 0…{self.n_layers - 1}, heads 0…{self.n_heads - 1}")
            pairs.append((layer, head))
        return tuple(sorted(set(pairs)))

    def trace(
        self,
        texts: list[str] | str,
        mask: MaskSpec | str | None = None,
        hide: tuple[int | tuple[int, int], ...] = (),
        scale: bool = True,
        temperature: float = 1.0,
        ablate: tuple[tuple[int, int], ...] = (),
        ablate_with: str = "zero",
        logits: bool = True,
    ) -> Trace:
        """Run the model on `texts` and keep every attention internal.

        mask: "none", "causal", "padding", "causal+padding" or a `MaskSpec`; None = the model's own.
        hide: key positions no query may attend to (in every sentence), or (sentence, position) pairs
        hidden from that sentence's queries only. scale, temperature: see `attention_stages`.
        ablate: (layer, head) pairs whose output z is replaced before the output projection, by zeros
        (`ablate_with="zero"`) or by the head's mean z over the batch's real tokens ("mean").
        All of them change the whole forward pass: later layers, hidden states and logits.
        logits: run the language-model head. A pass that reads attention only (a corpus summary) sets it
        False: the head's [batch, pos, d_vocab] output is then neither computed (Hugging Face models) nor
        kept, and `trace.logits`, `trace.last_logits` are None.
        """
        if not temperature > 0 or not math.isfinite(temperature):
            raise ValueError(f"temperature must be positive, got {temperature!r}")
        if ablate_with not in ABLATIONS:
            raise ValueError(f"ablate_with must be one of {', '.join(ABLATIONS)}, got {ablate_with!r}")
        ablate = self._check_ablate(ablate)
        if isinstance(mask, str) or mask is None:
            mask = MaskSpec.parse(mask or self.default_mask, hide)
        elif hide:
            mask = MaskSpec.parse(mask.name, hide)
        texts, notices = prepare_texts(texts)
        token_lists, cut = self.tokenize(texts)
        if not all(token_lists):
            kept = [(text, tokens) for text, tokens in zip(texts, token_lists) if tokens]
            notices.append(f"{len(texts) - len(kept)} sentence(s) gave no token and were skipped.")
            if not kept:
                raise InputError("None of the sentences gives a single token: type some words.")
            texts, token_lists = [k[0] for k in kept], [k[1] for k in kept]
        return self._trace_tokens(texts, token_lists, mask, scale, float(temperature), ablate, ablate_with, notices + cut, logits)

    def trace_ids(self, token_ids: list[int]) -> Trace:
        """One sentence given as token ids, run with the model's own settings: a generated text exactly as it
        was written (tokenizing its text again may cut it into other tokens)."""
        if not token_ids:
            raise InputError("No token to run.")
        if len(token_ids) > self.n_ctx:
            raise InputError(f"{len(token_ids)} tokens is more than {self.name}'s context of {self.n_ctx}.")
        tokens = [Token(self.tokenizer.id_to_text(i), int(i), "normal", 0, 0, None) for i in token_ids]
        mask = MaskSpec.parse(self.default_mask)
        return self._trace_tokens([self.tokenizer.decode(list(token_ids))], [tokens], mask, True, 1.0, (), "zero", [])

    def generate(
        self,
        prompt: str,
        max_new_tokens: int,
        temperature: float = 0.0,
        top_k: int | None = None,
        top_p: float | None = None,
        seed: int = 0,
    ) -> Generation:
        """Write up to `max_new_tokens` tokens after `prompt`, one cached step per token (`model.generate.generate`).

        temperature 0 is greedy; a positive one samples from softmax(logits / temperature) after the top-k and
        top-p cut, drawn with `seed`. Returns a `Generation` with `.prompt_ids`, `.token_ids`, `.text` and `.steps`.
        """
        from model.generate import generate

        return generate(self, prompt, max_new_tokens, temperature, top_k, top_p, seed)

    def new_cache(self):
        """An empty key/value cache for `cached_step`."""
        raise NotImplementedError

    def cached_step(self, token_ids: list[int], cache) -> CachedStep:
        """Run the model's own incremental path on `token_ids` (the prompt, then one token a step) after the
        tokens `cache` holds, appending their keys and values to it."""
        raise NotImplementedError

    def _trace_tokens(self, texts, token_lists, mask, scale, temperature, ablate, ablate_with, notices, logits=True) -> Trace:
        input_ids, key_valid = pad_batch([[t.id for t in tokens] for tokens in token_lists], self.tokenizer.pad_id)
        with torch.no_grad():
            run = self._run(input_ids, key_valid, mask, scale, temperature, ablate, ablate_with, logits)
        logits = run.pop("logits", None)
        return Trace(
            model_name=self.name,
            texts=texts,
            tokens=token_lists,
            input_ids=input_ids,
            key_valid=key_valid,
            positional_kind=self.positional_kind,
            mask=mask,
            scale=scale,
            temperature=temperature,
            notices=notices,
            logits=logits,
            last_logits=last_position_logits(logits, key_valid) if self._has_next_token(logits) else None,
            lm_head=self.lm_head,
            ablate=ablate,
            ablate_with=ablate_with,
            own_mask=self.own_mask,
            own_scale=True,
            n_kv_heads=self.n_kv_heads,
            **run,
        )

    def _has_next_token(self, logits) -> bool:
        # the toy's last-position prediction is shown for both of its objectives
        return logits is not None and (self.lm_head == "next" or self.is_toy)

    def _run(self, input_ids, key_valid, mask, scale, temperature, ablate, ablate_with, logits=True) -> dict:
        raise NotImplementedError


class ToyModel(TracedModel):
    """The hand-written transformer; the chosen mask, scaling and temperature run in its forward pass."""

    is_toy = True
    positional_kind = "sinusoidal"
    lm_head = "next"

    def __init__(self, module: ToyTransformer, name: str = "toy"):
        self.module = module
        self.name = name
        config = module.config
        self.tokenizer = module.tokenizer
        self.n_layers, self.n_heads, self.d_model = config.n_layers, config.n_heads, config.d_model
        self.n_kv_heads, self.d_head = config.n_heads, config.d_head
        self.n_ctx, self.causal = config.n_ctx, config.causal
        self.lm_head = "next" if config.causal else "masked"

    def position_matrix(self, n_positions: int) -> Tensor:
        return self.module.pe[: min(n_positions, self.n_ctx)]

    def output_projection(self, layer: int) -> tuple[Tensor, Tensor]:
        """W_O `[head · d_head, d_model]` and b_O `[d_model]` of one layer's attention."""
        attention = self.module.blocks[layer].attn
        return attention.W_O.detach(), attention.b_O.detach()

    @torch.no_grad()
    def attention_output(self, layer: int, z: Tensor) -> Tensor:
        """The layer's own output step on `z` `[batch, head, pos, d_head]`: heads concatenated · W_O + b_O."""
        return self.module.blocks[layer].attn.combine(z)

    def input_recipe(self, input_ids: Tensor, key_valid: Tensor | None = None) -> InputRecipe:
        token = self.module.embed(input_ids).detach()
        position = self.module.pe[: input_ids.shape[1]]
        return InputRecipe("token + sinusoidal position", {"token": token, "position": position}, token + position)

    @cached_property
    def score_weights(self) -> ScoreWeights:
        """W_Q, W_K, W_O and the attention LayerNorm of every block (views of the module's own tensors, so
        training in place changes them too)."""
        layers = []
        for block in self.module.blocks:
            attention, norm = block.attn, block.ln1
            layers.append(
                LayerWeights(
                    norm=Norm("layer", norm.weight.detach(), norm.bias.detach(), norm.eps),
                    W_Q=attention.W_Q.detach(),
                    b_Q=attention.b_Q.detach(),
                    W_K=attention.W_K.detach(),
                    b_K=attention.b_K.detach(),
                    W_O=attention.W_O.detach().reshape(self.n_heads, self.d_head, self.d_model),
                    b_O=attention.b_O.detach(),
                )
            )
        return ScoreWeights("pre-norm", tuple(layers))

    def new_cache(self) -> KeyValueCache:
        return KeyValueCache(self.n_layers)

    def cached_step(self, token_ids: list[int], cache: KeyValueCache) -> CachedStep:
        record: dict = {}
        logits = self.module.forward_cached(torch.tensor([token_ids]), cache, record=record)
        return CachedStep(
            logits=logits[0, -1],
            pattern=record["pattern"][:, 0, :, -1],  # [n_layers, head, n_keys]
            query=record["q"][:, 0, :, -1],  # [n_layers, head, d_head]
            keys=[k[0] for k in cache.keys],  # [head, n_keys, d_head]
            values=[v[0] for v in cache.values],
        )

    def _run(self, input_ids, key_valid, mask, scale, temperature, ablate, ablate_with, logits=True) -> dict:
        record: dict = {}
        output = self.module(input_ids, key_valid, mask, scale, temperature, record=record, ablate=ablate, ablate_with=ablate_with)
        record.pop("attend")
        return dict(record, logits=output if logits else None, score_weights=self.score_weights)


@dataclass(frozen=True)
class Architecture:
    """Where a Hugging Face model family keeps its parts, and what its first layer reads."""

    layers: str  # attribute path (in the base model) of the list of blocks
    output_projection: str  # the attention's output projection inside a block (W_O)
    n_heads: str  # config attribute names
    d_model: str
    n_ctx: str
    position_embeddings: str | None  # learned position table; None when position is a rotation (rotary)
    causal: bool
    recipe: str  # what the first layer reads


LLAMA_LIKE = dict(
    layers="layers",
    output_projection="self_attn.o_proj",
    n_heads="num_attention_heads",
    d_model="hidden_size",
    n_ctx="max_position_embeddings",
    position_embeddings=None,
    causal=True,
)

ARCHITECTURES = {
    "distilbert": Architecture(
        "transformer.layer",
        "attention.out_lin",
        "n_heads",
        "dim",
        "max_position_embeddings",
        "embeddings.position_embeddings",
        causal=False,
        recipe="LayerNorm(token + position)",
    ),
    "bert": Architecture(
        "encoder.layer",
        "attention.output.dense",
        "num_attention_heads",
        "hidden_size",
        "max_position_embeddings",
        "embeddings.position_embeddings",
        causal=False,
        recipe="LayerNorm(token + position + token type)",
    ),
    "gpt2": Architecture("h", "attn.c_proj", "n_head", "n_embd", "n_positions", "wpe", causal=True, recipe="token + position"),
    "llama": Architecture(**LLAMA_LIKE, recipe="token (position enters as a rotation of q and k)"),
    "qwen2": Architecture(**LLAMA_LIKE, recipe="token (position enters as a rotation of q and k)"),
    "mistral": Architecture(**LLAMA_LIKE, recipe="token (position enters as a rotation of q and k)"),
    "gemma": Architecture(**LLAMA_LIKE, recipe="token × √d_model (position enters as a rotation of q and k)"),
}
FAMILIES = {
    "bert": "BERT",
    "distilbert": "DistilBERT",
    "gpt2": "GPT-2",
    "llama": "Llama",
    "qwen2": "Qwen2",
    "mistral": "Mistral",
    "gemma": "Gemma",
}


def supported_families() -> str:
    return ", ".join(FAMILIES[name] for name in ARCHITECTURES)


def _get(module: nn.Module, path: str):
    for part in path.split("."):
        module = getattr(module, part)
    return module


def _first_tensor(output) -> Tensor:
    return output if isinstance(output, Tensor) else output[0]


class HFModel(TracedModel):
    """A Hugging Face model (BERT, DistilBERT, GPT-2, Llama, Qwen2, Mistral, Gemma families).

    `module` must be loaded with `attn_implementation=model.interface.register()`: every attention layer
    then calls `model.interface.stages_attention`, which records q, k and v as the model uses them (after
    rotary, before the output projection) and computes `attention_output` with the run's mask, scaling,
    temperature and head ablations.
    """

    def __init__(self, module: nn.Module, tokenizer, name: str):
        from model.interface import NAME

        config = module.config
        if config.model_type not in ARCHITECTURES:
            raise ValueError(f"{config.model_type!r} models are not supported; supported families: {supported_families()}")
        module.set_attn_implementation(NAME)  # every attention layer calls ours (a no-op when loaded with it)
        self.module = module.eval()
        self.base = module.base_model
        self.name = name
        self.family = config.model_type
        self.architecture = a = ARCHITECTURES[config.model_type]
        self.n_heads, self.d_model = getattr(config, a.n_heads), getattr(config, a.d_model)
        self.n_kv_heads = getattr(config, "num_key_value_heads", None) or self.n_heads
        self.d_head = getattr(config, "head_dim", None) or self.d_model // self.n_heads
        self.n_layers = len(_get(self.base, a.layers))
        self.tokenizer = HFTokenizer(tokenizer, name)
        limits = [getattr(config, a.n_ctx), self.tokenizer.model_max_length, MAX_CONTEXT]
        if getattr(config, "sliding_window", None) and getattr(config, "use_sliding_window", True):
            limits.append(config.sliding_window)  # within the window, the mask is the plain causal one
        self.n_ctx = int(min(n for n in limits if n and n < 10**9))
        self.causal = a.causal
        self.positional_kind = "learned" if a.position_embeddings else "rotary"
        head_class = type(module).__name__
        if head_class.endswith(("ForCausalLM", "LMHeadModel")):
            self.lm_head = "next"
        elif head_class.endswith("ForMaskedLM"):
            self.lm_head = "masked"
        else:
            self.lm_head = None

    def _projection_module(self, layer: int) -> nn.Module:
        return _get(_get(self.base, self.architecture.layers)[layer], self.architecture.output_projection)

    def output_projection(self, layer: int) -> tuple[Tensor, Tensor]:
        """W_O `[head · d_head, d_model]` and b_O `[d_model]` (zeros when the model has none) of one layer."""
        linear = self._projection_module(layer)
        # nn.Linear keeps its weight as [out, in]; GPT-2's Conv1D as [in, out] already
        weight = linear.weight.T if isinstance(linear, nn.Linear) else linear.weight
        bias = linear.bias if linear.bias is not None else torch.zeros(weight.shape[1])
        return weight.detach(), bias.detach()

    @torch.no_grad()
    def attention_output(self, layer: int, z: Tensor) -> Tensor:
        """The layer's own output projection applied to `z` `[batch, head, pos, d_head]`, heads concatenated."""
        batch, heads, pos, d_head = z.shape
        return self._projection_module(layer)(z.transpose(1, 2).reshape(batch, pos, heads * d_head))

    def _cut(self, text: str, tokens: list) -> list:
        return self.tokenizer.encode(text, max_length=self.n_ctx)  # keeps the closing [SEP]

    def _projections(self, block: nn.Module) -> tuple[tuple[Tensor, Tensor], tuple[Tensor, Tensor], tuple[Tensor, Tensor]]:
        """(W, b) of the query, key and output projections of one block, W as `[in, out]`."""

        def weight_and_bias(linear: nn.Module) -> tuple[Tensor, Tensor]:
            # nn.Linear keeps [out, in]; GPT-2's Conv1D keeps [in, out]
            weight = linear.weight.detach().T if isinstance(linear, nn.Linear) else linear.weight.detach()
            bias = linear.bias.detach() if linear.bias is not None else torch.zeros(weight.shape[1])
            return weight, bias

        output = weight_and_bias(_get(block, self.architecture.output_projection))
        if self.family == "gpt2":
            weight, bias = weight_and_bias(block.attn.c_attn)  # q, k and v side by side
            d = self.d_model
            return (weight[:, :d], bias[:d]), (weight[:, d : 2 * d], bias[d : 2 * d]), output
        if self.family == "bert":
            attention = block.attention.self
            return weight_and_bias(attention.query), weight_and_bias(attention.key), output
        if self.family == "distilbert":
            return weight_and_bias(block.attention.q_lin), weight_and_bias(block.attention.k_lin), output
        return weight_and_bias(block.self_attn.q_proj), weight_and_bias(block.self_attn.k_proj), output

    def _attention_norm(self, block: nn.Module) -> Norm | None:
        """The norm a pre-norm block applies before attention; None for post-norm BERT and DistilBERT."""
        if self.family == "gpt2":
            norm = block.ln_1
            return Norm("layer", norm.weight.detach(), norm.bias.detach(), norm.eps)
        if self.family in ("bert", "distilbert"):
            return None
        norm = block.input_layernorm
        if self.family == "gemma":  # Gemma multiplies by 1 + γ
            return Norm("rms", 1.0 + norm.weight.detach().float(), None, norm.eps)
        return Norm("rms", norm.weight.detach(), None, norm.variance_epsilon)

    @cached_property
    def score_weights(self) -> ScoreWeights:
        """What `model.score_parts` needs from this model: its own tensors, split by head (views, no copies)."""
        h, kv, d, m = self.n_heads, self.n_kv_heads, self.d_head, self.d_model
        layers = []
        for block in _get(self.base, self.architecture.layers):
            (w_q, b_q), (w_k, b_k), (w_o, b_o) = self._projections(block)
            layers.append(
                LayerWeights(
                    norm=self._attention_norm(block),
                    W_Q=w_q.reshape(m, h, d).permute(1, 0, 2),  # [head, d_model, d_head]
                    b_Q=b_q.reshape(h, d),
                    W_K=w_k.reshape(m, kv, d).permute(1, 0, 2),  # [kv_head, d_model, d_head]
                    b_K=b_k.reshape(kv, d),
                    W_O=w_o.reshape(h, d, m),  # [head, d_head, d_model]
                    b_O=b_o,
                )
            )
        if self.family in ("bert", "distilbert"):
            embeddings = self.base.embeddings
            norm = embeddings.LayerNorm
            token_type = embeddings.token_type_embeddings.weight[0].detach() if self.family == "bert" else None
            input_norm = Norm("layer", norm.weight.detach(), norm.bias.detach(), norm.eps)
            return ScoreWeights("post-norm", tuple(layers), input_norm=input_norm, token_type=token_type)
        rotary = getattr(self.base, "rotary_emb", None)
        if rotary is None:
            return ScoreWeights("pre-norm", tuple(layers))
        return ScoreWeights(
            "pre-norm",
            tuple(layers),
            inv_freq=rotary.inv_freq.detach().float(),
            rotary_scale=float(getattr(rotary, "attention_scaling", 1.0)),
        )

    def position_matrix(self, n_positions: int) -> Tensor:
        n = min(n_positions, self.n_ctx)
        if self.architecture.position_embeddings is None:
            return torch.zeros(n, self.d_model)  # rotary: nothing is added to the token
        return _get(self.base, self.architecture.position_embeddings).weight[:n].detach()

    def rotary_inverse_frequencies(self) -> Tensor | None:
        """`[d_head / 2]` the model's rotation speed per dimension pair (angle = position × frequency)."""
        rotary = getattr(self.base, "rotary_emb", None)
        return None if rotary is None else rotary.inv_freq.detach().float().clone()

    def input_recipe(self, input_ids: Tensor, key_valid: Tensor | None = None) -> InputRecipe:
        base, a = self.base, self.architecture
        n_pos = input_ids.shape[1]
        with torch.no_grad():
            token = base.get_input_embeddings().weight[input_ids]  # the embedding rows themselves
            if a.position_embeddings is None:
                if self.family == "gemma":
                    factor = base.get_input_embeddings().embed_scale.to(token.dtype)  # √d_model, as the model rounds it
                    return InputRecipe(a.recipe, {"token": token, "× √d_model": factor}, token * factor)
                return InputRecipe(a.recipe, {"token": token}, token)
            position = _get(base, a.position_embeddings).weight[:n_pos]
            if self.family == "gpt2":
                return InputRecipe(a.recipe, {"token": token, "position": position}, token + position)
            embeddings = base.embeddings
            terms = {"token": token, "position": position}
            if self.family == "bert":
                terms["token type"] = embeddings.token_type_embeddings(torch.zeros_like(input_ids))
            result = embeddings.LayerNorm(sum(terms.values()))
            return InputRecipe(a.recipe, terms, result)

    def _forward_kwargs(self, input_ids, key_valid) -> dict:
        kwargs = dict(input_ids=input_ids, attention_mask=key_valid.long(), return_dict=True)
        if self.causal:
            kwargs["use_cache"] = False
        return kwargs

    def new_cache(self):
        with imports.LOCK:
            from transformers import DynamicCache

        return DynamicCache(config=self.module.config)

    def cached_step(self, token_ids: list[int], cache) -> CachedStep:
        """`past_key_values`: the model's own cached forward pass, its attention computed by `attention_stages`."""
        run = TracedRun(n_layers=self.n_layers, record_kv=False, patterns=[])
        n_past = cache.get_seq_length()
        input_ids = torch.tensor([token_ids])
        with torch.no_grad(), traced_run(run):
            output = self.module(
                input_ids=input_ids,
                attention_mask=torch.ones(1, n_past + len(token_ids), dtype=torch.long),
                past_key_values=cache,
                use_cache=True,
                logits_to_keep=1,
            )
        return CachedStep(
            logits=output.logits[0, -1],
            pattern=torch.stack([pattern[0, :, -1] for pattern in run.patterns]),  # [n_layers, head, n_keys]
            query=run.q[:, 0, :, -1],  # [n_layers, head, d_head]
            keys=[layer.keys[0] for layer in cache.layers],  # [kv_head, n_keys, d_head]
            values=[layer.values[0] for layer in cache.layers],
        )

    def _run(self, input_ids, key_valid, mask, scale, temperature, ablate, ablate_with, logits=True) -> dict:
        run = TracedRun(
            mask=None if mask == self.own_mask else mask.build(key_valid),
            scale=scale,
            temperature=temperature,
            ablate=frozenset(ablate),
            ablate_with=ablate_with,
            key_valid=key_valid,
            n_layers=self.n_layers,
        )
        layers = _get(self.base, self.architecture.layers)
        hidden: list[Tensor] = [None] * (self.n_layers + 1)

        def first_input(_module, args, kwargs):
            hidden[0] = args[0] if args else next(v for v in kwargs.values() if isinstance(v, Tensor))

        def output_of(layer):
            def hook(_module, _args, output):
                hidden[layer + 1] = _first_tensor(output)

            return hook

        handles = [layers[0].register_forward_pre_hook(first_input, with_kwargs=True)]
        handles += [block.register_forward_hook(output_of(i)) for i, block in enumerate(layers)]
        # without its language-model head (logits=False) the base model runs: the same blocks, no unembedding
        module = self.module if logits else self.base
        try:
            with traced_run(run):
                output = module(**self._forward_kwargs(input_ids, key_valid))
        finally:
            for handle in handles:
                handle.remove()
        n_pos = input_ids.shape[1]
        return dict(
            static_embeddings=self.base.get_input_embeddings().weight[input_ids].detach(),
            positional=self.position_matrix(n_pos),
            hidden_states=torch.stack(hidden),  # [n_layers + 1, batch, pos, d_model]
            q=run.q,  # [n_layers, batch, head, pos, d_head]
            k=run.k,  # one per query head: a shared key/value head is repeated
            v=run.v,
            divisors=tuple(run.divisors),
            logits=getattr(output, "logits", None) if self.lm_head and logits else None,
            score_weights=self.score_weights,
        )
