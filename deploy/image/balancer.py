"""nginx in front of app containers with sticky sessions: deploy/compose.yaml's balancer, in the app's image.

    python -m deploy.image.balancer --listen 8080 app1:8501 app2:8501

Renders deploy/nginx.conf.template, the configuration `make serve` runs (deploy/serve.py), for backends
given as host:port, and replaces this process by nginx in the foreground. Streamlit's frontend files and
the app's static/ are served by nginx itself from the folder the image prepared at build time
(/app/frontend: a copy and a gzip of each, deploy/serve.py's prepare_static). nginx's access log, in the
sticky format of the template, is RUN/access.log.
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

from deploy.serve import APP_STATIC, TEMPLATE

FRONTEND = Path("/app/frontend")  # the Dockerfile's copy of streamlit's frontend and static/
RUN = Path("/tmp/nginx")
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
PROXY_PASS = "proxy_pass http://app;"  # the template's one location that reaches the app containers
CONNECT_TIMEOUT = "2s"


def render(listen: str, backends: list[str], run: Path = RUN, frontend: Path = FRONTEND) -> str:
    """The template with its @NAME@ fields filled: nginx listens on `listen` ("8080", "127.0.0.1:8080")
    and hashes each browser's cookie onto one of `backends` ("app1:8501"), as deploy/serve.py does."""
    upstreams = "\n".join(f"        server {backend} max_fails=1 fail_timeout=5s;" for backend in backends)
    fields = {
        "@RUN@": str(run),
        "@LISTEN@": listen,
        "@UPSTREAMS@": upstreams,
        "@STATIC@": str(frontend / "static"),
        "@APP_STATIC@": str(frontend / APP_STATIC),
    }
    text = TEMPLATE.read_text()
    for name, value in fields.items():
        text = text.replace(name, value)
    # Between containers a stopped backend does not refuse a connection as a stopped process on loopback
    # does: its address is gone and the connection waits (60 s by default) before nginx moves on. Short,
    # since the backends are on the same network.
    return text.replace(PROXY_PASS, f"{PROXY_PASS}\n            proxy_connect_timeout {CONNECT_TIMEOUT};", 1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m deploy.image.balancer", description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="8080", help="nginx's listen address (default 8080: every interface)")
    parser.add_argument("--run-dir", type=Path, default=RUN, help=f"configuration, logs and temporary files (default {RUN})")
    parser.add_argument("backends", nargs="+", help="the app containers, as host:port")
    args = parser.parse_args(argv)
    args.run_dir.mkdir(parents=True, exist_ok=True)
    config = args.run_dir / "nginx.conf"
    config.write_text(render(args.listen, args.backends, args.run_dir))
    # -e stderr: nginx's own start-up messages go to the container's log, not to /var/log/nginx (not
    # writable by the image's user)
    os.execv(NGINX, [NGINX, "-p", str(args.run_dir), "-c", str(config), "-e", "stderr", "-g", "daemon off;"])


if __name__ == "__main__":
    main()
