"""`python -m bench [--sizes 16,64] [--quick] [--json PATH] [--models toy,distilbert] [--skip coldstart,...]`

`python -m bench --browser [--sizes 16,128,512] [--models toy,minilm,smollm2] [--only toggles,class] [--class-size 40]`:
what a user feels, in chromium against `streamlit run app.py` (bench.browser). `--only memory` (bench.memory:
the server's RSS over forty 500-token texts per model) and `--only viewers` (bench.viewers: a fresh tab's
first chart, idle and while a training runs) run only when asked.
"""

from __future__ import annotations

import argparse
import sys

from bench import MODELS, memory, viewers
from bench.report import format_report, write_json
from bench.browser import BROWSER_PARTS, CLASS_FRONTS, BrowserOptions, format_browser_report, run_browser
from bench.run import PARTS, Options, machine, main_sizes, run


def parse(argv: list[str] | None = None) -> tuple[Options, str | None]:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Time and size the app's server work (model runs, toggles, page figures, memory, cold start).",
    )
    parser.add_argument("--sizes", help="token counts, comma-separated (default 16,64,128,256,512; --quick: 16,64)")
    parser.add_argument("--quick", action="store_true", help="fast smoke run: small sizes, one repeat, no cold start")
    parser.add_argument("--json", metavar="PATH", help="also write every figure as JSON to PATH")
    parser.add_argument("--models", help="toy, distilbert or both (default both); with --browser: toy, minilm, smollm2")
    parser.add_argument("--browser", action="store_true", help=f"measure in chromium instead: {', '.join(BROWSER_PARTS)}")
    parser.add_argument("--class-size", type=int, default=40, help="--browser: students in the class run (default 40)")
    parser.add_argument(
        "--class-spacing",
        type=float,
        default=1.0,
        help="--browser: seconds between two students joining (default 1; 15 lets each finish first: the server's work per action "
        "without the other tabs on the same cores)",
    )
    parser.add_argument(
        "--class-front", choices=CLASS_FRONTS, default="nginx", help="--browser: the class reaches one app process through nginx (default) or directly"
    )
    parser.add_argument("--throttle", type=float, default=1.0, help="--browser: the browser's CPU slowed this many times (4: a low-end laptop)")
    parser.add_argument("--network", choices=["slow"], help="--browser: the browser's network slowed to a school's shared link (150 ms, 1.6 Mbit/s)")
    parser.add_argument("--skip", default="", help=f"parts to leave out, comma-separated: {', '.join(PARTS)}")
    parser.add_argument("--only", default="", help="run only these parts, comma-separated")
    parser.add_argument("--repeats", type=int, help="measured runs per toggle / page (median); forward/trace get 5/3 of it")
    parser.add_argument("--memory-tokens", type=int, help="input size of the peak-memory runs (default 512; --quick: the largest size)")
    args = parser.parse_args(argv)
    if args.browser:
        return browser_options(parser, args), args.json

    try:
        sizes = main_sizes(args.sizes)
    except ValueError as error:
        parser.error(str(error))
    models = tuple(m.strip() for m in (args.models or ",".join(MODELS)).split(",") if m.strip())
    unknown = [m for m in models if m not in MODELS]
    if unknown or not models:
        parser.error(f"unknown model(s) {unknown}; choose from {', '.join(MODELS)}")
    listed = lambda text: tuple(p.strip() for p in text.split(",") if p.strip())  # noqa: E731
    skip, only = listed(args.skip), listed(args.only)
    bad = [p for p in skip + only if p not in PARTS]
    if bad:
        parser.error(f"unknown part(s) {bad}; choose from {', '.join(PARTS)}")

    options = Options.quick_run(sizes) if args.quick else Options(**({"sizes": sizes} if sizes else {}))
    parts = only or options.parts
    options.parts = tuple(p for p in parts if p not in skip)
    options.models = models
    if args.repeats:
        options.repeats = args.repeats
        options.forward_repeats = max(1, round(args.repeats * 5 / 3))
    if args.memory_tokens:
        options.memory_tokens = args.memory_tokens
    return options, args.json


def browser_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> BrowserOptions:
    listed = lambda text: tuple(p.strip() for p in (text or "").split(",") if p.strip())  # noqa: E731
    options = BrowserOptions(log=sys.stderr, throttle=args.throttle, network=args.network)
    if args.sizes:
        try:
            options.sizes = main_sizes(args.sizes)
        except ValueError as error:
            parser.error(str(error))
    elif args.quick:
        options.sizes = (16,)
    if args.models:
        options.models = listed(args.models)
    parts = listed(args.only) or options.parts
    bad = [p for p in parts + listed(args.skip) if p not in BROWSER_PARTS]
    if bad:
        parser.error(f"unknown browser part(s) {bad}; choose from {', '.join(BROWSER_PARTS)}")
    options.parts = tuple(p for p in parts if p not in listed(args.skip))
    if args.quick:
        options.repeats, options.class_size = 1, min(args.class_size, 5)
        if not args.only:
            options.parts = tuple(p for p in options.parts if p != "coldstart")
    else:
        options.class_size = args.class_size
    if args.repeats:
        options.repeats = args.repeats
    options.class_front = args.class_front
    options.class_spacing_s = args.class_spacing
    return options


def main(argv: list[str] | None = None) -> int:
    options, json_path = parse(argv)
    if isinstance(options, BrowserOptions):
        results = run_browser(options)
        results["machine"] = machine()
        print(format_browser_report(results))
        log = lambda message: print(f"[bench --browser] {message}", file=sys.stderr, flush=True)  # noqa: E731
        if "memory" in options.parts:
            log("the server's memory over forty 500-token texts on SmolLM2, then on MiniLM (bench.memory)")
            results["memory"] = memory.run(log=log)
            print(memory.format_report(results["memory"]))
        if "viewers" in options.parts:
            log("a fresh tab's first chart, idle and while a training runs (bench.viewers)")
            results["viewers"] = viewers.run(max(options.repeats, 5), log=log)
            print(viewers.format_report(results["viewers"]))
    else:
        results = run(options)
        print(format_report(results))
    if json_path:
        write_json(results, json_path)
        print(f"\nJSON written to {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
