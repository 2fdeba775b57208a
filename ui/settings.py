"""The view's settings as plain data, and their round trip through the URL query string.

No streamlit here: parsing and clamping are plain functions, tested on their own.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field, fields, replace

from model.attention import MaskSpec

DEFAULT_TEXT = (
    "Write a poem about a man fishing on a river bank.\n"
    "Write a poem about a man withdrawing money from a bank."
)
SESSION_MODEL = "trained-here"
BUILTIN_MODELS = {
    "toy": "Toy transformer, trained (built in)",
    "toy-random": "Toy transformer, random weights (before training)",
    SESSION_MODEL: "Toy transformer you trained (this session)",
    "minilm": "all-MiniLM-L6-v2 (pretrained BERT, bundled, offline)",
    "distilbert-base-uncased": "DistilBERT base uncased (Hugging Face Hub)",
    "gpt2": "GPT-2 small (Hugging Face Hub)",
}
TOY_TOKENIZERS = {"word": "Word-level", "char": "Character", "gpt2-bpe": "GPT-2 BPE (tiktoken)"}
MASKS = ("model", *MaskSpec.NAMES)  # "model" = the model's own mask
THEMES = ("screen", "print")
MAX_TEXT_CHARS = 10_000
TEMPERATURE_RANGE = (0.05, 10.0)


def custom_models_allowed() -> tuple[bool, bool]:
    """(hub ids, local folders) that the operator allows besides the built-in models.

    ATTENTION_VIZ_ALLOW_HUB (default 1) and ATTENTION_VIZ_ALLOW_LOCAL (default 0).
    """
    flag = lambda name, default: os.environ.get(name, default).strip().lower() in ("1", "true", "yes", "on")  # noqa: E731
    return flag("ATTENTION_VIZ_ALLOW_HUB", "1"), flag("ATTENTION_VIZ_ALLOW_LOCAL", "0")


@dataclass
class Settings:
    text: str = DEFAULT_TEXT  # one sentence per line
    model: str = "toy"
    tok: str = "word"  # the toy model's tokenizer
    layer: int = 0
    heads: list[int] = field(default_factory=lambda: [0])
    mask: str = "model"
    hide: list[int] = field(default_factory=list)  # key positions hidden from every query
    scale: bool = True
    temp: float = 1.0
    sent: int = 0  # which sentence of the batch the attention page draws
    target: str = "bank"
    refs: str = "river, water, money, deposit"
    theme: str = "screen"
    pe_n: int = 64  # positional-encoding page: positions, width and base of the sinusoidal matrix
    pe_d: int = 64
    pe_base: int = 10000
    elayer: int = -1  # embeddings page: the layer drawn as "contextual" (-1 = the last)
    ntemp: float = 1.0  # next-token page: sampling temperature
    topk: int = 10  # next-token page: how many tokens to list

    @property
    def sentences(self) -> list[str]:
        return [line for line in self.text.splitlines()]

    @property
    def references(self) -> tuple[str, ...]:
        return tuple(word.strip() for word in self.refs.split(",") if word.strip())


def _int_list(value: str) -> list[int]:
    if value.strip() == "":
        return []
    return [int(part) for part in value.split(",")]


def _bool(value: str) -> bool:
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(value)


def _temperature(value: str) -> float:
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(value)
    low, high = TEMPERATURE_RANGE
    return min(max(number, low), high)


PARSERS = {
    "text": str,
    "model": str,
    "tok": str,
    "layer": int,
    "heads": _int_list,
    "mask": str,
    "hide": _int_list,
    "scale": _bool,
    "temp": _temperature,
    "sent": int,
    "target": str,
    "refs": str,
    "theme": str,
    "pe_n": int,
    "pe_d": int,
    "pe_base": int,
    "elayer": int,
    "ntemp": _temperature,
    "topk": int,
}
PE_BASES = (10, 100, 1000, 10000)
PE_LIMIT = 512
CHOICES = {"tok": tuple(TOY_TOKENIZERS), "mask": MASKS, "theme": THEMES, "pe_base": PE_BASES}
RANGES = {"pe_n": (2, PE_LIMIT), "pe_d": (2, PE_LIMIT), "sent": (0, 10**6), "elayer": (-1, 10**6), "topk": (1, 50)}


def model_allowed(name: str) -> bool:
    if name in BUILTIN_MODELS:
        return True
    allow_hub, allow_local = custom_models_allowed()
    looks_local = name.startswith(("/", ".", "~"))
    return allow_local if looks_local else allow_hub


def from_query(params: dict[str, str]) -> tuple[Settings, list[str]]:
    """Settings from a query string; a malformed value falls back to its default, with a notice."""
    defaults = Settings()
    values, notices = {}, []
    for f in fields(Settings):
        if f.name not in params:
            continue
        raw = params[f.name]
        try:
            value = PARSERS[f.name](raw)
            if f.name in CHOICES and value not in CHOICES[f.name]:
                raise ValueError(raw)
            if f.name in RANGES and not RANGES[f.name][0] <= value <= RANGES[f.name][1]:
                raise ValueError(raw)
            if f.name == "model" and not (value.strip() and model_allowed(value.strip())):
                raise ValueError(raw)
            if f.name == "text" and len(value) > MAX_TEXT_CHARS:
                value = value[:MAX_TEXT_CHARS]
                notices.append(f"The text in the link was cut to {MAX_TEXT_CHARS:,} characters.")
        except ValueError:
            notices.append(f"The link's value for “{f.name}” ({raw[:40]!r}) is not valid; the default is used.")
            continue
        values[f.name] = value
    for name in ("temp", "ntemp"):
        if name in values and float(params[name]) != values[name]:
            notices.append(f"Temperature {params[name]} is outside {TEMPERATURE_RANGE}; set to {values[name]:g}.")
    return replace(defaults, **values), notices


def to_query(settings: Settings) -> dict[str, str]:
    """The query string of a view: only values that differ from the defaults."""
    defaults = asdict(Settings())
    query = {}
    for name, value in asdict(settings).items():
        if value == defaults[name]:
            continue
        if isinstance(value, list):
            query[name] = ",".join(str(v) for v in value)
        elif isinstance(value, bool):
            query[name] = "1" if value else "0"
        else:
            query[name] = str(value)
    return query


def clamp_to_model(settings: Settings, n_layers: int, n_heads: int, n_pos: int, n_sentences: int) -> tuple[Settings, list[str]]:
    """Keep layer, heads, hidden positions and the sentence index inside what the model and input have."""
    notices = []
    layer = settings.layer
    if not 0 <= layer < n_layers:
        layer = min(max(layer, 0), n_layers - 1)
        notices.append(f"Layer {settings.layer} does not exist (this model has {n_layers}); showing layer {layer}.")
    heads = [h for h in dict.fromkeys(settings.heads) if 0 <= h < n_heads]
    if len(heads) != len(settings.heads):
        notices.append(f"Heads outside 0…{n_heads - 1} were dropped.")
    if not heads:
        heads = [0]
    hide = [p for p in dict.fromkeys(settings.hide) if 0 <= p < n_pos]
    if len(hide) != len(settings.hide):
        notices.append("Hidden positions beyond the input were dropped.")
    sent = settings.sent if 0 <= settings.sent < n_sentences else 0
    if sent != settings.sent:
        notices.append(f"There is no sentence {settings.sent + 1}; showing sentence 1.")
    elayer = settings.elayer if -1 <= settings.elayer <= n_layers else -1
    return replace(settings, layer=layer, heads=heads, hide=hide, sent=sent, elayer=elayer), notices
