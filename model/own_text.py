"""Your own text as training sentences for the toy model: pasted or uploaded, capped, split, and with
the words it adds to the toy's vocabulary.

The toy model reads words (lowercased) and punctuation marks. A text is cut into sentences at line
breaks and after ".", "!" or "?"; a sentence of fewer than MIN_TOKENS words and marks is too short to
learn from, and a long one is cut into pieces of MAX_SENTENCE_TOKENS. Words the toy's vocabulary
lacks are added to it, the most frequent first, up to MAX_NEW_WORDS; rarer ones read as [UNK].
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from model.tokenizers import clean_text, word_spans

MAX_CHARS = 100_000  # about 16,000 words (some 30 pages): bounds what a session tokenizes and keeps padded in memory
MIN_TOKENS = 3  # a sentence to learn from: at least three words or marks
MAX_SENTENCE_TOKENS = 64  # longer sentences are cut into pieces of this many tokens
MAX_NEW_WORDS = 3000  # words added to the vocabulary (the embedding and output rows grow with them)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")


class TextError(ValueError):
    """Text that cannot be trained on; the message is written for the person who gave it."""


@dataclass(frozen=True)
class OwnText:
    """Training sentences made from one text."""

    sentences: list[str]  # in the order of the text; long ones cut into pieces
    new_words: list[str]  # added to the toy vocabulary, the most frequent first
    n_chars: int
    n_too_short: int = 0  # sentences left out: fewer than MIN_TOKENS tokens
    n_cut: int = 0  # sentences cut into pieces of MAX_SENTENCE_TOKENS
    n_unknown_words: int = 0  # distinct words beyond MAX_NEW_WORDS (read as [UNK])
    notices: list[str] = field(default_factory=list)


def decode_upload(data: bytes, name: str = "the file") -> str:
    """The text of an uploaded .txt file (UTF-8, with or without a byte-order mark)."""
    if b"\x00" in data[:4096]:
        raise TextError(f"{name} looks like a binary file, not plain text: upload a .txt file (UTF-8).")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise TextError(
            f"{name} is not UTF-8 text (byte {error.start} cannot be read): save it as plain text in UTF-8 "
            "(in most editors: Save as → Text, encoding UTF-8) and upload it again."
        ) from None


def training_sentences(text: str, known_words: set[str] | list[str] = ()) -> OwnText:
    """Split `text` into sentences the toy model can train on. Raises `TextError` on an empty text, a
    text over MAX_CHARS characters, or one without a single sentence of MIN_TOKENS tokens."""
    text = clean_text(text)
    if len(text) > MAX_CHARS:
        raise TextError(f"The text has {len(text):,} characters; the cap is {MAX_CHARS:,} (about 16,000 words): use a part of it.")
    if not text.strip():
        raise TextError("The text is empty: paste some sentences or upload a .txt file.")
    sentences, too_short, cut = [], 0, 0
    for part in SENTENCE_END.split(text):
        part = " ".join(part.split())  # one space between words
        spans = word_spans(part)
        if len(spans) < MIN_TOKENS:
            too_short += bool(part)
            continue
        if len(spans) > MAX_SENTENCE_TOKENS:
            cut += 1
            for start in range(0, len(spans), MAX_SENTENCE_TOKENS):
                piece = spans[start : start + MAX_SENTENCE_TOKENS]
                if len(piece) >= MIN_TOKENS:
                    sentences.append(part[piece[0][0] : piece[-1][1]])
            continue
        sentences.append(part)
    if not sentences:
        raise TextError(
            f"No usable sentence: a sentence needs at least {MIN_TOKENS} words or punctuation marks (sentences end at a line break or after . ! ?)."
        )
    known = set(known_words)
    counts = Counter(part[s:e].lower() for part in sentences for s, e in word_spans(part))
    unknown = sorted((w for w in counts if w not in known), key=lambda w: (-counts[w], w))
    new_words, rare = unknown[:MAX_NEW_WORDS], unknown[MAX_NEW_WORDS:]
    notices = []
    if too_short:
        notices.append(f"{too_short} sentence{'s' * (too_short > 1)} shorter than {MIN_TOKENS} words left out.")
    if cut:
        notices.append(f"{cut} sentence{'s' * (cut > 1)} longer than {MAX_SENTENCE_TOKENS} words cut into pieces.")
    if rare:
        notices.append(f"{len(rare):,} rare words beyond the {MAX_NEW_WORDS:,} most frequent new ones read as [UNK].")
    return OwnText(sentences, new_words, len(text), too_short, cut, len(rare), notices)


# --- a pasted text as a corpus to read (not to train on) ------------------------------------------------

MAX_SENTENCE_CHARS = 400  # a piece of 64 words is rarely longer; a longer one holds run-on "words" (a URL, a hash, a base64 run)
BINARY_SHARE = 0.05  # more than this share of control characters (or undecodable bytes) is not text…
BINARY_MIN = 16  # … when there are more than a few of them (a stray one in a short sentence is removed)
TAG = re.compile(r"<(script|style)\b[^>]*>.*?</\1\s*>|<!--.*?-->|</?[A-Za-z][\w:-]*(\s[^<>]*)?/?>", re.IGNORECASE | re.DOTALL)
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffd]")  # control characters (tab and line breaks kept), U+FFFD


@dataclass(frozen=True)
class PastedCorpus:
    """Sentences cut from a pasted or uploaded text, to read a model's heads on."""

    sentences: list[str]
    n_chars: int
    notices: list[str] = field(default_factory=list)


def corpus_sentences(text: str | bytes, name: str = "the text") -> PastedCorpus:
    """A pasted (str) or uploaded (bytes, UTF-8) text cut into sentences as the Train page cuts it
    (`training_sentences`: at line breaks and after . ! ?, at least MIN_TOKENS words, long ones in
    pieces of MAX_SENTENCE_TOKENS words).

    Before cutting: markup tags (and whole <script>/<style> blocks, HTML comments) are removed and HTML
    entities read as characters; stray control characters are removed. A text with more than
    BINARY_SHARE (and BINARY_MIN) of them is refused as binary. After cutting, a piece longer than MAX_SENTENCE_CHARS
    characters is cut at a space. Raises `InputError` with a message for the person who gave the text.
    """
    import html

    from model.trace import InputError

    try:
        if isinstance(text, bytes):
            text = decode_upload(text, name)
        if not isinstance(text, str):
            raise TextError(f"{name} is not text.")
        if len(text) > MAX_CHARS:  # before any work on it
            raise TextError(f"The text has {len(text):,} characters; the cap is {MAX_CHARS:,} (about 16,000 words): use a part of it.")
        notices = []
        controls = len(CONTROL.findall(clean_text(text)))
        if controls > max(BINARY_SHARE * len(text), BINARY_MIN):
            raise TextError(
                f"{name[:1].upper()}{name[1:]} looks like binary data, not text ({controls:,} of {len(text):,} characters are control characters "
                "or cannot be read): paste plain text, or upload a .txt file saved as UTF-8."
            )
        if controls:
            text = CONTROL.sub(" ", clean_text(text))
            notices.append(f"{controls:,} control character{'s' * (controls > 1)} removed.")
        tags = len(TAG.findall(text))
        if tags:
            text = html.unescape(TAG.sub(" ", text))
            notices.append(f"{tags:,} markup tag{'s' * (tags > 1)} (<…>) removed: the words between them are read as plain text.")
        own = training_sentences(text)
    except TextError as error:
        raise InputError(str(error)) from None
    sentences, n_long = [], 0
    for sentence in own.sentences:
        if len(sentence) > MAX_SENTENCE_CHARS:
            n_long += 1
            cut = sentence.rfind(" ", 0, MAX_SENTENCE_CHARS + 1)
            sentence = sentence[: cut if cut > 0 else MAX_SENTENCE_CHARS]
        sentences.append(sentence)
    notices += [n for n in own.notices if "[UNK]" not in n]  # the toy's vocabulary is not at stake here
    if n_long:
        notices.append(f"{n_long:,} sentence{'s' * (n_long > 1)} longer than {MAX_SENTENCE_CHARS} characters cut.")
    return PastedCorpus(sentences, len(text), notices)
