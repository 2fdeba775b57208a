"""Measurements that need a process of their own; each prints one JSON line.

python -m bench.worker memory --model toy --tokens 512
python -m bench.worker memory --model distilbert --folder DIR --tokens 512
python -m bench.worker bertviz --folder DIR --tokens 512
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import bench  # noqa: F401  (offline, quiet)


def ru_maxrss_bytes() -> int:
    """getrusage's high-water mark of resident memory (KiB on Linux).

    Linux carries it across fork + exec: a process started by a large parent begins with the
    parent's RSS as its "peak". So the peak of this process alone is read from VmHWM below.
    """
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _status(field: str) -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def peak_rss_bytes() -> int:
    """This process's own peak resident memory (VmHWM, set anew at exec); ru_maxrss where /proc is missing."""
    return _status("VmHWM") or ru_maxrss_bytes()


def current_rss_bytes() -> int:
    return _status("VmRSS")


def memory(kind: str, tokens: int, folder: str | None) -> dict:
    started_with = ru_maxrss_bytes()  # inherited from the parent, see ru_maxrss_bytes
    import torch  # noqa: F401  (imports first, to tell them apart from the model and the trace)
    import transformers  # noqa: F401

    import viz.content  # noqa: F401
    from bench import workload
    from viz.content.settings import Settings

    after_imports = peak_rss_bytes()
    model = workload.load(kind, Path(folder) if folder else None)
    text = workload.text_of_tokens(model, tokens)
    after_load = peak_rss_bytes()
    t0 = time.perf_counter()
    trace = workload.trace_for(model, [text], Settings())
    trace_s = time.perf_counter() - t0
    after_trace = peak_rss_bytes()
    rss_holding_trace = current_rss_bytes()
    figures = workload.attention_figures(trace, Settings())
    payload = sum(workload.serialise(figures).values())
    after_figures = peak_rss_bytes()
    return dict(
        model=kind,
        tokens=int(trace.input_ids.shape[1]),
        peak_after_imports=after_imports,
        peak_after_load=after_load,
        peak_after_trace=after_trace,
        rss_holding_trace=rss_holding_trace,
        peak_after_attention_page=after_figures,
        ru_maxrss_at_start=started_with,
        ru_maxrss_at_end=ru_maxrss_bytes(),
        trace_s=trace_s,
        attention_page_bytes=payload,
    )


def bertviz(tokens: int, folder: str) -> dict:
    import torch

    from bench import workload

    try:
        from bertviz import model_view
    except ImportError:
        return dict(available=False)
    model = workload.load("distilbert", Path(folder))
    text = workload.text_of_tokens(model, tokens)
    input_ids, key_valid = workload.bare_inputs(model, text)
    with torch.no_grad():
        output = model.module(input_ids=input_ids, attention_mask=key_valid.long(), output_attentions=True)
    token_texts = [t.text for t in model.tokenize([text])[0][0]]
    t0 = time.perf_counter()
    html = model_view(output.attentions, token_texts, html_action="return")
    seconds = time.perf_counter() - t0
    data = html.data if hasattr(html, "data") else str(html)
    return dict(available=True, tokens=len(token_texts), html_bytes=len(data.encode("utf-8")), seconds=seconds, peak_rss=peak_rss_bytes())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.worker")
    sub = parser.add_subparsers(dest="what", required=True)
    mem = sub.add_parser("memory")
    mem.add_argument("--model", choices=("toy", "distilbert"), required=True)
    mem.add_argument("--tokens", type=int, required=True)
    mem.add_argument("--folder")
    viz = sub.add_parser("bertviz")
    viz.add_argument("--tokens", type=int, required=True)
    viz.add_argument("--folder", required=True)
    args = parser.parse_args(argv)
    if args.what == "memory":
        result = memory(args.model, args.tokens, args.folder)
    else:
        result = bertviz(args.tokens, args.folder)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
