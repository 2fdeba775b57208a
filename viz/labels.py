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
from functools import lru_cache

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


def spaces_named(text: str) -> str:
    """``text``, or its name when it is nothing but plain spaces ("(space)", "(3 spaces)"): for prose
    that quotes a token."""
    return _spaces_name(text) if text and text.strip(" ") == "" else text


def _spaces_name(text: str) -> str:
    """A label for a token made only of plain spaces: "(space)", "(3 spaces)"."""
    return "(space)" if len(text) == 1 else f"({len(text)} spaces)"


def safe_label(text: str, *, visible_spaces: bool = False, max_chars: int | None = None) -> str:
    """Make token text safe and visible as a plotly label.

    * ``&``, ``<``, ``>`` become ``&amp;``, ``&lt;``, ``&gt;`` (shown literally
      by plotly, never interpreted as markup);
    * control, zero-width and other invisible characters become escapes such
      as ``\\n``, ``\\x00`` or ``\\u200b``; unusual spaces (no-break space, em
      space) too;
    * with ``visible_spaces`` (the Tokens page, where spaces are the point) a
      space becomes ``␣``, so the leading space of a GPT-2 token like
      ``" the"`` shows as ``␣the``; otherwise spaces stay spaces and a label
      made of nothing but spaces is named, "(space)" or "(3 spaces)";
    * the empty string becomes ``∅``;
    * ``max_chars`` shortens long text to that many characters plus ``…``
      (counted before escaping, so an escape is never cut in half).
    """
    return _safe_label(str(text), visible_spaces, max_chars)


@lru_cache(maxsize=1 << 16)
def _safe_label(text: str, visible_spaces: bool, max_chars: int | None) -> str:
    # made once per token text: every figure of a view labels the same tokens (a head's figures at 512
    # tokens labelled 4,600 of them, a third of their time under cProfile)
    if text == "":
        return EMPTY_SYMBOL
    if max_chars is not None and len(text) > max_chars:
        text = text[: max(max_chars, 1)] + ELLIPSIS
    if not visible_spaces and text.strip(" ") == "":
        return _spaces_name(text)
    visible = "".join(_escape_char(ch, visible_spaces) for ch in text)
    return html.escape(visible, quote=False)


def position_labels(tokens: list[str], **kwargs) -> list[str]:
    """One safe label per token position, duplicates kept (see ``safe_label``).

    Use them as ``ticktext`` of a numeric axis whose ``tickvals`` are the
    positions ``0 .. n-1`` (``tick_axis`` builds that dict).
    """
    return [safe_label(token, **kwargs) for token in tokens]


MAX_TICK_CHARS = 12


def short_label(label: str, max_chars: int = MAX_TICK_CHARS) -> str:
    """An escaped label cut to ``max_chars`` visible characters plus "…" (never inside an escape)."""
    text = html.unescape(label)
    if len(text) <= max_chars:
        return label
    return html.escape(text[:max_chars] + ELLIPSIS, quote=False)


def tick_positions(n: int, max_ticks: int, keep: int | None = None) -> list[int]:
    """Every k-th position of ``0 .. n-1`` so that at most ``max_ticks`` are shown (about).

    ``keep`` (the chosen token) is always among them: ticks closer to it than
    the step are dropped, so it never collides with a neighbour.
    """
    step = max(1, math.ceil(n / max(max_ticks, 1)))
    positions = list(range(0, n, step))
    if keep is not None and 0 <= keep < n and keep not in positions:
        positions = sorted([p for p in positions if abs(p - keep) >= step] + [keep])
    return positions


TICK_FONT_PX = 12


def ticks_for(length_px: float, font_px: float = TICK_FONT_PX) -> int:
    """How many tick labels fit along ``length_px`` pixels at ``font_px``: one per 1.6 font heights."""
    return max(2, int(length_px / (1.6 * font_px)))


def tick_axis(labels: list[str], *, max_ticks: int = 60, keep: int | None = None) -> dict:
    """Axis settings that show ``labels`` at the positions ``0 .. n-1``.

    With more than ``max_ticks`` labels only every k-th one is shown, so that a
    512-token axis stays readable (``keep``, the chosen position, always is);
    hover text still names every position. Tick text is cut to 12 characters.
    """
    positions = tick_positions(len(labels), max_ticks, keep)
    return dict(
        tickmode="array",
        tickvals=positions,
        ticktext=[short_label(labels[i]) for i in positions],
    )
