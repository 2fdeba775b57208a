"""File names safe on every system, unique within one folder or zip."""

from __future__ import annotations

import hashlib
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
