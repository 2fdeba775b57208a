"""Training on your own sentences (issue 20): text → training sentences, the size cap and its messages,
and the Train page with pasted and uploaded text."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from model.own_text import MAX_CHARS, MAX_SENTENCE_TOKENS, MIN_TOKENS, TextError, decode_upload, training_sentences
from model.toy import ToyConfig
from model.train import TrainConfig, train, word_model_config

HERONS = (
    "The heron stood in the shallows. It waited for a fish!\n"
    "Did the heron strike? It struck, and the heron swallowed the fish.\n"
    "ok\n"
    "Herons nest in tall trees near the water"
)


def test_text_is_cut_into_sentences_at_line_breaks_and_after_end_marks():
    own = training_sentences(HERONS, word_model_config().vocabulary)
    assert own.sentences == [
        "The heron stood in the shallows.",
        "It waited for a fish!",
        "Did the heron strike?",
        "It struck, and the heron swallowed the fish.",
        "Herons nest in tall trees near the water",
    ]
    assert own.n_too_short == 1 and own.notices == [f"1 sentence shorter than {MIN_TOKENS} words left out."]
    assert own.new_words[0] == "heron"  # the most frequent new word first (3 times)
    assert "the" not in own.new_words and "fish" not in own.new_words  # already in the toy vocabulary
    assert set(own.new_words) >= {"heron", "herons", "shallows", "swallowed"}
    assert own.n_chars == len(HERONS)


def test_long_sentences_are_cut_and_rare_words_beyond_the_cap_are_counted(monkeypatch):
    long = " ".join(f"w{i}" for i in range(MAX_SENTENCE_TOKENS * 2 + 1))  # 129 words: 64 + 64 + 1 (too short, dropped)
    own = training_sentences(long)
    assert [len(s.split()) for s in own.sentences] == [MAX_SENTENCE_TOKENS, MAX_SENTENCE_TOKENS] and own.n_cut == 1
    monkeypatch.setattr("model.own_text.MAX_NEW_WORDS", 10)
    own = training_sentences(long)
    assert len(own.new_words) == 10 and own.n_unknown_words == 2 * MAX_SENTENCE_TOKENS - 10
    assert any("[UNK]" in notice for notice in own.notices)


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "The text is empty"),
        ("  \n\t \n", "The text is empty"),
        ("Hi.\nOk!\nYes", "No usable sentence"),
        ("a b c. " * (MAX_CHARS // 7 + 1), f"the cap is {MAX_CHARS:,}"),
    ],
)
def test_unusable_text_gets_a_clear_message(text, message):
    with pytest.raises(TextError, match=message):
        training_sentences(text)


def test_the_cap_counts_characters_and_allows_exactly_the_cap():
    text = ("The heron stood in the shallows.\n" * (MAX_CHARS // 33 + 1))[:MAX_CHARS]
    assert training_sentences(text).n_chars == MAX_CHARS
    with pytest.raises(TextError, match=f"{MAX_CHARS + 1:,} characters"):
        training_sentences(text + "x")


def test_uploads_are_read_as_utf8_and_other_bytes_are_refused():
    assert decode_upload("\ufeffThe heron, café.".encode()) == "The heron, café."  # byte-order mark dropped
    with pytest.raises(TextError, match="not UTF-8"):
        decode_upload("café".encode("latin-1"), "“notes.txt”")
    with pytest.raises(TextError, match="binary"):
        decode_upload(b"PK\x03\x04\x00\x00")


def test_a_model_trained_on_own_sentences_knows_their_words_and_its_loss_falls():
    own = training_sentences(HERONS * 3, word_model_config().vocabulary)
    config = ToyConfig(n_layers=1, n_heads=2, d_model=32, d_mlp=64, tokenizer="word", vocabulary=word_model_config().vocabulary + own.new_words)
    model, losses = train(config, TrainConfig(steps=120, batch_size=8), texts=own.sentences)
    assert sum(losses[-10:]) / 10 < 0.5 * sum(losses[:5]) / 5  # five sentences, learnt nearly by heart
    tokens = model.tokenizer.encode("The heron swallowed the fish.")
    assert [t.text for t in tokens] == ["the", "heron", "swallowed", "the", "fish", "."] and all(t.kind == "normal" for t in tokens)


# ------------------------------------------------------------------------------------- the Train page


def plain(markdown: str) -> str:
    """Text shown through `ui.text.md`, without its escapes."""
    return markdown.replace("\\", "")


def train_page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "home.py"), default_timeout=180).run()
    at.switch_page("pages/6_Train.py").run()
    at.radio(key="train_source").set_value("my own text").run()
    return at


def small_training(at: AppTest) -> AppTest:
    at.selectbox[0].set_value(1)  # layers
    at.selectbox[1].set_value(2)  # heads
    at.selectbox[2].set_value(32)  # d_model
    at.number_input[0].set_value(60)  # steps
    return at.button[0].click().run()


def train_button(at: AppTest):
    return next(b for b in at.button if b.label == "Train")


def test_train_page_trains_on_pasted_sentences_for_this_session_only():
    at = train_page()
    assert train_button(at).disabled  # nothing given yet: the page says so and nothing can start
    assert any("The text is empty" in plain(w.value) for w in at.warning)
    at.text_area(key="own_text").set_value("\n".join([HERONS] * 4)).run()
    assert not at.warning and any("20 training sentences" in plain(c.value) for c in at.caption)
    assert not train_button(at).disabled
    small_training(at)
    assert not at.exception, [e.value for e in at.exception]
    losses = at.session_state["session_losses"]
    assert len(losses) == 60 and sum(losses[-5:]) / 5 < 0.8 * sum(losses[:5]) / 5
    assert any("trained for 60 steps on 20 of your sentences" in s.value for s in at.success)
    assert at.sidebar.selectbox(key="w_model_choice").value == "trained-here"
    at.sidebar.text_area(key="w_text").set_value("The heron swallowed the fish.").run()
    at.switch_page("pages/1_Tokens.py").run()
    shown = " ".join(str(t.value) for t in at.dataframe)
    assert not at.exception and "heron" in shown and "swallowed" in shown and "[UNK]" not in shown
    other = AppTest.from_file(str(ROOT / "home.py"), default_timeout=120).run()  # another session
    assert "trained-here" not in other.sidebar.selectbox(key="w_model_choice").options


def test_train_page_reads_an_uploaded_file_and_refuses_one_over_the_cap():
    at = train_page()
    at.file_uploader(key="own_file").set_value(("herons.txt", HERONS.encode(), "text/plain")).run()
    assert any("From the file “herons.txt”: 5 training sentences" in plain(c.value) for c in at.caption)
    at.file_uploader(key="own_file").set_value(("big.txt", b"The heron stood. " * (MAX_CHARS // 17 + 1), "text/plain")).run()
    warning = plain(" ".join(w.value for w in at.warning))
    assert f"the cap is {MAX_CHARS:,}" in warning and train_button(at).disabled
    at.file_uploader(key="own_file").set_value(("notes.txt", "café au lait".encode("latin-1"), "text/plain")).run()
    assert any("not UTF-8" in plain(w.value) for w in at.warning) and not at.exception
