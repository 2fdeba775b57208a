"""Word-level attention: sum over a word's key pieces, mean over its query pieces."""

import torch

from model import load_model
from model.tokenizers import Token, get_tokenizer
from model.words import word_groups, word_pattern

TEXT = "The antidisestablishmentarianism of tokenization."


def test_groups_follow_the_tokenizers_words_and_keep_padding_apart():
    tokens = get_tokenizer("gpt2-bpe").encode(TEXT)
    groups = word_groups(tokens, TEXT, n_pos=len(tokens) + 2)
    assert groups.labels == ["The", "antidisestablishmentarianism", "of", "tokenization", ".", "[PAD]", "[PAD]"]
    assert groups.positions[1] == [1, 2, 3, 4, 5]
    assert groups.positions[3] == [7, 8]
    assert groups.positions[-2:] == [[len(tokens)], [len(tokens) + 1]]
    assert groups.word_of(8) == 3


def test_special_tokens_stay_alone_even_between_pieces():
    tokens = [
        Token("[CLS]", 2, "special", 0, 0, None),
        Token("with", 20, "normal", 0, 4, 0),
        Token("##draw", 21, "subword", 4, 8, 0),
        Token("[SEP]", 3, "special", 0, 0, None),
    ]
    groups = word_groups(tokens, "withdraw")
    assert groups.positions == [[0], [1, 2], [3]]
    assert groups.labels == ["[CLS]", "withdraw", "[SEP]"]


def test_merged_weights_by_hand():
    # words: {0}, {1, 2}; pattern rows sum to 1
    pattern = torch.tensor([[0.5, 0.25, 0.25], [0.1, 0.6, 0.3], [0.2, 0.2, 0.6]])
    tokens = [Token("a", 1, "normal", 0, 1, 0), Token("b", 2, "normal", 2, 3, 1), Token("c", 3, "subword", 3, 4, 1)]
    merged = word_pattern(pattern, word_groups(tokens, "a bc"))
    expected = torch.tensor([[0.5, 0.5], [(0.1 + 0.2) / 2, (0.9 + 0.8) / 2]])
    torch.testing.assert_close(merged, expected)


def test_identity_grouping_changes_nothing_and_rows_still_sum_to_one():
    model = load_model("toy-random", tokenizer="gpt2-bpe")
    trace = model.trace([TEXT], mask="causal")
    pattern = trace.stages(0).pattern[0]  # [head, query_pos, key_pos]
    single = word_groups([Token(t.text, t.id, t.kind, t.start, t.end, i) for i, t in enumerate(trace.tokens[0])], TEXT)
    torch.testing.assert_close(word_pattern(pattern, single), pattern)
    merged = word_pattern(pattern, word_groups(trace.tokens[0], TEXT))
    assert merged.shape == (trace.n_heads, 5, 5)
    torch.testing.assert_close(merged.sum(dim=-1), torch.ones(trace.n_heads, 5))
    # causal: the first word ("The") cannot look at any later word
    assert float(merged[:, 0, 1:].abs().max()) == 0.0
    # "tokenization" (pieces 7, 8) as a key of the query "." (piece 9) is the sum of its two pieces
    torch.testing.assert_close(merged[:, 4, 3], pattern[:, 9, 7] + pattern[:, 9, 8])
    # "tokenization" as a query is the mean of its pieces' rows, summed over "antidis…" (1…5)
    torch.testing.assert_close(merged[:, 3, 1], pattern[:, 7:9, 1:6].sum(dim=-1).mean(dim=-1))
