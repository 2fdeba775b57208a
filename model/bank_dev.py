"""A development set for the senses of "bank": the sentences any training choice is measured on.

Neither the corpus (model/corpus.py) nor the held-out sets (model/heldout.py): a small grammar with
its own word lists (openers, people, verbs, cue phrases), so that a choice made by its number (corpus
variety, steps, an objective's weight) is not a choice made by the held-out sentences, which are read
only once the training is fixed. `where="after"`: nothing before "bank" tells the sense and a cue
phrase comes 1 to 6 words after it; `where="before"`: the cue comes before "bank" and nothing after it.
`free_development_set` is a second grammar in freer syntax (questions, relative and second clauses).
"""

from __future__ import annotations

import random

OPENERS = ["", "", "last week,", "for some reason,", "as usual,", "in the photo,", "according to my neighbour,", "this time,", "at dawn,", "honestly,"]
PEOPLE = ["my granddad", "the tourists", "a journalist", "our coach", "the painter", "the twins", "a stranger", "my classmate", "the mayor", "everyone"]
DETERMINERS = ["the", "this", "that", "our", "the old", "the nearest", "the other", "the big", "the quiet", "the famous"]
VERBS = ["described", "mentioned", "passed", "photographed", "visited", "remembered", "liked", "drew", "filmed", "studied"]
# between "bank" and the cue: neutral words only, so that the cue's distance varies from 1 to 6 words
LINKS = {
    "subject": ["was full of", "is known for its", "had", "smelled of", "was busy with", "looked tidy, with", "was famous for"],
    "object": ["with its", "because of its", "and its", "and pointed at the", "and talked about the", "near the", "for the"],
}
CUES = {
    "river": [
        "muddy water",
        "old fishing boats",
        "swans and ducks",
        "slippery rocks by the stream",
        "wet sand",
        "tall reeds",
        "a little waterfall",
        "anglers and their nets",
        "frogs and dragonflies",
        "the rushing river",
        "weeping willows over the water",
        "a rowing club",
    ],
    "money": [
        "cash machines",
        "long queues of customers",
        "a locked vault",
        "cheap loans",
        "savings accounts",
        "piles of coins and banknotes",
        "a polite cashier",
        "high interest rates",
        "mortgage advisers",
        "credit cards and cheques",
        "foreign currency",
        "overdraft fees",
    ],
}
# for a causal model: a clause that tells the sense, then "bank"
CLAUSES = {
    "river": [
        "after fishing all morning,",
        "soaked by the river,",
        "with wet boots from the stream,",
        "after paddling the canoe,",
        "while the ducks swam past,",
    ],
    "money": ["after counting the coins,", "with a cheque to cash,", "short of money,", "after the loan was signed,", "to pay the mortgage,"],
}
ENDINGS = ["", " again", " yesterday", " in the end", " after lunch", " twice"]


def development_sentence(sense: str, where: str, rng: random.Random) -> str:
    """One sentence whose sense of "bank" only the cue tells."""
    bank = f"{rng.choice(DETERMINERS)} bank"
    if where == "before":
        text = f"{rng.choice(CLAUSES[sense])} {rng.choice(PEOPLE)} {rng.choice(VERBS)} {bank}{rng.choice(ENDINGS)}."
    elif rng.random() < 0.5:
        text = f"{rng.choice(OPENERS)} {bank} {rng.choice(LINKS['subject'])} {rng.choice(CUES[sense])}."
    else:
        text = f"{rng.choice(OPENERS)} {rng.choice(PEOPLE)} {rng.choice(VERBS)} {bank} {rng.choice(LINKS['object'])} {rng.choice(CUES[sense])}."
    text = text.strip()
    return text[0].upper() + text[1:]


def development_set(where: str = "after", n_per_sense: int = 40, seed: int = 7) -> dict[str, list[str]]:
    """`{"river": [...], "money": [...]}`: distinct sentences, the same for the same seed."""
    return distinct_sentences(development_sentence, where, n_per_sense, seed)


def distinct_sentences(sentence, where: str, n_per_sense: int, seed: int) -> dict[str, list[str]]:
    """`n_per_sense` distinct sentences of each sense, in the order `sentence(sense, where, rng)` first
    writes them, from one generator seeded with `seed`."""
    if where not in ("after", "before"):
        raise ValueError("where is 'after' or 'before'")
    rng = random.Random(seed)
    out: dict[str, list[str]] = {}
    for sense in ("river", "money"):
        seen: dict[str, None] = {}
        while len(seen) < n_per_sense:
            seen[sentence(sense, where, rng)] = None
        out[sense] = list(seen)
    return out


# A second grammar, in freer syntax: "bank" as subject or object, in questions, relative and second
# clauses, the cue 1 to 11 words from it, on one side only. Its own people, verbs and cues (some words
# the corpus knows, some it never writes), drawn with its own seed.
FREE_PEOPLE = ["the plumber", "my godmother", "two hikers", "the new vicar", "a shy pupil", "the captain", "grandpa", "the neighbours' son"]
FREE_PLACES = ["the", "that", "this", "the second", "the small", "the new", "the first", "the usual"]  # none tells a sense
# sense after: a neutral start, "bank", then the cue (words in brackets are where the cue sits)
FREE_AFTER = {
    "river": [
        "{p} {v} {d} bank, where the otters swim.",
        "is {d} bank safe for the ducks and their chicks?",
        "{d} bank, soaked by the high water, gave way.",
        "{p} {v} {d} bank and dipped a net in the stream.",
        "{d} bank that the herons like is flooded again.",
        "{p} said {d} bank was a fine spot for fishing.",
        "why is {d} bank so muddy after the rain?",
        "{d} bank slopes gently down to the lake.",
        "{p} {v} {d} bank while the canoes drifted past.",
        "{d} bank was lined with reeds and willows.",
    ],
    "money": [
        "{p} {v} {d} bank, where the tellers count cash.",
        "is {d} bank safe for our savings and pensions?",
        "{d} bank, short of money after the crisis, closed.",
        "{p} {v} {d} bank and asked about a loan.",
        "{d} bank that the traders like raised its fees again.",
        "{p} said {d} bank was a fine place for a mortgage.",
        "why is {d} bank so strict about cheques?",
        "{d} bank lends money to small shops.",
        "{p} {v} {d} bank while the clerks counted coins.",
        "{d} bank was full of customers paying bills.",
    ],
}
FREE_AFTER_VERBS = ["left", "reached", "found", "painted", "showed us", "talked about"]
# sense before: the cue before "bank", nothing after it that tells the sense
FREE_BEFORE = {
    "river": [
        "the otters slid down {d} bank{e}.",
        "after the swim, {p} dried off on {d} bank{e}.",
        "{p} pulled the canoe onto {d} bank{e}.",
        "did the flood wash away {d} bank{e}?",
        "with a fishing rod in hand, {p} sat on {d} bank{e}.",
        "the ducks waddled up {d} bank{e}.",
        "{p} waded out of the stream and climbed {d} bank{e}.",
        "the muddy water crept over {d} bank{e}.",
        "frogs croaked all night along {d} bank{e}.",
        "{p} tied the boat to a root on {d} bank{e}.",
    ],
    "money": [
        "the robbers broke into {d} bank{e}.",
        "after the payday, {p} paid the cash into {d} bank{e}.",
        "{p} carried the coins to {d} bank{e}.",
        "did the loan come from {d} bank{e}?",
        "with a cheque in hand, {p} queued at {d} bank{e}.",
        "the investors trusted {d} bank{e}.",
        "{p} needed a mortgage and phoned {d} bank{e}.",
        "the village kept its savings in {d} bank{e}.",
        "customers paying bills crowded {d} bank{e}.",
        "{p} owed money to {d} bank{e}.",
    ],
}
FREE_ENDINGS = ["", "", " at noon", " on friday", " once more", " quickly", " last winter", " without a word"]


def free_development_sentence(sense: str, where: str, rng: random.Random) -> str:
    """One sentence of the second grammar: its frame, then the person, verb, determiner and ending drawn."""
    frame = rng.choice((FREE_AFTER if where == "after" else FREE_BEFORE)[sense])
    text = frame.format(p=rng.choice(FREE_PEOPLE), v=rng.choice(FREE_AFTER_VERBS), d=rng.choice(FREE_PLACES), e=rng.choice(FREE_ENDINGS))
    return text[0].upper() + text[1:]


def free_development_set(where: str = "after", n_per_sense: int = 40, seed: int = 11) -> dict[str, list[str]]:
    """The second grammar's `{"river": [...], "money": [...]}`: distinct sentences, the same for the same seed."""
    return distinct_sentences(free_development_sentence, where, n_per_sense, seed)
