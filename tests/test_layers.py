"""The layout rules hold: model/ and viz/ never import streamlit; pages are layout only."""

import ast
import subprocess
import sys

from conftest import ROOT

PAGE_FILES = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]


def imported_modules(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


def test_model_and_viz_never_import_streamlit_in_their_source():
    files = sorted((ROOT / "model").rglob("*.py")) + sorted((ROOT / "viz").rglob("*.py"))
    assert len(files) > 20
    offenders = {str(f.relative_to(ROOT)): m for f in files for m in imported_modules(f) if m.split(".")[0] in ("streamlit", "ui")}
    assert offenders == {}


def test_importing_the_engine_the_page_layer_and_the_command_line_loads_no_streamlit():
    code = (
        "import sys, model, model.embeddings, model.train, viz, viz.content, viz.cli, viz.export\n"
        "import viz.content.attention, viz.content.tokens, viz.content.positional, viz.content.embeddings, viz.content.next_token\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('streamlit', 'ui')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_pages_are_layout_only():
    """Short page files that read no session-state key themselves (the ui/ helpers do)."""
    for path in PAGE_FILES:
        text = path.read_text(encoding="utf-8")
        assert len(text.splitlines()) <= 80, path.name
        assert "session_state" not in text, path.name
        maths = {m for m in imported_modules(path) if m in ("torch", "numpy", "pandas", "model.attention", "model.positional")}
        assert maths == set(), (path.name, maths)
