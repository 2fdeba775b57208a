"""`python -m bench.corpus [--models toy,minilm,smollm2] [--sentences 500] [--top 20] [--repeats 1] [--python-memory]`

Times the corpus pass of the Corpus page (`model.heads.corpus_summary`, issue 44) on the classroom
sentences and measures the memory it adds. Targets for 500 sentences: toy ≤ 5 s, MiniLM ≤ 30 s, SmolLM2
≤ 120 s, and the pass adds ≤ 300 MB on SmolLM2.

Memory, three ways, each over the pass alone (the model loaded and one small pass run before it):
- RSS: the process's resident memory sampled every 2 ms by a thread, peak minus the value just before
  the pass. It counts every allocation (torch's included) and also memory freed but kept by the C
  allocator, so it is an upper bound of what the pass needs at once.
- tracemalloc (`--python-memory`, one more run: tracing slows Python down): the peak of Python's own
  allocations (torch tensors are not among them).
- the summary: bytes of the tensors it keeps (what outlives the pass).
Wall time is inflated on a loaded machine (waiting for a core); the CPU seconds of the process are printed
beside it, with the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
import tracemalloc

import psutil

TARGETS_S = {"toy": 5.0, "minilm": 30.0, "smollm2": 120.0}
TARGET_MEMORY_MB = {"smollm2": 300.0}
SAMPLE_S = 0.002


class PeakRSS:
    """The peak resident memory of this process while the block runs, sampled by a thread."""

    def __enter__(self):
        self.process = psutil.Process()
        self.before = self.process.memory_info().rss
        self.peak = self.before
        self.running = True
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self):
        while self.running:
            self.peak = max(self.peak, self.process.memory_info().rss)
            time.sleep(SAMPLE_S)

    def __exit__(self, *exc):
        self.running = False
        self.thread.join()
        self.peak = max(self.peak, self.process.memory_info().rss)

    @property
    def added_mb(self) -> float:
        return (self.peak - self.before) / 2**20


def measure(name: str, sentences: list[str], top: int, repeats: int, python_memory: bool = False) -> dict:
    from model import load_model
    from model.heads import corpus_summary

    start = time.perf_counter()
    model = load_model(name)
    load_s = time.perf_counter() - start
    corpus_summary(model, sentences[:8], top=top)  # warm-up: lazy imports, first allocations
    walls, cpus, added, calls = [], [], [], []
    summary = None
    for _ in range(repeats):
        calls.clear()
        with PeakRSS() as rss:
            start, start_cpu = time.perf_counter(), time.process_time()
            summary = corpus_summary(model, sentences, top=top, progress=lambda done, total: calls.append(done))
            walls.append(time.perf_counter() - start)
            cpus.append(time.process_time() - start_cpu)
        added.append(rss.added_mb)
    python_peak = None
    if python_memory:
        tracemalloc.start()
        corpus_summary(model, sentences, top=top)
        python_peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return dict(
        model=name,
        heads=f"{model.n_layers}×{model.n_heads}",
        load_s=load_s,
        sentences=summary.n_sentences,
        query_tokens=summary.n_rows,
        batches=len(calls) - 1,  # progress is also called once before the first batch
        wall_s=statistics.median(walls),
        cpu_s=statistics.median(cpus),
        rss_added_mb=max(added),
        python_peak_mb=python_peak,
        summary_mb=summary.stored_bytes() / 2**20,
        load_average=os.getloadavg()[0],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.corpus", description=__doc__.splitlines()[2])
    parser.add_argument("--models", default="toy,minilm,smollm2")
    parser.add_argument("--sentences", type=int, default=500)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--python-memory", action="store_true", help="one more run under tracemalloc: the peak of Python's own allocations")
    args = parser.parse_args(argv)

    import torch

    from model.corpus_heads import classroom_sentences
    from ui.view import torch_threads

    torch.set_num_threads(torch_threads())  # as the app's process does
    sentences = classroom_sentences(args.sentences)
    print(
        f"corpus pass over {len(sentences)} classroom sentences, top {args.top}; torch threads {torch.get_num_threads()}, "
        f"{os.cpu_count()} cores; median of {args.repeats} run(s)"
    )
    print(f"{'model':<8} {'heads':>6} {'tokens':>7} {'batches':>7} {'wall':>8} {'CPU':>8} {'target':>7}  {'RSS +':>8} {'Python':>7} {'kept':>6}  verdict  load")
    failed = False
    for name in [m.strip() for m in args.models.split(",") if m.strip()]:
        try:
            row = measure(name, sentences, args.top, args.repeats, args.python_memory)
        except Exception as error:  # a model that is not installed
            print(f"{name}: skipped ({error.__class__.__name__}: {error})")
            continue
        target = TARGETS_S.get(name)
        memory_target = TARGET_MEMORY_MB.get(name)
        met = (target is None or row["wall_s"] <= target) and (memory_target is None or row["rss_added_mb"] <= memory_target)
        failed |= not met
        python = "–" if row["python_peak_mb"] is None else f"{row['python_peak_mb']:.1f}MB"
        print(
            f"{name:<8} {row['heads']:>6} {row['query_tokens']:>7,} {row['batches']:>7} {row['wall_s']:>7.1f}s {row['cpu_s']:>7.1f}s "
            f"{'≤' + format(target, 'g') + 's' if target else '':>7}  {row['rss_added_mb']:>6.0f}MB {python:>7} {row['summary_mb']:>4.1f}MB  "
            f"{'met' if met else 'NOT met':<7}  {row['load_average']:.1f}"
        )
    print("memory: RSS + = peak resident memory during the pass minus before it (≤ 300 MB on SmolLM2); Python = tracemalloc peak; kept = the summary's tensors")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
