"""The files the browser loads from app/static/: the components' JavaScript (ui/components/) and plotly.js.

A component registered with its code inline sends that code with every element (45 KB a chart). Instead
the code is written once to static/ under a name that carries its hash, and the component is registered
with a loader of a few lines that imports it once per page (docs/performance.md). plotly.js: the cartesian
bundle that `make install` fetched, else the plotly package's whole plotly.js, written there once.
No Streamlit here: `make serve` (deploy/serve.py) writes the files too, before it copies static/ for nginx.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "ui" / "components"
STATIC = ROOT / "static"  # Streamlit serves it at app/static/ (.streamlit/config.toml)
SERVED = "app/static/"
# each served module: its parts, concatenated (one module scope: live.js and save_file.js are helpers of the first)
MODULES = {
    "av-chart": ("chart/chart.js", "chart/live.js", "save_file.js"),
    "av-head-view": ("head_view/head_view.js", "save_file.js"),
}

# The loader: the path is resolved from the frontend's entry script, so a base URL path or a proxy in front
# changes nothing; the module is imported once, and until then each call waits for it, in order.
LOADER = """// ui/assets.py: this component's code is served at %(path)s and imported once per page
let loaded = null;
let loading = null;
export default function (component) {
  if (loaded) return loaded.default(component);
  if (!loading) {
    const entry = document.querySelector('script[type="module"][src*="/static/js/index."]');
    const url = entry ? new URL("../../" + %(path_json)s, entry.src).href : new URL(%(path_json)s, document.baseURI).href;
    loading = import(url).then((module) => (loaded = module));
  }
  loading.then(
    (module) => module.default(component),
    () => { component.parentElement.textContent = "This part of the page did not load: please reload the page."; },
  );
}
"""


def code(module: str) -> str:
    """The whole code of `module` (a key of MODULES), as the component ran it inline."""
    return "\n".join((FOLDER / part).read_text(encoding="utf-8") for part in MODULES[module])


def file_name(module: str, text: str | None = None) -> str:
    """`module`-<hash of its code>.js"""
    digest = hashlib.blake2b((text if text is not None else code(module)).encode("utf-8"), digest_size=6).hexdigest()
    return f"{module}-{digest}.js"


def write(module: str, folder: Path = STATIC) -> Path:
    """`module`'s code as a file in `folder`, written unless it is there already (atomically: several app
    processes may start together); other versions of it are removed. Raises OSError when it cannot."""
    text = code(module)
    path = folder / file_name(module, text)
    if not (path.is_file() and path.read_text(encoding="utf-8") == text):
        _write(path, text)
    for old in folder.glob(f"{module}-*.js"):
        if old != path:
            old.unlink(missing_ok=True)
    return path


def write_all(folder: Path = STATIC) -> list[Path]:
    return [write(module, folder) for module in MODULES]


def component_js(module: str, served: bool, folder: Path = STATIC) -> str:
    """The JavaScript to register for `module`'s component: the loader of its file in `folder` when the
    app serves static files (`served`) and the file could be written, else the whole code inline."""
    if not served:
        return code(module)
    try:
        path = write(module, folder)
    except OSError:  # a read-only checkout: inline, as without static serving
        return code(module)
    where = SERVED + path.name
    return LOADER % {"path": where, "path_json": json.dumps(where)}


# ------------------------------------------------------------------ plotly.js

CARTESIAN = "plotly-cartesian-{version}.min.js"  # the bundle `make install` fetches
WHOLE = "plotly-{version}.min.js"  # the plotly package's own plotly.js, written by `plotly_script`


def plotly_version() -> str:
    """The plotly.js version of the installed plotly package (its HTML exports embed that one)."""
    from plotly.offline import get_plotlyjs_version

    return get_plotlyjs_version()


def cartesian_bundle(folder: Path = STATIC) -> Path | None:
    """The cartesian bundle for the installed plotly, if `make install` put it in `folder`."""
    path = folder / CARTESIAN.format(version=plotly_version())
    return path if path.is_file() and path.stat().st_size > 0 else None


def plotly_script(folder: Path = STATIC) -> str | None:
    """The served path of the plotly.js the charts load: the cartesian bundle, else the plotly package's
    whole plotly.js written to `folder` once. None when neither can be had (a read-only checkout)."""
    bundle = cartesian_bundle(folder)
    if bundle is None:
        from plotly.offline import get_plotlyjs

        bundle = folder / WHOLE.format(version=plotly_version())
        try:
            if not bundle.is_file():
                _write(bundle, get_plotlyjs())
        except OSError:
            return None
    return SERVED + bundle.name


def _write(path: Path, text: str) -> None:
    """`text` into `path` atomically: several app processes may start together."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.part")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)
