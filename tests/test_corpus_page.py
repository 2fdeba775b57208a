"""The Corpus page's content (viz/content/corpus.py): figures, tables and CSV from a corpus summary."""

from __future__ import annotations

import io

import pandas as pd
import plotly.graph_objects as go
import pytest

from model import InputError, load_model
from model.corpus_heads import OFFSETS, classroom_sentences, heldout_sentences
from model.heads import BADGES, corpus_summary
from viz.content.corpus import corpus_page, corpus_texts, examples_csv, examples_section, statistics_csv, table_csv
from viz.corpus import context_positions, marked_text, top_examples_figure

HOSTILE = "The <script>alert(1)</script> cat sat on the = mat."
SENTENCES = classroom_sentences(12) + [HOSTILE]


@pytest.fixture(scope="module")
def summary():
    model = load_model("toy-random", n_layers=2, n_heads=2, d_model=32, seed=5)  # byte-level BPE: "<" and "=" are tokens
    return corpus_summary(model, SENTENCES, top=12)


def test_the_page_holds_every_section(summary):
    content = corpus_page(summary, layer=1, head=0, compare=(0, 1), statistic="entropy")
    assert set(content.figures) == {
        "top-examples",
        "by-offset",
        "shares",
        "badge-shares",
        "compare-offset",
        "compare-shares",
        "compare-badges",
        "grid-badges",
        "grid-entropy",
    }
    assert {"top-examples", "head-statistics", "compare", "grid"} <= set(content.tables)
    assert len(content.tables["grid"]) == summary.n_layers * summary.n_heads
    bars = go.Figure(content.figures["by-offset"]).data[0]
    by_offset = summary.by_offset(1, 0)
    assert [float(v) for v in bars.y] == pytest.approx([by_offset[o] for o in OFFSETS])
    peak = max(by_offset, key=by_offset.get)
    caption = next(n.text for n in content.notices if n.id == "offset-caption")
    assert f"offset {peak:+d}" in caption
    shares = go.Figure(content.figures["badge-shares"]).data[0]
    assert [float(v) for v in shares.x] == pytest.approx([summary.badge_share(1, 0)[b] for b in BADGES])
    assert content.values["top_badge_share"] == max(summary.badge_share(1, 0).values())


def test_examples_are_paged_and_escaped(summary):
    content = examples_section(summary, 0, 1, page=1, page_size=5)
    table = content.tables["top-examples"]
    assert table["rank"].tolist() == [6, 7, 8, 9, 10]
    expected = summary.top_examples(0, 1)[5:10]
    assert table["weight"].tolist() == pytest.approx([round(w, 4) for *_, w in expected])
    figure = go.Figure(content.figures["top-examples"])
    assert [float(x) for x in figure.data[0].x] == pytest.approx([w for *_, w in expected])
    assert content.values["examples_pages"] == 3
    everything = go.Figure(examples_section(summary, 0, 1, page=0, page_size=12).figures["top-examples"])
    hostile = len(SENTENCES) - 1
    texts = [a.text for a in everything.layout.annotations]
    if any(s == hostile for s, *_ in summary.top_examples(0, 1)):
        assert any("&lt;" in t for t in texts)
    assert not any("<script" in t for t in texts)


def test_markup_in_a_sentence_is_shown_as_text():
    figure = go.Figure(top_examples_figure([dict(rank=1, weight=0.5, tokens=["<script>", " cat", " <b>"], query=2, key=0)], title="t"))
    text = figure.layout.annotations[0].text
    assert "&lt;script&gt;" in text and "&lt;b&gt;" in text and "<script>" not in text
    csv = table_csv(pd.DataFrame({"key_token": ["=", "+1", "@x", "-2", "cat"]}))
    assert csv.splitlines() == ["key_token", "'=", "'+1", "'@x", "-2", "cat"]


def test_marked_text_shows_the_pair_in_its_sentence():
    tokens = ["the", "cat", "sat", "on", "the", "mat", "."]
    assert marked_text(tokens, 2, 1, markup=False) == "the «cat» [sat] on the mat."
    assert marked_text([" the", " cat", " sat"], 2, 2, markup=False) == "the cat [«sat»]"
    assert marked_text(["[CLS]", "un", "##believ", "##able", "[SEP]"], 3, 0, markup=False) == "«[CLS]» unbeliev[able] [SEP]"
    assert context_positions(40, 30, 0, context=2) == [0, 1, 2, None, 28, 29, 30, 31, 32, None]


def test_csv_is_tidy_and_matches_the_summary(summary):
    examples = pd.read_csv(io.StringIO(examples_csv(summary)))
    assert len(examples) == summary.n_layers * summary.n_heads * summary.top
    head = examples[(examples.layer == 1) & (examples["head"] == 1)]
    assert head["weight"].tolist() == pytest.approx([w for *_, w in summary.top_examples(1, 1)])
    assert (head["offset"] == head["key_position"] - head["query_position"]).all()
    tokens = set(examples["query_token"]) | set(examples["key_token"])
    assert "=" not in tokens  # a formula-like cell is written with a leading apostrophe
    statistics = pd.read_csv(io.StringIO(statistics_csv(summary)))
    row = statistics[(statistics.layer == 0) & (statistics["head"] == 1) & (statistics.measure == "badge: previous-token")]
    assert float(row["mean"].iloc[0]) == pytest.approx(summary.badge_share(0, 1)["previous-token"])
    offsets = statistics[(statistics.layer == 0) & (statistics["head"] == 1) & (statistics.measure == "weight at offset")]
    assert dict(zip(offsets.offset.astype(int), offsets["mean"])) == pytest.approx(summary.by_offset(0, 1))
    entropy = statistics[(statistics.layer == 1) & (statistics["head"] == 0) & (statistics.measure == "entropy")]
    assert float(entropy["std"].iloc[0]) == pytest.approx(summary.spread("entropy", 1, 0).std)


def test_corpus_texts():
    assert corpus_texts("classroom")[0] == classroom_sentences() and len(classroom_sentences()) == 500
    assert corpus_texts("held-out")[0] == heldout_sentences()
    sentences, notices = corpus_texts("own text", "<p>The heron stood still.</p><p>A fish swam by the bank.</p>")
    assert sentences == ["The heron stood still.", "A fish swam by the bank."] and notices
    with pytest.raises(InputError, match="empty"):
        corpus_texts("own text", "")
