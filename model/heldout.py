"""Sentences no model here was trained or tuned on, for measuring what the toy models read.

Written by hand after the corpus and the training were fixed, in ordinary classroom English rather
than the corpus's templates; the tests and the README's figures come from these lists, and they are
not to be edited to make a number look better.
"""

from __future__ import annotations

import argparse
import re

import torch

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


# A second held-out set, written sentence by sentence in free syntax (questions, relative clauses,
# "bank" as subject or object, words the corpus never uses), never used to choose anything in training.
# Each entry is (sentence, cue): the cue is the word that tells the sense. Sense after: the river and
# the money sentence of the same rank share every word up to "bank", so only what follows tells them
# apart, and the cue is 1 to 6 words after "bank".
CUED_AFTER: dict[str, list[tuple[str, str]]] = {
    "river": [
        ("Grandpa went to the bank and waded into the water.", "water"),
        ("Is that bank too steep for the fishermen?", "fishermen"),
        ("Yesterday the bank collapsed, and mud slid into the river.", "mud"),
        ("From the window, the bank looked green with reeds and wild mint.", "reeds"),
        ("Nobody expected the bank to flood after one night of heavy rain.", "flood"),
        ("Children love this bank because frogs hide in the wet grass.", "frogs"),
        ("The northern bank is where the otters build their dens.", "otters"),
        ("Halfway through the morning, the bank was flooded by the rising stream.", "stream"),
        ("Please keep the dog away from the bank, since the water is deep there.", "water"),
        ("Which bank did the canoe drift toward when the paddle broke?", "canoe"),
        ("Her favourite bank has a quiet pond and a few willow trees.", "pond"),
        ("The bank crumbled slowly as the stream wore it away.", "stream"),
        ("On Sunday volunteers cleaned the bank, pulling rubbish from the muddy water.", "muddy"),
        ("Every evening the bank fills with anglers and their long rods.", "anglers"),
        ("A small bank of sand had formed where the two streams met.", "sand"),
        ("We found the bank slippery after the lake had risen overnight.", "lake"),
        ("Why is the bank lower where the ducks swim?", "ducks"),
        ("The bank, soft and sandy, sloped gently down to the water.", "sandy"),
        ("My cousin photographed the bank where the beavers had built a dam.", "beavers"),
        ("For years the bank has been sinking into the river.", "river"),
        ("By noon the bank was crowded with swimmers drying off in the sun.", "swimmers"),
        ("Do not trust the bank when the river is high.", "river"),
        ("I painted the bank with its tall grass, stones and a wooden jetty.", "grass"),
        ("That bank is home to kingfishers, toads and dragonflies.", "kingfishers"),
    ],
    "money": [
        ("Grandpa went to the bank and cashed his pension cheque.", "cashed"),
        ("Is that bank open on Saturdays for deposits?", "deposits"),
        ("Yesterday the bank raised its interest rates again.", "interest"),
        ("From the window, the bank looked busy with customers at every counter.", "customers"),
        ("Nobody expected the bank to refuse the mortgage for our flat.", "mortgage"),
        ("Children love this bank because the cashier gives them sweets.", "cashier"),
        ("The northern bank is where my aunt saves money.", "saves"),
        ("Halfway through the morning, the bank ran out of coins.", "coins"),
        ("Please keep the dog away from the bank, since the cashiers hate barking.", "cashiers"),
        ("Which bank did the company borrow from when the factory closed?", "borrow"),
        ("Her favourite bank has low fees and a friendly cashier.", "fees"),
        ("The bank charged a fee when I paid with my card.", "fee"),
        ("On Sunday volunteers cleaned the bank before the cashiers arrived on Monday.", "cashiers"),
        ("Every evening the bank locks its safe and counts the notes.", "safe"),
        ("A small bank lent the town a million euros for a new school.", "lent"),
        ("We found the bank closed, so we used the cash machine outside.", "cash"),
        ("Why is the bank asking for proof of my salary?", "salary"),
        ("The bank, modern and bright, handled every payment online.", "payment"),
        ("My cousin photographed the bank where robbers had stolen the gold.", "robbers"),
        ("For years the bank paid almost no interest on savings.", "paid"),
        ("By noon the bank was crowded with customers waiting to withdraw pensions.", "customers"),
        ("Do not trust the bank if it hides its fees in small print.", "fees"),
        ("I painted the bank with its cash machines and a golden sign.", "cash"),
        ("That bank employs forty clerks who count money all day.", "money"),
    ],
}

# The same for a causal model: the cue comes 1 to 6 words before "bank".
CUED_BEFORE: dict[str, list[tuple[str, str]]] = {
    "river": [
        ("After wading across the shallow stream, Grandpa sat down on the bank.", "stream"),
        ("The fishermen pulled their boats onto the bank before the storm.", "boats"),
        ("Muddy water had soaked the whole bank overnight.", "water"),
        ("Ducks and swans were sleeping along the bank when we arrived.", "swans"),
        ("Is the river too deep near that bank for swimming?", "river"),
        ("Our canoe bumped gently against the muddy bank.", "canoe"),
        ("Frogs croaked loudly from the reeds on the bank.", "reeds"),
        ("When the flood came, the water washed away half the bank.", "water"),
        ("A heron waited patiently for fish near the bank.", "fish"),
        ("We rowed slowly toward the far bank.", "rowed"),
        ("Which part of the stream has the steepest bank?", "stream"),
        ("Otters swam in the river and then climbed the bank.", "river"),
        ("Tall willows shade the pond and its grassy bank.", "pond"),
        ("After a swim in the lake, we dried off on the bank.", "lake"),
        ("Her fishing rod slipped and fell down the bank.", "rod"),
        ("Waves from the passing boat splashed over the bank.", "boat"),
        ("Every spring the melting snow turns the stream brown and erodes its bank.", "stream"),
        ("Wild mint and reeds cover the bank.", "reeds"),
        ("The little boy threw pebbles into the water from the bank.", "water"),
        ("Swimming against the current, she finally reached the bank.", "current"),
        ("The river rose and covered the lowest bank.", "river"),
        ("With our fishing rods ready, we walked along the bank.", "rods"),
    ],
    "money": [
        ("After cashing her wages, Grandma went straight to the bank.", "wages"),
        ("The robbers stole the gold from the bank before the alarm rang.", "gold"),
        ("Borrowing money means a visit to the bank.", "money"),
        ("Customers with cheques were queuing inside the bank.", "cheques"),
        ("Is the interest higher at that bank for students?", "interest"),
        ("Our company borrowed a million euros from the bank.", "euros"),
        ("Coins and notes are counted at the bank.", "notes"),
        ("When the salary arrived, the money went into the bank.", "money"),
        ("A cashier waited patiently for customers at the bank.", "customers"),
        ("We paid the rent online through the bank.", "rent"),
        ("Which loan from the bank has the lowest interest?", "loan"),
        ("The thieves dug a tunnel under the bank to reach the vault.", "thieves"),
        ("Rich families keep their savings in the bank.", "savings"),
        ("After paying the bills, we discussed the balance with the bank.", "balance"),
        ("Her credit card was blocked by the bank.", "credit"),
        ("The clerk counted the cash and locked it in the bank.", "cash"),
        ("Every month my pension is paid by the bank.", "pension"),
        ("Loans and mortgages are handled by the bank.", "mortgages"),
        ("The man with the unpaid debt was called by the bank.", "debt"),
        ("Paying with a cheque, she opened a joint account at the bank.", "account"),
        ("Dollars were changed into euros at the bank.", "euros"),
        ("With our savings ready, we walked into the bank.", "savings"),
    ],
}


def uncued(cued: dict[str, list[tuple[str, str]]]) -> dict[str, list[str]]:
    """The sentences of a cued set, without their cues (the shape `pairs` takes)."""
    return {sense: [sentence for sentence, _ in group] for sense, group in cued.items()}


BANK_AFTER_VARIED = uncued(CUED_AFTER)
BANK_BEFORE_VARIED = uncued(CUED_BEFORE)


def bank_split(model, sentences: dict[str, list[str]], layer: int | None = None) -> float:
    """How far apart the senses of "bank" sit: centroid distance / mean spread on the PCA of the occurrences.

    The README's measure, the Embeddings page's ratio (`model.embeddings.embedding_projection`), at the
    last layer by default, for any number of sentences: a trace holds at most `MAX_SENTENCES`, so the
    sentences are traced in batches and every batch's real tokens make the space the vectors are centred
    in. Each sentence holds "bank" once; its vector is the mean of its pieces.
    """
    from model.embeddings import pca_2d, sense_ratio
    from model.trace import MAX_SENTENCES

    texts, senses = pairs(sentences)
    banks, spaces = [], []
    for start in range(0, len(texts), MAX_SENTENCES):
        trace = model.trace(texts[start : start + MAX_SENTENCES])
        hidden = trace.hidden_states[trace.n_layers if layer is None else layer]  # [batch, pos, d_model]
        spaces.append(hidden[trace.key_valid])  # [n_tokens, d_model]
        for sentence, (text, tokens) in enumerate(zip(trace.texts, trace.tokens)):
            spans = [m.span() for m in re.finditer(r"\bbank\b", text, flags=re.IGNORECASE)]
            if len(spans) != 1:
                raise ValueError(f"{text!r} holds 'bank' {len(spans)} times, not once")
            ((start_char, end_char),) = spans
            positions = [p for p, t in enumerate(tokens) if t.start < end_char and t.end > start_char]
            banks.append(hidden[sentence, positions].mean(dim=0))
    space = torch.cat(spaces)
    unit = torch.nn.functional.normalize(torch.stack(banks) - space.mean(dim=0), dim=-1)  # [occurrence, d_model]
    axes, _ = pca_2d(unit)
    return sense_ratio((unit - unit.mean(dim=0)) @ axes.T, senses)[0]


def bank_sets() -> dict[str, dict[str, list[str]]]:
    """Every set the bank split is reported on, per side (sense after or before the word): the held-out
    pairs, the held-out sentences in free syntax, and the development sets (the only ones training choices
    read): its phrase grammar and its free-syntax grammar."""
    from model.bank_dev import development_set, free_development_set

    return {
        "after held-out": BANK_AFTER,
        "after held-out-free": BANK_AFTER_VARIED,
        "after development": development_set("after"),
        "after development-free": free_development_set("after"),
        "before held-out": BANK_BEFORE,
        "before held-out-free": BANK_BEFORE_VARIED,
        "before development": development_set("before"),
        "before development-free": free_development_set("before"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m model.heldout", description="The bank split of each model on each set.")
    parser.add_argument("models", nargs="*", default=["toy", "toy-bidirectional"], help="model names for load_model (e.g. minilm)")
    parser.add_argument(
        "--sets", nargs="*", help="only the sets named by one of these words (after, before, held-out, held-out-free, development, development-free)"
    )
    args = parser.parse_args(argv)
    from model import load_model

    sets = {name: s for name, s in bank_sets().items() if not args.sets or any(word in name.split() for word in args.sets)}
    print(f"{'set':32}" + "".join(f"{name:>20}" for name in args.models))
    loaded = [load_model(name) for name in args.models]
    for name, sentences in sets.items():
        print(f"{name:32}" + "".join(f"{bank_split(model, sentences):>20.2f}" for model in loaded))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
