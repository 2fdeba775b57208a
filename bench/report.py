"""Targets, PASS/MISS checks and the plain-text report of `bench.run.run`'s data."""

from __future__ import annotations

import json
import math
from pathlib import Path

MB = 1_000_000  # decimal units throughout
GB = 1_000_000_000

RATIO_TARGET = 1.3  # trace time ≤ 1.3 × bare forward time, at 512 tokens
RATIO_AT = 512
TOGGLE_SMALL, TOGGLE_SMALL_UP_TO = 0.3, 64  # < 0.3 s at 64 tokens (and fewer)
TOGGLE_LARGE = 1.5  # < 1.5 s at 512 tokens (sizes between 64 and 512 are held to it too)
PAGE_BYTES = 5 * MB  # ≤ 5 MB of figure JSON per page render (at 512 tokens, so at every size)
MEMORY_BYTES = 1.5 * GB  # < 1.5 GB peak RSS for a 512-token DistilBERT-size trace
MEMORY_AT = 512
BERTVIZ_RATIO = 50.0  # bertviz's HTML ≥ 50 × our overview figure's JSON, at 512 tokens (the bound)
BERTVIZ_AT = 512
COLD_START_S = 10.0  # streamlit run → first chart


def toggle_target(tokens: int) -> float:
    return TOGGLE_SMALL if tokens <= TOGGLE_SMALL_UP_TO else TOGGLE_LARGE


def checks(results: dict) -> list[dict]:
    """Every figure that has a target: {section, model, tokens, what, value, target, ok}."""
    out = []

    def add(section, model, tokens, what, value, target, ok):
        out.append(dict(section=section, model=model, tokens=tokens, what=what, value=value, target=target, ok=bool(ok)))

    for kind, entry in results.get("models", {}).items():
        for size, row in entry.get("sizes", {}).items():
            n = int(size)
            forward = row.get("forward")
            if forward and n == RATIO_AT:
                add("forward", kind, n, "trace / forward", forward["ratio"], f"≤ {RATIO_TARGET:g}×", forward["ratio"] <= RATIO_TARGET)
            for toggle, timing in row.get("toggles", {}).items():
                target = toggle_target(n)
                add("toggles", kind, n, f"toggle {toggle}", timing["seconds"], f"< {target:g} s", timing["seconds"] < target)
            for page, payload in row.get("pages", {}).items():
                add("pages", kind, n, f"{page} page bytes", payload["bytes"], f"≤ {PAGE_BYTES / MB:g} MB", payload["bytes"] <= PAGE_BYTES)
        memory = entry.get("memory")
        if memory and "error" not in memory and memory.get("tokens") == MEMORY_AT:
            peak = memory["peak_after_trace"]
            add("memory", kind, MEMORY_AT, "peak RSS after trace", peak, f"< {MEMORY_BYTES / GB:g} GB", peak < MEMORY_BYTES)
        bertviz = entry.get("bertviz") or {}
        for size, row in (bertviz.get("sizes") or {}).items():
            if "size_ratio" in row and int(size) == BERTVIZ_AT:
                add(
                    "bertviz",
                    kind,
                    int(size),
                    "bertviz HTML / our overview JSON",
                    row["size_ratio"],
                    f"≥ {BERTVIZ_RATIO:g}×",
                    row["size_ratio"] >= BERTVIZ_RATIO,
                )
    cold = results.get("cold_start")
    if cold and "first_chart_s" in cold:
        add("coldstart", "app", None, "cold start → first chart", cold["first_chart_s"], f"≤ {COLD_START_S:g} s", cold["first_chart_s"] <= COLD_START_S)
    return out


# ------------------------------------------------------------------------------------ formatting


def _s(seconds: float | None) -> str:
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "—"
    if seconds < 0.01:
        return f"{seconds * 1000:.2f} ms"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.2f} s"


def _mb(n: float | None) -> str:
    if n is None:
        return "—"
    if n < 10_000:
        return f"{n / 1000:.1f} kB"
    return f"{n / MB:.2f} MB"


def _pct(share: float | None) -> str:
    if share is None or share != share:
        return "—"
    return f"{share:.0%}"


def _verdict(ok: bool | None) -> str:
    return "—" if ok is None else ("PASS" if ok else "MISS")


def _table(header: list[str], rows: list[list[str]], right: set[int] | None = None) -> list[str]:
    right = right if right is not None else set(range(1, len(header)))
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]

    def line(cells):
        return "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def format_report(results: dict) -> str:
    m = results.get("machine", {})
    o = results.get("options", {})
    lines = [
        f"Benchmark: attention app, server side · app at commit {m.get('commit', 'unknown')}",
        f"Python {m.get('python')} · torch {m.get('torch')} ({m.get('torch_threads')} threads) · transformers "
        f"{m.get('transformers')} · plotly {m.get('plotly')} · streamlit {m.get('streamlit')} · {m.get('cores')} cores · "
        f"load average at start {m.get('load_average')}",
        f"sizes {o.get('sizes')} tokens · medians of {o.get('forward_repeats')} (forward/trace) and {o.get('repeats')} "
        f"(toggles, pages) runs after a warm-up{' · QUICK run' if o.get('quick') else ''} · MB = 10^6 bytes, GB = 10^9",
    ]
    others = results.get("others_cpu")
    if others is not None:
        lines.append(
            f"other processes used {_pct(others)} of the machine's CPU during the run (load average at end "
            f"{results.get('load_average_at_end')})"
            + (": timings are inflated by contention, compare with a quiet run" if others == others and others > 0.1 else "")
        )
    if results.get("hurried_from"):
        lines.append(f"time budget reached at {results['hurried_from']}: from there on every measurement is a single run")
    models = results.get("models", {})
    for kind, entry in models.items():
        built = f", built in {_s(entry['build_s'])}" if "build_s" in entry else ""
        lines.append(
            f"model {kind}: {entry.get('n_layers')} layers × {entry.get('n_heads')} heads, d_model {entry.get('d_model')}"
            f"{built}, loaded in {_s(entry.get('load_s'))}"
        )

    # 1 ------------------------------------------------------------------------------------------
    rows = []
    for kind, entry in models.items():
        for size, row in entry.get("sizes", {}).items():
            f = row.get("forward")
            if not f:
                continue
            judged = int(size) == RATIO_AT
            rows.append(
                [
                    kind,
                    size,
                    _s(f["forward_s"]),
                    _s(f["trace_s"]),
                    f"{f['ratio']:.2f}×",
                    str(f.get("runs", "")),
                    _pct(row.get("others_cpu")),
                    f"≤ {RATIO_TARGET:g}×" if judged else "(at 512)",
                    _verdict(f["ratio"] <= RATIO_TARGET if judged else None),
                ]
            )
    if rows:
        lines += ["", f"1. Bare forward vs model.trace (median wall time; target: trace ≤ {RATIO_TARGET:g}× forward at {RATIO_AT} tokens)"]
        lines += [
            "   forward and trace timed alternately; runs = pairs measured; others' CPU = share of the machine other "
            "processes used while this model and size were measured (all parts)"
        ]
        lines += _table(["model", "tokens", "forward", "trace", "ratio", "runs", "others' CPU", "target", ""], rows)

    # 2 ------------------------------------------------------------------------------------------
    rows = []
    for kind, entry in models.items():
        for size, row in entry.get("sizes", {}).items():
            for toggle, t in row.get("toggles", {}).items():
                target = toggle_target(int(size))
                run_label = "re-run" if t.get("reruns_model") else ("view" if kind != "toy" else "cached")
                rows.append(
                    [
                        kind,
                        size,
                        toggle,
                        _s(t["seconds"]),
                        f"{run_label} {_s(t.get('run_s'))}",
                        _s(t.get("figures_s")),
                        _s(t.get("json_s")),
                        f"< {target:g} s",
                        _verdict(t["seconds"] < target),
                    ]
                )
    if rows:
        lines += [
            "",
            f"2. Toggle → Attention page figures serialised (server seconds per change; target < {TOGGLE_SMALL:g} s up to "
            f"{TOGGLE_SMALL_UP_TO} tokens, < {TOGGLE_LARGE:g} s at 512 — sizes in between held to the 512 bound)",
            "   run = the model's forward pass under the new mask/scaling/temperature; figures = "
            "stages_of_head (+ pattern_of_head for long inputs) + scaling_figures + overview_figure; json = plotly.io.to_json(viz.plain.plotly_dict(fig))",
        ]
        lines += _table(["model", "tokens", "toggle", "total", "run", "figures", "json", "target", ""], rows, right={1, 3, 4, 5, 6})

    # 3 ------------------------------------------------------------------------------------------
    rows = []
    for kind, entry in models.items():
        for size, row in entry.get("sizes", {}).items():
            for page, p in row.get("pages", {}).items():
                largest = max(p["figures"].items(), key=lambda kv: kv[1]) if p["figures"] else ("—", 0)
                rows.append(
                    [
                        kind,
                        size,
                        page,
                        _mb(p["bytes"]),
                        str(len(p["figures"])),
                        f"{largest[0]} {_mb(largest[1])}",
                        _s(p["seconds"]),
                        _s(p.get("figures_s")),
                        _s(p.get("json_s")),
                        f"≤ {PAGE_BYTES / MB:g} MB",
                        _verdict(p["bytes"] <= PAGE_BYTES),
                    ]
                )
    if rows:
        lines += [
            "",
            f"3. Figure JSON per page render, and server time to build + serialise it (target ≤ {PAGE_BYTES / MB:g} MB per page)",
            "   positional page drawn with its sliders at the input's positions and min(d_model, 512) dimensions (the "
            "page's defaults are 64 × 64); embeddings page with 'bank' and its default reference words",
        ]
        lines += _table(
            ["model", "tokens", "page", "JSON", "figs", "largest figure", "server", "build", "json", "target", ""],
            rows,
            right={1, 3, 4, 6, 7, 8},
        )

    # 4 ------------------------------------------------------------------------------------------
    rows = []
    for kind, entry in models.items():
        mem = entry.get("memory")
        if not mem:
            continue
        if "error" in mem:
            rows.append([kind, "—", "—", "—", "—", "—", f"error: {mem['error']}", "", ""])
            continue
        judged = mem["tokens"] == MEMORY_AT
        rows.append(
            [
                kind,
                str(mem["tokens"]),
                _mb(mem["peak_after_imports"]),
                _mb(mem["peak_after_load"]),
                _mb(mem["peak_after_trace"]),
                _mb(mem["peak_after_attention_page"]),
                f"< {MEMORY_BYTES / GB:g} GB" if judged else "(at 512)",
                _verdict(mem["peak_after_trace"] < MEMORY_BYTES if judged else None),
                f"{_mb(mem.get('ru_maxrss_at_start'))} → {_mb(mem.get('ru_maxrss_at_end'))}",
            ]
        )
    if rows:
        lines += [
            "",
            f"4. Peak resident memory (ru_maxrss) of a fresh process per model (target < {MEMORY_BYTES / GB:g} GB after a {MEMORY_AT}-token trace)",
            "   peaks are the process's VmHWM: getrusage's ru_maxrss starts a child at its parent's RSS (Linux keeps it "
            "across fork + exec), shown in the last column",
        ]
        lines += _table(["model", "tokens", "imports", "+ model", "+ trace", "+ Attention page", "target", "", "ru_maxrss start → end"], rows)

    # 5 ------------------------------------------------------------------------------------------
    for kind, entry in models.items():
        if "bertviz" not in entry:
            continue
        bv = entry["bertviz"]
        lines += [
            "",
            f"5. bertviz model_view HTML vs our overview_figure JSON, same {kind} attentions (target ≥ {BERTVIZ_RATIO:g}× smaller at {BERTVIZ_AT} tokens)",
        ]
        if not bv.get("available"):
            lines.append("   bertviz not installed (pip install bertviz==1.4.1 to compare)")
            continue
        rows = []
        for size, r in bv.get("sizes", {}).items():
            if "error" in r:
                rows.append([size, f"error: {r['error']}", "", "", _mb(r.get("ours_bytes")), _s(r.get("ours_s")), "", "", "", ""])
                continue
            rows.append(
                [
                    size,
                    _mb(r["bertviz_bytes"]),
                    _s(r["bertviz_s"]),
                    _mb(r.get("bertviz_peak_rss")),
                    _mb(r["ours_bytes"]),
                    _s(r["ours_s"]),
                    f"{r['size_ratio']:.1f}×",
                    f"{r['time_ratio']:.1f}×",
                    f"≥ {BERTVIZ_RATIO:g}×" if int(size) == BERTVIZ_AT else f"(at {BERTVIZ_AT})",
                    _verdict(r["size_ratio"] >= BERTVIZ_RATIO if int(size) == BERTVIZ_AT else None),
                ]
            )
        lines.append("   bertviz in a fresh process per size (its peak RSS shown); time = model_view(..., html_action='return') vs overview_figure + its JSON")
        lines += _table(
            ["tokens", "bertviz HTML", "bertviz time", "bertviz peak RSS", "overview JSON", "overview time", "size ratio", "time ratio", "target", ""],
            rows,
            right=set(range(9)),
        )

    # 6 ------------------------------------------------------------------------------------------
    cold = results.get("cold_start")
    if cold is not None:
        lines += [
            "",
            f"6. Cold start: streamlit run app.py (HF_HUB_OFFLINE=1) → {cold.get('path', '/Attention')} in chromium "
            f"(target ≤ {COLD_START_S:g} s to the first chart)",
        ]
        if "first_chart_s" in cold:
            lines += _table(
                ["server answers health", "title shown", "first chart", "warm reload", "imports alone", "target", ""],
                [
                    [
                        _s(cold.get("server_ready_s")),
                        _s(cold.get("title_s")),
                        _s(cold["first_chart_s"]),
                        _s(cold.get("warm_reload_s")),
                        _s(cold.get("imports_s")),
                        f"≤ {COLD_START_S:g} s",
                        _verdict(cold["first_chart_s"] <= COLD_START_S),
                    ]
                ],
                right=set(range(6)),
            )
            lines.append(f"   (chromium launched beforehand in {_s(cold.get('browser_launch_s'))}, not counted)")
        else:
            lines.append(f"   not measured: {cold.get('error', 'unknown error')}")
            if cold.get("server_log_tail"):
                lines += ["   server log: " + line for line in cold["server_log_tail"].splitlines()[-5:]]

    notes = results.get("notes") or {}
    if notes:
        lines += ["", "Notes"]
        lines += [f"  {where}: {what}" for where, what in notes.items()]

    # summary ------------------------------------------------------------------------------------
    found = checks(results)
    misses = [c for c in found if not c["ok"]]
    lines += ["", f"Summary: {len(found) - len(misses)} PASS, {len(misses)} MISS of {len(found)} targets · run took {_s(results.get('elapsed_s'))}"]
    for c in misses:
        where = f"{c['model']} {c['tokens']} tokens" if c["tokens"] else c["model"]
        lines.append(f"  MISS {c['section']}: {where}: {c['what']} = {_value(c)} (target {c['target']})")
    return "\n".join(lines)


def _value(check: dict) -> str:
    value = check["value"]
    if check["section"] == "pages":
        return _mb(value)
    if check["section"] == "memory":
        return _mb(value)
    if check["section"] in ("forward", "bertviz"):
        return f"{value:.2f}×"
    return _s(value)


def write_json(results: dict, path: str | Path) -> None:
    data = dict(results, checks=checks(results))
    Path(path).write_text(json.dumps(data, indent=1, default=str))
