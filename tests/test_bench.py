"""The benchmark (`python -m bench`) runs end to end on the toy model at tiny sizes and reports sane numbers.

Speed targets are not asserted here (they depend on the machine); the report's structure is.
"""

import json
import math

from bench import measure, report
from bench.__main__ import parse
from bench.run import Options, run


def test_quick_benchmark_on_the_toy_model_reports_every_part(tmp_path):
    options = Options.quick_run(sizes=(8, 16), models=("toy",), parts=("forward", "toggles", "pages", "memory"), log=None)
    results = run(options)

    toy = results["models"]["toy"]
    assert set(toy["sizes"]) == {"8", "16"}
    for size, row in toy["sizes"].items():
        forward = row["forward"]
        assert forward["tokens"] == int(size)
        assert forward["forward_s"] > 0 and forward["trace_s"] > 0
        assert math.isfinite(forward["ratio"]) and forward["ratio"] > 0
        assert set(row["toggles"]) == set(measure.TOGGLES)
        for toggle, timing in row["toggles"].items():
            assert timing["seconds"] > 0 and timing["figures_s"] > 0 and timing["json_s"] > 0
            assert timing["reruns_model"] == (toggle != "head")  # the toy model re-runs unless only the head changes
        assert set(row["pages"]) == set(measure.PAGES)
        for page, payload in row["pages"].items():
            assert payload["bytes"] > 0 and payload["seconds"] > 0, page
            assert payload["figures"] and all(size > 0 for size in payload["figures"].values())
            assert payload["bytes"] == sum(payload["figures"].values())
        assert any(name.startswith("stages-") for name in row["pages"]["attention"]["figures"])
        assert "overview-all-heads" in row["pages"]["attention"]["figures"]

    memory = toy["memory"]
    assert "error" not in memory, memory
    assert memory["tokens"] == 16
    assert 0 < memory["peak_after_imports"] <= memory["peak_after_load"] <= memory["peak_after_trace"] <= memory["peak_after_attention_page"]

    found = report.checks(results)
    assert found and all(isinstance(c["ok"], bool) for c in found)
    assert {c["section"] for c in found} == {"toggles", "pages"}  # ratio and memory are judged at 512 tokens only
    text = report.format_report(results)
    for heading in ("1. Bare forward vs model.trace", "2. Toggle", "3. Figure JSON per page", "4. Peak resident memory", "Summary:"):
        assert heading in text
    assert "PASS" in text or "MISS" in text

    path = tmp_path / "bench.json"
    report.write_json(results, path)
    data = json.loads(path.read_text())
    assert data["models"]["toy"]["sizes"]["16"]["forward"]["tokens"] == 16
    assert len(data["checks"]) == len(found)

    options, json_path = parse(["--quick", "--sizes", "16,64", "--models", "toy", "--json", str(path)])
    assert options.sizes == (16, 64) and options.quick and "coldstart" not in options.parts and json_path == str(path)


def test_the_browser_bench_sees_a_busy_core_before_it_measures():
    """bench.browser waits for a quiet machine before the toggles (kaleido's Chromium starts after a first
    page): its measure of the machine's busy share sees one core spinning."""
    import subprocess
    import sys

    from bench.browser import busy_share

    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        assert busy_share(1.0) > 0.3  # one of two cores, at least
    finally:
        spin.kill()
        spin.wait()


def test_a_servers_cpu_time_is_read_to_the_microsecond_with_its_ended_threads():
    """bench.browser.cpu_seconds reads the process's CPU clock: Streamlit runs each rerun in a thread that
    then ends, and a toggle costs tens of milliseconds, so neither ticks of 10 ms nor live threads alone do."""
    import subprocess
    import sys

    from bench.browser import cpu_seconds

    child = (
        "import threading, time\n"
        "def spin(seconds):\n"
        "    end = time.thread_time() + seconds\n"
        "    while time.thread_time() < end: pass\n"
        "for seconds in (0.013, 0.027, 0.041):\n"
        "    thread = threading.Thread(target=spin, args=(seconds,)); thread.start(); thread.join()\n"
        "    print(time.process_time(), flush=True); input()\n"
    )
    process = subprocess.Popen([sys.executable, "-c", child], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        for _ in range(3):
            own = float(process.stdout.readline())  # the child's own count, its spinning thread ended
            assert abs(cpu_seconds(process.pid) - own) < 0.002
            process.stdin.write("\n")
            process.stdin.flush()
    finally:
        process.kill()
        process.wait()
