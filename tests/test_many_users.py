"""Twenty students at once: concurrent browser sessions against one real server on loopback.

Each session opens the Tokens page with its own sentence; every one must see its own words and
no error, and the server's memory must stay bounded. The figures (throughput, p95, the server's own
CPU time per session) are written to artifacts/many-users.json; speed targets live in the benchmark.
On this 2-core machine the twenty Chromium tabs, not the server, take most of the time.
"""

import asyncio
import json
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from conftest import BROWSER_ARGS, CHROMIUM, ROOT, server_pid
from model.vocab import TOY_WORDS

pytestmark = [pytest.mark.browser, pytest.mark.bench]
N_SESSIONS = 20
NOUNS = [
    "cat",
    "dog",
    "bird",
    "horse",
    "cow",
    "sheep",
    "mouse",
    "king",
    "queen",
    "doctor",
    "farmer",
    "woman",  # one piece of the toy BPE ("player" is two)
    "baker",
    "driver",
    "teacher",
    "student",
    "boy",
    "girl",
    "child",
    "friend",
]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def one_session(browser, url: str, noun: str) -> dict:
    context = await browser.new_context(viewport={"width": 1300, "height": 900})
    page = await context.new_page()
    text = f"the {noun} sat on the mat ."
    start = time.monotonic()
    try:
        await page.goto(f"{url}/Tokens?text={quote(text)}", timeout=240_000)
        first = page.locator(".js-plotly-plot").first
        await first.locator(".textpoint text").first.wait_for(timeout=240_000)
        seconds = time.monotonic() - start
        ticks = await first.locator(".textpoint text").evaluate_all("elements => elements.map(e => e.textContent)")
        errors = await page.locator("[data-testid=stException], [data-testid=stAlertContentError]").count()
        return dict(noun=noun, seconds=seconds, ticks=ticks, errors=errors)
    finally:
        await context.close()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, in clock ticks of 1/100 s


async def run_sessions(url: str, nouns: list[str]) -> list[dict]:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        try:
            return await asyncio.wait_for(asyncio.gather(*(one_session(browser, url, n) for n in nouns)), timeout=420)
        finally:
            await browser.close()


def test_twenty_concurrent_sessions_each_see_their_own_text(server):
    assert set(NOUNS) <= set(TOY_WORDS)
    asyncio.run(run_sessions(server, NOUNS[:1]))  # warm-up: the model loads once per server
    pid = server_pid[0]
    before, cpu_before = rss_mb(pid), cpu_seconds(pid)
    start = time.monotonic()
    results = asyncio.run(run_sessions(server, NOUNS[:N_SESSIONS]))
    wall = time.monotonic() - start
    after, cpu = rss_mb(pid), cpu_seconds(pid) - cpu_before
    for result in results:
        words = {t.replace("␣", " ").strip() for t in result["ticks"]}  # the toy's BPE pieces keep their leading space, shown as ␣
        assert [t for t in ("the", result["noun"], "sat", "mat") if t not in words] == [], result
        assert not words & (set(NOUNS) - {result["noun"]}), result  # nobody else's sentence
        assert result["errors"] == 0
    assert after - before < 500, f"server memory grew from {before:.0f} MB to {after:.0f} MB"
    seconds = sorted(r["seconds"] for r in results)
    report = dict(
        sessions=N_SESSIONS,
        wall_seconds=round(wall, 2),
        sessions_per_second=round(N_SESSIONS / wall, 2),
        p50_seconds=round(seconds[len(seconds) // 2], 2),
        p95_seconds=round(seconds[int(0.95 * (len(seconds) - 1))], 2),
        server_cpu_seconds_per_session=round(cpu / N_SESSIONS, 2),
        server_rss_mb_before=round(before),
        server_rss_mb_after=round(after),
    )
    (ROOT / "artifacts").mkdir(exist_ok=True)
    (ROOT / "artifacts" / "many-users.json").write_text(json.dumps(report, indent=1))
    print(report)
