"""The launcher (deploy/run.py, deploy/preload.py): the app's heavy imports happen before the first visitor,
a failing preload never stops the app, and the PNG exporter's browser is started once, ahead of the first
export. Each check runs in a fresh interpreter or server: what was imported is the point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, chromium, free_port
from deploy.serve import healthy, streamlit_command


def run_python(code: str, timeout: float = 240) -> dict:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=dict(os.environ, HF_HUB_OFFLINE="1"), capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def maps_torch(pid: int) -> bool:
    """Whether the process has torch's shared library loaded (what `import torch` does first)."""
    return "libtorch_cpu" in Path(f"/proc/{pid}/maps").read_text()


def test_the_launcher_imports_torch_before_any_browser_connects_and_plain_streamlit_does_not():
    """Two servers, no browser: the launcher's process loads torch by itself; `python -m streamlit run`
    (what Hugging Face Spaces runs) waits for a first session, as before."""
    processes = {}
    try:
        for how in ("launcher", "plain"):
            port = free_port()
            command = streamlit_command(port)
            assert command[1:4] == ["-m", "deploy.run", "run"]
            if how == "plain":
                command[2] = "streamlit"
            process = subprocess.Popen(command, cwd=ROOT, env=dict(os.environ, HF_HUB_OFFLINE="1"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            processes[how] = (process, f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 120
        while not all(healthy(url) for _, url in processes.values()):
            assert time.monotonic() < deadline, "a server did not start"
            assert all(p.poll() is None for p, _ in processes.values()), "a server exited"
            time.sleep(0.2)
        launcher = processes["launcher"][0].pid
        while not maps_torch(launcher) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert maps_torch(launcher)
        time.sleep(2)  # the plain server had as long: still nothing imported without a visitor
        assert not maps_torch(processes["plain"][0].pid)
    finally:
        for process, _ in processes.values():
            process.terminate()
            process.wait(timeout=30)


def test_the_preload_imports_the_model_and_figure_code_in_its_own_thread():
    state = run_python(
        "import json, sys, threading\n"
        "from deploy import preload\n"
        "before = sorted(m for m in ('torch', 'model', 'viz.content', 'viz.plain', 'pandas') if m in sys.modules)\n"
        "thread = preload.start(after_server=False, exports=False)\n"
        "state = preload.wait()\n"
        "print(json.dumps(dict(before=before, thread=thread.name, done=state['done'], error=state['error'], modules=list(state['modules']),\n"
        "    loaded=[m for m in preload.MODULES if m in sys.modules], again=preload.start() is None)))\n"
    )
    assert state["before"] == []
    assert state["done"] and state["error"] is None
    assert state["modules"] == state["loaded"] and {"torch", "model", "viz.content", "viz.plain"} <= set(state["loaded"])
    assert state["again"]  # once per process


def test_a_failing_preload_leaves_the_app_working():
    """A preload that cannot import something (here a module that does not exist) is logged and the first
    page view imports what it needs itself: the Attention page draws its charts, without an error."""
    state = run_python(
        "import json, logging\n"
        "from deploy import preload\n"
        "preload.start(modules=('model', 'no_such_module_for_this_test'), after_server=False, exports=False)\n"
        "from streamlit.testing.v1 import AppTest\n"
        "at = AppTest.from_file('app.py', default_timeout=180).run()\n"
        "at.switch_page('pages/3_Attention.py').run()\n"
        "state = preload.wait()\n"
        "charts = [e for e in at.get('bidi_component') if e.proto.component_name == 'attention_viz.chart']\n"
        "exceptions = [str(e.value) + str(e.stack_trace) for e in at.exception]\n"
        "print(json.dumps(dict(error=state['error'], done=state['done'], exceptions=exceptions, charts=len(charts),\n"
        "    title=[t.value for t in at.title], subheaders=[s.value for s in at.subheader], markdown=[m.value for m in at.markdown])))\n"
    )
    assert state["done"] and "no_such_module_for_this_test" in state["error"]
    assert state["exceptions"] == []
    assert state["title"] == ["Attention"] and state["charts"] >= 5
    assert any(text.startswith("### A worked example") for text in state["markdown"])  # the page drawn to its end:
    assert any(text.startswith("### Every head of every layer") for text in state["markdown"])


def test_the_first_run_of_a_process_sends_the_plotly_loader_before_it_waits_for_the_preload():
    """On a cold start the browser fetches and evaluates plotly.js (~1 s) while torch is still being imported:
    the page's first run draws the hidden element that loads it from ui/__init__.py, before it waits for
    the preload; `page` leaves it out of that run (one such element, no duplicate key), and draws it in
    every later run (here the Attention page's)."""
    state = run_python(
        "import json\n"
        "from deploy import preload\n"
        "from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx\n"
        "seen = []\n"
        "real_wait = preload.wait\n"
        "def wait(*args, **kwargs):\n"
        "    ctx = get_script_run_ctx(suppress_warning=True)\n"
        "    seen.append(None if ctx is None else sorted(ctx.shared.widget_user_keys_this_run.snapshot()))\n"
        "    return real_wait(*args, **kwargs)\n"
        "preload.wait = wait\n"
        "from streamlit.testing.v1 import AppTest\n"
        "at = AppTest.from_file('app.py', default_timeout=180).run()\n"
        "from ui.chart import EARLY_KEY\n"
        "def early(at):\n"
        "    return [e.proto.id for e in at.get('bidi_component') if EARLY_KEY in e.proto.id]\n"
        "first = early(at)\n"
        "at.switch_page('pages/3_Attention.py').run()\n"
        "print(json.dumps(dict(seen=seen, key=EARLY_KEY, first=len(first), again=len(early(at)),\n"
        "    exceptions=[str(e.value) for e in at.exception], title=[t.value for t in at.title])))\n"
    )
    assert state["seen"] == [[state["key"]]]  # one wait, in the first run, after the loader was drawn
    assert state["first"] == 1 and state["again"] == 1
    assert state["exceptions"] == [] and state["title"] == ["Attention"]


def test_a_warmed_up_exporter_serves_the_first_export_from_the_browser_it_already_started():
    """warm_up() starts kaleido's Chromium; the export after it runs there: no new browser process."""
    state = run_python(
        "import json, os\n"
        "from pathlib import Path\n"
        "import plotly.graph_objects as go\n"
        "from viz.export.image import figure_to_png, warm_up\n"
        "def browsers():\n"
        "    found = set()  # Chromium processes other than renderers, GPU and utility processes: (pid, parent)\n"
        "    for entry in Path('/proc').iterdir():\n"
        "        try:\n"
        "            cmd = (entry / 'cmdline').read_bytes().split(b'\\0')\n"
        "            status = (entry / 'status').read_text()\n"
        "        except (OSError, ValueError):\n"
        "            continue\n"
        "        ppid = int(status.split('PPid:')[1].split()[0])\n"
        "        if b'chrom' in cmd[0] and not any(a.startswith(b'--type=') for a in cmd):\n"
        "            found.add((int(entry.name), ppid))\n"
        "    return found\n"
        "def mine():\n"
        "    ancestry = {}\n"
        "    for entry in Path('/proc').iterdir():\n"
        "        try:\n"
        "            ancestry[int(entry.name)] = int((entry / 'status').read_text().split('PPid:')[1].split()[0])\n"
        "        except (OSError, ValueError):\n"
        "            pass\n"
        "    def descends(pid):\n"
        "        while pid > 1:\n"
        "            if pid == os.getpid():\n"
        "                return True\n"
        "            pid = ancestry.get(pid, 0)\n"
        "        return False\n"
        "    ours = {pid: ppid for pid, ppid in browsers() if descends(pid)}\n"
        "    return sorted(pid for pid, ppid in ours.items() if ppid not in ours)  # the browsers, not their helpers\n"
        "before = mine()\n"
        "warmed = warm_up()\n"
        "after_warm_up = mine()\n"
        "png = figure_to_png(go.Figure(go.Heatmap(z=[[1, 2], [3, 4]])), width=200, height=150, scale=1)\n"
        "print(json.dumps(dict(before=before, warmed=warmed, after_warm_up=after_warm_up, after_export=mine(), png=png[:8].hex(), size=len(png))))\n"
    )
    assert state["before"] == []
    assert state["warmed"] is True
    assert len(state["after_warm_up"]) == 1, state
    assert state["after_export"] == state["after_warm_up"]
    assert bytes.fromhex(state["png"]) == b"\x89PNG\r\n\x1a\n" and state["size"] > 1000


def test_the_launcher_leaves_streamlits_config_files_unpolled():
    """Streamlit polls its config files five times a second even with fileWatcherType "none"; the launcher
    turns that off (deploy.run.no_config_polling). Shown in a fresh interpreter: Streamlit's own function
    asks to watch the config files, and after the launcher's change it asks for nothing."""
    code = """
import json
from streamlit.web import bootstrap
watched = []
bootstrap.watch_file = lambda path, *a, **k: watched.append(path)
bootstrap._install_config_watchers({})
before = list(watched)
watched.clear()
from deploy.run import no_config_polling
turned_off = no_config_polling()
bootstrap._install_config_watchers({})
print(json.dumps(dict(before=before, after=watched, turned_off=turned_off)))
"""
    seen = run_python(code)
    assert seen["turned_off"] is True
    assert any(path.endswith("config.toml") for path in seen["before"]), seen  # Streamlit would poll them
    assert seen["after"] == []


@pytest.mark.browser
def test_plain_streamlit_run_as_on_hugging_face_spaces_draws_the_attention_page_and_answers_a_toggle():
    """The other browser tests run the app through the launcher (conftest.streamlit_server); Hugging Face
    Spaces runs plain `streamlit run app.py`, with Streamlit's own transport and no preload."""
    port = free_port()
    command = streamlit_command(port)
    command[2] = "streamlit"
    process = subprocess.Popen(command, cwd=ROOT, env=dict(os.environ, HF_HUB_OFFLINE="1"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while not healthy(url):
            assert time.monotonic() < deadline and process.poll() is None, "plain streamlit did not start"
            time.sleep(0.2)
        with chromium() as browser:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(f"{url}/Attention?text=The+cat+sat+on+the+mat.")
            page.wait_for_selector(".js-plotly-plot .main-svg", timeout=90_000)
            title = lambda: page.locator(".js-plotly-plot").first.evaluate("gd => gd.layout.annotations[1].text")  # noqa: E731
            assert "√d_k" in title()
            page.get_by_text("Scale by 1/√d_k").click()  # scaling off: the second panel says so
            page.wait_for_function("() => !document.querySelector('.js-plotly-plot').layout.annotations[1].text.includes('√d_k =')", timeout=30_000)
            assert "√d_k =" not in title()
            assert page.locator("[data-testid=stException]").count() == 0
    finally:
        process.terminate()
        process.wait(timeout=30)
