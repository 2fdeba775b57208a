"""Train the toy model on the generated corpus: `python -m model.train`.

A causal model learns to predict the next word; a bidirectional one learns to fill in hidden words
(a masked-word objective, as BERT does). Same seed, same weights: the shipped checkpoint in
model/checkpoints/toy is regenerated bit for bit by `python -m model.train` (one CPU thread).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from collections.abc import Callable

import torch
from torch import Tensor

from model.corpus import sentences
from model.tokenizers import WordTokenizer
from model.toy import ToyConfig, ToyTransformer
from model.trace import pad_batch
from model.vocab import TOY_WORDS

CHECKPOINT = Path(__file__).resolve().parent / "checkpoints" / "toy"
MASK_WORD = "[MASK]"


@dataclass
class TrainConfig:
    steps: int = 1200  # enough for the senses of "bank" to separate; about a minute on one core
    batch_size: int = 32
    learning_rate: float = 3e-3
    weight_decay: float = 0.01
    n_sentences: int = 4000  # generated corpus size
    mask_share: float = 0.15  # bidirectional models: share of words hidden and predicted
    seed: int = 0


def default_model_config() -> ToyConfig:
    """The shipped toy model: 2 layers × 4 heads, d_model 64, causal, word-level."""
    return ToyConfig(vocabulary=TOY_WORDS + [MASK_WORD])


def encode_corpus(tokenizer: WordTokenizer, texts: list[str]) -> tuple[Tensor, Tensor]:
    """input_ids `[n, pos]` (right-padded) and key_valid `[n, pos]`."""
    return pad_batch([[t.id for t in tokenizer.encode(text)] for text in texts], tokenizer.pad_id)


def loss_on_batch(model: ToyTransformer, input_ids: Tensor, key_valid: Tensor, generator: torch.Generator, mask_share: float) -> Tensor:
    """Next-word cross-entropy (causal) or hidden-word cross-entropy (bidirectional), padding ignored."""
    if model.config.causal:
        logits = model(input_ids, key_valid)  # [batch, pos, d_vocab]
        targets = input_ids[:, 1:].masked_fill(~key_valid[:, 1:], -100)
        return torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), targets.flatten(), ignore_index=-100)
    hidden = (torch.rand(input_ids.shape, generator=generator) < mask_share) & key_valid
    hidden[:, 0] |= ~hidden.any(dim=1) & key_valid[:, 0]  # at least one hidden word per sentence
    mask_id = model.tokenizer.ids[MASK_WORD]
    logits = model(input_ids.masked_fill(hidden, mask_id), key_valid)
    targets = input_ids.masked_fill(~hidden, -100)
    return torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100)


def train(
    model_config: ToyConfig,
    train_config: TrainConfig,
    on_step: Callable[[int, float], bool | None] | None = None,
    texts: list[str] | None = None,
) -> tuple[ToyTransformer, list[float]]:
    """Train a fresh toy model; returns it (in eval mode) and the loss of every step.

    `on_step(step, loss)` is called after each step; returning True stops early. `texts`: the sentences
    to train on (see `model.own_text`); None = the generated corpus.
    """
    if model_config.tokenizer != "word":
        raise ValueError("the toy model trains with the word-level tokenizer")
    if model_config.vocabulary is None:
        model_config = ToyConfig(**{**asdict(model_config), "vocabulary": TOY_WORDS + [MASK_WORD]})
    torch.manual_seed(train_config.seed)
    model = ToyTransformer(model_config)
    model.train()
    corpus = texts if texts is not None else sentences(train_config.n_sentences, seed=train_config.seed)
    input_ids, key_valid = encode_corpus(model.tokenizer, corpus)
    generator = torch.Generator().manual_seed(train_config.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=train_config.learning_rate, weight_decay=train_config.weight_decay)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / 50) * max(0.1, 1 - step / train_config.steps))
    losses = []
    for step in range(train_config.steps):
        rows = torch.randint(0, len(input_ids), (train_config.batch_size,), generator=generator)
        batch_valid = key_valid[rows]
        width = int(batch_valid.sum(dim=1).max())
        loss = loss_on_batch(model, input_ids[rows, :width], batch_valid[:, :width], generator, train_config.mask_share)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(float(loss.detach()))
        if on_step is not None and on_step(step, losses[-1]):
            break
    return model.eval(), losses


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sparkline(values: list[float], width: int = 60) -> str:
    """The loss curve as one line of block characters."""
    if not values:
        return ""
    step = max(1, len(values) // width)
    points = [sum(values[i : i + step]) / len(values[i : i + step]) for i in range(0, len(values), step)]
    low, high = min(points), max(points)
    blocks = "▁▂▃▄▅▆▇█"
    return "".join(blocks[int((p - low) / (high - low + 1e-12) * (len(blocks) - 1))] for p in points)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m model.train", description="Train the toy model on the generated corpus.")
    parser.add_argument("--out", type=Path, default=CHECKPOINT, help=f"folder for the checkpoint (default {CHECKPOINT})")
    parser.add_argument("--steps", type=int, default=TrainConfig.steps)
    parser.add_argument("--seed", type=int, default=TrainConfig.seed)
    parser.add_argument("--bidirectional", action="store_true", help="masked-word objective instead of next word")
    args = parser.parse_args(argv)

    torch.set_num_threads(1)  # one thread: the same floating-point sums every run, so the same weights
    config = default_model_config()
    config.causal = not args.bidirectional
    train_config = TrainConfig(steps=args.steps, seed=args.seed)
    start = time.monotonic()

    def report(step: int, loss: float) -> None:
        if step % 20 == 0 or step == train_config.steps - 1:
            done = (step + 1) / train_config.steps
            bar = "█" * int(done * 30) + "·" * (30 - int(done * 30))
            print(f"\r{bar} step {step + 1}/{train_config.steps}  loss {loss:.3f}  {time.monotonic() - start:.0f}s", end="", flush=True)

    model, losses = train(config, train_config, report)
    print()
    model.save(args.out)
    (args.out / "training.json").write_text(json.dumps(dict(train=asdict(train_config), losses=[round(v, 4) for v in losses]), indent=None))
    print(f"loss {losses[0]:.2f} → {sum(losses[-50:]) / len(losses[-50:]):.2f}  {sparkline(losses)}")
    print(f"wrote {args.out}/model.safetensors  sha256 {file_hash(args.out / 'model.safetensors')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
