"""The held-out sets for the senses of "bank": their stated constraints, that training never read them,
the development set that training choices read instead, and the measure over any number of sentences."""

import pytest

from model import load_model
from model.bank_dev import CUES, DETERMINERS, FREE_AFTER, FREE_BEFORE, development_set, free_development_set
from model.corpus import corpus_words, sentences
from model.embeddings import embedding_projection
from model.heldout import BANK_AFTER, BANK_AFTER_VARIED, BANK_BEFORE, BANK_BEFORE_VARIED, CUED_AFTER, CUED_BEFORE, bank_split, pairs
from model.train import BIDIRECTIONAL_CHECKPOINT, CHECKPOINT

MIN_WORDS, MAX_WORDS = 6, 25
MAX_CUE_DISTANCE = 6


def words(text: str) -> list[str]:
    """Lowercased words, punctuation dropped ("sister's" is one word)."""
    return [w.strip(".,?!;:\"'").lower() for w in text.split() if w.strip(".,?!;:\"'")]


def cue_distance(text: str, cue: str) -> int:
    """Words from "bank" to the cue: positive after the word, negative before it (the cue nearest "bank")."""
    sentence = words(text)
    bank = sentence.index("bank")
    return min((i - bank for i, w in enumerate(sentence) if w == cue.lower()), key=abs)


@pytest.mark.parametrize("cued,side", [(CUED_AFTER, 1), (CUED_BEFORE, -1)], ids=["after", "before"])
def test_varied_sentences_meet_the_stated_constraints(cued, side):
    for group in cued.values():
        assert len(group) >= 20 and len({s for s, _ in group}) == len(group)
        for text, cue in group:
            sentence = words(text)
            assert MIN_WORDS <= len(sentence) <= MAX_WORDS, text
            assert sentence.count("bank") == 1, text
            assert 1 <= side * cue_distance(text, cue) <= MAX_CUE_DISTANCE, text
    assert len(cued["river"]) == len(cued["money"])


def test_sense_after_sentences_share_everything_before_bank():
    """River and money sentences of the same rank differ only after "bank": no clue before it."""
    for (river, _), (money, _) in zip(CUED_AFTER["river"], CUED_AFTER["money"], strict=True):
        before = [words(text)[: words(text).index("bank")] for text in (river, money)]
        assert before[0] == before[1], (river, money)


def corpus_sentences(folder) -> set[tuple[str, ...]]:
    """The word sequences of the corpus a shipped checkpoint was trained on (its recorded settings)."""
    import json

    settings = json.loads((folder / "training.json").read_text())["train"]
    texts = sentences(settings["n_sentences"], seed=settings["seed"], bank_variety=settings.get("bank_variety", 0.0), variety=settings.get("variety", 0.0))
    return {tuple(words(text)) for text in texts}


@pytest.fixture(scope="module")
def corpora() -> dict[str, set[tuple[str, ...]]]:
    return {"toy": corpus_sentences(CHECKPOINT), "toy-bidirectional": corpus_sentences(BIDIRECTIONAL_CHECKPOINT)}


def test_held_out_sentences_are_not_in_any_training_corpus(corpora):
    held_out = [text for s in (BANK_AFTER, BANK_BEFORE, BANK_AFTER_VARIED, BANK_BEFORE_VARIED) for group in s.values() for text in group]
    for corpus in corpora.values():
        assert not [text for text in held_out if tuple(words(text)) in corpus]


def test_varied_sentences_are_not_written_by_the_templates():
    """Each holds a word the corpus never writes, so no template can have produced it."""
    known = set(corpus_words())
    for cued in (CUED_AFTER, CUED_BEFORE):
        for text, _ in (entry for group in cued.values() for entry in group):
            assert set(words(text)) - known, text
    outside = [w for group in BANK_AFTER_VARIED.values() for text in group for w in words(text) if w not in known]
    assert len(outside) >= 60  # many words the toy reads only as pieces (measured: see the report)


def test_development_set_is_its_own():
    """Deterministic, "bank" once, no cue word before it (sense after), and disjoint from the held-out sets and the corpus."""
    after = development_set("after")
    assert after == development_set("after") and after != development_set("after", seed=8)
    cue_words = {w for group in CUES.values() for phrase in group for w in words(phrase)} - {"and", "a", "of", "by", "over", "their"}
    cue_words -= {w for determiner in DETERMINERS for w in words(determiner)}  # "the old bank ... old fishing boats"
    for text in (t for group in after.values() for t in group):
        sentence = words(text)
        assert sentence.count("bank") == 1 and not set(sentence[: sentence.index("bank")]) & cue_words, text
        assert MIN_WORDS <= len(sentence) <= MAX_WORDS, text
    held_out = {tuple(words(t)) for s in (BANK_AFTER, BANK_AFTER_VARIED, BANK_BEFORE, BANK_BEFORE_VARIED) for g in s.values() for t in g}
    for where in ("after", "before"):
        assert not {tuple(words(t)) for g in development_set(where).values() for t in g} & held_out
        assert not {tuple(words(t)) for g in free_development_set(where).values() for t in g} & held_out


@pytest.mark.parametrize("where", ["after", "before"])
def test_free_development_set_tells_the_sense_on_one_side_only(where):
    """Its river and money frames share every word on the other side of "bank" (people, verbs and
    determiners are drawn from one list for both senses)."""
    dev = free_development_set(where)
    assert dev == free_development_set(where) and dev != free_development_set(where, seed=12)
    assert all(len(group) == 40 and len(set(group)) == 40 for group in dev.values())
    frames = FREE_AFTER if where == "after" else FREE_BEFORE
    for sense, group in frames.items():
        other = "money" if sense == "river" else "river"
        for frame, twin in zip(group, frames[other], strict=True):
            side = (lambda f: f.split("bank")[0]) if where == "after" else (lambda f: f.split("bank")[1])
            assert side(frame) == side(twin), (frame, twin)  # same words where the sense is not told
    for text in (t for group in dev.values() for t in group):
        assert words(text).count("bank") == 1 and MIN_WORDS <= len(words(text)) <= MAX_WORDS, text


def test_bank_split_is_the_embeddings_page_ratio_and_reads_more_than_one_trace():
    model = load_model("toy")
    texts, senses = pairs(BANK_BEFORE)
    assert bank_split(model, BANK_BEFORE) == pytest.approx(embedding_projection(model.trace(texts), "bank", (), senses=senses).ratio, rel=1e-6)
    dev = {sense: group[:16] for sense, group in development_set("before").items()}  # 32: one trace
    texts, senses = pairs(dev)
    assert bank_split(model, dev) == pytest.approx(embedding_projection(model.trace(texts), "bank", (), senses=senses).ratio, rel=1e-5)
    five_times = {sense: group * 5 for sense, group in BANK_BEFORE.items()}  # 40 sentences: two traces, the same points
    assert len(pairs(five_times)[0]) > 32
    assert bank_split(model, five_times) == pytest.approx(bank_split(model, BANK_BEFORE), rel=1e-4)
    with pytest.raises(ValueError, match="once"):
        bank_split(model, {"river": ["The bank by the river bank."], "money": ["The bank lent money."]})
