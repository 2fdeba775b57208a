"""A development set for the senses of "bank": the sentences any training choice is measured on.

Neither the corpus (model/corpus.py) nor the held-out sets (model/heldout.py): a small grammar with
its own word lists (openers, people, verbs, cue phrases), so that a choice made by its number (corpus
variety, steps, an objective's weight) is not a choice made by the held-out sentences, which are read
only once the training is fixed. `where="after"`: nothing before "bank" tells the sense and a cue
phrase comes 1 to 6 words after it; `where="before"`: the cue comes before "bank" and nothing after it.
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
    if where not in ("after", "before"):
        raise ValueError("where is 'after' or 'before'")
    rng = random.Random(seed)
    out: dict[str, list[str]] = {}
    for sense in CUES:
        seen: dict[str, None] = {}
        while len(seen) < n_per_sense:
            seen[development_sentence(sense, where, rng)] = None
        out[sense] = list(seen)
    return out
