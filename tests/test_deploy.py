"""Deployment files: the Hugging Face Spaces front matter, nginx's configuration, the server's config."""

import base64
import os
import socket
import tomllib

import pytest

from conftest import ROOT
import gzip

from deploy.serve import Cluster, prepare_static, render, streamlit_frontend


def front_matter() -> dict:
    text = (ROOT / "README.md").read_text()
    assert text.startswith("---\n"), "Spaces reads its settings from YAML front matter at the top of README.md"
    block = text.split("---\n", 2)[1]
    return dict(line.split(": ", 1) for line in block.strip().splitlines())


def test_spaces_front_matter_is_a_docker_space_on_the_app_s_port():
    meta = front_matter()
    assert meta["sdk"] == "docker"
    port = next(line.split("?=")[1].strip() for line in (ROOT / "Makefile").read_text().splitlines() if line.startswith("PORT ?="))
    assert meta["app_port"] == port == "8501"  # Spaces sends its visitors to the port the app listens on
    assert {"title", "emoji", "colorFrom", "colorTo", "short_description"} <= meta.keys()


def test_nginx_configuration_hashes_a_sticky_cookie_onto_every_process(tmp_path):
    text = render("127.0.0.1:9000", [9101, 9102, 9103], tmp_path)
    assert "listen 127.0.0.1:9000;" in text
    assert [line.split()[1] for line in text.splitlines() if line.strip().startswith("server 127.0.0.1")] == [
        "127.0.0.1:9101",
        "127.0.0.1:9102",
        "127.0.0.1:9103",
    ]
    assert "hash $sticky_key consistent;" in text and "app_backend=$sticky_key" in text
    assert "proxy_set_header Upgrade $http_upgrade;" in text  # the websocket passes through
    assert "@" not in text.replace("$", "")  # every placeholder filled
    static = text.split("location /static/ {", 1)[1].split("\n        }\n", 1)[0]
    assert f"alias {tmp_path / 'static'}/;" in static and "gzip_static on;" in static and "proxy_pass" not in static  # nginx serves the frontend
    assert "text/javascript js mjs;" in static  # the browser runs module scripts only with a JavaScript type
    app_static = text.split("location /app/static/ {", 1)[1].split("\n        }\n", 1)[0]  # the charts' plotly.js
    assert f"alias {tmp_path / 'app-static'}/;" in app_static and "gzip_static on;" in app_static and "text/javascript js;" in app_static


def test_the_frontend_folder_links_every_file_and_gzips_the_text_ones(tmp_path):
    source = tmp_path / "frontend"
    (source / "js").mkdir(parents=True)
    (source / "media").mkdir()
    script = b"export const x = 1;\n" * 500
    (source / "js" / "index.abc123.js").write_bytes(script)
    (source / "media" / "font.woff2").write_bytes(b"wOF2" + bytes(100))
    target = prepare_static(tmp_path / "run", source)
    assert (target / "js" / "index.abc123.js").read_bytes() == script
    assert all(path.stat().st_mode & 0o004 for path in target.rglob("*"))  # nginx's workers (another user) may read them
    packed = (target / "js" / "index.abc123.js.gz").read_bytes()
    assert gzip.decompress(packed) == script and len(packed) < len(script) / 10
    assert (target / "media" / "font.woff2").exists() and not (target / "media" / "font.woff2.gz").exists()  # compressed already
    assert prepare_static(tmp_path / "run", source) == target  # a second call finds everything in place


def test_the_frontend_folder_is_the_installed_streamlits():
    assert any(streamlit_frontend().glob("js/index.*.js")), streamlit_frontend()


def test_access_log_rows_name_the_process_that_answered(tmp_path):
    cluster = Cluster(2, port=1, run_dir=tmp_path)
    (tmp_path / "access.log").write_text("1.0|-|abc|127.0.0.1:9101|200|/Attention?text=a\n1.5|abc|abc|127.0.0.1:9101, 127.0.0.1:9102|200|/_stcore/health\n")
    rows = cluster.access_log()
    assert [(r["cookie"], r["key"], r["port"], r["uri"]) for r in rows] == [
        (None, "abc", 9101, "/Attention?text=a"),
        ("abc", "abc", 9102, "/_stcore/health"),  # the second process, after the first refused
    ]


def test_streamlit_does_not_collect_garbage_after_every_run():
    import streamlit as st

    settings = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert settings["runner"]["postScriptGC"] is False
    assert settings["server"]["fileWatcherType"] == "none"  # no walk over every loaded module per new session
    # options this Streamlit knows (get_option raises on one it does not), read from this file
    assert st.get_option("runner.postScriptGC") is False and st.get_option("server.fileWatcherType") == "none"


def websocket_extensions(host: str, port: int) -> str:
    """The extensions a server at host:port agrees to when a browser opens Streamlit's websocket asking for
    permessage-deflate, as chromium does (the handshake's Sec-WebSocket-Extensions)."""
    key = base64.b64encode(os.urandom(16)).decode()
    request = (
        f"GET /_stcore/stream HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: streamlit\r\n"
        "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n"
    )
    with socket.create_connection((host, port), timeout=30) as connection:
        connection.sendall(request.encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = connection.recv(4096)
            assert chunk, answer
            answer += chunk
    head = answer.split(b"\r\n\r\n", 1)[0].decode("latin-1").splitlines()
    assert head[0].startswith("HTTP/1.1 101"), head
    return next((line.split(":", 1)[1].strip() for line in head if line.lower().startswith("sec-websocket-extensions:")), "")


@pytest.mark.browser  # nginx, as `make test` installs it with chromium
def test_the_websocket_is_deflated_from_the_app_and_through_nginx():
    """What a new view sends (figures as JSON and base64) crosses the network deflated, about half its size."""
    settings = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert settings["server"]["enableWebsocketCompression"] is True
    with Cluster(1) as cluster:
        assert websocket_extensions("127.0.0.1", cluster.backend_ports[0]).startswith("permessage-deflate")
        assert websocket_extensions("127.0.0.1", cluster.port).startswith("permessage-deflate")


def test_page_content_is_built_once_per_view_and_never_shared_for_a_session_model():
    from dataclasses import replace

    from ui.content_cache import _cached, page_content
    from viz.content.page import PageContent
    from viz.content.settings import SESSION_MODEL, Settings

    _cached.clear()
    built = []

    def builder(settings, trace):
        built.append((settings.scaling, trace))
        return PageContent()

    view = Settings(text="the cat sat", model="toy")
    first = page_content(builder, view, "trace")
    assert page_content(builder, view, "trace") is first and len(built) == 1  # the same view: built once
    page_content(builder, replace(view, scaling=False), "trace")
    assert [scaling for scaling, _ in built] == [True, False]  # a toggle is a new view
    trained = replace(view, model=SESSION_MODEL)
    page_content(builder, trained, "one session's trace")
    page_content(builder, trained, "another session's trace")
    assert [trace for _, trace in built[2:]] == ["one session's trace", "another session's trace"]


def test_the_tokens_page_comes_from_the_content_cache_and_equals_a_fresh_build(monkeypatch):
    """Two visitors of the same Tokens view: the page's content is built once (a page switch back to it
    builds nothing), and the charts the second visitor gets are those of a fresh `tokens_page`."""
    import json

    import plotly.io
    from streamlit.testing.v1 import AppTest

    import viz.content
    from apptest_helpers import charts
    from model import load_model
    from ui.content_cache import _cached
    from viz.content.settings import Settings, run_model

    _cached.clear()
    built = []
    builder = viz.content.tokens_page

    def counting(settings, trace, model, tokenizers=None):
        built.append(settings)
        return builder(settings, trace, model, tokenizers)

    counting.__module__, counting.__qualname__ = builder.__module__, builder.__qualname__  # the same cache key
    monkeypatch.setattr(viz.content, "tokens_page", counting)
    text = "the fisher sat on the river bank"
    sent = []
    for _ in range(2):
        at = AppTest.from_file(str(ROOT / "home.py"), default_timeout=120)
        at.query_params["text"] = text
        at.run()
        at.switch_page("pages/1_Tokens.py").run()
        assert not at.exception, [e.value for e in at.exception]
        sent.append(charts(at))
    assert len(built) == 1
    settings = Settings(text=text)
    model = load_model(settings.model)
    fresh = builder(settings, run_model(model, settings.sentences, settings.display), model)
    written = [json.loads(plotly.io.to_json(fig)) for fig in fresh.figures.values()]  # as plotly writes each figure
    expected = {spec["layout"]["title"]["text"]: spec["data"] for spec in written}
    for visitor in sent:
        got = {spec["layout"]["title"]["text"]: spec["data"] for spec in visitor}
        assert set(got) == set(expected) and len(got) == len(fresh.figures) >= 5
        for title, data in expected.items():
            assert [trace.get("text") for trace in got[title]] == [trace.get("text") for trace in data], title
            assert [trace.get("x") for trace in got[title]] == [trace.get("x") for trace in data], title
