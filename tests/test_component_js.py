"""The components' code is served as a file at app/static/ and imported by a loader (ui/assets.py),
not sent inline with every element."""

from __future__ import annotations

from ui import assets as component_js


def test_the_file_holds_the_whole_code_under_a_name_that_carries_its_hash(tmp_path):
    path = component_js.write("av-chart", tmp_path)
    code = component_js.code("av-chart")
    assert path.read_text(encoding="utf-8") == code
    assert "export default function chart(component)" in code and "function saveFile(blob, name)" in code  # chart.js, save_file.js
    assert path.name == component_js.file_name("av-chart") and path.name.startswith("av-chart-") and len(path.stem) == len("av-chart-") + 12
    assert component_js.file_name("av-chart", code + " ") != path.name  # another code, another name


def test_a_file_already_there_is_kept_and_an_older_version_removed(tmp_path):
    old = tmp_path / "av-chart-000000000000.js"
    old.write_text("old code")
    other = tmp_path / "av-head-view-000000000000.js"
    other.write_text("the other component's")
    path = component_js.write("av-chart", tmp_path)
    mtime = path.stat().st_mtime_ns
    assert component_js.write("av-chart", tmp_path) == path and path.stat().st_mtime_ns == mtime
    assert not old.exists() and other.exists()
    assert not list(tmp_path.glob("*.part"))


def test_the_component_gets_a_small_loader_of_its_file(tmp_path):
    js = component_js.component_js("av-chart", True, tmp_path)
    name = component_js.file_name("av-chart")
    assert (tmp_path / name).is_file()
    assert f'"app/static/{name}"' in js and "import(url)" in js and "export default function" in js
    assert len(js.encode()) < 1500 < len(component_js.code("av-chart").encode()) // 20  # a chart's message: 45 KB of code before


def test_without_static_serving_or_a_writable_folder_the_code_goes_inline(tmp_path):
    assert component_js.component_js("av-head-view", False, tmp_path) == component_js.code("av-head-view")
    assert not list(tmp_path.iterdir())
    blocked = tmp_path / "a file"
    blocked.write_text("")
    assert component_js.component_js("av-head-view", True, blocked / "static") == component_js.code("av-head-view")  # OSError: inline


def test_the_loader_where_static_serving_is_on():
    """.streamlit/config.toml turns static serving on: the components import their code from app/static/.
    A test app elsewhere (tests/apps/), whose static/ is another folder, is run with it off: code inline."""
    import ui.chart

    assert ui.chart.static_serving() and ui.chart.SERVED
    assert 'enableStaticServing = true' in (component_js.ROOT / ".streamlit" / "config.toml").read_text()


def test_the_head_view_export_keeps_the_whole_code():
    import ui.head_view

    assert component_js.code("av-head-view") == ui.head_view.JS  # the standalone HTML export embeds it, not the loader
