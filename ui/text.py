"""Text typed by a user, or read from a link, shown inside Streamlit markdown as plain text."""

import re

MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:&])")
# what Streamlit's markdown turns into a link even when escaped: a scheme's colon, "www.", an e-mail's "@"
LINKABLE = re.compile(r"(?i)\b(?:https?|ftp|mailto|file|data|javascript)(?=:)|\bwww(?=\.)")
WORD_JOINER = "\u2060"  # invisible; between "https" and "://" it keeps the address from being a link


def md(text: object) -> str:
    """Escape every character Streamlit's markdown would read as markup (links, images, HTML, LaTeX), and
    keep web and e-mail addresses from becoming links."""
    unlinked = LINKABLE.sub(lambda found: found.group() + WORD_JOINER, str(text)).replace("@", WORD_JOINER + "@")
    return MARKDOWN_SPECIAL.sub(r"\\\1", unlinked).replace("\n", " ")


def badge_label(text: object) -> str:
    """`md` for the label of `st.badge`, which escapes square brackets itself: escaped twice, a hidden
    "[CLS]" read '\\[CLS\\]' in the what-if badge."""
    return md(text).replace("\\[", "[").replace("\\]", "]")
