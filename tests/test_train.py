"""Training the toy model: the loss falls, the shipped checkpoint has learned the senses of "bank",
and the training command regenerates it bit for bit."""

import hashlib
import subprocess
import sys

import pytest

from conftest import ROOT
from model import load_model
from model.corpus import HELD_OUT, sentences, unknown_words
from model.embeddings import sense_margins
from model.toy import ToyConfig
from model.train import CHECKPOINT, TrainConfig, default_model_config, train

BANK = HELD_OUT["river"] + HELD_OUT["money"]
SENSES = [0] * len(HELD_OUT["river"]) + [1] * len(HELD_OUT["money"])


def test_corpus_is_deterministic_in_vocabulary_and_keeps_held_out_sentences_out():
    assert sentences(200, seed=3) == sentences(200, seed=3)
    assert sentences(200, seed=3) != sentences(200, seed=4)
    assert unknown_words() == set()
    corpus = sentences(4000)
    assert not any(s.startswith(held) for s in corpus for held in BANK)
    assert sum("bank" in s for s in corpus) > 400


@pytest.mark.parametrize("causal", [True, False])
def test_loss_falls_on_a_tiny_config(causal):
    config = ToyConfig(n_layers=1, n_heads=2, d_model=32, d_mlp=64, causal=causal, vocabulary=default_model_config().vocabulary)
    _, losses = train(config, TrainConfig(steps=150, batch_size=16, n_sentences=300))
    assert len(losses) == 150
    assert sum(losses[-10:]) / 10 < 0.7 * sum(losses[:5]) / 5


def test_training_can_be_stopped_early():
    config = ToyConfig(n_layers=1, n_heads=2, d_model=16, d_mlp=32, vocabulary=default_model_config().vocabulary)
    _, losses = train(config, TrainConfig(steps=50, n_sentences=100), on_step=lambda step, loss: step == 4)
    assert len(losses) == 5


def test_shipped_model_separates_the_senses_of_bank_and_random_weights_do_not():
    trained = sense_margins(load_model("toy").trace(BANK), "bank", SENSES)
    random = sense_margins(load_model("toy-random").trace(BANK), "bank", SENSES)
    assert trained["accuracy"] == 1.0 and min(trained["margins"]) > 0.2
    assert trained["mean"] > 0.3
    assert random["mean"] < trained["mean"] / 4


def test_shipped_model_predicts_a_continuation_of_the_right_sense():
    from model.corpus import SENSES as CORPUS_SENSES

    firsts = {sense: {after.split()[0] for after in CORPUS_SENSES["bank"][sense]["after"]} for sense in ("river", "money")}
    river_only, money_only = firsts["river"] - firsts["money"], firsts["money"] - firsts["river"]
    model = load_model("toy")
    trace = model.trace(BANK)
    probabilities = trace.last_logits.softmax(dim=-1)
    for sentence, sense in enumerate(SENSES):
        mass = {
            name: float(sum(probabilities[sentence, model.tokenizer.ids[w]] for w in words)) for name, words in (("river", river_only), ("money", money_only))
        }
        own, other = ("river", "money") if sense == 0 else ("money", "river")
        assert mass[own] > 2 * mass[other], (trace.texts[sentence], mass)


def test_checkpoint_is_small_and_regenerated_bit_for_bit(tmp_path):
    shipped = CHECKPOINT / "model.safetensors"
    assert shipped.stat().st_size < 5 * 2**20
    result = subprocess.run([sys.executable, "-m", "model.train", "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    for name in ("model.safetensors", "config.json", "training.json"):
        assert hashlib.sha256((tmp_path / name).read_bytes()).digest() == hashlib.sha256((CHECKPOINT / name).read_bytes()).digest(), name
