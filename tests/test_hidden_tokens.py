"""A token hidden in one sentence: the model runs without it in that sentence only, through its whole
forward pass (later layers, hidden states, predictions), and every other sentence is untouched."""

from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch

from model import load_model
from viz.content import Settings, attention_page, run_model
from viz.content.common import HIDE_PILLS, hidden_token_label, hidden_with, hide_choices, hide_pills, pill_labels
from viz.content.settings import AttentionDisplay, clamp_to_model, from_query, to_query

TEXTS = ["A man fishing on a river bank by the water.", "He went to the bank to get cash."]
FAMILIES = ["toy", "distilbert", "bert", "gpt2-lm", "llama", "gemma"]


@pytest.fixture(scope="module")
def models(tiny_model_dir):
    cache = {}

    def get(kind):
        if kind not in cache:
            cache[kind] = load_model("toy") if kind == "toy" else load_model(str(tiny_model_dir(kind)))
        return cache[kind]

    return get


def key_position(trace, sentence: int) -> int:
    """A key in the middle of the sentence: not the first token (a causal query 0 would have no key left)."""
    return len(trace.tokens[sentence]) // 2


@pytest.mark.parametrize("kind", FAMILIES)
def test_a_hidden_token_changes_its_sentence_only(models, kind):
    model = models(kind)
    own = run_model(model, TEXTS, AttentionDisplay())
    j = key_position(own, 0)
    hidden = run_model(model, TEXTS, AttentionDisplay(hidden=((0, j),)))
    n0, n1 = len(own.tokens[0]), len(own.tokens[1])

    # the other sentence: every layer's hidden states and its predictions as without hiding
    torch.testing.assert_close(hidden.hidden_states[:, 1, :n1], own.hidden_states[:, 1, :n1], atol=1e-6, rtol=0)
    if own.logits is not None:
        torch.testing.assert_close(hidden.logits[1, :n1], own.logits[1, :n1], atol=1e-6, rtol=0)

    # the hidden sentence: key j has weight 0 in every layer and head, every row still sums to 1
    for layer in range(hidden.n_layers):
        pattern = hidden.stages(layer).pattern[0, :, :n0, :n0]  # [head, query_pos, key_pos]
        assert (pattern[..., j] == 0).all()
        torch.testing.assert_close(pattern.sum(-1), torch.ones(pattern.shape[:-1]), atol=1e-5, rtol=0)

    # layer 0 reads the same q and k: its rows are the model's own, renormalised without key j
    before = own.stages(0).pattern[0, :, :n0, :n0]
    after = hidden.stages(0).pattern[0, :, :n0, :n0]
    rows = before[..., j] > 0  # queries that could see key j
    expected = before.clone()
    expected[..., j] = 0
    expected = expected / expected.sum(-1, keepdim=True)
    torch.testing.assert_close(after[rows], expected[rows], atol=1e-5, rtol=1e-4)

    # ... and the run without it goes on differently in that sentence: later layers and predictions
    assert (hidden.hidden_states[-1, 0, :n0] - own.hidden_states[-1, 0, :n0]).abs().max() > 1e-4
    if own.logits is not None:
        assert (hidden.logits[0, :n0] - own.logits[0, :n0]).abs().max() > 1e-4
    assert hidden.what_ifs == [f"hidden: '{own.tokens[0][j].text.strip()}' in sentence 1"]


def test_the_what_if_note_names_tokens_by_sentence(models):
    model = models("toy")
    texts = ["A man fishing on a river bank.", "He went to the bank."]
    bank = [next(p for p, t in enumerate(model.trace(text).tokens[0]) if t.text.strip() == "bank") for text in texts]
    trace = run_model(model, texts, AttentionDisplay(hidden=((0, bank[0]), (1, 1), (1, bank[1]))))
    assert trace.what_ifs == ["hidden: 'bank' in sentence 1 and 'went', 'bank' in sentence 2"]
    assert hidden_token_label(trace, (0, bank[0])) == f"bank (sentence 1, position {bank[0]})"


def test_titles_name_the_hidden_token_only_for_its_sentence(models):
    model = models("toy")
    settings = Settings(text="\n".join(TEXTS), heads=(0,), hidden=((0, 6),))
    trace = run_model(model, settings.sentences, settings.display)
    word = trace.tokens[0][6].text.strip()  # titles name the word without the BPE piece's leading space
    first = attention_page(settings, trace, overview=False).figures["stages-L0-H0"]
    second = attention_page(replace(settings, sentence=1), trace, overview=False).figures["stages-L0-H0"]
    assert f"hidden “{word}”" in first["layout"]["title"]["text"] and "+ 1 hidden" in first["layout"]["annotations"][2]["text"]
    assert "hidden" not in second["layout"]["title"]["text"].split("·", 1)[1].replace("what-if", "")
    assert "what-if" in second["layout"]["title"]["text"]  # the run differs, in another sentence


def test_hide_choices_start_with_the_sentence_shown_and_keep_every_hidden_token(models, monkeypatch):
    trace = models("toy").trace(TEXTS)
    n0, n1 = len(trace.tokens[0]), len(trace.tokens[1])
    choices = hide_choices(trace, 1, hidden=((0, 2),))
    assert choices[:n1] == [(1, p) for p in range(n1)] and choices[n1:] == [(0, p) for p in range(n0)]
    monkeypatch.setattr("viz.content.common.HIDE_CHOICES", n1 + 2)
    few = hide_choices(trace, 1, hidden=((0, 5),))
    assert few == [*((1, p) for p in range(n1)), (0, 5)]  # sentence 1's tokens would pass the cap: only its hidden one


def test_the_token_pills_read_as_the_sentence_and_tell_every_repeat_apart(models):
    trace = models("toy").trace(["the cat saw the other cat and the dog", "the " * (HIDE_PILLS + 3)])
    labels = pill_labels(trace, 0)
    words = [token.text.strip() for token in trace.tokens[0]]
    assert [label.replace("\u200b", "") for label in labels] == words  # the sentence, token by token
    assert len(set(labels)) == len(labels)  # Streamlit's pills send a label: each stands for one position
    the = [p for p, word in enumerate(words) if word == "the"]
    assert labels[words.index("cat", 2)] == "cat\u200b" and [labels[p] for p in the] == ["the", "the\u200b", "the\u200b\u200b"]
    typed = SimpleNamespace(tokens=[[SimpleNamespace(text=t) for t in ["a", "a\u200b", " a", "b"]]])
    assert pill_labels(typed, 0) == ["a", "a\u200b", "a\u200b\u200b", "b"]  # a typed zero-width space too
    assert hide_pills(trace, 0) == list(range(len(words)))
    assert hide_pills(trace, 1) is None  # longer than a row of pills: the box alone
    assert hide_pills(trace, 2) is None  # no such sentence


def test_the_pills_choice_replaces_only_its_own_sentences_hidden_tokens():
    hidden = [(1, 4), (0, 2), (0, 7), (2, 0)]
    assert hidden_with(hidden, 0, [5, 2]) == [(0, 2), (0, 5), (1, 4), (2, 0)]
    assert hidden_with(hidden, 0, []) == [(1, 4), (2, 0)]
    assert hidden_with(hidden, 3, [1]) == [(0, 2), (0, 7), (1, 4), (2, 0), (3, 1)]
    assert hidden_with([[1, 4]], 1, [4]) == [(1, 4)]  # pairs as lists (from a link) too, without repeats


def test_the_url_round_trips_and_a_first_version_link_hides_the_same_tokens():
    settings = Settings(text="\n".join(TEXTS), hidden=((1, 4), (0, 6)))
    query = to_query(settings)
    assert query["hide"] == "0.6,1.4"
    back, notices = from_query(query)
    assert back == settings and notices == []

    old, notices = from_query({"text": "\n".join(TEXTS), "hide": "5,1"})  # an older link: positions, every sentence
    assert old.hidden == ((0, 1), (0, 5), (1, 1), (1, 5))
    assert len(notices) == 1 and "older version" in notices[0] and "positions 1, 5" in notices[0]

    shorter, notices = clamp_to_model(replace_hidden(old, ((0, 5), (1, 9), (2, 0))), 2, 4, 12, 2, [12, 9])
    assert shorter.hidden == ((0, 5),) and any("Hidden tokens" in n for n in notices)


def replace_hidden(settings, hidden):
    return replace(settings, hidden=hidden)


def test_the_command_line_hides_a_token_of_one_sentence_or_a_position_in_every_sentence():
    import argparse

    from viz.cli import hidden_token

    assert hidden_token("2:5") == (1, 5) and hidden_token("5") == (None, 5)
    for wrong in ("0:5", "x", "1:-2", "1:"):
        with pytest.raises(argparse.ArgumentTypeError):
            hidden_token(wrong)
