"""Link values inside their general range but beyond this model or input (`pos`, `elayer`, `focus`, …) are
moved back inside with a notice, as a malformed value falls back with one: never silently."""

import pytest

from model import load_model
from viz.content import embeddings_page, next_token_page, run_model
from viz.content.attention import attention_page
from viz.content.settings import Settings, clamp_to_model, from_query


@pytest.fixture(scope="module")
def toy():
    return load_model("toy")


def resolved(query: dict[str, str], toy) -> tuple[Settings, list[str], object]:
    """What the app does with a link (ui.view): the settings and notices of the query string, the trace,
    then the settings clamped to the model and the input, with their notices."""
    settings, notices = from_query(query)
    trace = run_model(toy, settings.sentences, settings.display)
    lengths = [len(tokens) for tokens in trace.tokens]
    settings, more = clamp_to_model(settings, toy.n_layers, toy.n_heads, trace.input_ids.shape[1], len(trace.texts), lengths)
    return settings, notices + more, trace


TEXT = "the cat sat on the mat ."


def test_a_next_token_position_beyond_the_sentence_falls_back_with_a_notice(toy):
    settings, notices, trace = resolved({"text": TEXT, "pos": "999999"}, toy)
    n = len(trace.tokens[0])
    assert settings.position == -1
    assert notices == [f"Position 999999 is beyond the sentence ({n} tokens, from 0); predicting after its last word."]
    mat = [t.text for t in trace.tokens[0]].index(" mat")  # the last word: " ", "." follow it
    assert next_token_page(settings, trace, toy).values["position"] == mat == n - 3


@pytest.mark.parametrize("position", ["-1", "0", "3"])
def test_a_position_inside_the_sentence_is_kept_without_a_notice(toy, position):
    settings, notices, _ = resolved({"text": TEXT, "pos": position}, toy)
    assert settings.position == int(position) and notices == []


def test_the_last_position_named_is_the_last_position_without_a_notice(toy):
    """The closing " ." can still be chosen: the default is the last word, the list holds every token."""
    _, _, trace = resolved({"text": TEXT}, toy)
    settings, notices, trace = resolved({"text": TEXT, "pos": str(len(trace.tokens[0]) - 1)}, toy)
    assert notices == [] and next_token_page(settings, trace, toy).values["position"] == len(trace.tokens[0]) - 1


def test_an_embeddings_layer_beyond_the_model_falls_back_with_a_notice(toy):
    settings, notices, trace = resolved({"text": "the bank of the river .", "elayer": "999999"}, toy)
    assert settings.embedding_layer == -1
    assert notices == [f"Layer 999999 of the embeddings does not exist (this model has {toy.n_layers}); showing the last layer."]
    last = embeddings_page(settings, trace, toy.name).values["layer"]
    kept, none, _ = resolved({"text": "the bank of the river .", "elayer": str(toy.n_layers)}, toy)
    assert none == [] and kept.embedding_layer == toy.n_layers
    assert last == embeddings_page(kept, trace, toy.name).values["layer"]


def test_a_focus_beyond_the_input_is_clamped_to_the_last_token_with_a_notice(toy):
    settings, notices, trace = resolved({"text": TEXT, "focus": "999999"}, toy)
    n = trace.input_ids.shape[1]
    assert settings.focus == n - 1
    assert notices == [f"The focus token 999999 is beyond the input ({n} positions); the focus window is around the last, {n - 1}."]
    assert attention_page(settings, trace, overview=False).values["focus"] == n - 1
    kept, none, _ = resolved({"text": TEXT, "focus": "2"}, toy)
    assert (kept.focus, none) == (2, [])


def test_a_value_outside_every_model_s_range_still_falls_back_with_the_malformed_notice():
    settings, notices = from_query({"pos": "99999999", "elayer": "-7", "focus": "1e3"})
    assert (settings.position, settings.embedding_layer, settings.focus) == (-1, -1, -1)
    assert [n.split(" (")[0] for n in notices] == ["The link's value for “elayer”", "The link's value for “focus”", "The link's value for “pos”"]
