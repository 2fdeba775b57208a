"""Benchmark of the app's server work: `python -m bench` prints a report (`--help` for options).

What is measured, per model (the toy model, and a DistilBERT-size model with random weights saved to a
temporary folder and loaded back with `model.load_model`) and per input size (tokens):

1. the bare forward pass against `model.trace(...)`, and their ratio;
2. the server work of one changed toggle (head, mask, scaling, temperature) up to serialised figures;
3. the bytes of figure JSON each page sends (Attention, Tokens, Positional encoding, Embeddings);
4. the peak memory (RSS) of a process that traces 512 tokens, one subprocess per model;
5. bertviz's `model_view` HTML against our overview figure, when bertviz is installed;
6. a cold `streamlit run app.py` until the Attention page shows its first chart in chromium.

Nothing here changes the app: the pages' work is the page functions the app calls (`viz.content`).
"""

from __future__ import annotations

import os

# Before transformers is imported anywhere: no network, no progress bars in the report.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

DEFAULT_SIZES = (16, 64, 128, 256, 512)
QUICK_SIZES = (16, 64)
MODELS = ("toy", "distilbert")
