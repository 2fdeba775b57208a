"""`python -m bench.heads [--tokens 64] [--models minilm,bert-base-random,smollm2] [--repeats 3]`

Times what the Heads page computes on one sentence of the given length: the trace, the summary of
every head, rollout, attention flow (max-flow; one output token, and the whole matrix extrapolated),
the value norms of one layer, and ranking every head by ablation when the model supports `ablate=`.
Prints one line per figure (median of the repeats, in seconds).
"""

from __future__ import annotations

import argparse
import inspect
import os
import statistics
import time

from model import load_model
from model.heads import attention_flow, head_summary, model_patterns, rollout, value_weighted

WORDS = (
    "the teacher asked the class why the river bank was quiet while the money bank across the road "
    "was busy and every student wrote a short answer before the bell rang at noon"
).split()


def sentence_of(model, n_tokens: int) -> str:
    """A sentence the model's tokenizer cuts into exactly `n_tokens` tokens (specials included)."""
    words: list[str] = []
    i = 0
    while True:
        candidate = " ".join(words + [WORDS[i % len(WORDS)]])
        n = len(model.tokenizer.encode(candidate))
        if n > n_tokens:
            break
        words.append(WORDS[i % len(WORDS)])
        i += 1
        if n == n_tokens:
            return candidate
    text = " ".join(words)
    while len(model.tokenizer.encode(text)) < n_tokens:  # pad with one-token words
        text += " ."
    return text


def timed(function, repeats: int):
    """Median wall-clock seconds over `repeats` runs, and the last result. The median CPU seconds of this
    process (all its threads) go into `timed.cpu`: on a shared, loaded machine wall time is inflated by
    waiting for a core, CPU time much less."""
    times, cpu, result = [], [], None
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = function()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    timed.cpu = statistics.median(cpu)
    return statistics.median(times), result


def supports_ablation(model) -> bool:
    return "ablate" in inspect.signature(model.trace).parameters


def bert_base_random(folder: str):
    """A 12 × 12-head BERT-base-size model with random weights and MiniLM's tokenizer (timing only)."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    from model.loading import bundled_path

    BertModel(BertConfig()).save_pretrained(folder)  # the default config is BERT-base: 12 layers × 12 heads, d_model 768
    AutoTokenizer.from_pretrained(str(bundled_path("minilm"))).save_pretrained(folder)
    return load_model(folder)


def measure(name: str, n_tokens: int, repeats: int) -> dict:
    if name == "bert-base-random":
        import tempfile

        model = bert_base_random(tempfile.mkdtemp(prefix="bench-heads-"))
    else:
        model = load_model(name)
    text = sentence_of(model, n_tokens)
    out = dict(model=name, tokens=len(model.tokenizer.encode(text)), layers=model.n_layers, heads=model.n_heads)
    out["trace_s"], trace = timed(lambda: model.trace(text), repeats)
    out["trace_cpu_s"] = timed.cpu
    out["summary_s"], _ = timed(lambda: head_summary(trace), repeats)
    out["summary_cpu_s"] = timed.cpu
    patterns = model_patterns(trace)
    out["rollout_s"], _ = timed(lambda: rollout(patterns), repeats)
    out["rollout_cpu_s"] = timed.cpu
    out["value_norms_layer_s"], _ = timed(lambda: value_weighted(trace, model, 0), repeats)
    out["value_norms_layer_cpu_s"] = timed.cpu
    out["flow_one_token_s"], _ = timed(lambda: attention_flow(patterns, out["tokens"] - 1), 1)
    out["flow_one_token_cpu_s"] = timed.cpu
    out["flow_all_tokens_s_extrapolated"] = out["flow_one_token_s"] * out["tokens"]
    out["flow_all_tokens_cpu_s_extrapolated"] = out["flow_one_token_cpu_s"] * out["tokens"]
    if supports_ablation(model):
        from model.heads import rank_heads

        out["rank_all_heads_s"], _ = timed(lambda: rank_heads(model, text), 1)
        out["rank_all_heads_cpu_s"] = timed.cpu
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.heads", description=__doc__.splitlines()[2])
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--models", default="minilm,bert-base-random,smollm2", help="minilm, smollm2, bert-base-random (12 × 12 heads, random weights), toy")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    for name in [m.strip() for m in args.models.split(",") if m.strip()]:
        try:
            result = measure(name, args.tokens, args.repeats)
        except Exception as error:  # a model that is not installed or not built in yet
            print(f"{name}: skipped ({error.__class__.__name__}: {error})")
            continue
        head = f"{result['model']} ({result['layers']}×{result['heads']} heads, {result['tokens']} tokens)"
        print(head + f"  (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
        for key, value in result.items():
            if key.endswith(("_s", "_extrapolated")):
                print(f"  {key:34s} {value:9.4f}")


if __name__ == "__main__":
    main()
