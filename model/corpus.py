"""A small English corpus written by templates, for training the toy model.

Words with two senses appear in sentences whose other words tell the sense apart:
bank (river / money), bat (animal / sport), fair (fairground / just), light (lamp / weight). Plain
sentences fill the rest. The same seed always gives the same sentences; nothing is downloaded.
"""

from __future__ import annotations

import random

from model.vocab import TOY_WORDS

PEOPLE = ["the man", "the woman", "the boy", "the girl", "the farmer", "the teacher", "my friend", "her father", "his mother", "the child"]
PRONOUNS = ["he", "she", "they", "we", "i"]

# Each ambiguous word: phrases that hold it (the same for both senses), and per sense, context
# clauses that come before it and endings that come after it. The phrase alone does not tell the
# sense; only the context does, so a model that predicts the ending must carry the sense at the word.
SENSES: dict[str, dict] = {
    "bank": {
        "phrases": ["went to the bank", "sat on the bank", "walked to the bank", "stood at the bank", "came to the bank", "was at the bank"],
        "river": {
            "context": [
                "went fishing",
                "took the boat down the river",
                "walked by the stream",
                "saw fish in the water",
                "sat in the grass by the lake",
                "swam in the river",
                "was fishing in the stream",
                "rowed the boat on the lake",
            ],
            "after": ["by the water", "in the mud", "near the boat", "under the trees", "to fish", "in the grass", "of the river"],
        },
        "money": {
            "context": ["needed money", "had no cash", "wanted a loan", "had savings", "got paid", "needed coins", "wanted to pay", "had a deposit"],
            "after": ["to get cash", "for a loan", "to pay", "with the money", "to withdraw money", "to open an account", "for the savings"],
        },
    },
    "bat": {
        "phrases": ["saw the bat", "held the bat", "found a bat", "looked at the bat"],
        "animal": {
            "context": ["went into the dark cave", "walked in the forest at night", "heard wings in the night", "looked at the animal"],
            "after": ["fly out of the cave", "with black wings", "in the night", "fly over the trees"],
        },
        "sport": {
            "context": ["played cricket", "went to the baseball game", "wanted to hit the ball", "was on the team"],
            "after": ["and hit the ball", "in the game", "for the match", "and made a swing"],
        },
    },
    "fair": {
        "phrases": ["said it was fair", "went to the fair", "wanted it fair", "thought it was fair"],
        "fairground": {
            "context": ["liked rides and music", "wanted to win a prize", "had fun in the summer", "went to see the show"],
            "after": ["with rides and a tent", "and won a prize", "with music and dance", "for the fun"],
        },
        "just": {
            "context": ["looked at the rules", "heard the judge", "made an honest decision", "wanted an equal share"],
            "after": ["and honest", "to share it", "and equal", "by the rules"],
        },
    },
    "light": {
        "phrases": ["saw the light", "said it was light", "found the light", "liked the light"],
        "lamp": {
            "context": ["turned on the lamp", "was in the dark room", "looked at the sun", "put the switch on"],
            "after": ["of the lamp", "and it was bright", "from the bulb", "in the dark"],
        },
        "weight": {
            "context": ["lifted the bag", "carried the box", "held a feather", "picked up the soft bag"],
            "after": ["and not heavy", "to carry", "like a feather", "and easy to lift"],
        },
    },
}

PLAIN = [
    "the cat sat on the mat .",
    "{p} drank tea in the kitchen .",
    "{p} read a book in the garden .",
    "the dog ran across the field .",
    "{P} went to school by bus .",
    "{p} wrote a letter to a friend .",
    "the sun was hot in the summer .",
    "{p} ate bread and soup for dinner .",
    "the train left the town in the evening .",
    "{p} sang a song to the children .",
    "{P} like to walk in the forest .",
    "the bird flew over the house .",
    "{p} wrote a poem about the sea .",
    "{p} bought milk and apples at the shop .",
    "the horse and the cow were in the field .",
]

HELD_OUT = {  # bank sentences the model never trains on, for the tests and the lessons
    "river": [
        "the woman was fishing in the stream and stood at the bank",
        "my friend swam in the river and came to the bank",
        "the boy rowed the boat on the lake and walked to the bank",
        "the girl saw fish in the water and was at the bank",
    ],
    "money": [
        "the woman needed coins and stood at the bank",
        "my friend had a deposit and came to the bank",
        "the boy wanted to pay and walked to the bank",
        "the girl got paid and was at the bank",
    ],
}


def _fill(template: str, rng: random.Random) -> str:
    return template.replace("{p}", rng.choice(PEOPLE)).replace("{P}", rng.choice(PRONOUNS))


def _sense_sentence(word: str, sense: str, rng: random.Random) -> str:
    senses = SENSES[word]
    context = rng.choice(senses[sense]["context"])
    phrase = rng.choice(senses["phrases"])
    after = rng.choice(senses[sense]["after"])
    return f"{_fill('{p}', rng)} {context} and {phrase} {after} ."


def sentences(n: int, seed: int = 0, plain_share: float = 0.2) -> list[str]:
    """`n` sentences, the senses of each ambiguous word evenly mixed with plain ones; deterministic."""
    rng = random.Random(seed)
    pairs = [(word, sense) for word, senses in SENSES.items() for sense in senses if sense != "phrases"]
    held_out = {s for group in HELD_OUT.values() for s in group}
    out = []
    while len(out) < n:
        if rng.random() < plain_share:
            sentence = _fill(rng.choice(PLAIN), rng)
        else:
            sentence = _sense_sentence(*rng.choice(pairs), rng)
        if not any(sentence.startswith(h) for h in held_out):
            out.append(sentence)
    return out


def unknown_words() -> set[str]:
    """Words the corpus uses that the toy vocabulary lacks (should be empty)."""
    texts = list(PLAIN) + PEOPLE + PRONOUNS + [s for group in HELD_OUT.values() for s in group]
    for senses in SENSES.values():
        texts += senses["phrases"]
        for sense, parts in senses.items():
            if sense != "phrases":
                texts += parts["context"] + parts["after"]
    words = {w for t in texts for w in t.split() if not w.startswith("{")}
    return words - set(TOY_WORDS)
