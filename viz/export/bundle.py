"""Every figure of a view in every format: a zip built in memory, or files in a folder, each with a manifest.

Both writers go through ``figure_files``, so a zip and a folder hold the same files under the same names.
"""

from __future__ import annotations

import csv
import html
import io
import json
import os
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from .. import plain
from .image import figure_to_png, figure_to_svg, static_export_available
from .names import stamped_stem, unique_stem
from .standalone import figure_to_html
from .tables import figure_to_csv, title_text

FORMATS = ("png", "svg", "html", "csv")
STATIC_FORMATS = ("png", "svg")


def check_formats(formats: Iterable[str]) -> tuple[str, ...]:
    """``formats`` without repeats, in the given order; ``ValueError`` naming any unknown one."""
    formats = tuple(dict.fromkeys(formats))
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise ValueError(f"unknown formats {unknown}; choose from {FORMATS}")
    return formats


def figure_title(fig: dict) -> str:
    """The figure's title as plain text (labels are HTML-escaped inside figures)."""
    title = title_text(plain.as_dict(fig)["layout"].get("title"))
    return html.unescape(title) if title else ""


TableBuilders = dict[str, Callable[[], object]]  # figure id → what builds its tidy table (PageContent.figure_tables)


def _encode(fig: dict, fmt: str, stem: str, png_scale: float, table=None) -> bytes:
    if fmt == "png":
        return figure_to_png(fig, scale=png_scale)
    if fmt == "svg":
        return figure_to_svg(fig)
    if fmt == "html":
        return figure_to_html(fig, filename=stem)
    return figure_to_csv(fig, table() if table is not None else None).encode("utf-8")


def _header(csv_bytes: bytes) -> list[str]:
    """The column names of a CSV file (its first row)."""
    return next(csv.reader(io.StringIO(csv_bytes.decode("utf-8").partition("\n")[0])), [])


def figure_files(
    figures: dict[str, dict], formats: Iterable[str], png_scale: float, manifest: dict, tables: TableBuilders | None = None
) -> Iterator[tuple[str, bytes]]:
    """Yield ``(file name, bytes)`` for every figure in every format, filling ``manifest``.

    Names are ``{safe_filename(id)}.{ext}``, followed by the model and the settings' hash when the
    manifest describes them (see ``describe``), made unique. Without Chromium, PNG and SVG are skipped
    and ``manifest["notes"]`` says why; a figure that fails to render is noted the same way and its
    other files are still written. ``manifest["figures"]`` gets each figure's id, title and files, and
    with a CSV the names of its columns (``columns``: the CSV's header).

    ``tables``: the tidy table builder of each figure id that has one (``PageContent.figure_tables``),
    called when its CSV is written; a figure without one is written as ``figure_to_csv`` reads it.
    """
    tables = tables or {}
    formats = check_formats(formats)
    static_ok, static_message = static_export_available()
    if not static_ok and set(formats) & set(STATIC_FORMATS):
        manifest["notes"].append(static_message)
    taken: set[str] = {"manifest"}
    for figure_id, fig in figures.items():
        stem = unique_stem(stamped_stem(figure_id, manifest.get("model") and manifest), taken)
        files, columns = [], None
        for fmt in formats:
            if fmt in STATIC_FORMATS and not static_ok:
                continue
            name = f"{stem}.{fmt}"
            try:
                data = _encode(fig, fmt, stem, png_scale, tables.get(figure_id))
            except (RuntimeError, TimeoutError) as error:
                manifest["notes"].append(f"{name} skipped: {error}")
                continue
            if fmt == "csv":
                columns = _header(data)
            files.append(name)
            yield name, data
        entry = {"id": str(figure_id), "title": figure_title(fig), "files": files}
        manifest["figures"].append(entry if columns is None else {**entry, "columns": columns})


def describe(model: str, sentences: list[str], settings: dict, link: str | None = None) -> dict:
    """What made a view's figures, for its manifest and its file names: the model, the sentences,
    every setting, and the link (the app's address with the query string) that shows the view again."""
    return {"model": str(model), "sentences": list(sentences), "settings": dict(settings), "link": link}


def new_manifest(about: dict | None = None) -> dict:
    """An empty manifest: what made the figures (see ``describe``), then the figures and notes."""
    head = dict(about) if about else {"settings": {}}
    return {**head, "figures": [], "notes": []}


def archive_name(page: str, about: dict | None) -> str:
    """The zip's file name: the page, the model and the settings' hash ("attention-toy-3fa94c2.zip")."""
    return f"{stamped_stem(page, about)}.zip"


def _manifest_bytes(manifest: dict) -> bytes:
    return json.dumps(manifest, indent=2, ensure_ascii=False).encode("utf-8")


def figures_zip(
    figures: dict[str, dict],
    *,
    formats: Iterable[str] = FORMATS,
    scale: float = 2.0,
    about: dict | None = None,
    tables: TableBuilders | None = None,
) -> bytes:
    """A zip (bytes, built in memory) holding every figure in every format plus ``manifest.json``.

    ``about`` (see ``describe``) goes into the manifest and stamps the file names. ``tables``: the
    figures' tidy tables (see ``figure_files``), written as their CSVs.
    Entry timestamps are fixed, so the same figures give the same bytes.
    """
    formats = check_formats(formats)
    manifest = new_manifest(about)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:

        def write(name: str, data: bytes) -> None:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)

        for name, data in figure_files(figures, formats, scale, manifest, tables):
            write(name, data)
        write("manifest.json", _manifest_bytes(manifest))
    return buffer.getvalue()


class OutputFolderError(OSError):
    """The folder given to ``write_folder`` cannot be written into safely; the message says why in one line."""


def check_folder(out: Path) -> Path:
    """``out`` if it is a folder or could become one, else ``OutputFolderError``; nothing is created.

    A path that names a file, a device (``/dev/null``) or anything else that is not a folder is refused,
    as is one under a file. ``out`` may itself be a symbolic link to a folder: the user named it.
    What ``write_folder`` writes inside it never follows one."""
    out = Path(out)
    try:
        if out.exists() and not out.is_dir():
            raise OutputFolderError(f"{out} is not a folder")
        parent = next((p for p in out.absolute().parents if p.exists()), None)
        if not out.exists() and parent is not None and not parent.is_dir():
            raise OutputFolderError(f"{out} is under {parent}, which is not a folder")
    except OutputFolderError:
        raise
    except ValueError as error:  # a NUL byte in the path
        raise OutputFolderError(f"{str(out)!r} is not a usable path: {error}") from None
    except OSError as error:
        raise OutputFolderError(f"{out}: {error.strerror or error}") from None
    return out


def prepare_folder(out: Path) -> Path:
    """``out`` as a folder that exists (created with its parents if needed), or ``OutputFolderError``
    (see ``check_folder``; also when it cannot be created: ``/proc/x``, a read-only place)."""
    out = check_folder(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputFolderError(f"cannot create the folder {out}: {error.strerror or error}") from None
    if not out.is_dir():
        raise OutputFolderError(f"{out} is not a folder")
    return out


def _write_inside(folder: Path, name: str, data: bytes) -> None:
    """Write ``folder/name`` as a new regular file, never through what is already there.

    ``name`` must be a plain file name (no separator, not "." or ".."). A symbolic link, a folder or any
    other non-regular file in its place is refused (``OutputFolderError``): the data would land outside
    ``folder`` or in a device. The bytes go to a temporary file in ``folder`` that then takes the name
    (``os.replace``), so a link put there meanwhile is replaced, not followed, and a regular file with
    hard links elsewhere is not changed in those other places."""
    if not name or name in (".", "..") or os.sep in name or (os.altsep and os.altsep in name):
        raise OutputFolderError(f"{name!r} is not a plain file name")
    target = folder / name
    try:
        if target.is_symlink():
            raise OutputFolderError(f"{target} is a symbolic link; not writing through it")
        if target.exists() and not target.is_file():
            raise OutputFolderError(f"{target} exists and is not a regular file")
        descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".export-", suffix=".part")
        try:
            with os.fdopen(descriptor, "wb") as file:
                file.write(data)
            os.chmod(temporary, 0o644)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OutputFolderError:
        raise
    except OSError as error:
        raise OutputFolderError(f"cannot write {target}: {error.strerror or error}") from None


def write_folder(
    figures: dict[str, dict],
    out: Path,
    *,
    formats: Iterable[str] = FORMATS,
    png_scale: float = 2.0,
    about: dict | None = None,
    tables: TableBuilders | None = None,
) -> dict:
    """Write every figure in every format and ``manifest.json`` into ``out`` (created if needed);
    ``tables``: the figures' tidy tables (see ``figure_files``), written as their CSVs.

    Nothing is written outside ``out``: a symbolic link (or a folder, a device) standing where a file
    goes is refused, never written through. Raises ``OutputFolderError`` (one line) when ``out`` is not
    a folder that can be written (see ``prepare_folder``). Returns the manifest.
    """
    formats = check_formats(formats)
    out = prepare_folder(out)
    manifest = new_manifest(about)
    for name, data in figure_files(figures, formats, png_scale, manifest, tables):
        _write_inside(out, name, data)
    _write_inside(out, "manifest.json", _manifest_bytes(manifest))
    return manifest
