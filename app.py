"""The app: `streamlit run app.py` (or `make run`). Its home page is home.py, its other pages are pages/.

`st.App` gives the server a lifespan: when the server starts, before any browser has connected, a thread
imports the page layer (torch, the model, the figures: most of a first page's time), so the first visitor's
page does not wait for those imports after their browser has loaded the frontend (docs/performance.md).
A page's own run imports what this thread has not finished: Python's import lock makes it wait for a module
the thread is importing, never see it half done.
"""

import logging
import threading
from contextlib import asynccontextmanager

import streamlit as st


def import_the_pages() -> None:
    try:
        import ui  # noqa: F401  (torch, the model, the figures, the components)
        import viz.content  # noqa: F401
    except Exception:  # the page's own run imports it again and shows what is wrong
        logging.getLogger("attention_viz").exception("importing the page layer at start failed")


@asynccontextmanager
async def lifespan(app):
    threading.Thread(target=import_the_pages, name="import-the-pages", daemon=True).start()
    yield


app = st.App("home.py", lifespan=lifespan)
