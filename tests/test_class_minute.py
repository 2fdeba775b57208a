"""A class's first minute: students open the app's pages at the same moment on a fresh server.

The server has just answered its health check; its start-up thread (app.py) is still importing the page
layer, and no model is loaded yet. One browser context per student, all of one chromium, then opens every
page of `ui.PAGES` at once, each with its own sentence and a model in the link (the toy, the bidirectional
toy, MiniLM), so that several sessions make the same first-use imports (transformers, tokenizers) in the
same second. That is the race model/imports.py's LOCK closes: without it, transformers' lazy module
answered one of the sessions "cannot import name 'AutoTokenizer'".

`make test` opens one context per page: thirteen sessions at once, every one importing `tokenizers` for
the toys' BPE and four of them `transformers` for MiniLM. `make bench` (`-m bench`) opens thirty, the
lighter pages two or three times.

Every page must settle with no error box, no "could not be drawn" and its own sentence in its text box,
and the server's log must hold no traceback.

What a class of thirty costs: the server's thirty runs take 17-18 s of CPU; chromium's thirty frontends
take the rest (157 s with reduced motion, whose skeletons and spinners do not animate while they wait;
223 s without). Thirteen take 45 % of it.
"""

import asyncio
import os
import re
import time
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest

from conftest import BROWSER_ARGS, CHROMIUM, QUIET, streamlit_server
from ui import PAGES

pytestmark = pytest.mark.browser
CLASS = 30  # `make bench`: a class
MODELS = ("toy", "toy-bidirectional", "minilm")
NOUNS = ("cat", "dog", "bird", "horse", "cow", "king", "queen", "doctor", "farmer", "woman")
ERRORS = "[data-testid=stException], [data-testid=stAlertContentError]"
SENTENCE_BOX = "Sentences, one per line"
TIMEOUT_MS = 240_000
VIEWPORT = {"width": 1100, "height": 700}  # charts below the window wait for a scroll: fewer drawn at once


def url_path(script: str) -> str:
    """The path Streamlit serves a page script at: `pages/3_Attention.py` → `Attention`, home → ``."""
    if script == "home.py":
        return ""
    return re.sub(r"^\d+_", "", script.removeprefix("pages/").removesuffix(".py"))


LIGHT = ("Home", "Tokens", "Positional encoding", "Embeddings", "Train", "Lessons", "Scaling lab")  # few charts in view


def visits(students: int) -> list[dict]:
    """`students` (page, model, sentence) visits: every page once, then the lighter pages again, the three
    models in turn, no two sentences alike."""
    light = [page for page in PAGES if page[1] in LIGHT]
    out = []
    for i in range(students):
        script, label, _ = PAGES[i] if i < len(PAGES) else light[(i - len(PAGES)) % len(light)]
        model = MODELS[i % len(MODELS)]
        text = f"the {NOUNS[i % len(NOUNS)]} sat on the {('mat', 'bank', 'river')[i // len(NOUNS)]} ."
        out.append(dict(label=label, path=url_path(script), model=model, text=text))
    return out


DRAWN = (  # every chart in the window has drawn its newest figure (those below it or in a tab not open wait)
    "() => [...document.querySelectorAll('.av-chart:not(.av-chart-hidden)')].filter(b => b.checkVisibility() && b.getBoundingClientRect().top < innerHeight)"
    ".every(b => b.querySelector('.main-svg') && !b.classList.contains('av-chart-stale'))"
)
LOADING = "[data-testid=stSkeleton], [data-testid=stAppSkeleton]"  # an element whose code is still on its way
SETTLED = f"(ms) => ({QUIET})(ms) && !document.querySelector('{LOADING}') && ({DRAWN})()"


async def settled(page) -> None:
    """conftest.settle for the async API, and the charts in the window drawn: the script ran to its end,
    nothing changed for 500 ms, no element waits for its code and no chart in view for its figure."""
    await page.wait_for_function(SETTLED, arg=500, timeout=TIMEOUT_MS, polling=100)


async def visit_page(page, base: str, visit: dict) -> dict:
    """Open `visit`'s link in `page` and wait until it has settled; what the student sees."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    began = time.monotonic()
    try:
        await page.goto(f"{base}/{visit['path']}?" + urlencode({"text": visit["text"], "model": visit["model"]}, quote_via=quote), timeout=TIMEOUT_MS)
        await page.locator("h1").first.wait_for(timeout=TIMEOUT_MS)
        await settled(page)
    except PlaywrightTimeout as error:  # reported with the others
        return dict(visit, seconds=time.monotonic() - began, failure=str(error).splitlines()[0])
    box = page.get_by_role("textbox", name=SENTENCE_BOX)
    return dict(
        visit,
        seconds=time.monotonic() - began,
        failure=None,
        title=(await page.locator("h1").first.text_content()).strip(),
        errors=await page.locator(ERRORS).all_text_contents(),
        not_drawn=await page.get_by_text("could not be drawn").count(),
        charts=await page.locator(".js-plotly-plot").count(),
        sentence=await box.input_value() if await box.count() else None,
    )


CPU: dict[str, float] = {}


def cpu_of(pid: int) -> float:
    """CPU seconds (user + system) of process `pid`, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_of_descendants(root: int) -> float:
    """CPU seconds (user + system) of every process below `root`: the server, Playwright's driver and
    chromium's processes. Wall time on a busy machine says little; this says what the class costs."""
    parents, seconds = {}, {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
            seconds[int(entry.name)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def below(pid: int) -> bool:
        while pid in parents and pid != root:
            pid = parents[pid]
        return pid == root

    return sum(cpu for pid, cpu in seconds.items() if pid != root and below(pid))


async def open_all(base: str, server_pid: int, students: int) -> list[dict]:
    """One chromium, one context per visit, made first; then every visit's page asked for at once."""
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        try:
            # reduced motion: the placeholders of thirty waiting pages do not animate (a third of chromium's CPU)
            contexts = await asyncio.gather(*(browser.new_context(viewport=VIEWPORT, reduced_motion="reduce") for _ in range(students)))
            pages = await asyncio.gather(*(context.new_page() for context in contexts))
            results = await asyncio.gather(*(visit_page(page, base, visit) for page, visit in zip(pages, visits(students))))
            CPU["browser and server"] = cpu_of_descendants(os.getpid())  # before the browser's processes end
            CPU["server"] = cpu_of_descendants(server_pid) + cpu_of(server_pid)
            return results
        finally:
            await browser.close()


@pytest.mark.parametrize("students", [pytest.param(len(PAGES), id="every-page-once"), pytest.param(CLASS, id="thirty", marks=pytest.mark.bench)])
def test_students_open_every_page_at_once_on_a_fresh_server(students):
    with streamlit_server("app.py") as (url, process):
        began = time.monotonic()
        results = asyncio.run(open_all(url, process.pid, students))
        wall = time.monotonic() - began
        log = open(f"/proc/{process.pid}/fd/1", errors="replace").read()  # the server's stdout and stderr
    for r in results:
        print(f"{r['seconds']:5.1f} s  {r['label']:<26} {r['model']:<18} charts {r.get('charts', '-'):>2}  {r['text']}  {r['failure'] or ''}")
    cpu = f"CPU of browser and server {CPU['browser and server']:.0f} s (the server {CPU['server']:.0f} s)"
    print(f"wall {wall:.1f} s for {len(results)} contexts; {cpu}; load average {os.getloadavg()}")
    assert {r["label"] for r in results} == {label for _, label, _ in PAGES}
    assert {r["model"] for r in results} == set(MODELS)
    assert [r for r in results if r["failure"]] == []
    for r in results:
        assert r["title"] == r["label"] or (r["label"] == "Home" and r["title"]), r
        assert r["errors"] == [] and r["not_drawn"] == 0, r
        assert r["sentence"] in (None, r["text"]), r
    problems = [line for line in log.splitlines() if re.search(r"Traceback|Error", line)]
    assert problems == [], "\n".join(problems[:20])
