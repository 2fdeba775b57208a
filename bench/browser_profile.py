"""Where the browser's time goes: a Chromium performance trace of the Attention page's toggles.

    python -m bench.browser_profile [--throttle 4] [--tokens 16,512] [--toggles 6] [--model toy] [--switches]

Starts the app (bench.browser.Server), opens the Attention page at each length in Debian's chromium with
its CPU slowed `--throttle` times (CDP), flips the scaling toggle `--toggles` times (waiting for each to
settle; with `--switches`, goes to the Tokens page and back to Attention by the sidebar's links instead)
while Chromium records a trace (Playwright's `browser.start_tracing`, the DevTools timeline's
categories), and prints, per toggle, the page's main-thread time by kind of work: each script's own
JavaScript (plotly.js, Streamlit's frontend, the app's components), style and layout, paint and
compositing, parsing, garbage collection, and the rest. Self times: a task's time minus its children's.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys

from bench.browser import CHART, Server, _wait_settled, attention_url, monitored_page, texts_of_tokens

CATEGORIES = "devtools.timeline,disabled-by-default-devtools.timeline,v8.execute,blink.user_timing"
JS_EVENTS = {
    "FunctionCall",
    "EvaluateScript",
    "v8.compile",
    "v8.compileModule",
    "v8.evaluateModule",
    "TimerFire",
    "FireAnimationFrame",
    "EventDispatch",
    "RunMicrotasks",
    "V8.Execute",
    "v8.run",
    "v8.callFunction",
    "XHRReadyStateChange",
    "FireIdleCallback",
    "v8.produceCache",
}
KINDS = {
    "style and layout": {
        "UpdateLayoutTree",
        "Layout",
        "RecalculateStyles",
        "ScheduleStyleRecalculation",
        "InvalidateLayout",
        "UpdateLayerTree",
        "HitTest",
        "IntersectionObserverController::computeIntersections",
    },
    "paint and composite": {
        "Paint",
        "PaintImage",
        "CompositeLayers",
        "Layerize",
        "PrePaint",
        "RasterTask",
        "Commit",
        "DecodeImage",
        "ImageDecodeTask",
        "Decode Image",
        "UpdateLayer",
    },
    "parse": {"ParseHTML", "ParseAuthorStyleSheet", "ParseScriptOnMainThread", "v8.parseOnBackground", "ResourceReceivedData"},
    "garbage collection": {
        "MinorGC",
        "MajorGC",
        "V8.GCScavenger",
        "V8.GCFinalizeMC",
        "BlinkGC.AtomicPhase",
        "V8.GC_MC_BACKGROUND_MARKING",
        "ThreadState::performIdleLazySweep",
        "V8.GCIncrementalMarking",
        "V8.GCCompactor",
        "BlinkGC.CompleteSweep",
        "CppGC.AtomicMark",
        "V8.GCMarkCompactor",
        "V8.GCFinalizeMCReduceMemory",
        "V8.GC_SCAVENGER",
        "V8.GCIncrementalMarkingFinalize",
        "V8.GCIncrementalMarkingStart",
    },
}


def script_of(url: str) -> str:
    """Which code a script URL is: plotly.js, Streamlit's frontend, one of the app's components, or other."""
    if "plotly" in url:
        return "JS: plotly.js"
    if "/av-chart-" in url or "/av-head-view-" in url or "/app/static/" in url:
        return "JS: the app's components"
    if "/static/js/" in url or "/static/" in url:
        return "JS: Streamlit's frontend"
    return "JS: other" if url else "JS: no script named"


def main_thread(events: list[dict]) -> tuple[int, int]:
    """(pid, tid) of the page's main thread (CrRendererMain with the most work)."""
    names = {(e["pid"], e["tid"]) for e in events if e.get("ph") == "M" and e.get("name") == "thread_name" and e["args"].get("name") == "CrRendererMain"}
    work = collections.Counter((e["pid"], e["tid"]) for e in events if e.get("ph") == "X" and (e["pid"], e["tid"]) in names)
    return work.most_common(1)[0][0]


def self_times(events: list[dict]) -> dict[str, float]:
    """Seconds of the main thread's work by kind: self time of every complete event, a script's time given
    to its outermost script event's URL."""
    thread = main_thread(events)
    spans = sorted((e for e in events if e.get("ph") == "X" and (e["pid"], e["tid"]) == thread and e.get("dur")), key=lambda e: (e["ts"], -e["dur"]))
    totals: collections.Counter = collections.Counter()
    stack: list[list] = []  # [event, end, children's time, script of the outermost JS event around it]
    for event in spans:
        end = event["ts"] + event["dur"]
        while stack and stack[-1][1] <= event["ts"]:
            _close(stack.pop(), totals)
        if stack:
            stack[-1][2] += event["dur"]
        outer = stack[-1][3] if stack else None
        data = (event.get("args") or {}).get("data") or {}
        url = data.get("url") or (data.get("stackTrace") or [{}])[0].get("url", "") or data.get("scriptName", "")
        script = outer or (script_of(url) if event["name"] in JS_EVENTS else None)
        stack.append([event, end, 0, script])
    while stack:
        _close(stack.pop(), totals)
    return {name: micro / 1e6 for name, micro in totals.items()}


def _close(frame: list, totals: collections.Counter) -> None:
    event, _, children, script = frame
    own = max(0, event["dur"] - children)
    if event["name"] in ("RunTask", "ThreadControllerImpl::RunTask", "ThreadPool_RunTask"):
        totals["task overhead"] += own
        return
    kind = next((kind for kind, names in KINDS.items() if event["name"] in names), None)
    totals[kind or script or f"other ({event['name']})"] += own


def js_by_function(profile: dict, top: int = 12) -> tuple[dict[str, float], list[tuple[str, float]]]:
    """From a CDP sampling profile (`Profiler.stop`): JavaScript seconds by script (`script_of`) and the
    `top` functions by self time, "name (file)"."""
    nodes = {node["id"]: node for node in profile["nodes"]}
    own: collections.Counter = collections.Counter()
    for node_id, delta in zip(profile["samples"], profile["timeDeltas"]):
        own[node_id] += delta
    by_script: collections.Counter = collections.Counter()
    by_function: collections.Counter = collections.Counter()
    for node_id, micro in own.items():
        frame = nodes[node_id]["callFrame"]
        name = frame["functionName"] or "(anonymous)"
        if name in ("(idle)", "(program)", "(garbage collector)", "(root)"):
            by_script[name] += micro
            continue
        by_script[script_of(frame["url"])] += micro
        by_function[f"{name} ({frame['url'].rsplit('/', 1)[-1][:40]}:{frame['lineNumber']})"] += micro
    return {k: v / 1e6 for k, v in by_script.items()}, [(k, v / 1e6) for k, v in by_function.most_common(top)]


def profile(page, url: str, toggles: int, switches: bool = False) -> tuple[dict[str, float], dict[str, float], list[tuple[str, float]]]:
    """Over `toggles` flips of the scaling toggle at `url` (`switches`: round trips Attention → Tokens →
    Attention): the main thread's seconds by kind (trace), JavaScript's seconds by script and its busiest
    functions (sampling profiler)."""
    page.goto(url)
    page.wait_for_selector(CHART, timeout=180_000)
    _wait_settled(page, 0, timeout_s=180, expect_change=False)
    browser = page.context.browser
    session = page.context.new_cdp_session(page)
    session.send("Profiler.enable")
    session.send("Profiler.setSamplingInterval", {"interval": 200})
    browser.start_tracing(page=page, categories=CATEGORIES.split(","))
    session.send("Profiler.start")
    for _ in range(toggles):
        since = page.evaluate("performance.now()")
        if switches:
            for label in ("Tokens", "Attention"):
                page.locator("[data-testid=stSidebarNav], [data-testid=stSidebar]").get_by_role("link", name=label, exact=True).first.click()
                page.get_by_role("heading", name=label, exact=True).first.wait_for()
                _wait_settled(page, page.evaluate("performance.now()"), expect_change=False)
        else:
            page.locator("[data-testid=stCheckbox]").filter(has_text="Scale by").locator("label").first.click()
            _wait_settled(page, since)
    sampled = session.send("Profiler.stop")["profile"]
    trace = json.loads(browser.stop_tracing())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    return (self_times(events), *js_by_function(sampled))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--throttle", type=float, default=4.0)
    parser.add_argument("--tokens", default="16,512")
    parser.add_argument("--toggles", type=int, default=6)
    parser.add_argument("--model", default="toy")
    parser.add_argument("--switches", action="store_true", help="page switches (Attention → Tokens → Attention) rather than toggles")
    args = parser.parse_args(argv)
    sizes = tuple(int(n) for n in args.tokens.split(","))
    texts = texts_of_tokens(args.model, sizes)
    server = Server()
    try:
        with monitored_page(args.throttle) as page:
            for n in sizes:
                times, scripts, functions = profile(page, attention_url(server.url, args.model, texts[n]), args.toggles, args.switches)
                count, total = args.toggles, sum(times.values())
                what = "round trip Attention → Tokens → Attention" if args.switches else "toggle"
                print(f"\n{args.model}, {n} tokens, browser CPU ×{args.throttle:g}: main thread {total / count:.3f} s per {what} (trace)")
                for name, seconds in sorted(times.items(), key=lambda item: -item[1])[:10]:
                    print(f"  {name:<44} {seconds / count:7.3f} s  {100 * seconds / total:5.1f} %")
                print("  JavaScript by script (sampling profiler, per toggle):")
                for name, seconds in sorted(scripts.items(), key=lambda item: -item[1]):
                    print(f"    {name:<42} {seconds / count:7.3f} s")
                print("  busiest functions (self time per toggle):")
                for name, seconds in functions:
                    print(f"    {name[:70]:<70} {seconds / count:7.3f} s")
    finally:
        server.stop()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
