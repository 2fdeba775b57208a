"""One-click lessons: a view (sentences, model, page, toggles) with a teaching point and a question."""

from __future__ import annotations

from dataclasses import dataclass, field

from model.corpus import HELD_OUT
from model.heldout import BANK_AFTER, BANK_BEFORE


@dataclass(frozen=True)
class Lesson:
    key: str
    title: str
    page: str  # path of the page it opens
    settings: dict = field(default_factory=dict)  # Settings fields that differ from the defaults
    explanation: str = ""
    question: str = ""
    controls: tuple[str, ...] = ()  # attention controls shown beside the question (ui.view.ATTENTION_CONTROLS)


LESSONS_BY_KEY: dict[str, Lesson] = {}  # filled below

BANK_SENTENCES = "\n".join(HELD_OUT["river"][:2] + HELD_OUT["money"][:2])
# Sentences written after training (model/heldout.py): the sense before "bank", or after it.
BEFORE_TEXT = "\n".join(BANK_BEFORE["river"][:3] + BANK_BEFORE["money"][:3])
BEFORE_SENSES = ", ".join(["river"] * 3 + ["money"] * 3)
AFTER_TEXT = "\n".join(BANK_AFTER["river"][:3] + BANK_AFTER["money"][:3])
AFTER_SENSES = BEFORE_SENSES
BANK_LESSON_TEXT = {
    ("causal", "before"): (
        "The toy model's architecture with random weights, on sentences whose sense comes before “bank”. "
        "Attention mixes in other words, but not in a way that sorts the two senses apart.",
        "Compare the two lines of the lower plot with the trained model's: what did training change?",
    ),
    ("causal", "after"): (
        "The same sentences through the trained toy model. It learned to predict the next word, so it has to "
        "carry the sense at “bank”: the river and money groups part, most in the last layer.",
        "Open the bidirectional lesson's sentences (sense after the word) with this model: can it part them? Why not?",
    ),
    ("bidirectional", "before"): (
        "The bidirectional toy's architecture with random weights, on sentences whose sense comes after “bank”.",
        "Does seeing both sides help a model that has learned nothing yet?",
    ),
    ("bidirectional", "after"): (
        "The trained bidirectional toy sees the whole sentence, so a sense given after “bank” can reach it. "
        "The two groups part, but less than in MiniLM: where “bank” sits in the sentence still spreads them too.",
        "Which layer parts the senses most? Compare with the causal toy and with MiniLM on the same sentences.",
    ),
}

LESSONS = (
    Lesson(
        "why-scale",
        "Why divide by √d_k?",
        "pages/3_Attention.py",
        dict(text="The cat sat on the mat because it was warm.", model="toy-random", mask="none", heads=[0]),
        "With random weights each score q·k is a sum of d_k products, so its spread grows like √d_k. "
        "The page shows the softmax with and without the division side by side, with each row's entropy.",
        "Without scaling, what happens to the largest weight of each row? What would happen with d_k = 512? (Try it in the Scaling lab.)",
        ("scaling",),
    ),
    Lesson(
        "causal-mask",
        "What the causal mask does",
        "pages/3_Attention.py",
        dict(text="The cat sat on the mat.", mask="causal+padding", heads=[0, 1]),
        "A language model predicts the next word, so while reading position i it must not see positions "
        "after i. The mask sets those scores to −∞ before the softmax: the pattern becomes lower-triangular.",
        "Why is the first row always a single 1? Switch the mask to “none”: which rows change, and why would that be cheating for next-word prediction?",
        ("mask",),
    ),
    Lesson(
        "padding",
        "Padding in a batch",
        "pages/3_Attention.py",
        dict(text="A dog ran.\nThe cat sat on the mat in the warm sun.", mask="causal+padding", sentence=0),
        "Sentences of different lengths are padded to one length so they can run as one batch. The padding "
        "mask hides the [PAD] keys; the short sentence's real tokens attend exactly as they would alone.",
        "Switch the mask to “causal” only: where does the attention of the short sentence leak to?",
        ("mask",),
    ),
    Lesson(
        "positional-encoding",
        "What positional encoding adds",
        "pages/2_Positional_encoding.py",
        dict(text="The dog bit the man.\nThe man bit the dog.", pe_positions=64, pe_d_model=32, pe_base=100),
        "Attention alone compares every token with every other and ignores order. Adding a position "
        "vector makes “the dog” at position 0 differ from “the dog” at position 3. Nearby positions get similar vectors.",
        "Lower the base to 10: what happens to the similarity of distant positions? Why might that be a problem for long texts?",
    ),
    *(
        Lesson(
            f"bank-{model}-{when}",
            f"“bank” {when} training: {label}",
            "pages/4_Embeddings.py",
            dict(text=text, model=name, senses=senses, references="river, water, fishing, money, cash, loan"),
            explanation,
            question,
        )
        for model, label, text, senses, runs in (
            ("causal", "the toy model (left to right)", BEFORE_TEXT, BEFORE_SENSES, (("toy-random", "before"), ("toy", "after"))),
            (
                "bidirectional",
                "the bidirectional toy",
                AFTER_TEXT,
                AFTER_SENSES,
                (("toy-bidirectional-random", "before"), ("toy-bidirectional", "after")),
            ),
        )
        for name, when in runs
        for explanation, question in [BANK_LESSON_TEXT[(model, when)]]
    ),
    Lesson(
        "bank-minilm",
        "“bank” in a pretrained model: MiniLM",
        "pages/4_Embeddings.py",
        dict(text=AFTER_TEXT, model="minilm", senses=AFTER_SENSES, references="river, water, fishing, money, cash, loan"),
        "all-MiniLM-L6-v2 was trained on a billion sentence pairs and sees the whole sentence. Here the sense "
        "of “bank” comes only after the word; the two groups still part, layer by layer.",
        "In which layer do the two lines of the lower plot part most? Is the input layer (0) able to tell them apart?",
    ),
    Lesson(
        "bank-smollm2",
        "“bank” in a pretrained decoder: SmolLM2",
        "pages/4_Embeddings.py",
        dict(text=BEFORE_TEXT, model="smollm2", senses=BEFORE_SENSES, references="river, water, fishing, money, cash, loan"),
        "SmolLM2 reads left to right like the toy model, but was trained on trillions of words. Here the sense "
        "of “bank” comes before the word, where a left-to-right model can see it.",
        "Do the two groups part more or less than in the toy model, and in which layers? What happens with the "
        "sense after the word (the MiniLM lesson's sentences)?",
    ),
    Lesson(
        "temperature",
        "Temperature",
        "pages/5_Next_token.py",
        dict(text=HELD_OUT["river"][0], model="toy", sampling_temperature=1.0),
        "The next-word probabilities are softmax(logits / T). A low temperature sharpens the distribution "
        "towards the most likely word; a high one flattens it towards uniform.",
        "At which temperature would you sample to write a predictable sentence? A surprising one?",
    ),
)

LESSONS_BY_KEY.update({lesson.key: lesson for lesson in LESSONS})
