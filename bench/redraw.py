"""What one plotly.js drawing of each Attention-page figure costs in chromium, with an option of the figure
switched on and off in alternated rounds (an A/B inside one browser, so the machine's load falls on both).

    python -m bench.redraw [--tokens 16,128] [--rounds 8] [--throttle 1] [--option ticklabeloverflow]

The figures are the toy model's Attention page (`viz.content.attention_page`) as `viz.plain` makes them. For
each: `Plotly.newPlot` once, then `Plotly.react` with every heatmap's values changed by 1 % (a toggle's
redraw: new values, same layout). Option `ticklabeloverflow`: the template's axes as made (`"allow"`,
`viz.plain.AXIS_DEFAULTS`) against plotly's own default (the key removed). Prints the median milliseconds of
each drawing and their sum over the page's figures.
"""

from __future__ import annotations

import argparse
import statistics

import orjson


from bench.coldstart import BROWSER_ARGS, CHROMIUM

DRAW_JS = r"""
async ([figures, option, reacts]) => {
  const out = {};
  for (const [name, source] of Object.entries(figures)) {
    const figure = JSON.parse(source);
    const template = (figure.layout.template || {}).layout || {};
    if (option === 'ticklabeloverflow') for (const axis of ['xaxis', 'yaxis']) if (template[axis]) delete template[axis].ticklabeloverflow;
    const gd = document.createElement('div');
    gd.style.width = '1200px';
    document.body.appendChild(gd);
    let started = performance.now();
    await Plotly.newPlot(gd, figure.data, figure.layout, {responsive: false});
    const first = performance.now() - started;
    const times = [];
    for (let r = 0; r < reacts; r++) {
      const factor = 1 + (r % 2 ? 0.01 : -0.01);
      const data = figure.data.map((trace) => trace.type === 'heatmap' && Array.isArray(trace.z)
        ? {...trace, z: trace.z.map((row) => row.map((v) => (v === null ? null : v * factor)))} : {...trace});
      started = performance.now();
      await Plotly.react(gd, data, figure.layout);
      times.push(performance.now() - started);
    }
    Plotly.purge(gd);
    gd.remove();
    times.sort((a, b) => a - b);
    out[name] = [first, times[Math.floor(times.length / 2)]];
  }
  return out;
}
"""


def page_figures(tokens: int) -> dict[str, str]:
    """The toy's Attention page at `tokens` tokens: each figure as plotly JSON (numbers as lists, NaN as null)."""
    from bench.browser import texts_of_tokens
    from model import load_model
    from viz.content import Settings, attention_page, run_model

    toy = load_model("toy")
    settings = Settings(text=texts_of_tokens("toy", (tokens,))[tokens])
    content = attention_page(settings, run_model(toy, settings.sentences, settings.display))
    return {name: orjson.dumps(figure, default=lambda value: value.tolist()).decode() for name, figure in content.figures.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", default="16,128")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--reacts", type=int, default=7)
    parser.add_argument("--throttle", type=float, default=1.0)
    parser.add_argument("--option", default="ticklabeloverflow", choices=["ticklabeloverflow"])
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from ui.assets import STATIC, cartesian_bundle

    bundle = cartesian_bundle(STATIC)
    if bundle is None:
        raise SystemExit("the cartesian bundle of plotly.js is not in static/: run make install")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        page = browser.new_page()
        page.set_content("<html><body></body></html>")
        page.add_script_tag(path=str(bundle))
        page.context.new_cdp_session(page).send("Emulation.setCPUThrottlingRate", {"rate": args.throttle})
        for n in (int(t) for t in args.tokens.split(",")):
            figures = page_figures(n)
            runs: dict[str, list[dict]] = {"as made": [], f"without {args.option}": []}
            for _ in range(args.rounds):
                for label, option in (("as made", None), (f"without {args.option}", args.option)):
                    runs[label].append(page.evaluate(DRAW_JS, [figures, option, args.reacts]))
            print(f"\ntoy, {n} tokens, browser CPU ×{args.throttle:g}: median ms of one drawing ({args.rounds} alternated rounds)")
            print(f"  {'figure':<26} " + "  ".join(f"{label + ': newPlot, react':>36}" for label in runs))
            totals = {label: [0.0, 0.0] for label in runs}
            for name in figures:
                cells = []
                for label, rounds in runs.items():
                    first, react = (statistics.median(r[name][i] for r in rounds) for i in (0, 1))
                    totals[label][0] += first
                    totals[label][1] += react
                    cells.append(f"{first:17.1f} {react:18.1f}")
                print(f"  {name:<26} " + "  ".join(cells))
            print(f"  {'the page':<26} " + "  ".join(f"{a:17.1f} {b:18.1f}" for a, b in totals.values()))
        browser.close()


if __name__ == "__main__":
    main()
