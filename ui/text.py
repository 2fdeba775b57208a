"""Text typed by a user, shown inside Streamlit markdown, as plain text."""

import re

MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:&])")


def md(text: object) -> str:
    """Escape every character Streamlit's markdown would read as markup (links, images, HTML, LaTeX)."""
    return MARKDOWN_SPECIAL.sub(r"\\\1", str(text)).replace("\n", " ")
