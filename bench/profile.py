"""Where a rerun's server time goes: py-spy samples a real `streamlit run` while chromium flips a toggle.

    python -m bench.profile [--model toy] [--tokens 16] [--toggles 20] [--raw stacks.txt]

Starts the app (bench.browser.Server), opens the Attention page in chromium, then records the server with
py-spy (all threads, CPU only, `pip install py-spy`) while the scaling toggle is flipped `--toggles` times,
waiting for each to settle. Prints the CPU seconds per toggle, the share of samples in the script
thread and elsewhere, the project's own functions by inclusive time, and the leaf frames by package.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.browser import (
    CHART,
    monitored_page,
    Server,
    _toggle_actions,
    _wait_settled,
    attention_url,
    texts_of_tokens,
)
from bench.coldstart import ROOT

PROJECT = ("app.py", "home.py", "pages/", "ui/", "viz/", "model/")
PACKAGES = (
    "plotly",
    "_plotly_utils",
    "streamlit",
    "torch",
    "numpy",
    "tornado",
    "google/protobuf",
    "json",
    "pandas",
    "narwhals",
    "asyncio",
    "threading",
    "pyarrow",
    "PIL",
    "kaleido",
    "transformers",
    "copy",
    "inspect",
    "re",
)


def _frame_file(frame: str) -> str:
    # "function (path/to/file.py:123)"
    if "(" not in frame:
        return ""
    return frame.rsplit("(", 1)[1].rstrip(")").rsplit(":", 1)[0]


def _package(path: str) -> str:
    p = path.replace("\\", "/")
    if "site-packages/" in p:
        rest = p.split("site-packages/", 1)[1]
        for name in PACKAGES:
            if rest.startswith(name + "/") or rest == name + ".py":
                return name
        return rest.split("/", 1)[0]
    root = str(ROOT) + "/"
    if p.startswith(root):
        return "project: " + p[len(root) :].split("/", 1)[0]
    return "python: " + Path(p).name


def analyse(raw: str, rate: int) -> dict:
    """From py-spy's raw (collapsed) stacks: seconds by thread kind, project function (inclusive), leaf package."""
    threads, project, leaves, script_leaves = collections.Counter(), collections.Counter(), collections.Counter(), collections.Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        in_script = any("script_runner" in f for f in frames)
        threads["script thread (the page's rerun)" if in_script else "other threads (server, websocket, sending)"] += n
        seen = set()
        for frame in frames:
            path = _frame_file(frame)
            rel = path.replace(str(ROOT) + "/", "")
            if rel.startswith(PROJECT) and path.startswith(str(ROOT)):
                name = f"{frame.split(' (', 1)[0]} ({rel})"
                if name not in seen:
                    seen.add(name)
                    project[name] += n
        leaf = _package(_frame_file(frames[-1]))
        leaves[leaf] += n
        if in_script:
            script_leaves[leaf] += n
    to_s = lambda c: {k: v / rate for k, v in c.most_common()}  # noqa: E731
    return dict(seconds=total / rate, threads=to_s(threads), project=to_s(project), leaves=to_s(leaves), script_leaves=to_s(script_leaves))


def profile(model: str = "toy", tokens: int = 16, toggles: int = 20, rate: int = 250, raw_copy: Path | None = None) -> dict:
    pyspy = shutil.which("py-spy")
    if not pyspy:
        raise SystemExit("py-spy is not installed: pip install py-spy")
    text = texts_of_tokens(model, (tokens,))[tokens]
    server = Server()
    raw_path = Path(tempfile.mkstemp(suffix=".txt")[1])
    try:
        with monitored_page() as page:
            page.goto(attention_url(server.url, model, text))
            page.wait_for_selector(CHART, timeout=180_000)
            _wait_settled(page, 0, timeout_s=180, expect_change=False)
            scaling, _ = _toggle_actions(page)["scaling"]
            scaling()
            _wait_settled(page, page.evaluate("performance.now()"), expect_change=False)  # warm both settings
            cpu0 = server.cpu()
            spy = subprocess.Popen(
                [
                    pyspy,
                    "record",
                    "--pid",
                    str(server.pid),
                    "--rate",
                    str(rate),
                    "--format",
                    "raw",
                    "--threads",
                    "--full-filenames",
                    "--gil",
                    "--output",
                    str(raw_path),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(1.0)
            wall = time.perf_counter()
            for _ in range(toggles):
                _wait_settled(page, scaling())
            wall = time.perf_counter() - wall
            cpu = server.cpu() - cpu0
            spy.send_signal(2)  # SIGINT: py-spy writes its output and stops
            spy.wait(timeout=60)
        raw = raw_path.read_text()
        result = analyse(raw, rate)
        result.update(model=model, tokens=tokens, toggles=toggles, cpu_per_toggle_s=cpu / toggles, wall_s=wall, load_average=os.getloadavg())
        if raw_copy:
            raw_copy.write_text(raw)
        return result
    finally:
        server.stop()
        raw_path.unlink(missing_ok=True)


def format_profile(result: dict, top: int = 25) -> str:
    per = lambda s: s / result["toggles"]  # noqa: E731
    lines = [
        f"{result['model']}, {result['tokens']} tokens, {result['toggles']} scaling toggles; load average {[round(x, 2) for x in result['load_average']]}",
        f"server CPU per toggle (/proc): {result['cpu_per_toggle_s']:.3f} s; sampled by py-spy: {per(result['seconds']):.3f} s",
        "by thread (s per toggle):",
    ]
    lines += [f"  {per(v):.3f}  {k}" for k, v in result["threads"].items()]
    lines.append(f"project functions, inclusive (s per toggle, top {top}):")
    lines += [f"  {per(v):.3f}  {k}" for k, v in list(result["project"].items())[:top]]
    lines.append("where the CPU is spent, by the package of the innermost frame (all threads):")
    lines += [f"  {per(v):.3f}  {k}" for k, v in list(result["leaves"].items())[:15]]
    lines.append("the same, script thread only:")
    lines += [f"  {per(v):.3f}  {k}" for k, v in list(result["script_leaves"].items())[:12]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="toy")
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--toggles", type=int, default=20)
    parser.add_argument("--raw", type=Path, help="also keep py-spy's raw stacks here (for a flame graph tool)")
    args = parser.parse_args(argv)
    print(format_profile(profile(args.model, args.tokens, args.toggles, raw_copy=args.raw)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
