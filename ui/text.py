"""Text typed by a user, shown inside Streamlit markdown, as plain text."""

import re

MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:&])")


def md(text: object) -> str:
    """Escape every character Streamlit's markdown would read as markup (links, images, HTML, LaTeX)."""
    return MARKDOWN_SPECIAL.sub(r"\\\1", str(text)).replace("\n", " ")


def badge_label(text: object) -> str:
    """`md` for the label of `st.badge`, which escapes square brackets itself: escaped twice, a hidden
    "[CLS]" read '\\[CLS\\]' in the what-if badge."""
    return md(text).replace("\\[", "[").replace("\\]", "]")
