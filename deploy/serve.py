"""N app processes behind Debian's nginx with sticky sessions, all on loopback.

    python -m deploy.serve -n 4 --port 8501        # or: make serve N=4 PORT=8501

Starts `streamlit run app.py` N times on free loopback ports, renders deploy/nginx.conf.template into a
run folder (a temporary one unless --run-dir is given) and runs nginx in the foreground on --port.
Ctrl-C (or SIGTERM) stops nginx and every app process. nginx's access log in the run folder says which
process served each request, keyed by the browser's sticky cookie (`app_backend`).
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import secrets
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = Path(__file__).with_name("nginx.conf.template")
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
COOKIE = "app_backend"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def streamlit_command(port: int, *extra: str, script: str = "app.py") -> list[str]:
    """`streamlit run <script>` on a loopback port, headless, no usage statistics."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        script,
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        *extra,
    ]


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


def render(listen: str, backends: list[int], run: Path) -> str:
    upstreams = "\n".join(f"        server 127.0.0.1:{port} max_fails=1 fail_timeout=5s;" for port in backends)
    text = TEMPLATE.read_text()
    folders = (("@STATIC@", str(run / "static")), ("@APP_STATIC@", str(run / APP_STATIC)))
    for name, value in (("@RUN@", str(run)), ("@LISTEN@", listen), ("@UPSTREAMS@", upstreams), *folders):
        text = text.replace(name, value)
    return text


def streamlit_frontend() -> Path:
    """The folder of the installed streamlit's frontend files (served under /static/), found without importing streamlit."""
    return Path(importlib.util.find_spec("streamlit").origin).parent / "static" / "static"


COMPRESSED = (".js", ".css", ".svg", ".json", ".map", ".txt")  # fonts and images are compressed already


APP_STATIC = "app-static"  # in the run folder: the app's own static/ (ui/assets.py), served at /app/static/


def prepare_static(run: Path, source: Path | None = None, name: str = "static") -> Path:
    """`run`/`name`: a copy of streamlit's frontend files (or of `source`) and, beside each text file, its
    gzip (nginx's gzip_static sends it to browsers that accept gzip: 22 MB of JavaScript become 7,
    compressed once here, about 0.7 s, rather than per request). Copies, readable by all, not links:
    nginx's workers run as another user (nobody, when started by root), who may not read the installed
    package's folder."""
    source = source or streamlit_frontend()
    target = run / name
    target.mkdir(parents=True, exist_ok=True)
    os.chmod(run, 0o711)  # nginx's workers pass through the run folder to the files, and see nothing else there
    for path in source.rglob("*"):
        if not path.is_file():
            continue
        copy = target / path.relative_to(source)
        if not copy.exists():
            copy.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
            data = path.read_bytes()
            copy.write_bytes(data)
            if path.suffix in COMPRESSED:
                copy.with_name(copy.name + ".gz").write_bytes(gzip.compress(data, compresslevel=6, mtime=0))
    for path in [target, *target.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return target


def _stop(process: subprocess.Popen, timeout: float = 15) -> None:
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=timeout)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=timeout)


class Cluster:
    """N streamlit processes and one nginx; `url` is the balancer's address. Use as a context manager."""

    def __init__(self, n: int, port: int | None = None, run_dir: Path | None = None, streamlit_args: tuple[str, ...] = ()):
        if n < 1:
            raise ValueError("at least one app process")
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._own_run = run_dir is None
        self.run = Path(run_dir or tempfile.mkdtemp(prefix="attention-serve-"))
        self.run.mkdir(parents=True, exist_ok=True)
        self.backend_ports = [free_port() for _ in range(n)]
        self.backends: list[subprocess.Popen] = []
        self.nginx: subprocess.Popen | None = None
        self.streamlit_args = streamlit_args
        self.secret = secrets.token_hex(16)

    def start(self, timeout_s: float = 120) -> Cluster:
        # One cookie secret for all: a session that moves to another process keeps a valid XSRF cookie.
        env = dict(os.environ, HF_HUB_OFFLINE="1", STREAMLIT_SERVER_COOKIE_SECRET=self.secret)
        try:
            for port in self.backend_ports:
                log = open(self.run / f"app-{port}.log", "wb")
                command = streamlit_command(port, *self.streamlit_args)
                self.backends.append(subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
            prepare_static(self.run)
            from ui.assets import write_all

            write_all()  # the components' code, as the app processes are about to write it (ui/chart.py)
            prepare_static(self.run, ROOT / "static", APP_STATIC)
            (self.run / "nginx.conf").write_text(render(f"127.0.0.1:{self.port}", self.backend_ports, self.run))
            self.nginx = subprocess.Popen(
                [NGINX, "-p", str(self.run), "-c", str(self.run / "nginx.conf"), "-g", "daemon off;"],
                stdout=open(self.run / "nginx.out", "wb"),
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            deadline = time.monotonic() + timeout_s
            for port, process in zip(self.backend_ports, self.backends):
                while not healthy(f"http://127.0.0.1:{port}"):
                    if process.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"app process on port {port} did not start: {self.app_log(port)[-600:]}")
                    time.sleep(0.2)
            while not healthy(self.url):
                if self.nginx.poll() is not None or time.monotonic() > deadline:
                    logs = [self.run / "nginx.out", self.run / "error.log"]
                    raise RuntimeError("nginx did not start: " + " ".join(p.read_text(errors="replace")[-600:] for p in logs if p.exists()))
                time.sleep(0.2)
        except BaseException:
            self.stop()
            raise
        return self

    def app_log(self, port: int) -> str:
        path = self.run / f"app-{port}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop_backend(self, port: int) -> None:
        _stop(self.backends[self.backend_ports.index(port)])

    def pid_of(self, port: int) -> int:
        return self.backends[self.backend_ports.index(port)].pid

    def access_log(self) -> list[dict]:
        """Every request nginx passed on: the browser's cookie key, the process (port) that answered, the path."""
        path = self.run / "access.log"
        rows = []
        for line in path.read_text(errors="replace").splitlines() if path.exists() else ():
            parts = line.split("|", 5)
            if len(parts) < 6:
                continue
            _, cookie, key, upstream, status, uri = parts
            last = upstream.split(",")[-1].strip()  # "a, b" when nginx moved on to a second process
            port = int(last.rsplit(":", 1)[1]) if ":" in last else None
            rows.append(dict(cookie=None if cookie in ("", "-") else cookie, key=key, port=port, status=status, uri=uri))
        return rows

    def stop(self) -> None:
        if self.nginx is not None:
            _stop(self.nginx)
        for process in self.backends:
            _stop(process)
        if self._own_run:
            shutil.rmtree(self.run, ignore_errors=True)

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.serve", description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2, help="app processes (default 2)")
    parser.add_argument("--port", type=int, default=8501, help="nginx listens on 127.0.0.1:PORT (default 8501)")
    parser.add_argument("--run-dir", type=Path, help="folder for nginx's configuration and logs (default: a temporary one)")
    args = parser.parse_args(argv)
    if not Path(NGINX).exists():
        parser.error("nginx is not installed: apt-get install nginx-light (or make serve, which installs it)")
    cluster = Cluster(args.n, args.port, args.run_dir)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    try:
        cluster.start()
        print(f"{args.n} app processes on ports {cluster.backend_ports} behind nginx: {cluster.url}  (Ctrl-C stops all)", flush=True)
        print(f"configuration and logs: {cluster.run}", flush=True)
        while not stopping and cluster.nginx.poll() is None:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
