"""What a view shows, as plain data: the settings of every page, their URL round trip, and how
attention is displayed. No streamlit here: the app, the command line and the benchmark share it.

Field names are full words (`sentence`, `temperature`, `embedding_layer`); the URL keeps its short keys
(`sent`, `temp`, `elayer`), so every link ever shared still works.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace

from model.attention import MaskSpec
from model.corpus_heads import STATISTICS as CORPUS_STATISTIC_NAMES
from model.tokenizers import TOY_TOKENIZERS as TOKENIZER_CLASSES
from model.tokenizers import is_visible_text

DEFAULT_TEXT = "Write a poem about a man fishing on a river bank.\nWrite a poem about a man withdrawing money from a bank."
SESSION_MODEL = "trained-here"
BUILTIN_MODELS = {
    "toy": "Toy transformer, trained (built in; reads left to right)",
    "toy-random": "Toy transformer, random weights (before training)",
    "toy-bidirectional": "Toy transformer, bidirectional, trained (sees both sides)",
    "toy-bidirectional-random": "Toy transformer, bidirectional, random weights (before training)",
    SESSION_MODEL: "Toy transformer you trained (in this browser session)",
    "minilm": "all-MiniLM-L6-v2 (pretrained BERT, bundled, offline)",
    "smollm2": "SmolLM2-135M-Instruct (pretrained Llama-style decoder, bundled, offline)",
    "distilbert-base-uncased": "DistilBERT base uncased (Hugging Face Hub)",
    "gpt2": "GPT-2 small (Hugging Face Hub)",
}
MODEL_NAMES = {  # short enough for the sidebar's model box, which shows the description below it
    "toy": "Toy, trained",
    "toy-random": "Toy, random weights",
    "toy-bidirectional": "Toy, bidirectional, trained",
    "toy-bidirectional-random": "Toy, bidirectional, random weights",
    SESSION_MODEL: "Your toy (trained here)",
    "minilm": "all-MiniLM-L6-v2",
    "smollm2": "SmolLM2-135M-Instruct",
    "distilbert-base-uncased": "DistilBERT base uncased",
    "gpt2": "GPT-2 small",
}
TOY_TOKENIZERS = {name: tokenizer.label for name, tokenizer in TOKENIZER_CLASSES.items()}  # the registry in model/, with labels
MASKS = ("model", *MaskSpec.NAMES)  # "model" = the model's own mask
THEMES = ("screen", "print")
MAX_TEXT_CHARS = 10_000
TEMPERATURE_RANGE = (0.05, 10.0)
# A log-like grid for the temperature sliders: T = 1 sits in the middle of the track.
TEMPERATURES = (0.05, 0.06, 0.08, 0.1, 0.125, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)
PE_BASES = (10, 100, 1000, 10000)
PE_LIMIT = 512
MAX_NEW_TOKENS = 64  # generate page
MAX_PROMPT_CHARS = 1_000  # generate page: a prompt longer than a paragraph makes every step slow
CORPUS_SOURCES = ("classroom", "held-out", "own text")  # corpus page (viz.content.corpus.SOURCES)
CORPUS_STATISTICS = CORPUS_STATISTIC_NAMES  # corpus page: the every-head grid's numbers
WHY_GROUPS = ("kind", "layer", "head")  # why page: how finely the earlier layers' outputs are split (model.score_parts.GROUPS)


@dataclass(frozen=True)
class Settings:
    """Every setting of the app, with its default. `replace(settings, layer=1)` makes a changed copy."""

    text: str = DEFAULT_TEXT  # one sentence per line
    model: str = "toy"
    tokenizer: str = "bpe"  # the random-weight toy model's tokenizer
    layer: int = 0
    heads: tuple[int, ...] = (0,)
    mask: str = "model"  # "model" = the model's own, or one of MaskSpec.NAMES
    hidden: tuple[tuple[int, int], ...] = ()  # (sentence, key position) pairs: that sentence's queries may not attend to that key
    scaling: bool = True  # divide the scores by √d_k
    temperature: float = 1.0  # of the attention softmax
    sentence: int = 0  # which sentence of the batch the pages draw (0-based)
    target: str = "bank"  # embeddings page: the word followed
    references: str = "river, water, money, deposit"  # embeddings page: comma-separated
    senses: str = ""  # embeddings page: the sense of the word in each sentence, comma-separated ("river, money")
    theme: str = "screen"
    pe_positions: int = 64  # positional-encoding page: the sinusoidal matrix drawn
    pe_d_model: int = 64
    pe_base: int = 10000
    embedding_layer: int = -1  # embeddings page: the layer drawn as "contextual" (-1 = the last)
    sampling_temperature: float = 1.0  # next-token page
    top_k: int = 10  # next-token page: how many tokens to list
    pinned: int = -1  # attention page, head view: the pinned query position (a word with `words`), -1 = none
    cell: tuple[int, ...] = ()  # attention page: (query, key) of the worked example, () = the default pair
    words: bool = False  # attention page, head view: sub-word pieces merged into words
    pattern_colour: str = "fixed"  # attention weights coloured 0 to 1 ("fixed") or 0 to the figure's own maximum ("own")
    sinks: bool = False  # attention page: also show each pattern with the first token, [CLS] and [SEP] hidden, rows renormalised
    focus: int = -1  # attention page, long inputs: the token the focus window is centred on (-1 = the middle)
    ablate: tuple[tuple[int, int], ...] = ()  # (layer, head) pairs whose output is zeroed in the run
    position: int = -1  # next-token page: the token after which the model predicts (-1 = the last word)
    lab_d_k: int = 512  # scaling lab: the size of one head for the random q and k
    presenting: bool = False  # presentation mode: large fonts, no sidebar, one figure per screen
    prompt: str = "The man sat by the river"  # generate page: the text the model continues (the toy knows rivers, not capitals)
    new_tokens: int = 16  # generate page: how many tokens to write (at most MAX_NEW_TOKENS)
    sample: bool = False  # generate page: draw each token (at `sampling_temperature`) rather than take the most likely
    sample_top_k: int = 0  # generate page: draw only from the k most likely tokens (0 = no cut)
    sample_top_p: float = 1.0  # generate page: then from the fewest whose probabilities reach p (1 = no cut)
    seed: int = 0  # generate page: fixes the draws, so a link writes the same text
    step: int = 0  # generate page: the step shown (0 = the first new token)
    corpus: str = "classroom"  # corpus page: the sentences read (one of CORPUS_SOURCES; "own text" lives in the session only)
    compare: str = ""  # corpus page: a second head beside the sidebar's, as "layer.head" ("" = none)
    examples_page: int = 0  # corpus page: the page of strongest examples shown (0 = the strongest 20)
    corpus_statistic: str = "previous"  # corpus page: the number drawn for every head at once (one of STATISTICS)
    why_query: int = -1  # why page: the query of the pair whose score is split (-1 = the sentence's last word)
    why_key: int = -1  # why page: its key (-1 = the key that query gives the most weight)
    why_group: str = "kind"  # why page: earlier layers as attention and MLP ("kind"), per layer, or per head

    def __post_init__(self):
        object.__setattr__(self, "heads", tuple(self.heads))
        object.__setattr__(self, "hidden", hidden_pairs(self.hidden))
        object.__setattr__(self, "cell", tuple(self.cell))
        object.__setattr__(self, "ablate", tuple(sorted({(int(layer), int(head)) for layer, head in self.ablate})))

    @property
    def sentences(self) -> list[str]:
        return self.text.splitlines()

    @property
    def reference_words(self) -> tuple[str, ...]:
        return tuple(word.strip() for word in self.references.split(",") if word.strip())

    @property
    def sense_names(self) -> list[str | None]:
        """One sense name per sentence (None where none is given)."""
        return [name.strip() or None for name in self.senses.split(",")] if self.senses.strip() else []

    @property
    def followed_word(self) -> str:
        return self.target.strip() or "bank"

    @property
    def display(self) -> AttentionDisplay:
        return AttentionDisplay(self.mask, self.hidden, self.scaling, self.temperature, self.ablate)


@dataclass(frozen=True)
class AttentionDisplay:
    """How attention is shown: mask, hidden keys, scaling and softmax temperature. Validated once, here.

    `mask` is "model" (the model's own) or one of `MaskSpec.NAMES`; `hidden` holds (sentence, key
    position) pairs, both counted from 0: each key is hidden from the queries of its sentence only.
    """

    mask: str = "model"
    hidden: tuple[tuple[int, int], ...] = ()
    scaling: bool = True
    temperature: float = 1.0
    ablate: tuple[tuple[int, int], ...] = ()  # (layer, head) pairs zeroed before the output projection

    def __post_init__(self):
        if self.mask not in MASKS:
            raise ValueError(f"unknown mask {self.mask!r}; choose one of {', '.join(MASKS)}")
        if not (isinstance(self.temperature, (int, float)) and math.isfinite(self.temperature) and self.temperature > 0):
            raise ValueError(f"temperature must be a positive number, got {self.temperature!r}")
        hidden = hidden_pairs(self.hidden)
        if any(v < 0 for pair in hidden for v in pair):
            raise ValueError(f"hidden (sentence, position) pairs must be ≥ 0, got {hidden}")
        object.__setattr__(self, "hidden", hidden)
        object.__setattr__(self, "temperature", float(self.temperature))
        ablate = tuple(sorted({(int(layer), int(head)) for layer, head in self.ablate}))
        if any(layer < 0 or head < 0 for layer, head in ablate):
            raise ValueError(f"ablated heads must be ≥ 0, got {ablate}")
        object.__setattr__(self, "ablate", ablate)

    def mask_spec(self, model_mask: str) -> MaskSpec:
        """The mask to build, given the name of the model's own mask."""
        return MaskSpec.parse(model_mask if self.mask == "model" else self.mask, self.hidden)

    @property
    def is_models_own(self) -> bool:
        return self.mask == "model" and not self.hidden and self.scaling and self.temperature == 1.0 and not self.ablate


def hidden_pairs(hidden) -> tuple[tuple[int, int], ...]:
    """(sentence, position) pairs, sorted and without repeats; anything else is a ValueError."""
    pairs = set()
    for item in hidden:
        if isinstance(item, (str, bytes)) or not hasattr(item, "__len__") or len(item) != 2:
            raise ValueError(f"a hidden token is a (sentence, position) pair, got {item!r}")
        pairs.add((int(item[0]), int(item[1])))
    return tuple(sorted(pairs))


def temperature_options(current: float) -> list[float]:
    """The slider's grid, with the current value added when a link set one between grid points."""
    return sorted({*TEMPERATURES, float(current)})


def run_model(model, texts, display: AttentionDisplay):
    """The trace a page starts from: every model (the toy and the pretrained ones alike) runs with the
    display's mask, hidden keys, scaling, temperature and ablated heads through its whole forward pass."""
    mask = display.mask_spec(model.default_mask)
    return model.trace(list(texts), mask=mask, scale=display.scaling, temperature=display.temperature, ablate=display.ablate)


# ---------------------------------------------------------------------------------- the URL

URL_KEYS = {  # field → key in the query string (never changed: shared links keep working)
    "text": "text",
    "model": "model",
    "tokenizer": "tok",
    "layer": "layer",
    "heads": "heads",
    "mask": "mask",
    "hidden": "hide",
    "scaling": "scale",
    "temperature": "temp",
    "sentence": "sent",
    "target": "target",
    "references": "refs",
    "senses": "senses",
    "theme": "theme",
    "pe_positions": "pe_n",
    "pe_d_model": "pe_d",
    "pe_base": "pe_base",
    "embedding_layer": "elayer",
    "sampling_temperature": "ntemp",
    "top_k": "topk",
    "pinned": "pin",
    "cell": "cell",
    "words": "words",
    "pattern_colour": "pcol",
    "sinks": "sinks",
    "focus": "focus",
    "ablate": "ablate",
    "position": "pos",
    "lab_d_k": "dk",
    "presenting": "present",
    "prompt": "prompt",
    "new_tokens": "gen_n",
    "sample": "sample",
    "sample_top_k": "gen_topk",
    "sample_top_p": "gen_topp",
    "seed": "seed",
    "step": "step",
    "corpus": "corpus",
    "compare": "cmp",
    "examples_page": "cpage",
    "corpus_statistic": "cstat",
    "why_query": "why_q",
    "why_key": "why_k",
    "why_group": "why_group",
}


def _int_list(value: str) -> tuple[int, ...]:
    if value.strip() == "":
        return ()
    return tuple(int(part) for part in value.split(","))


def _pair_list(value: str, old_form: bool = False) -> tuple:
    """ "1.2,0.3" → ((0, 3), (1, 2)). With `old_form`, a plain number (a hidden position in the links'
    older form, hidden in every sentence) is kept as an int, for `from_query` to spread."""
    if value.strip() == "":
        return ()
    items = set()
    for part in value.split(","):
        if old_form and "." not in part:
            items.add(int(part))
            continue
        first, second = part.split(".")
        items.add((int(first), int(second)))
    return tuple(sorted(items, key=lambda item: item if isinstance(item, tuple) else (-1, item)))


def _head_list(value: str) -> tuple[tuple[int, int], ...]:
    return _pair_list(value)


def follow_edit(before: Settings, after: Settings) -> tuple[Settings, list[str]]:
    """Hidden tokens belong to a sentence as it was typed. When the text changes, a hidden (sentence,
    position) pair is kept only if that sentence reads the same as before; the others are let go, with a
    notice, rather than hiding whatever token now stands at their position."""
    if before.text == after.text or not after.hidden:
        return after, []
    old, new = ([line for line in s.text.splitlines() if is_visible_text(line)] for s in (before, after))
    kept = tuple(p for p in after.hidden if p[0] < min(len(old), len(new)) and old[p[0]] == new[p[0]])
    dropped = sorted({sentence + 1 for sentence, _ in set(after.hidden) - set(kept)})
    if not dropped:
        return after, []
    one = len(dropped) == 1
    which = f"Sentence {dropped[0]} has" if one else f"Sentences {', '.join(map(str, dropped))} have"
    notice = f"{which} changed, so the tokens hidden in {'it' if one else 'them'} are shown again (choose them anew under “Hide key tokens”)."
    return replace(after, hidden=kept), [notice]


def _spread_old_hidden(hidden: tuple, text: str) -> tuple[tuple[tuple[int, int], ...], str | None]:
    """A link in the older form hid a position in every sentence ("hide=5"): hide it in each
    sentence of the link's text, so the view is the same, and say so."""
    positions = [item for item in hidden if isinstance(item, int)]
    if not positions:
        return hidden, None
    n_sentences = max(sum(1 for line in text.splitlines() if is_visible_text(line)), 1)
    pairs = {item for item in hidden if isinstance(item, tuple)}
    pairs |= {(sentence, p) for p in positions for sentence in range(n_sentences)}
    listed = ", ".join(map(str, positions))
    notice = (
        f"This link is from an older version, which hid position{'s' * (len(positions) > 1)} {listed} in every sentence; "
        "the same tokens are hidden, now one by one in each sentence (see “Hide key tokens”)."
    )
    return tuple(sorted(pairs)), notice


def _head_pair(value: str) -> str:
    """ "1.3" (layer 1, head 3) or "" (no head); anything else is a ValueError."""
    if value.strip() == "":
        return ""
    layer, head = value.split(".")
    if int(layer) < 0 or int(head) < 0:
        raise ValueError(value)
    return f"{int(layer)}.{int(head)}"


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
    "tokenizer": str,
    "layer": int,
    "heads": _int_list,
    "mask": str,
    "hidden": lambda value: _pair_list(value, old_form=True),
    "scaling": _bool,
    "temperature": _temperature,
    "sentence": int,
    "target": str,
    "references": str,
    "senses": str,
    "theme": str,
    "pe_positions": int,
    "pe_d_model": int,
    "pe_base": int,
    "embedding_layer": int,
    "sampling_temperature": _temperature,
    "top_k": int,
    "pinned": int,
    "cell": _int_list,
    "words": _bool,
    "pattern_colour": str,
    "sinks": _bool,
    "focus": int,
    "ablate": _head_list,
    "position": int,
    "lab_d_k": int,
    "presenting": _bool,
    "prompt": str,
    "new_tokens": int,
    "sample": _bool,
    "sample_top_k": int,
    "sample_top_p": float,
    "seed": int,
    "step": int,
    "corpus": str,
    "compare": _head_pair,
    "examples_page": int,
    "corpus_statistic": str,
    "why_query": int,
    "why_key": int,
    "why_group": str,
}
PATTERN_COLOURS = ("fixed", "own")
CHOICES = {
    "tokenizer": tuple(TOY_TOKENIZERS),
    "mask": MASKS,
    "theme": THEMES,
    "pe_base": PE_BASES,
    "pattern_colour": PATTERN_COLOURS,
    "corpus": CORPUS_SOURCES,
    "corpus_statistic": CORPUS_STATISTICS,
    "why_group": WHY_GROUPS,
}
RANGES = {
    "pe_positions": (2, PE_LIMIT),
    "pe_d_model": (2, PE_LIMIT),
    "sentence": (0, 10**6),
    "embedding_layer": (-1, 10**6),
    "top_k": (1, 50),
    "pinned": (-1, 10**6),
    "focus": (-1, 10**6),
    "position": (-1, 10**6),
    "lab_d_k": (1, 1024),
    "new_tokens": (1, MAX_NEW_TOKENS),
    "sample_top_k": (0, 1000),
    "sample_top_p": (0.01, 1.0),  # a NaN or an infinity fails this test too
    "seed": (0, 2**31 - 1),
    "step": (0, MAX_NEW_TOKENS - 1),
    "examples_page": (0, 10**6),
    "why_query": (-1, 10**6),
    "why_key": (-1, 10**6),
}


def from_query(params: dict[str, str], model_allowed=lambda name: True) -> tuple[Settings, list[str]]:
    """Settings from a query string; a malformed value falls back to its default, with a notice.
    `model_allowed(name)`: whether this server may load a model the link names (the app's policy)."""
    values, notices = {}, []
    for f in fields(Settings):
        key = URL_KEYS[f.name]
        if key not in params:
            continue
        raw = params[key]
        try:
            value = PARSERS[f.name](raw)
            if f.name in CHOICES and value not in CHOICES[f.name]:
                raise ValueError(raw)
            if f.name in RANGES and not RANGES[f.name][0] <= value <= RANGES[f.name][1]:
                raise ValueError(raw)
            if f.name in ("heads", "cell") and any(v < 0 for v in value):
                raise ValueError(raw)
            if f.name == "hidden" and any(v < 0 for item in value for v in (item if isinstance(item, tuple) else (item,))):
                raise ValueError(raw)
            if f.name == "cell" and len(value) not in (0, 2):
                raise ValueError(raw)
            if f.name == "ablate" and any(v < 0 for pair in value for v in pair):
                raise ValueError(raw)
            if f.name == "model" and not (value.strip() and model_allowed(value.strip())):
                raise ValueError(raw)
            limit = MAX_PROMPT_CHARS if f.name == "prompt" else MAX_TEXT_CHARS
            if f.name in ("text", "prompt") and len(value) > limit:
                value = value[:limit]
                notices.append(f"The {f.name} in the link was cut to {limit:,} characters.")
        except ValueError:
            notices.append(f"The link's value for “{key}” ({raw[:40]!r}) is not valid; the default is used.")
            continue
        values[f.name] = value
    if "hidden" in values:
        values["hidden"], notice = _spread_old_hidden(values["hidden"], values.get("text", DEFAULT_TEXT))
        notices += [notice] if notice else []
    for name in ("temperature", "sampling_temperature"):
        key = URL_KEYS[name]
        if name in values and float(params[key]) != values[name]:
            notices.append(f"Temperature {params[key]} is outside {TEMPERATURE_RANGE}; set to {values[name]:g}.")
    return replace(Settings(), **values), notices


def to_query(settings: Settings) -> dict[str, str]:
    """The query string of a view: only values that differ from the defaults, under their short keys."""
    defaults = asdict(Settings())
    query = {}
    for name, value in asdict(settings).items():
        if value == defaults[name]:
            continue
        if name in ("ablate", "hidden"):
            text = ",".join(f"{first}.{second}" for first, second in value)
        elif isinstance(value, (list, tuple)):
            text = ",".join(str(v) for v in value)
        elif isinstance(value, bool):
            text = "1" if value else "0"
        else:
            text = str(value)
        query[URL_KEYS[name]] = text
    return query


def clamp_to_model(
    settings: Settings, n_layers: int, n_heads: int, n_pos: int, n_sentences: int, sentence_lengths: list[int] | None = None
) -> tuple[Settings, list[str]]:
    """Keep layer, heads, hidden positions, the sentence, the embeddings' layer, the next-token position,
    the focus token, the pinned token and the worked example's cell inside what the model and input have.

    `n_pos`: the positions of the batch (its longest sentence); `sentence_lengths`: each sentence's tokens.
    Each value moved back inside gets a notice, saying what is shown instead."""
    notices = []
    layer = settings.layer
    if not 0 <= layer < n_layers:
        layer = min(max(layer, 0), n_layers - 1)
        notices.append(f"Layer {settings.layer} does not exist (this model has {n_layers}); showing layer {layer}.")
    heads = tuple(h for h in dict.fromkeys(settings.heads) if 0 <= h < n_heads)
    if len(heads) != len(settings.heads):
        notices.append(f"Heads outside 0…{n_heads - 1} were dropped.")
    heads = heads or (0,)
    lengths = sentence_lengths or [n_pos] * n_sentences
    hidden = tuple((s, p) for s, p in settings.hidden if 0 <= s < n_sentences and 0 <= p < lengths[s])
    if len(hidden) != len(settings.hidden):
        notices.append("Hidden tokens beyond their sentence (or of a sentence no longer there) were dropped.")
    sentence = settings.sentence if 0 <= settings.sentence < n_sentences else 0
    if sentence != settings.sentence:
        notices.append(f"There is no sentence {settings.sentence + 1}; showing sentence 1.")
    embedding_layer = settings.embedding_layer if -1 <= settings.embedding_layer <= n_layers else -1
    if embedding_layer != settings.embedding_layer:
        notices.append(f"Layer {settings.embedding_layer} of the embeddings does not exist (this model has {n_layers}); showing the last layer.")
    pinned = settings.pinned if -1 <= settings.pinned < n_pos else -1
    cell = settings.cell if len(settings.cell) == 2 and all(0 <= p < n_pos for p in settings.cell) else ()
    if pinned != settings.pinned or cell != settings.cell:
        notices.append("The pinned token or the worked example's cell was beyond the input; it was cleared.")
    n_tokens = sentence_lengths[sentence] if sentence_lengths else n_pos
    position = settings.position if -1 <= settings.position < n_tokens else -1  # -1: the last word
    if position != settings.position:
        notices.append(f"Position {settings.position} is beyond the sentence ({n_tokens} tokens, from 0); predicting after its last word.")
    focus = settings.focus if -1 <= settings.focus < n_pos else n_pos - 1
    if focus != settings.focus:
        notices.append(f"The focus token {settings.focus} is beyond the input ({n_pos} positions); the focus window is around the last, {focus}.")
    ablate = tuple(pair for pair in settings.ablate if 0 <= pair[0] < n_layers and 0 <= pair[1] < n_heads)
    if len(ablate) != len(settings.ablate):
        notices.append("Ablated heads that this model does not have were dropped.")
    return (
        replace(
            settings,
            layer=layer,
            heads=heads,
            hidden=hidden,
            sentence=sentence,
            embedding_layer=embedding_layer,
            ablate=ablate,
            position=position,
            focus=focus,
            pinned=pinned,
            cell=cell,
        ),
        notices,
    )
