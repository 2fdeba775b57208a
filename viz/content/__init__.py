"""The page layer: one function per page, settings + trace → the page's figures, tables and notices.

    content = attention_page(settings, trace)
    content.figures["stages-L0-H0"]      # a figure dict (viz.plain), under a stable id
    content.tables["worked-example"]     # a pandas DataFrame
    content.notices                      # [Notice(id, text, level)]

The Streamlit pages lay the content out (`pages/*.py`), `python -m viz.export` writes its figures to
files, and `python -m bench` times it. Nothing here imports streamlit.
"""

from viz.content.attention import attention_page
from viz.content.embeddings import embeddings_page
from viz.content.generate import generate_page
from viz.content.common import last_word
from viz.content.next_token import next_token_page
from viz.content.page import Notice, PageContent
from viz.content.positional import positional_page
from viz.content.settings import AttentionDisplay, Settings, run_model
from viz.content.tokens import tokens_page
from viz.content.why import why_page

__all__ = [
    "AttentionDisplay",
    "Notice",
    "PageContent",
    "Settings",
    "attention_page",
    "embeddings_page",
    "generate_page",
    "last_word",
    "next_token_page",
    "positional_page",
    "run_model",
    "tokens_page",
    "why_page",
]
