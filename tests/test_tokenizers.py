"""Tokenizers on ordinary, unicode, empty and unknown input."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model import tokenizers
from model.heldout import EVERYDAY
from model.tokenizers import CharTokenizer, GPT2BPETokenizer, ToyBPETokenizer, WordTokenizer, get_tokenizer


def test_word_tokenizer_lowercases_and_marks_unknown_words():
    tokens = WordTokenizer().encode("The cat sat on the xylophone!")
    assert [t.text for t in tokens] == ["the", "cat", "sat", "on", "the", "[UNK]", "!"]
    assert tokens[0].id == tokens[4].id
    assert tokens[5].kind == "unknown" and tokens[5].id == 1
    assert (tokens[5].start, tokens[5].end) == (19, 28)
    assert [t.word for t in tokens] == list(range(7))


def test_word_tokenizer_unicode_and_empty():
    tok = WordTokenizer()
    assert tok.encode("") == []
    assert tok.encode("   \n\t") == []
    tokens = tok.encode("Café 東京 🙂")
    assert [t.kind for t in tokens] == ["unknown", "unknown", "unknown"]
    assert [(t.start, t.end) for t in tokens] == [(0, 4), (5, 7), (8, 9)]


def test_char_tokenizer():
    tokens = CharTokenizer().encode("a b é")
    assert [t.text for t in tokens] == ["a", " ", "b", " ", "[UNK]"]
    assert [t.word for t in tokens] == [0, None, 1, None, 2]
    assert tokens[0].id != tokens[2].id and tokens[1].id == tokens[3].id


def test_gpt2_bpe_matches_gpt2_ids_offline():
    tok = GPT2BPETokenizer()
    tokens = tok.encode("hello world")
    assert [t.id for t in tokens] == [31373, 995]
    assert [t.text for t in tokens] == ["hello", " world"]
    assert tok.d_vocab == 50257


def test_gpt2_bpe_subwords_grouped_into_words_and_split_characters_shown_as_bytes():
    tok = GPT2BPETokenizer()
    tokens = tok.encode("unbelievably 🦜")
    words = {t.word for t in tokens}
    assert words == {0, 1}
    first = [t for t in tokens if t.word == 0]
    assert len(first) > 1 and first[0].kind == "normal" and all(t.kind == "subword" for t in first[1:])
    assert "".join(t.text for t in first) == "unbelievably"
    emoji = [t for t in tokens if t.word == 1]
    assert any(t.text.startswith("<") and t.text.endswith(">") for t in emoji)  # a piece of a character
    assert tok.encode("<|endoftext|>")[0].text == "<"  # typed special text is plain text


def test_gpt2_ranks_are_hash_checked(tmp_path, monkeypatch):
    vocab_bpe, encoder_json = tokenizers.gpt2_bpe_files()
    tampered = tmp_path / "vocab.bpe"
    tampered.write_bytes(Path(vocab_bpe).read_bytes() + b"\n")
    monkeypatch.setattr(tokenizers, "gpt2_bpe_files", lambda: (tampered, encoder_json))
    tokenizers.gpt2_encoding.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="hash"):
            tokenizers.gpt2_encoding()
    finally:
        tokenizers.gpt2_encoding.cache_clear()


def test_wordpiece_pieces_marked(tiny_model_dir):
    from model import load_model

    model = load_model(str(tiny_model_dir("distilbert")))
    tokens = model.tokenizer.encode("Unbelievable fished zzz")
    assert [t.text for t in tokens] == ["[CLS]", "un", "##believ", "##able", "fish", "##ed", "[UNK]", "[SEP]"]
    assert [t.kind for t in tokens] == ["special", "normal", "subword", "subword", "normal", "subword", "unknown", "special"]
    assert [t.word for t in tokens] == [None, 0, 0, 0, 1, 1, 2, None]


def test_unknown_tokenizer_name():
    with pytest.raises(ValueError, match="word"):
        get_tokenizer("sentencepiece")


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=40))
def test_every_tokenizer_takes_any_unicode(text):
    for name in ("word", "char", "gpt2-bpe", "bpe"):
        tokens = get_tokenizer(name).encode(text)
        for t in tokens:
            assert 0 <= t.start <= t.end <= len(text)
            assert 0 <= t.id < get_tokenizer(name).d_vocab
            assert t.kind in tokenizers.KINDS


def unknown_share(tokenizer, texts) -> float:
    tokens = [t for text in texts for t in tokenizer.encode(text)]
    return sum(t.kind == "unknown" for t in tokens) / len(tokens)


def test_toy_bpe_reads_everyday_sentences_without_unknown_tokens():
    """On held-out everyday sentences: the toy BPE never gives an unknown token (the target is ≤ 5%),
    where the readable word vocabulary misses a good share of the words."""
    bpe = get_tokenizer("bpe")
    assert unknown_share(bpe, EVERYDAY) == 0.0
    assert unknown_share(WordTokenizer(), EVERYDAY) > 0.1
    tokens = [t for text in EVERYDAY for t in bpe.encode(text)]
    words = sum(len(text.split()) for text in EVERYDAY)
    assert len(tokens) < 2 * words  # most words are one or two pieces, not cut into letters


def test_toy_bpe_pieces_cover_the_text_and_mark_subwords():
    bpe = get_tokenizer("bpe")
    text = "The Bank by the river, unbelievably 🦜!"
    tokens = bpe.encode(text)
    assert [t.text for t in tokens[:2]] == [" the", " bank"]  # lowercased, a space before every word
    assert tokens[1].id == bpe.encode("bank")[0].id
    assert (tokens[1].start, tokens[1].end) == (3, 8) and text[tokens[1].start : tokens[1].end].strip() == "Bank"
    long_word = [t for t in tokens if t.word == 6]  # words: the, bank, by, the, river, ",", unbelievably
    assert len(long_word) > 1 and all(t.kind == "subword" for t in long_word[1:])
    assert "".join(t.text for t in long_word).strip() == "unbelievably"
    emoji = [t for t in tokens if t.text.startswith("<") and t.text.endswith(">")]
    assert emoji  # an unseen character falls back to its UTF-8 bytes, never to an unknown token
    assert all(t.kind != "unknown" for t in tokens)


def test_toy_bpe_mask_is_one_special_token():
    bpe = get_tokenizer("bpe")
    tokens = bpe.encode("The bank [MASK] the river.")
    assert [t.text for t in tokens] == [" the", " bank", "[MASK]", " the", " river", "."]
    assert tokens[2].kind == "special" and tokens[2].id == bpe.mask_id
    assert bpe.pad_id == 0 and bpe.id_to_text(bpe.pad_id) == "[PAD]"


def test_toy_bpe_file_is_needed(tmp_path):
    with pytest.raises(RuntimeError, match="model.train"):
        ToyBPETokenizer(tmp_path / "missing.json")
