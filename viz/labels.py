"""Turn token text into labels that plotly shows literally.

Token text is untrusted: a tokenizer happily produces ``<script>``, a
zero-width space, a lone newline or a token that is just a space. Plotly
renders a small subset of HTML inside titles, tick labels and hover text, so
``<b>`` would turn bold and ``<br>`` would break the line. ``safe_label``
escapes ``&``, ``<`` and ``>`` so that plotly shows them as characters, and
makes invisible characters visible.

Axes of token positions are numeric (``0 .. n-1``) with the labels as
``ticktext``. A categorical axis would merge the two "the" tokens of
"the cat saw the dog" into one row; a numeric axis keeps one row per position.
"""

from __future__ import annotations

import html
import math
import unicodedata

SPACE_SYMBOL = "␣"
EMPTY_SYMBOL = "∅"
ELLIPSIS = "…"

_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

# Cc control, Cf format (zero-width space, joiners, bidi overrides, BOM, soft
# hyphen), Cs lone surrogates, Zl/Zp line and paragraph separators.
_INVISIBLE_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def _escape_char(ch: str, visible_spaces: bool) -> str:
    if ch == " ":
        return SPACE_SYMBOL if visible_spaces else ch
    if ch in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[ch]
    category = unicodedata.category(ch)
    if category in _INVISIBLE_CATEGORIES or category == "Zs":
        code = ord(ch)
        if code < 0x100:
            return f"\\x{code:02x}"
        if code < 0x10000:
            return f"\\u{code:04x}"
        return f"\\U{code:08x}"
    return ch


def safe_label(text: str, *, visible_spaces: bool = True, max_chars: int | None = None) -> str:
    """Make token text safe and visible as a plotly label.

    * ``&``, ``<``, ``>`` become ``&amp;``, ``&lt;``, ``&gt;`` (shown literally
      by plotly, never interpreted as markup);
    * control, zero-width and other invisible characters become escapes such
      as ``\\n``, ``\\x00`` or ``\\u200b``; unusual spaces (no-break space, em
      space) too;
    * a space becomes ``␣``, so the leading space of a GPT-2 token like
      ``" the"`` shows as ``␣the``; with ``visible_spaces=False`` only a label
      made of nothing but spaces is changed;
    * the empty string becomes ``∅``;
    * ``max_chars`` shortens long text to that many characters plus ``…``
      (counted before escaping, so an escape is never cut in half).
    """
    text = str(text)
    if text == "":
        return EMPTY_SYMBOL
    if max_chars is not None and len(text) > max_chars:
        text = text[: max(max_chars, 1)] + ELLIPSIS
    spaces = visible_spaces or text.strip(" ") == ""
    visible = "".join(_escape_char(ch, spaces) for ch in text)
    return html.escape(visible, quote=False)


def position_labels(tokens: list[str], **kwargs) -> list[str]:
    """One safe label per token position, duplicates kept (see ``safe_label``).

    Use them as ``ticktext`` of a numeric axis whose ``tickvals`` are the
    positions ``0 .. n-1`` (``tick_axis`` builds that dict).
    """
    return [safe_label(token, **kwargs) for token in tokens]


def tick_axis(labels: list[str], *, max_ticks: int = 60) -> dict:
    """Axis settings that show ``labels`` at the positions ``0 .. n-1``.

    With more than ``max_ticks`` labels only every k-th one is shown, so that a
    512-token axis stays readable; hover text still names every position.
    """
    n = len(labels)
    step = max(1, math.ceil(n / max_ticks)) if max_ticks else 1
    positions = list(range(0, n, step))
    return dict(
        tickmode="array",
        tickvals=positions,
        ticktext=[labels[i] for i in positions],
    )
