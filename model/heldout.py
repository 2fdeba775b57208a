"""Sentences no model here was trained or tuned on, for measuring what the toy models read.

Written by hand after the corpus and the training were fixed, in ordinary classroom English rather
than the corpus's templates; the tests and the README's figures come from these lists, and they are
not to be edited to make a number look better.
"""

from __future__ import annotations

# Everyday sentences, for the share of unknown tokens a tokenizer gives.
EVERYDAY = [
    "The teacher explained attention to the class.",
    "Please open your books at page twelve.",
    "Yesterday it rained all afternoon, so we stayed inside.",
    "My little brother is afraid of thunder.",
    "Can you tell me where the nearest station is?",
    "We are going to visit our grandparents this weekend.",
    "The museum was closed on Monday because of a strike.",
    "She finished her essay just before the deadline.",
    "Our school has a new science lab with twenty computers.",
    "He forgot his umbrella and got completely wet.",
    "The children built a snowman in the playground.",
    "I would like a glass of orange juice, please.",
    "Dinosaurs lived millions of years ago.",
    "The bus was late again this morning.",
    "Write your name at the top of the page.",
    "They watched the sunset from the top of the hill.",
    "Our neighbours have two cats and a very noisy parrot.",
    "The library lends books, films and music for free.",
    "Mix the flour with two eggs and a cup of milk.",
    "A spider has eight legs, but an insect has six.",
    "The football match was cancelled because of the storm.",
    "Remember to brush your teeth before you go to bed.",
    "My grandmother grows tomatoes in her garden.",
    "The students asked many questions after the film.",
    "We need three volunteers to carry the chairs.",
    "Water boils at one hundred degrees Celsius.",
    "He practises the guitar every evening after dinner.",
    "The shop on the corner sells fresh bread every morning.",
    "I think the answer to the second question is wrong.",
    "Plants turn sunlight into food through photosynthesis.",
]

# "bank" with its sense given before the word: a causal model can read it.
BANK_BEFORE = {
    "river": [
        "After a long swim in the river, we rested on the bank.",
        "The fisherman pulled his boat up onto the muddy bank.",
        "Ducks were swimming near the reeds, so the children sat on the bank.",
        "We followed the stream through the forest until we reached the bank.",
    ],
    "money": [
        "She needed cash for the school trip, so she went to the bank.",
        "My father wanted a loan for a new car and called the bank.",
        "He saved his pocket money for months and took it to the bank.",
        "The shop owner counted the coins and drove to the bank.",
    ],
}

# "bank" with its sense given after the word: only a model that sees both sides can read it.
BANK_AFTER = {
    "river": [
        "We sat on the bank and watched the ducks swim down the river.",
        "The bank was covered in mud after the river flooded.",
        "They walked along the bank to find a good spot for fishing.",
        "The bank of the stream was steep and full of reeds.",
    ],
    "money": [
        "We went to the bank to open an account for my savings.",
        "The bank gave my parents a loan to buy the house.",
        "She walked into the bank to change her dollars into euros.",
        "The bank was closed, so he could not withdraw any cash.",
    ],
}


def pairs(sentences: dict[str, list[str]]) -> tuple[list[str], list[str]]:
    """`(texts, senses)`: the sentences of every sense in one list, with the sense of each."""
    texts = [text for group in sentences.values() for text in group]
    senses = [sense for sense, group in sentences.items() for _ in group]
    return texts, senses
