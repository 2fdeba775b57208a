"""The server's resident memory over many long texts: `python -m bench.memory [--texts 40] [--tokens 500]`.

One browser tab on the Attention page of a fresh `streamlit run app.py` (its default memory budget,
ATTENTION_VIZ_MEMORY_MB) reads `--texts` distinct texts of exactly `--tokens` tokens with SmolLM2, then as
many with MiniLM, one after another, typed into the sentence box as a student would. The MiniLM half opens
the page's link for MiniLM in the same tab: a new session, while Streamlit keeps the SmolLM2 session for a
reconnection (server.disconnectedSessionTTL). After each text has been drawn the server process's resident
memory (VmRSS) is read, with its parts: anonymous memory and pages of mapped files (shared libraries, a
model's safetensors weights; `resident_parts`). The curve is printed, with its plateau
(the median of each model's last quarter) and its peak; the run exits with 1 and prints MISSED when the
peak passes `LIMIT_MB` (the cache's budget bounds what it keeps, not the models and what Python holds).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

from bench.browser import CHART, ERRORS, Server, _input_time, _wait_settled, attention_url, monitored_page, rss_mb

LIMIT_MB = 2560  # 2.5 GB per process: four app processes and their browsers' share fit in 16 GB
MODELS = ("smollm2", "minilm")
WORDS = (
    "the farmer sat on the river bank with his dog and a woman took money from the bank in town while "
    "children played near the water a bird sang above them old boats drifted past green fields under a "
    "grey sky the teacher wrote a poem about light and fair weather bats flew out of the cave at night"
).split()


def distinct_texts(model_name: str, n_texts: int, n_tokens: int) -> list[str]:
    """`n_texts` different texts, each exactly `n_tokens` tokens for `model_name` (special tokens included):
    words drawn at random (a seed per text) until the count is reached."""
    assert n_tokens >= 8
    from model import load_model

    model = load_model(model_name)
    count = lambda text: len(model.tokenize([text])[0][0])  # noqa: E731
    texts = []
    for index in range(n_texts):
        rng = random.Random(index)
        words = [rng.choice(WORDS) for _ in range(n_tokens * 3 // 4)]  # fewer tokens than wanted: the first words uncounted
        while True:
            word = rng.choice(WORDS)
            got = count(" ".join([*words, word]))
            if got == n_tokens:
                texts.append(" ".join([*words, word]))
                break
            if got < n_tokens:
                words.append(word)
            elif len(words) > 1 and count(" ".join(words[:-1])) < n_tokens - 1:
                words.pop()  # a word of several tokens overshot: try another in its place
    assert len(set(texts)) == n_texts
    return texts


def resident_parts(pid: int) -> dict:
    """The process's resident memory in MB by kind (/proc/<pid>/smaps_rollup): `anon`, what the process
    allocated (the C heap, Python's objects, tensors), and `file`, pages of mapped files (the shared
    libraries, and a model's safetensors weights, which are mapped rather than copied)."""
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value = line.split(":", 1)
        fields[name] = int(value.split()[0]) / 1024
    return dict(anon_mb=fields["Anonymous"], file_mb=fields["Rss"] - fields["Anonymous"] - fields.get("Shmem", 0))


def read_texts(page, texts: list[str], model: str, server: Server, log) -> list[dict]:
    """Each text typed into the Attention page's sentence box (one session, as a student keeps typing),
    drawn, then the server's RSS read."""
    rows = []
    box = page.get_by_role("textbox", name="Sentences, one per line")
    for index, text in enumerate(texts):
        started = time.monotonic()
        box.fill(text)
        box.press("Control+Enter")
        _wait_settled(page, _input_time(page), timeout_s=600)
        row = dict(index=index, model=model, rss_mb=rss_mb(server.pid), **resident_parts(server.pid), seconds=time.monotonic() - started)
        row["errors"] = page.locator(ERRORS).count()
        rows.append(row)
        parts = f"anon {row['anon_mb']:.0f}, files {row['file_mb']:.0f}"
        log(f"  {model:<8} text {index + 1:>2}: {row['rss_mb']:6.0f} MB ({parts}; {row['seconds']:.1f} s){'  error box!' if row['errors'] else ''}")
    return rows


def plateau(rows: list[dict]) -> float:
    """The median RSS of the last quarter of `rows` (at least one)."""
    tail = rows[-max(1, len(rows) // 4) :]
    return statistics.median(r["rss_mb"] for r in tail)


def run(n_texts: int = 40, n_tokens: int = 500, models: tuple[str, ...] = MODELS, log=print) -> dict:
    """The curve (one row per text: index, model, RSS MB), the plateau per model and the peak."""
    texts = {model: distinct_texts(model, n_texts, n_tokens) for model in models}
    server = Server()
    try:
        start_mb = rss_mb(server.pid)
        rows: list[dict] = []
        with monitored_page() as page:
            for model in models:
                page.goto(attention_url(server.url, model, "the cat sat on the mat ."), timeout=600_000)
                page.wait_for_selector(CHART, timeout=600_000)
                _wait_settled(page, 0, timeout_s=600, expect_change=False)
                log(f"  {model} loaded: {rss_mb(server.pid):.0f} MB")
                rows += read_texts(page, texts[model], model, server, log)
        exceptions = server.exceptions()
    finally:
        server.stop()
    peak = max(r["rss_mb"] for r in rows)
    return dict(
        texts=n_texts,
        tokens=n_tokens,
        start_mb=start_mb,
        curve=rows,
        plateau_mb={model: plateau([r for r in rows if r["model"] == model]) for model in models},
        peak_mb=peak,
        limit_mb=LIMIT_MB,
        met=peak <= LIMIT_MB,
        error_boxes=sum(r["errors"] for r in rows),
        server_exceptions=exceptions[:10],
    )


def format_report(result: dict) -> str:
    lines = [f"Server RSS over {result['texts']} distinct {result['tokens']}-token texts per model (Attention page, one tab):"]
    lines.append("  text  model     RSS MB  anon MB  files MB")
    lines += [f"  {r['index'] + 1:>4}  {r['model']:<8} {r['rss_mb']:7.0f}  {r['anon_mb']:7.0f}  {r['file_mb']:8.0f}" for r in result["curve"]]
    lines.append(f"  at start {result['start_mb']:.0f} MB; " + "; ".join(f"plateau with {m} {mb:.0f} MB" for m, mb in result["plateau_mb"].items()))
    verdict = "meets" if result["met"] else "MISSED"
    lines.append(f"  peak {result['peak_mb']:.0f} MB [{verdict} ≤ {result['limit_mb']} MB]")
    lines.append(f"  error boxes {result['error_boxes']}; exceptions in the server's log {len(result['server_exceptions'])}")
    lines += [f"    {line}" for line in result["server_exceptions"][:5]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.memory", description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=40, help="distinct texts per model (default 40)")
    parser.add_argument("--tokens", type=int, default=500, help="tokens per text (default 500)")
    parser.add_argument("--models", default=",".join(MODELS), help="models in turn (default smollm2,minilm)")
    args = parser.parse_args(argv)
    models = tuple(m.strip() for m in args.models.split(",") if m.strip())
    result = run(args.texts, args.tokens, models, log=lambda message: print(f"[bench.memory] {message}", file=sys.stderr, flush=True))
    print(format_report(result))
    return 0 if result["met"] and not result["error_boxes"] else 1


if __name__ == "__main__":
    sys.exit(main())
