"""plotly.js for the app's charts: the partial "cartesian" bundle of the plotly.js that the plotly package ships.

The whole plotly.js is 4.7 MB with every trace type, which a new visitor's browser took about 0.85 s to
fetch and evaluate (quiet machine, fresh profile). This app draws only heatmaps, scatters and bars: the cartesian bundle holds them, and the
same plotly.js code, in 1.5 MB, evaluated in 0.29-0.38 s. On a cold start that evaluation stood between
the first chart's data and its drawing.

`make install` runs `python -m deploy.plotly_js`: `npm pack` fetches the package from the npm registry
(npm checks the registry's integrity hash) and the bundle is copied to static/, which Streamlit serves at
app/static/ (`server.enableStaticServing` in .streamlit/config.toml) and `make serve`'s nginx from disk.
It is not committed (third-party code, fetched like the Python packages). Without it (no npm, or a host
that runs `streamlit run app.py` without `make install`), the charts load the plotly package's whole
plotly.js (ui/assets.py).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STATIC = ROOT / "static"  # Streamlit serves the folder beside app.py at app/static/
PACKAGE = "plotly.js-cartesian-dist-min"
MEMBER = "package/plotly-cartesian.min.js"
TRACES = ("heatmap", "scatter", "bar")  # every trace type the app's figures use (tests/test_chart_browser.py)


def version() -> str:
    """The plotly.js version of the installed plotly package (its HTML exports embed that one)."""
    from plotly.offline import get_plotlyjs_version

    return get_plotlyjs_version()


def file_name(plotly_version: str | None = None) -> str:
    """The bundle's file name in static/, as ui/assets.py (`CARTESIAN`) looks for it."""
    return f"plotly-cartesian-{plotly_version or version()}.min.js"


def installed(folder: Path | None = None) -> Path | None:
    """The bundle for the installed plotly, if it is in `folder` (static/)."""
    path = (folder or STATIC) / file_name()
    return path if path.is_file() and path.stat().st_size > 0 else None


def extract(tarball: Path, plotly_version: str, folder: Path | None = None) -> Path:
    """Copy the bundle out of the package's tarball into `folder`, once its banner names `plotly_version`."""
    with tarfile.open(tarball, "r:gz") as archive:
        member = archive.getmember(MEMBER)
        source = archive.extractfile(member)
        if source is None:
            raise ValueError(f"{MEMBER} is not a file in {tarball.name}")
        data = source.read()
    banner = data[:200].decode("utf-8", "replace")  # "* plotly.js (cartesian - minified) v4.1.1"
    if "plotly.js (cartesian" not in banner or f" v{plotly_version}\n" not in banner:
        raise ValueError(f"{tarball.name} does not hold plotly.js v{plotly_version}")
    folder = folder or STATIC
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / file_name(plotly_version)
    partial = target.with_suffix(".part")
    partial.write_bytes(data)
    partial.replace(target)
    return target


def fetch(folder: Path | None = None, npm: str = "npm") -> Path:
    """The bundle in `folder` (static/), fetched with `npm pack` unless it is there already."""
    folder = folder or STATIC
    there = installed(folder)
    if there is not None:
        return there
    plotly_version = version()
    if shutil.which(npm) is None:
        raise RuntimeError("npm was not found")
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run(
            [npm, "pack", f"{PACKAGE}@{plotly_version}", "--pack-destination", scratch, "--silent"], capture_output=True, text=True, timeout=300
        )
        if done.returncode != 0:
            raise RuntimeError(f"npm pack {PACKAGE}@{plotly_version} failed: {done.stderr.strip()[-500:]}")
        tarballs = sorted(Path(scratch).glob("*.tgz"))
        if not tarballs:
            raise RuntimeError("npm pack made no tarball")
        return extract(tarballs[0], plotly_version, folder)


def main() -> int:
    try:
        path = fetch()
    except Exception as error:
        print(f"plotly.js cartesian bundle not installed ({error}); the charts use the plotly package's whole plotly.js", file=sys.stderr)
        return 1
    print(f"plotly.js for the charts: {path.relative_to(ROOT)} ({path.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
