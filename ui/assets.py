"""The JavaScript of the app's components (ui/components/), served as files at app/static/.

Registered inline (`st.components.v2.component(js=...)`), a component's code travels in every element
Streamlit sends for it: each chart's message carried the 45 KB of chart.js, live.js and save_file.js.
The Attention page's twelve charts sent 540 KB of code with a new view's 200 KB of figures at 16 tokens,
and on every rerun Streamlit serialised and hashed all of it again (for its message cache) before it
sent a reference instead. The code is now written once to static/ beside app.py, under a name that
carries its hash (content-addressed: a browser may keep it), and the component is registered with a
loader of a few lines that imports it once per page.

plotly.js comes from the same folder: the cartesian bundle that `make install` fetched from the npm registry (
a third of the code to evaluate), else the whole plotly.js of the plotly package, written there once.

No Streamlit here: `make serve` (deploy/serve.py) writes the files before it copies static/ for nginx;
ui/chart.py and ui/head_view.py register the components with `component_js`.
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

# The loader. Its path is resolved from the frontend's entry script (<base>/static/js/index.….js), as
# chart.js finds plotly.js: a base URL path or a proxy in front changes nothing. The module is imported
# once; until then each call waits for it, in order. Neither component returns a cleanup function
# (chart.js, head_view.js), so nothing is lost while the module loads.
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
        folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.part")
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)
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
    except OSError:  # a read-only checkout: inline, as before
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
        if not bundle.is_file():
            try:
                folder.mkdir(parents=True, exist_ok=True)
                partial = bundle.with_name(f"{bundle.name}.{os.getpid()}.part")
                partial.write_text(get_plotlyjs(), encoding="utf-8")
                partial.replace(bundle)
            except OSError:
                return None
    return SERVED + bundle.name
