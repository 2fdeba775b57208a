"""File names safe on every system, unique within one folder or zip."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata

_WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
MAX_FILENAME = 80


def safe_filename(name: str) -> str:
    """A file name made only of ``a-z 0-9 . _ -``, at most 80 characters.

    Accents are dropped ("Köpfe" → "kopfe"), every other character becomes
    "-", so "../../etc/passwd" becomes "etc-passwd": no path separators, no
    leading dot. A name with nothing usable left becomes "figure" (plus a
    short hash of the original, so different names stay different).
    """
    original = str(name)
    text = unicodedata.normalize("NFKD", original).encode("ascii", "ignore").decode("ascii").lower()
    text = re.sub(r"[^a-z0-9._-]+", "-", text)
    text = re.sub(r"\.{2,}", ".", text)
    text = re.sub(r"-{2,}", "-", text)
    text = text.strip("._-")[:MAX_FILENAME].strip("._-")
    if not text:
        if not original:
            return "figure"
        return "figure-" + hashlib.sha1(original.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    if text.split(".")[0] in _WINDOWS_RESERVED:
        text = ("file-" + text)[:MAX_FILENAME]
    return text


def unique_stem(stem: str, taken: set[str]) -> str:
    candidate, number = stem, 2
    while candidate in taken:
        suffix = f"-{number}"
        candidate = stem[: MAX_FILENAME - len(suffix)] + suffix
        number += 1
    taken.add(candidate)
    return candidate


def settings_hash(settings: dict) -> str:
    """Seven hex digits that change with any setting (a SHA-1 of the settings as sorted JSON)."""
    canonical = json.dumps(settings, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha1(canonical.encode("utf-8")).hexdigest()[:7]


def stamped_stem(name: str, about: dict | None) -> str:
    """``name`` followed by the model and the settings' hash: "stages-l0-h1-toy-3fa94c2".

    ``about`` holds ``model``, ``sentences`` and ``settings`` (see ``viz.export.bundle.describe``);
    two downloads of different views never share a name, the same view always gets the same one.
    """
    if not about:
        return safe_filename(name)
    stamp = f"{safe_filename(about.get('model', 'model'))[:24]}-{settings_hash({k: about.get(k) for k in ('model', 'sentences', 'settings')})}"
    return f"{safe_filename(name)[: MAX_FILENAME - len(stamp) - 1]}-{stamp}"
