"""The layout rules hold: model/ and viz/ never import streamlit; pages are layout only."""

import ast
import subprocess
import sys

from conftest import ROOT

PAGE_FILES = [ROOT / "home.py", *sorted((ROOT / "pages").glob("*.py"))]


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


OWN_PACKAGES = ("model", "viz", "ui", "deploy", "bench", "pages", "app", "home", "tests", "conftest", "apptest_helpers", "svg_layout", "grid_design")
SOURCE_DIRS = ("model", "viz", "ui", "deploy", "bench", "pages")


def own_sources():
    files = [ROOT / "app.py", ROOT / "home.py"] + [f for d in SOURCE_DIRS for f in sorted((ROOT / d).rglob("*.py"))]
    assert len(files) > 60
    return files


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _own_private_names(files) -> set[str]:
    """Every `_name` our own code defines: functions, classes, attributes it assigns, variables."""
    names = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
    return {name for name in names if _private(name)}


def _root_name(node) -> str | None:
    """The name an expression of attributes, calls and subscripts starts from (`st` in `st.a().b[0]._c`)."""
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def framework_internals(path, own_private: set[str]) -> list[str]:
    """What `path` imports or touches of a third-party package's private parts: a module or name with a
    leading underscore, Streamlit's runtime and server modules, a private attribute read or assigned that
    our own code does not define (or any, read off a third-party name: `st._x`, `go.Figure()._data`), an
    object's `__dict__`, an attribute of an imported module assigned."""
    found, third_party_names = [], set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for module in modules:
                top = module.split(".")[0]
                if not module or top in OWN_PACKAGES or getattr(node, "level", 0):
                    continue
                if any(_private(part) for part in module.split(".")) or module.startswith(("streamlit.runtime", "streamlit.web")):
                    found.append(f"imports {module}")
                if isinstance(node, ast.ImportFrom):
                    found += [f"imports {module}.{alias.name}" for alias in node.names if _private(alias.name)]
                third_party_names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Attribute):
            if node.attr == "__dict__":
                found.append(f"line {node.lineno}: .__dict__")
            elif _private(node.attr) and (node.attr not in own_private or _root_name(node) in third_party_names):
                found.append(f"line {node.lineno}: .{node.attr}")
            elif isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name) and node.value.id in third_party_names:
                found.append(f"line {node.lineno}: assigns {node.value.id}.{node.attr}")
    return found


def test_only_public_apis_of_the_frameworks():
    """Nothing imported from a module or name with a leading underscore of a third-party package, nothing
    from streamlit.runtime or streamlit.web, no private attribute of a third-party object read or assigned,
    no attribute of a third-party module assigned: in the app, the benchmark and the tests."""
    files = own_sources() + sorted((ROOT / "tests").glob("*.py"))
    own_private = _own_private_names(files)
    offenders = {str(f.relative_to(ROOT)): found for f in files if (found := framework_internals(f, own_private))}
    assert offenders == {}


def test_the_check_finds_what_it_looks_for(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import plotly.graph_objects as go\nfrom _plotly_utils.utils import x\nfrom streamlit.runtime.scriptrunner_utils import y\n"
        "from streamlit.web import bootstrap\nfig = go.Figure()\nfig._data = []\nbootstrap.thing = None\nfig.__dict__['a'] = 1\n"
        "go.Figure()._run()\nself._run()\n"
    )
    found = framework_internals(bad, {"_run"})  # a name our own code defines, but read off plotly's

    assert found == [
        "imports _plotly_utils.utils",
        "imports streamlit.runtime.scriptrunner_utils",
        "imports streamlit.web",
        "line 6: ._data",
        "line 7: assigns bootstrap.thing",
        "line 8: .__dict__",
        "line 9: ._run",
    ], found


def own_import_graph() -> dict[str, set[str]]:
    """module → our modules it imports (at the top or inside a function)."""
    files = own_sources()
    names = {".".join(f.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): f for f in files}
    graph = {}
    for name, path in names.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
            for target in targets:
                while target and target not in names:
                    target = target.rpartition(".")[0]
                if target and target != name and not name.startswith(target + "."):
                    edges.add(target)
        graph[name] = edges
    return graph


def test_no_import_cycles_and_ui_never_imports_deploy():
    graph = own_import_graph()
    assert {m for m in graph["ui.view"]} >= {"ui.shared_cache", "viz.content.settings"}  # the graph sees real imports
    assert not [m for name, edges in graph.items() if name.startswith("ui") for m in edges if m.startswith("deploy")]
    cycles = []

    def visit(node, path, on_path):
        for nxt in sorted(graph.get(node, ())):
            if nxt in on_path:
                cycles.append(path[path.index(nxt) :] + [nxt])
            elif nxt not in done:
                visit(nxt, path + [nxt], on_path | {nxt})
        done.add(node)

    done: set[str] = set()
    for start in sorted(graph):
        if start not in done:
            visit(start, [start], {start})
    # a package's __init__ re-exporting its modules is not a cycle of design
    cycles = [c for c in cycles if not any(a.startswith(b + ".") or b.startswith(a + ".") for a, b in zip(c, c[1:]))]
    assert cycles == []


def test_no_branch_on_whether_a_test_is_running():
    """AppTest runs exactly the path the browser runs."""
    for path in own_sources():
        text = path.read_text(encoding="utf-8")
        assert "global.appTest" not in text and "runtime.exists" not in text, path.name
