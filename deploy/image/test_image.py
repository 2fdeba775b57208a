"""The container image tested end to end with podman: `make test-image`, or

    python -m deploy.image.test_image            # build, then check one container and the compose file
    python -m deploy.image.test_image --build    # build only

1. The base image from Debian's packages (build_base.sh: debootstrap and `podman import`), where no public
   registry can be reached, and the Dockerfile built on it with this machine's pip settings (its indexes,
   wheel folder, certificate: `pip config list`) mounted for the build only, nothing of them in the image.
2. The server-side export (kaleido, for the head view's PNG/SVG): without Chromium in the image (the
   default) the app says what is missing; with it (--with-chromium: WITH_CHROMIUM=1) a PNG is rendered.
3. One container: waits for Streamlit's health endpoint, then Debian's chromium (Playwright) opens the
   Attention page from it and finds its chart (the time from `podman run` to that chart is the cold start);
   a PNG from the chart's own button; a page on MiniLM and one on SmolLM2 (built in, no network); the
   container's memory with all of them loaded.
4. deploy/compose.yaml with podman-compose: two app containers behind the balancer. Browser sessions
   (each its own cookie) open the Attention page until both containers serve one; nginx's access log says
   each session's requests all went to one container. One container is stopped: its user's tab reconnects
   through nginx to the other, and a reload draws the view from the link.

Every container and network it started is removed at the end, on failure too; the images are kept (a
second run reuses the layers). Each phase's time is printed, and the image's size.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from deploy.serve import free_port, healthy

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
IMAGE = "attention-viz:latest"  # the Dockerfile's `docker build -t attention-viz .`
BASE = "localhost/attention-viz-base:bookworm"
COMPOSE = ROOT / "deploy" / "compose.yaml"
PROJECT = "attention-viz-test"  # the compose project's name here: its containers are attention-viz-test_app1_1, ...
COOKIE = "app_backend"  # deploy/nginx.conf.template's sticky cookie
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"]
PIP_MOUNT = "/run/host-pip"  # the pip.conf written for the build, the certificate and constraints beside it
WORDS = ["cat", "dog", "bird", "horse", "cow", "sheep", "mouse", "king", "queen", "doctor"]

timings: dict[str, float] = {}


def log(message: str) -> None:
    print(f"[test-image {time.strftime('%H:%M:%S')}] {message}", flush=True)


@contextlib.contextmanager
def phase(name: str):
    start = time.monotonic()
    log(f"{name} ...")
    yield
    timings[name] = time.monotonic() - start
    log(f"{name}: {timings[name]:.1f} s")


def podman(*args: str, check: bool = True, capture: bool = True, timeout: float | None = 600) -> str:
    result = subprocess.run(["podman", *args], capture_output=capture, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args[:3])} ... failed ({result.returncode}): {(result.stderr or '')[-2000:]}")
    return (result.stdout or "").strip()


def wait_healthy(url: str, container: str, timeout_s: float = 180) -> None:
    """Until `url`'s health endpoint answers; fails at once with the container's log if it has stopped."""
    deadline = time.monotonic() + timeout_s
    while not healthy(url):
        if podman("inspect", "--format", "{{.State.Running}}", container, check=False) != "true":
            raise RuntimeError(f"{container} stopped: {podman('logs', container, check=False)[-2000:]}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} not healthy after {timeout_s:.0f} s: {podman('logs', container, check=False)[-2000:]}")
        time.sleep(0.2)


# --- build -------------------------------------------------------------------


def pip_settings() -> dict[str, str]:
    """This machine's pip settings (`pip config list`: its files and PIP_* variables), key → value."""
    out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True).stdout
    settings: dict[str, str] = {}
    for line in out.splitlines():
        match = re.match(r"^[^.]*\.([a-z-]+)='(.*)'$", line)
        if match:
            settings[match[1]] = match[2]
    return settings


def build_mounts(settings: dict[str, str], folder: Path) -> tuple[list[str], dict[str, str]]:
    """`podman build` options that mount what the pip settings name (local folders, files) and the build
    arguments that point pip at them: PIP_CONFIG_FILE (a pip.conf written to `folder`, mounted at PIP_MOUNT)
    and PIP_EXTRA_INDEX_URL (this machine's extra indexes in place of the Dockerfile's PyTorch index)."""
    volumes: list[str] = ["--volume", f"{folder}:{PIP_MOUNT}:ro"]
    mounted: dict[str, str] = {}

    def inside(path: str) -> str:
        """Where a local folder appears during the build (files are copied into `folder` instead)."""
        source = Path(path)
        if source.is_file():
            shutil.copy(source, folder / source.name)
            return f"{PIP_MOUNT}/{source.name}"
        if path not in mounted:
            mounted[path] = f"{PIP_MOUNT}-{len(mounted)}"
            volumes.extend(["--volume", f"{path}:{mounted[path]}:ro"])
        return mounted[path]

    def url(value: str) -> str:
        """A file:// index mounted with its parent folder: its pages link to files by relative paths (../../files/)."""
        if not value.startswith("file://"):
            return value
        index = Path(value[len("file://") :].rstrip("/"))
        return f"file://{inside(str(index.parent))}/{index.name}"

    conf = ["[global]"]
    for key in ("index-url", "find-links", "cert", "constraint", "trusted-host", "default-timeout"):
        if key not in settings:
            continue
        values = settings[key].split()
        if key == "find-links":
            values = [url(v) if "://" in v else inside(v) for v in values if "://" in v or Path(v).exists()]
        elif key in ("cert", "constraint"):
            values = [inside(v) for v in values if Path(v).is_file()]
        elif key == "index-url":
            values = [url(v) for v in values]
        if values:
            conf.append(f"{key} = {' '.join(values)}")
    (folder / "pip.conf").write_text("\n".join(conf) + "\n")
    args = {"PIP_CONFIG_FILE": f"{PIP_MOUNT}/pip.conf"}
    if "extra-index-url" in settings:
        args["PIP_EXTRA_INDEX_URL"] = " ".join(url(v) for v in settings["extra-index-url"].split())
    return volumes, args


def build(image: str = IMAGE, base: str = BASE, with_chromium: bool = False) -> None:
    with phase("base image (debootstrap)"):
        subprocess.run(["bash", str(HERE / "build_base.sh"), base], check=True)
    with phase("image build"), tempfile.TemporaryDirectory(prefix="attention-viz-pip-") as folder:
        volumes, args = build_mounts(pip_settings(), Path(folder))
        command = ["nice", "-n", "10", "podman", "build", "--format", "docker", "--network", "host", "--tag", image, "--build-arg", f"BASE_IMAGE={base}"]
        command += ["--build-arg", f"WITH_CHROMIUM={int(with_chromium)}"]
        for name, value in args.items():
            command += ["--build-arg", f"{name}={value}"]
        subprocess.run([*command, *volumes, str(ROOT)], check=True)


# --- one container ------------------------------------------------------------


def image_size(image: str = IMAGE) -> int:
    return int(podman("image", "inspect", "--format", "{{.Size}}", image))


def memory(container: str) -> dict[str, float]:
    """MB: the container's memory as podman counts it (its cgroup, page cache left out), and the resident
    and proportional set of its main process (Streamlit), read from /proc on this machine."""
    stats = json.loads(podman("stats", "--no-stream", "--format", "json", container))
    usage = stats[0]["mem_usage"].split("/")[0].strip()  # "1.234GB / 25.2GB"
    number, unit = re.match(r"([\d.]+)\s*([kMG]?B)", usage).groups()
    total = float(number) * {"B": 1e-6, "kB": 1e-3, "MB": 1, "GB": 1e3}[unit]
    pid = podman("inspect", "--format", "{{.State.Pid}}", container)
    status = Path(f"/proc/{pid}/status").read_text()
    rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    rss = int(re.search(r"VmRSS:\s+(\d+) kB", status)[1]) / 1024
    pss = int(re.search(r"Pss:\s+(\d+) kB", rollup)[1]) / 1024
    return {"container": total, "streamlit_rss": rss, "streamlit_pss": pss}


def first_chart_title(page, timeout_ms: int = 180_000) -> str:
    """The title of the page's first chart (a plotly figure drawn by the app's chart component), once drawn."""
    page.locator(".av-chart .js-plotly-plot .gtitle").first.wait_for(timeout=timeout_ms)
    return page.locator(".av-chart .js-plotly-plot .gtitle").first.text_content()


def check_one_container(browser, image: str, report: dict) -> None:
    name = "attention-viz-test-one"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    page = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True).new_page()
    try:
        with phase("one container: cold start to first chart"):
            start = time.monotonic()
            # The image's own command on another port: the host's network (8501 may be taken here). As the
            # Kubernetes manifest runs it: a read-only root, /tmp and the cache writable.
            command = ["streamlit", "run", "app.py", f"--server.port={port}", "--server.address=127.0.0.1"]
            writable = ["--read-only", "--read-only-tmpfs", "--volume", "/home/app/.cache"]  # tmpfs on /tmp, /run
            podman("run", "--detach", "--name", name, "--network", "host", *writable, image, *command)
            wait_healthy(url, name)
            report["server_ready_s"] = round(time.monotonic() - start, 2)
            page.goto(f"{url}/Attention")
            title = first_chart_title(page)
            report["cold_start_to_first_chart_s"] = round(time.monotonic() - start, 2)
            log(f"server ready {report['server_ready_s']} s, first chart {report['cold_start_to_first_chart_s']} s after podman run")
            assert title.startswith("toy · layer 0 · head 0"), title
            ticks = page.locator(".av-chart .js-plotly-plot").first.locator(".x3tick text").all_text_contents()
            assert len(ticks) >= 3, ticks
        with phase("one container: the chart's PNG export (drawn by the browser)"):
            with page.expect_download(timeout=120_000) as download:
                page.locator(".av-chart").first.get_by_role("button", name="PNG").click()
            png = Path(download.value.path()).read_bytes()
            assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000, len(png)
        for model, label in (("minilm", "MiniLM"), ("smollm2", "SmolLM2")):
            with phase(f"one container: Attention on {label}"):
                page.goto(f"{url}/Attention?model={model}")
                page.wait_for_function(
                    "model => [...document.querySelectorAll('.av-chart .js-plotly-plot .gtitle')].some(t => t.textContent.toLowerCase().includes(model))",
                    arg=model,
                    timeout=300_000,
                )
                assert page.locator("[data-testid=stException], [data-testid=stAlertContentError]").count() == 0
        report["memory_mb"] = memory(name)
        # SmolLM2's weights, de-quantised, kept in the one folder the app writes (the root is read-only)
        report["cache"] = podman("exec", name, "du", "-sh", "/home/app/.cache/attention-viz", check=False)
        log(f"memory with toy, MiniLM and SmolLM2 loaded: {report['memory_mb']}")
    finally:
        page.context.close()
        podman("rm", "--force", "--volumes", "--time", "2", name, check=False)


# --- compose: two app containers behind nginx -----------------------------------------


def compose(*args: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess:
    command = ["podman-compose", "--project-name", PROJECT, "--file", str(COMPOSE), *args]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {result.stdout[-1500:]} {result.stderr[-1500:]}")
    return result


def access_log(balancer: str) -> list[dict]:
    """nginx's log in the balancer (deploy/nginx.conf.template's `sticky` format): per request the browser's
    sticky key, the app container that answered it (its address), the status and the path."""
    text = podman("exec", balancer, "cat", "/tmp/nginx/access.log", check=False)
    rows = []
    for line in text.splitlines():
        parts = line.split("|", 5)
        if len(parts) == 6:
            _, cookie, key, upstream, status, uri = parts
            last = upstream.split(",")[-1].strip()  # "a, b" when nginx moved on to a second container
            rows.append(dict(key=key, backend=last if ":" in last else None, status=status, uri=uri))
    return rows


def backends_of(rows: list[dict], cookie: str) -> list[str]:
    return [r["backend"] for r in rows if r["key"] == cookie and r["status"] == "200" and r["backend"]]


def ticks(page) -> list[str]:
    return page.locator(".av-chart .js-plotly-plot").first.locator(".x3tick text").all_text_contents()


def check_compose(browser, image: str, report: dict) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, IMAGE=image, PORT=str(port), COOKIE_SECRET=secrets.token_hex(16))
    balancer, apps = f"{PROJECT}_balancer_1", [f"{PROJECT}_app1_1", f"{PROJECT}_app2_1"]
    contexts = []
    try:
        with phase("compose: two app containers and the balancer up"):
            compose("up", "--detach", "--no-build", env=env)
            for app in apps:
                address = podman("inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", app)
                wait_healthy(f"http://{address}:8501", app)
            wait_healthy(url, balancer)
            # the image's HEALTHCHECK (each app container on its own 8501) and the balancer's, run once each
            for container in (*apps, balancer):
                result = subprocess.run(["podman", "healthcheck", "run", container], capture_output=True, text=True, timeout=60)
                assert result.returncode == 0, (container, result.stdout, result.stderr)
            addresses = {podman("inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", app) + ":8501": app for app in apps}
        with phase("compose: sticky sessions"):
            sessions = []  # (word, page, cookie)
            for word in WORDS:
                context = browser.new_context(viewport={"width": 1440, "height": 900})
                contexts.append(context)
                page = context.new_page()
                page.goto(f"{url}/Attention?text={quote(f'the {word} sat on the mat .')}")
                first_chart_title(page)
                assert f" {word}" in ticks(page), ticks(page)
                cookie = next(c["value"] for c in context.cookies() if c["name"] == COOKIE)
                sessions.append((word, page, cookie))
                log(f"session {len(sessions)} ({word}): {sorted(set(backends_of(access_log(balancer), cookie)))}")
                served = {b for _, _, c in sessions for b in backends_of(access_log(balancer), c)}
                if len(sessions) >= 2 and served == set(addresses):
                    break
            rows = access_log(balancer)
            by_session = {c: {r["backend"] for r in rows if r["key"] == c and r["backend"]} for _, _, c in sessions}
            assert all(len(b) == 1 for b in by_session.values()), by_session  # sticky: one container each
            assert set().union(*by_session.values()) == set(addresses), (by_session, addresses)  # both serve
            # Streamlit's frontend files and the components' code came from nginx itself (no backend named)
            static = [r for r in rows if r["uri"].startswith(("/static/", "/app/static/av-"))]
            assert len(static) > 50 and all(r["backend"] is None and r["status"] in ("200", "304") for r in static), static[:3]
            report["compose_sessions"] = len(sessions)
        with phase("compose: one container stopped, its user back with the view from the link"):
            victim = next(iter(by_session[sessions[0][2]]))
            survivor = next(b for b in addresses if b != victim)
            word, page, cookie = next(s for s in sessions if by_session[s[2]] == {victim})
            page.locator("[data-testid=stCheckbox]").filter(has_text="Scale by").locator("label").first.click()
            page.wait_for_url("**scale=0**", timeout=60_000)
            since = len(access_log(balancer))
            podman("stop", "--time", "5", addresses[victim])
            deadline = time.monotonic() + 120
            while survivor not in backends_of(access_log(balancer)[since:], cookie) and time.monotonic() < deadline:
                page.wait_for_timeout(500)
            assert survivor in backends_of(access_log(balancer)[since:], cookie), "the tab did not reconnect through nginx"
            since = len(access_log(balancer))
            page.reload()
            page.wait_for_function(
                "() => [...document.querySelectorAll('.av-chart .js-plotly-plot .gtitle')].some(t => t.textContent.includes('scaling off'))",
                timeout=120_000,
            )
            assert set(backends_of(access_log(balancer)[since:], cookie)) == {survivor}
            assert f" {word}" in ticks(page)
            assert "scale=0" in page.url
            assert page.locator("[data-testid=stException], [data-testid=stAlertContentError]").count() == 0
    finally:
        for context in contexts:
            context.close()
        down = compose("down", "--timeout", "2", env=env, check=False)
        left = podman("ps", "--all", "--filter", f"name={PROJECT}", "--format", "{{.Names}}", check=False)
        if left:
            podman("rm", "--force", "--time", "2", *left.split(), check=False)
            log(f"compose down left {left.split()} (removed): {down.stderr[-500:]}")
        network = podman("network", "ls", "--filter", f"name={PROJECT}", "--format", "{{.Name}}", check=False)
        if network:
            podman("network", "rm", "--force", *network.split(), check=False)


# --- main -----------------------------------------------------------------------------


def layers(image: str) -> list[str]:
    """The image's largest layers (`podman history`): size and the end of the step that made it."""
    rows = sorted(json.loads(podman("history", "--no-trunc", "--format", "json", image)), key=lambda row: -row["size"])
    return [f"{row['size'] / 1e9:.2f} GB: {row['CreatedBy'][-70:]}" for row in rows[:4]]


def largest_packages(image: str) -> list[str]:
    """The largest Python packages installed in the image (du, MB)."""
    script = "du -sm /opt/venv/lib/python3.11/site-packages/* | sort -n | tail -6"
    out = podman("run", "--rm", "--network", "host", "--entrypoint", "sh", image, "-c", script)
    return [" ".join(line.split()[::-1]).replace("/opt/venv/lib/python3.11/site-packages/", "") + " MB" for line in out.splitlines()]


EXPORT_CHECK = """
import json
from viz.export import figure_to_png, static_export_available
import plotly.graph_objects as go
ok, message = static_export_available()
png = figure_to_png(go.Figure(go.Heatmap(z=[[0, 1], [1, 0]])), scale=1) if ok else b""
print(json.dumps({"ok": ok, "message": message, "png": png[:8].hex(), "png_bytes": len(png)}))
"""


def check_server_exports(image: str, with_chromium: bool) -> dict:
    """The head view's PNG/SVG, rendered on the server by kaleido: with the image's Chromium, a PNG; without
    it, the app says what is missing (and offers the other formats)."""
    out = podman("run", "--rm", "--network", "host", image, "python", "-c", EXPORT_CHECK, timeout=180)
    result = json.loads(out.splitlines()[-1])
    if with_chromium:
        assert result["ok"] and result["png"] == b"\x89PNG\r\n\x1a\n".hex() and result["png_bytes"] > 1000, result
    else:
        assert not result["ok"] and "need Chromium" in result["message"], result
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.image.test_image", description=__doc__.splitlines()[0])
    parser.add_argument("--build", action="store_true", help="build the image only")
    parser.add_argument("--no-build", action="store_true", help="test the image built before")
    parser.add_argument("--image", default=IMAGE)
    parser.add_argument("--with-chromium", action="store_true", help="build with Chromium (WITH_CHROMIUM=1) and check a server-side PNG")
    args = parser.parse_args(argv)
    os.environ.setdefault("CONTAINERS_CONF", str(HERE / "containers.conf"))
    for tool in ("podman", "podman-compose"):
        if shutil.which(tool) is None:
            parser.error(f"{tool} is needed: apt-get install podman runc debootstrap podman-compose")
    start = time.monotonic()
    report: dict = {}
    if not args.no_build:
        build(args.image, with_chromium=args.with_chromium)
    report["image_size_gb"] = round(image_size(args.image) / 1e9, 2)
    report["largest_layers"] = layers(args.image)
    report["largest_packages"] = largest_packages(args.image)
    log(f"image {args.image}: {report['image_size_gb']:.2f} GB; largest layers: {report['largest_layers']}")
    if args.build:
        return 0
    with phase("server-side export (kaleido)"):
        report["server_export"] = check_server_exports(args.image, args.with_chromium)

    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        try:
            check_one_container(browser, args.image, report)
            check_compose(browser, args.image, report)
        finally:
            browser.close()
    report["total_s"] = time.monotonic() - start
    report["phases_s"] = {name: round(seconds, 1) for name, seconds in timings.items()}
    print(json.dumps(report, indent=2), flush=True)
    log("passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
