"""Exports of ``viz.export``: CSV, HTML, PNG/SVG through kaleido, zip, names.

The PNG/SVG tests drive the real Chromium at /usr/bin/chromium through
kaleido; the first one pays for starting the browser (about 2 s).
"""

from __future__ import annotations

import csv
import io
import json
import re
import threading
import xml.etree.ElementTree as ET
import zipfile

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from plotly.offline import get_plotlyjs_version

import viz
import viz.export
from viz.export import image
from viz.theme import MASK_COLOR

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def small_heatmap() -> go.Figure:
    matrix = np.array([[0.5, 0.25, 2.0], [0.25, -0.125, 3.0]])  # [query_pos, key_pos]
    masked = np.array([[False, True, True], [False, False, True]])
    return viz.attention_heatmap(
        matrix,
        ['say "hi"', "@home"],
        ["=SUM(A1)", "a,b", "-2"],
        title="Tiny",
        colorbar_title="weight",
        masked=masked,
    )


# --- CSV ---------------------------------------------------------------------


ATTENTION_HEADER = ["stage", "layer", "head", "query_position", "query_token", "key_position", "key_token", "value"]


def test_csv_of_small_heatmap_is_exact():
    assert viz.export.figure_to_csv(small_heatmap()) == (
        "stage,layer,head,query_position,query_token,key_position,key_token,value\n"
        ",,,0,\"say \"\"hi\"\"\",0,'=SUM(A1),0.5\n"
        ",,,0,\"say \"\"hi\"\"\",1,\"a,b\",\n"
        ",,,0,\"say \"\"hi\"\"\",2,-2,\n"
        ",,,1,'@home,0,'=SUM(A1),0.25\n"
        ",,,1,'@home,1,\"a,b\",-0.125\n"
        ",,,1,'@home,2,-2,\n"
    )


def test_csv_quotes_newlines_and_commas_in_categorical_labels():
    fig = go.Figure(go.Heatmap(z=[[1, 2]], x=["line\nbreak", "x,y"], y=["row"], name="m"))
    rows = list(csv.reader(io.StringIO(viz.export.figure_to_csv(fig))))
    assert rows == [
        ["panel", "row", "row_label", "column", "column_label", "value"],
        ["m", "row", "row", "line\nbreak", "line\nbreak", "1"],
        ["m", "row", "row", "x,y", "x,y", "2"],
    ]


def test_csv_neutralises_formulas_but_not_negative_numbers():
    fig = go.Figure(
        go.Scatter(
            x=[0, 1, 2, 3, 4, 5],
            y=[-0.5, -1e-05, 2, -3, 4, 5],
            text=["=HYPERLINK(\"http://x\")", "+cmd", "-x", "@SUM(1)", "\tfoo", "-12.5"],
            name="=evil",
        )
    )
    rows = list(csv.reader(io.StringIO(viz.export.figure_to_csv(fig))))
    assert rows[0] == ["series", "x", "x_label", "y"]
    assert [r[3] for r in rows[1:]] == ["-0.5", "-1e-05", "2", "-3", "4", "5"]
    assert [r[2] for r in rows[1:]] == ["'=HYPERLINK(\"http://x\")", "'+cmd", "'-x", "'@SUM(1)", "'\tfoo", "-12.5"]
    assert {r[0] for r in rows[1:]} == {"'=evil"}


def test_csv_of_several_series_is_one_table():
    fig = go.Figure(
        [
            go.Bar(x=[0, 1], y=np.array([0.5, 0.25], dtype=np.float32), name="entropy"),
            go.Scatter(x=[0, 1], y=[1.0, 2.0], name="uniform", text=["a", "b"]),
        ]
    )
    fig.update_xaxes(tickvals=[0, 1], ticktext=["The", "&lt;cat&gt;"])
    assert viz.export.figure_to_csv(fig) == ("series,x,x_label,y\nentropy,0,The,0.5\nentropy,1,<cat>,0.25\nuniform,0,a,1.0\nuniform,1,b,2.0\n")


def test_csv_of_stages_is_one_tidy_table_that_pandas_reads_without_options():
    n = 3
    mask = np.triu(np.ones((n, n), dtype=bool), k=1)
    scores = np.arange(9, dtype=float).reshape(n, n)
    data = dict(scores_raw=scores, scores_scaled=scores / 2, scores_masked=np.where(mask, -np.inf, scores / 2), pattern=np.eye(n))
    fig = viz.stages_figure(data, ["the", "cat", "the"], ["the", "cat", "the"], masked=mask, title="t", layer=1, head=2)
    text = viz.export.figure_to_csv(fig)
    assert "×" not in text and "#" not in text and "\n\n" not in text
    table = pd.read_csv(io.StringIO(text))
    assert list(table.columns) == ATTENTION_HEADER
    assert len(table) == 4 * n * n
    assert list(table["stage"].unique()) == ["scores_raw", "scores_scaled", "scores_masked", "pattern"]
    assert set(table["layer"]) == {1} and set(table["head"]) == {2}
    pattern = table[table["stage"] == "pattern"]
    first_the_to_second_the = pattern[(pattern.query_position == 0) & (pattern.key_position == 2)]
    assert first_the_to_second_the["value"].isna().all()  # masked: an empty cell
    second_the = pattern[(pattern.query_position == 2) & (pattern.key_position == 2)]
    assert second_the["query_token"].item() == "the" and second_the["value"].item() == 1.0
    raw = table[table["stage"] == "scores_raw"].pivot(index="query_position", columns="key_position", values="value")
    np.testing.assert_array_equal(raw.to_numpy(), scores)


def test_csv_of_the_overview_names_layer_head_and_both_positions():
    patterns = np.random.default_rng(0).random((2, 3, 4, 4))  # [layer, head, query_pos, key_pos]
    fig = viz.heads_overview(patterns, list("abcd"), list("abcd"))
    table = pd.read_csv(io.StringIO(viz.export.figure_to_csv(fig)))
    assert list(table.columns) == ATTENTION_HEADER and len(table) == 2 * 3 * 16
    row = table[(table.layer == 1) & (table["head"] == 2) & (table.query_position == 3) & (table.key_position == 0)]
    assert row["value"].item() == pytest.approx(patterns[1, 2, 3, 0], rel=1e-6)
    assert (row["query_token"].item(), row["key_token"].item()) == ("d", "a")


# --- file names and config ---------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("../../etc/passwd", "etc-passwd"),
        ("", "figure"),
        ("Köpfe – Übersicht", "kopfe-ubersicht"),
        (".hidden", "hidden"),
        ("Attention / L0 H3", "attention-l0-h3"),
        ("C:\\Windows\\system32", "c-windows-system32"),
        ("CON", "file-con"),
        ("report.v2_final", "report.v2_final"),
    ],
)
def test_safe_filename_examples(name, expected):
    assert viz.export.safe_filename(name) == expected


def test_safe_filename_of_non_latin_text_is_stable_and_distinct():
    first, second = viz.export.safe_filename("注意力"), viz.export.safe_filename("注意")
    assert re.fullmatch(r"figure-[0-9a-f]{8}", first)
    assert first == viz.export.safe_filename("注意力") and first != second
    assert len(viz.export.safe_filename("x" * 500)) == 80


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_safe_filename_is_always_a_plain_name(name):
    result = viz.export.safe_filename(name)
    assert re.fullmatch(r"[a-z0-9._-]{1,80}", result)
    assert not result.startswith(".") and ".." not in result


def test_plotly_config_sets_svg_camera_button():
    config = viz.export.plotly_config("Attention / L0")
    assert config["displaylogo"] is False
    assert config["toImageButtonOptions"] == {"format": "svg", "filename": "attention-l0", "scale": 2.0}


# --- HTML --------------------------------------------------------------------


def test_html_is_standalone_and_offline():
    page = viz.export.figure_to_html(small_heatmap(), filename="tiny")
    text = page.decode("utf-8")
    assert text.lstrip().lower().startswith("<!doctype html>")
    assert f"plotly.js v{get_plotlyjs_version()}" in text
    assert not re.search(r"<script[^>]*\bsrc\s*=\s*[\"']?(https?:)?//", text, flags=re.IGNORECASE)
    assert "mathjax.js" not in text.lower()
    assert '"format": "svg"' in text and '"displaylogo": false' in text
    assert "<script>alert" not in text


# --- static export -----------------------------------------------------------


def test_static_export_available_here():
    available, message = viz.export.static_export_available()
    assert available, message
    assert "chromium" in message.lower()


def test_static_export_reports_missing_chromium(monkeypatch):
    monkeypatch.setattr(image, "_find_browser", lambda: None)
    available, message = viz.export.static_export_available()
    assert not available
    assert "apt-get install chromium" in message and "HTML" in message
    with pytest.raises(RuntimeError, match="Chromium"):
        viz.export.figure_to_png(small_heatmap())


def test_png_has_requested_size():
    data = viz.export.figure_to_png(small_heatmap(), scale=2.0, width=400, height=300)
    assert data.startswith(PNG_SIGNATURE)
    image = Image.open(io.BytesIO(data))
    assert image.size == (800, 600)


def test_png_uses_layout_size_by_default():
    fig = viz.row_stats_figure(np.eye(3), np.eye(3), list("abc"))
    image = Image.open(io.BytesIO(viz.export.figure_to_png(fig, scale=1.0)))
    assert image.size == (1280, fig["layout"]["height"])  # a 1280-pixel slide


def test_svg_parses_with_svg_root():
    data = viz.export.figure_to_svg(small_heatmap())
    root = ET.fromstring(data)
    assert root.tag.endswith("svg")
    assert b"key (attended to)" in data


def test_concurrent_exports_get_their_own_results():
    fig = small_heatmap()
    kinds = ("png", "svg", "png", "svg")
    results: list[bytes | None] = [None] * len(kinds)
    errors: list[BaseException | None] = [None] * len(kinds)

    def render(index: int, kind: str) -> None:
        try:
            results[index] = viz.export.figure_to_png(fig, scale=1.0) if kind == "png" else viz.export.figure_to_svg(fig)
        except BaseException as error:  # collected: a thread's exception must fail the test, not vanish
            errors[index] = error

    threads = [threading.Thread(target=render, args=(index, kind)) for index, kind in enumerate(kinds)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == [None] * len(kinds)
    for kind, data in zip(kinds, results):
        if kind == "png":
            assert data.startswith(PNG_SIGNATURE) and Image.open(io.BytesIO(data)).size[0] > 0
        else:
            assert ET.fromstring(data).tag.endswith("svg") and b"key (attended to)" in data


def test_dead_server_falls_back_to_a_one_off_browser(monkeypatch):
    never = threading.Event()
    monkeypatch.setitem(image._server, "usable", True)
    monkeypatch.setattr(image, "_server_render", lambda fig_dict, opts: never.wait())
    monkeypatch.setitem(image._server, "answered", True)
    monkeypatch.setattr(image, "SERVER_TIMEOUT", 0.5)  # a server that answered before and now hangs
    data = viz.export.figure_to_png(small_heatmap(), scale=1.0, width=200, height=100)
    assert Image.open(io.BytesIO(data)).size == (200, 100)
    assert image._server["usable"] is False
    never.set()


def test_a_server_that_failed_is_started_again_with_time_to_start_its_browser(monkeypatch):
    """The server raises, a one-off browser renders: the server was at fault and is stopped; the next one it
    starts must start its Chromium, so its first render is given RENDER_TIMEOUT, not SERVER_TIMEOUT."""
    monkeypatch.setitem(image._server, "usable", True)
    monkeypatch.setitem(image._server, "answered", True)

    def fails(fig_dict, opts):
        raise RuntimeError("the server's tab crashed")

    monkeypatch.setattr(image, "_server_render", fails)
    data = viz.export.figure_to_png(small_heatmap(), scale=1.0, width=200, height=100)
    assert Image.open(io.BytesIO(data)).size == (200, 100)
    assert image._server["usable"] is True and image._server["answered"] is False


# --- zip ---------------------------------------------------------------------


def test_figures_zip_names_and_manifest():
    figures = {
        "Attention / L0": small_heatmap(),
        "../pe": viz.pe_heatmap(np.zeros((4, 4)), title="PE"),
    }
    archive = zipfile.ZipFile(io.BytesIO(viz.export.figures_zip(figures, scale=1.0)))
    names = set(archive.namelist())
    expected = {f"{stem}.{ext}" for stem in ("attention-l0", "pe") for ext in ("png", "svg", "html", "csv")}
    assert names == expected | {"manifest.json"}
    assert all("/" not in n and "\\" not in n and not n.startswith(".") for n in names)
    manifest = json.loads(archive.read("manifest.json"))
    matrix = ["panel", "row", "row_label", "column", "column_label", "value"]  # figures made outside the pages: the generic table
    attention = ["stage", "layer", "head", "query_position", "query_token", "key_position", "key_token", "value"]
    assert manifest["figures"] == [
        {"id": "Attention / L0", "title": "Tiny", "files": [f"attention-l0.{e}" for e in ("png", "svg", "html", "csv")], "columns": attention},
        {"id": "../pe", "title": "PE", "files": [f"pe.{e}" for e in ("png", "svg", "html", "csv")], "columns": matrix},
    ]
    assert manifest["notes"] == []
    assert archive.read("attention-l0.png").startswith(PNG_SIGNATURE)
    assert archive.read("attention-l0.csv").decode() == viz.export.figure_to_csv(figures["Attention / L0"])


def test_a_figure_s_table_is_its_csv_in_the_zip_and_the_manifest_lists_its_columns():
    made = []

    def table():
        made.append(1)
        return pd.DataFrame({"position": [0, 1], "token": ["=cmd", "cat"], "value": np.array([0.5, np.nan], dtype=np.float32)})

    figures = {"a": small_heatmap(), "b": small_heatmap()}
    archive = zipfile.ZipFile(io.BytesIO(viz.export.figures_zip(figures, formats=("html", "csv"), tables={"a": table})))
    assert archive.read("a.csv").decode() == "position,token,value\n0,'=cmd,0.5\n1,cat,\n" == viz.export.figure_to_csv(figures["a"], table())
    assert archive.read("b.csv").decode() == viz.export.figure_to_csv(figures["b"])  # no table: read from the figure
    columns = {entry["id"]: entry.get("columns") for entry in json.loads(archive.read("manifest.json"))["figures"]}
    assert columns == {
        "a": ["position", "token", "value"],
        "b": ["stage", "layer", "head", "query_position", "query_token", "key_position", "key_token", "value"],
    }
    assert len(made) == 2  # built when its CSV is written (and once above), not for the HTML


def test_figures_zip_without_chromium_skips_static_files(monkeypatch):
    monkeypatch.setattr(image, "_find_browser", lambda: None)
    archive = zipfile.ZipFile(io.BytesIO(viz.export.figures_zip({"a": small_heatmap(), "A": small_heatmap()})))
    assert set(archive.namelist()) == {"a.html", "a.csv", "a-2.html", "a-2.csv", "manifest.json"}
    manifest = json.loads(archive.read("manifest.json"))
    assert any("apt-get install chromium" in note for note in manifest["notes"])
    assert [f["files"] for f in manifest["figures"]] == [["a.html", "a.csv"], ["a-2.html", "a-2.csv"]]


def test_zip_manifest_records_model_sentences_settings_and_link_and_names_carry_them():
    about = viz.export.bundle.describe(
        "toy", ["The cat sat.", "A bank."], {"layer": 1, "heads": [0, 2], "mask": "causal"}, link="http://localhost:8501/Attention?layer=1"
    )
    archive = zipfile.ZipFile(io.BytesIO(viz.export.figures_zip({"Attention / L0": small_heatmap()}, formats=("csv",), about=about)))
    manifest = json.loads(archive.read("manifest.json"))
    assert manifest["model"] == "toy" and manifest["sentences"] == ["The cat sat.", "A bank."]
    assert manifest["settings"] == {"layer": 1, "heads": [0, 2], "mask": "causal"}
    assert manifest["link"] == "http://localhost:8501/Attention?layer=1"
    (name,) = manifest["figures"][0]["files"]
    assert re.fullmatch(r"attention-l0-toy-[0-9a-f]{7}\.csv", name) and name in archive.namelist()
    other = viz.export.bundle.describe("toy", ["The cat sat.", "A bank."], {"layer": 1, "heads": [0, 2], "mask": "none"})
    again = viz.export.bundle.describe("toy", ["The cat sat.", "A bank."], {"mask": "causal", "heads": [0, 2], "layer": 1})
    names = [viz.export.bundle.archive_name("Attention", a) for a in (about, other, again)]
    assert names[0] != names[1] and names[0] == names[2]  # another setting, another name; the same view, the same name
    assert re.fullmatch(r"attention-toy-[0-9a-f]{7}\.zip", names[0])


def test_figures_zip_rejects_unknown_format():
    with pytest.raises(ValueError, match="pdf"):
        viz.export.figures_zip({"a": small_heatmap()}, formats=("pdf",))


def test_csv_of_long_heatmap_names_every_token_although_ticks_are_thinned():
    n = 130
    tokens = [f"t{i}" for i in range(n)]
    fig = viz.attention_heatmap(np.zeros((n, n)), tokens, tokens, title="t", colorbar_title="w")
    assert len(fig["layout"]["xaxis"]["ticktext"]) < n
    table = pd.read_csv(io.StringIO(viz.export.figure_to_csv(fig)))
    assert list(table["key_token"][:n]) == tokens
    assert list(table["query_token"][::n]) == tokens


def test_rendered_masked_cell_shows_the_grey_background():
    fig = viz.attention_heatmap(
        np.array([[1.0, 0.7], [0.0, 0.5]]),
        ["a", "b"],
        ["a", "b"],
        title="",
        colorbar_title="weight",
        masked=np.array([[False, True], [False, False]]),
        square=False,
    )
    for trace in fig["data"]:
        if trace["type"] == "heatmap":
            trace["showscale"] = False
    fig["layout"].update(margin=dict(l=0, r=0, t=0, b=0))
    fig["layout"]["xaxis"]["visible"] = fig["layout"]["yaxis"]["visible"] = False
    image = Image.open(io.BytesIO(viz.export.figure_to_png(fig, scale=1.0, width=200, height=200))).convert("RGB")
    grey = tuple(int(MASK_COLOR[i : i + 2], 16) for i in (1, 3, 5))
    assert image.getpixel((185, 15)) == grey, "query 0 (top) may not see key 1 (right): a gap"
    assert image.getpixel((15, 15)) == (253, 231, 37), "query 0 → key 0 has weight 1: Viridis yellow"
