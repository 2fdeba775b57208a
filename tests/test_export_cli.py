"""`python -m viz.export` writes valid PNG, SVG, HTML and CSV files and a manifest, and nothing else."""

import io
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pandas as pd
import pytest
from PIL import Image

from conftest import ROOT, toy_tokens
from viz.cli import main

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_command_line_writes_every_format_and_the_manifest(tmp_path):
    out = tmp_path / "slides"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "viz.export",
            "--text",
            "The cat sat on the mat.",
            "--text",
            "A man on the river bank.",
            "--model",
            "toy",
            "--out",
            str(out),
            "--layer",
            "1",
            "--head",
            "2",
            "--mask",
            "causal",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["settings"]["layer"] == 1 and manifest["settings"]["heads"] == [2]
    assert manifest["settings"]["mask"] == "causal" and manifest["settings"]["formats"] == ["png", "svg", "html", "csv"]
    assert manifest["model"] == "toy" and manifest["sentences"] == ["The cat sat on the mat.", "A man on the river bank."]
    assert manifest["link"].startswith("http://localhost:8501/Attention?") and "layer=1" in manifest["link"] and "heads=2" in manifest["link"]
    assert manifest["settings"]["pattern_colour"] == "fixed" and manifest["settings"]["scaling"] is True  # every setting
    assert "value-step-L1-H2" in [f["id"] for f in manifest["figures"]] and "output-step-L1" in [f["id"] for f in manifest["figures"]]
    ids = [f["id"] for f in manifest["figures"]]
    assert "stages-L1-H2" in ids and "overview-all-heads" in ids and "tokens-s1" in ids and "pe-matrix" in ids
    written = {p.name for p in out.iterdir()}
    listed = {name for figure in manifest["figures"] for name in figure["files"]}
    assert written == listed | {"manifest.json"}
    assert list(tmp_path.iterdir()) == [out]  # nothing written beside the output folder
    stages = next(f for f in manifest["figures"] if f["id"] == "stages-L1-H2")
    assert stages["title"] == "toy · layer 1 · head 2 · mask causal · what-if"  # the toy model was trained with causal+padding
    stem = stages["files"][0].rsplit(".", 1)[0]
    assert re.fullmatch(r"stages-l1-h2-toy-[0-9a-f]{7}", stem)  # the model and a hash of the settings
    assert sorted(stages["files"]) == [f"{stem}.{ext}" for ext in ("csv", "html", "png", "svg")]

    png = (out / f"{stem}.png").read_bytes()
    assert png.startswith(PNG_SIGNATURE)
    width, height = Image.open(io.BytesIO(png)).size
    assert width >= 1000 and height >= 400  # 2× scale
    root = ElementTree.fromstring((out / f"{stem}.svg").read_bytes())
    assert root.tag.endswith("svg")
    html = (out / f"{stem}.html").read_text()
    assert "Plotly.newPlot" in html and "<script src=\"http" not in html
    table = pd.read_csv(out / f"{stem}.csv")
    assert list(table.columns) == ["stage", "layer", "head", "query_position", "query_token", "key_position", "key_token", "value"]
    assert set(table.layer) == {1} and set(table["head"]) == {2}
    raw = table[table.stage == "scores_raw"]
    assert list(raw.key_token[:7]) == toy_tokens("The cat sat on the mat.")[:7]  # the toy's own pieces, spaces kept
    softmax = table[table.stage == "pattern"].pivot(index="query_position", columns="key_position", values="value")
    assert softmax.loc[0, 1:].isna().all()  # causal: the first query's later keys are masked (empty cells)
    assert abs(softmax.loc[3, 0:3].sum() - 1) < 1e-5 and softmax.loc[3, 4:].isna().all()


def test_bad_arguments_give_a_message_not_a_traceback(tmp_path, capsys):
    assert main(["--text", "The cat.", "--out", str(tmp_path / "o"), "--layer", "99"]) == 1
    assert "--layer must be in 0…1" in capsys.readouterr().err
    assert main(["--text", "   ", "--out", str(tmp_path / "o")]) == 1
    assert "nothing to read" in capsys.readouterr().err
    assert main(["--text", "x", "--out", str(tmp_path / "o"), "--formats", "gif"]) == 2
    assert not (tmp_path / "o").exists()


def test_csv_only_and_print_theme(tmp_path):
    assert main(["--text", "The cat sat.", "--out", str(tmp_path), "--formats", "csv", "--print-theme"]) == 0
    assert {p.suffix for p in tmp_path.iterdir()} == {".csv", ".json"}
    stages = pd.read_csv(next(tmp_path.glob("stages-l0-h0-toy-*.csv")))
    assert list(stages.query_token.unique()) == [" the", " cat", " sat", "."]


def test_python_m_viz_export_loads_the_exporters_once():
    """`python -m viz.export` runs the package's __main__, which imports viz.cli, which imports viz.export:
    one copy of each module, so one render lock."""
    code = (
        "import gc, runpy, sys\n"
        "sys.argv = ['viz.export', '--help']\n"
        "try:\n"
        "    runpy.run_module('viz.export', run_name='__main__', alter_sys=True)\n"
        "except SystemExit as stop:\n"
        "    kept = stop.__traceback__\n"
        "copies = [o for o in gc.get_objects() if getattr(o, '__qualname__', None) == 'figure_to_png']\n"
        "print('copies', len(copies), sorted(name for name in sys.modules if name.startswith('viz.export')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("copies 1 "), last
    assert "'viz.export.image'" in last and "'viz.export.bundle'" in last


def test_the_command_line_takes_the_app_s_toy_tokenizers_with_the_same_default():
    from viz.cli import build_figures, parse_args
    from viz.content.settings import TOY_TOKENIZERS, Settings

    _, settings, _ = build_figures(parse_args(["--text", "a cat", "--out", "x", "--model", "toy-random"]))
    assert settings["tokenizer"] == TOY_TOKENIZERS[Settings.tokenizer]  # the model ran with the app's default
    _, settings, _ = build_figures(parse_args(["--text", "a cat", "--out", "x", "--model", "toy-random", "--tokenizer", "char"]))
    assert settings["tokenizer"] == TOY_TOKENIZERS["char"]
    with pytest.raises(SystemExit, match="choose one of bpe, word"):
        build_figures(parse_args(["--text", "a cat", "--out", "x", "--model", "toy-random", "--tokenizer", "wordpiece"]))


@pytest.mark.parametrize("out", ["/dev/null", "/etc/hostname", "/proc/x", "/etc/hostname/inside", "a file"])
def test_a_bad_out_folder_is_one_line_and_exit_code_2(tmp_path, out):
    if out == "a file":
        (tmp_path / "notes.txt").write_text("mine")
        out = str(tmp_path / "notes.txt")
    result = subprocess.run(
        [sys.executable, "-m", "viz.export", "--text", "The cat sat.", "--out", out, "--formats", "csv"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error: --out: ") and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr and result.stdout == ""
    if out.endswith("notes.txt"):
        assert (tmp_path / "notes.txt").read_text() == "mine"


def test_a_symbolic_link_in_the_folder_is_not_written_through(tmp_path, capsys):
    outside = tmp_path / "outside.txt"
    outside.write_text("not yours")
    out = tmp_path / "o"
    out.mkdir()
    (out / "manifest.json").symlink_to(outside)
    assert main(["--text", "The cat sat.", "--out", str(out), "--formats", "csv"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "manifest.json is a symbolic link" in err
    assert outside.read_text() == "not yours" and (out / "manifest.json").is_symlink()
    assert not list(out.glob(".export-*"))  # no temporary file left behind


def test_a_link_to_a_folder_where_a_figure_goes_is_refused(tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "o"
    assert main(["--text", "The cat sat.", "--out", str(out), "--formats", "csv"]) == 0
    capsys.readouterr()
    stages = next(out.glob("stages-l0-h0-toy-*.csv"))
    stages.unlink()
    stages.symlink_to(elsewhere, target_is_directory=True)
    assert main(["--text", "The cat sat.", "--out", str(out), "--formats", "csv"]) == 2
    assert "is a symbolic link" in capsys.readouterr().err and not list(elsewhere.iterdir())


def test_a_hard_link_in_the_folder_leaves_the_other_name_unchanged(tmp_path, capsys):
    """The files are written anew and renamed into place: a file with a second name elsewhere keeps its bytes there."""
    outside = tmp_path / "outside.txt"
    outside.write_text("not yours")
    out = tmp_path / "o"
    out.mkdir()
    (out / "manifest.json").hardlink_to(outside)
    assert main(["--text", "The cat sat.", "--out", str(out), "--formats", "csv"]) == 0
    assert outside.read_text() == "not yours"
    assert json.loads((out / "manifest.json").read_text())["model"] == "toy"


@pytest.mark.parametrize("scale", ["-1", "0", "nan", "inf", "-inf", "1e9", "two"])
def test_a_png_scale_that_is_not_a_positive_finite_number_is_refused(tmp_path, capsys, scale):
    with pytest.raises(SystemExit) as stopped:
        main(["--text", "The cat sat.", "--out", str(tmp_path / "o"), f"--png-scale={scale}"])
    assert stopped.value.code == 2
    assert "--png-scale" in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_a_png_scale_in_range_is_kept_in_the_manifest(tmp_path):
    assert main(["--text", "The cat sat.", "--out", str(tmp_path), "--formats", "csv", "--png-scale", "0.5"]) == 0
    assert json.loads((tmp_path / "manifest.json").read_text())["settings"]["png_scale"] == 0.5


def test_every_csv_written_has_the_columns_its_manifest_lists_and_the_head_view_every_head(tmp_path):
    from viz.content.figure_tables import columns_for

    assert main(["--text", "The cat sat.", "--text", "A dog ran.", "--out", str(tmp_path), "--formats", "csv", "--head", "0", "--head", "1"]) == 0
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    ids = [entry["id"] for entry in manifest["figures"]]
    assert {"head-view-L0", "value-step-L0-H0", "value-step-L0-H1", "row-stats-L0-H0", "pe-curves", "pe-similarity"} <= set(ids)
    for entry in manifest["figures"]:
        (name,) = entry["files"]
        table = pd.read_csv(tmp_path / name)
        assert list(table.columns) == entry["columns"] == columns_for(entry["id"]), entry["id"]
    head_view = pd.read_csv(next(tmp_path.glob("head-view-l0-*.csv")))
    assert sorted(head_view["head"].unique()) == [0, 1]
    curves = pd.read_csv(next(tmp_path.glob("pe-curves-*.csv")))
    assert sorted(curves["dimension"].unique()) == [0, 1]  # the command line's chosen dimensions
