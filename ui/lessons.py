"""One-click lessons: a view (sentences, model, page, toggles) with a teaching point and a question."""

from __future__ import annotations

from dataclasses import dataclass, field

from model.corpus import HELD_OUT


@dataclass(frozen=True)
class Lesson:
    key: str
    title: str
    page: str  # path of the page it opens
    settings: dict = field(default_factory=dict)  # Settings fields that differ from the defaults
    explanation: str = ""
    question: str = ""


BANK_SENTENCES = "\n".join(HELD_OUT["river"][:2] + HELD_OUT["money"][:2])

LESSONS = (
    Lesson(
        "why-scale",
        "Why divide by √d_k?",
        "pages/3_Attention.py",
        dict(text="The cat sat on the mat because it was warm.", model="toy-random", mask="none", heads=[0]),
        "With random weights each score q·k is a sum of d_k products, so its spread grows like √d_k. "
        "The page shows the softmax with and without the division side by side, with each row's entropy.",
        "Without scaling, what happens to the largest weight of each row? What would happen with d_k = 512?",
    ),
    Lesson(
        "causal-mask",
        "What the causal mask does",
        "pages/3_Attention.py",
        dict(text="The cat sat on the mat.", mask="causal+padding", heads=[0, 1]),
        "A language model predicts the next word, so while reading position i it must not see positions "
        "after i. The mask sets those scores to −∞ before the softmax: the pattern becomes lower-triangular.",
        "Why is the first row always a single 1? Switch the mask to “none”: which rows change, and why would that be cheating for next-word prediction?",
    ),
    Lesson(
        "padding",
        "Padding in a batch",
        "pages/3_Attention.py",
        dict(text="A dog ran.\nThe cat sat on the mat in the warm sun.", mask="causal+padding", sentence=0),
        "Sentences of different lengths are padded to one length so they can run as one batch. The padding "
        "mask hides the [PAD] keys; the short sentence's real tokens attend exactly as they would alone.",
        "Switch the mask to “causal” only: where does the attention of the short sentence leak to?",
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
    Lesson(
        "bank-after-training",
        "“bank” after training",
        "pages/4_Embeddings.py",
        dict(text=BANK_SENTENCES, model="toy", references="river, water, fishing, money, cash, coins"),
        "The toy model was trained on sentences where “bank” means a river side or a place for money. "
        "After training, each contextual “bank” moves towards the others of its sense.",
        "Switch the model to “random weights (before training)”: do the two senses still separate? Why not?",
    ),
    Lesson(
        "bank-before-training",
        "“bank” before training",
        "pages/4_Embeddings.py",
        dict(text=BANK_SENTENCES, model="toy-random", references="river, water, fishing, money, cash, coins"),
        "The same sentences through the same architecture with random weights: the arrows still move, "
        "because attention mixes in other words, but not in a way that tells the senses apart.",
        "What did training change: the attention, the embeddings, or both? Compare the Attention page of both models.",
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
