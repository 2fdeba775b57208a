"""One head across a corpus (model/corpus_heads.py): the batched pass equals a sentence-by-sentence loop."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model import InputError, load_model
from model.corpus_heads import BINS, BOUNDED, OFFSETS, STATISTICS, classroom_sentences, heldout_sentences
from model.heads import BADGES, corpus_summary, head_summary, model_patterns
from model.own_text import MAX_SENTENCE_CHARS, corpus_sentences

SENTENCES = classroom_sentences(10) + heldout_sentences()[:4] + ["Yes.", "The bank, the river and the money: which is it?"]


@pytest.fixture(scope="module")
def toy():
    return load_model("toy-random", n_layers=2, n_heads=4, d_model=32, seed=3)


@pytest.fixture(scope="module")
def models(toy, tiny_model_dir):
    """A causal toy, GPT-2 (learned positions, a causal Hugging Face model) and BERT ([CLS] … [SEP], bidirectional)."""
    return {"toy": toy, "gpt2": load_model(str(tiny_model_dir("gpt2-lm"))), "bert": load_model(str(tiny_model_dir("bert")))}


@pytest.fixture(scope="module")
def loops(models):
    """`loops(name)`: `one_by_one` of that model over SENTENCES, computed once."""
    done = {}

    def get(name):
        if name not in done:
            done[name] = one_by_one(models[name], SENTENCES)
        return done[name]

    return get


def one_by_one(model, sentences):
    """The statistics the summary should hold, computed sentence by sentence with the Heads page's own functions."""
    n_layers, n_heads = model.n_layers, model.n_heads
    values = {name: [] for name in STATISTICS}  # per sentence, [layer, head]
    rows, badges = [], torch.zeros(n_layers, n_heads, len(BADGES))
    offset_sum = torch.zeros(n_layers, n_heads, len(OFFSETS), dtype=torch.float64)
    offset_pairs = torch.zeros(len(OFFSETS))
    offset_means = [[] for _ in OFFSETS]  # per offset, the sentences' own means [layer, head]
    patterns_of = {}  # sentence index → its patterns [layer, head, query, key]
    for index, text in enumerate(sentences):
        trace = model.trace(text)
        n = len(trace.tokens[0])
        if n < 2:
            continue
        summary = head_summary(trace)
        for name in STATISTICS:
            values[name].append(getattr(summary, name).double())
        rows.append(n - 1)
        for layer in range(n_layers):
            for head in range(n_heads):
                badges[layer, head, BADGES.index(summary.badges[layer][head])] += 1
        patterns = model_patterns(trace).double()  # [layer, head, query, key]
        for i, offset in enumerate(OFFSETS):
            pairs = [(q, q + offset) for q in range(1, n) if 0 <= q + offset < n]
            if pairs:
                total = sum(patterns[:, :, q, k] for q, k in pairs)
                offset_sum[:, :, i] += total
                offset_pairs[i] += len(pairs)
                offset_means[i].append(total / len(pairs))
        patterns_of[index] = patterns
    return dict(values=values, rows=rows, badges=badges, offset_sum=offset_sum, offset_pairs=offset_pairs, offset_means=offset_means, patterns=patterns_of)


@pytest.mark.parametrize("name", ["toy", "gpt2", "bert"])
def test_statistics_equal_those_of_each_sentence(models, loops, name):
    model = models[name]
    summary = corpus_summary(model, SENTENCES, top=6)
    expected = loops(name)
    rows = torch.tensor(expected["rows"], dtype=torch.float64)
    n = len(rows)
    assert summary.n_sentences == n and summary.n_rows == int(rows.sum())
    for statistic in STATISTICS:
        per_sentence = torch.stack(expected["values"][statistic])  # [sentence, layer, head]
        token_mean = (per_sentence * rows[:, None, None]).sum(0) / rows.sum()
        torch.testing.assert_close(summary.mean(statistic), token_mean, atol=1e-6, rtol=1e-5)
        for layer, head in [(0, 0), (model.n_layers - 1, model.n_heads - 1)]:
            spread = summary.spread(statistic, layer, head)
            values = per_sentence[:, layer, head].numpy()
            assert spread.sentence_mean == pytest.approx(values.mean(), abs=1e-6)
            assert spread.std == pytest.approx(values.std(), abs=1e-5)
            if statistic in BOUNDED:
                for q, value in spread.quantiles.items():
                    assert abs(value - np.quantile(values, q, method="inverted_cdf")) <= 1 / BINS + 1e-9
    for layer in range(model.n_layers):
        for head in range(model.n_heads):
            shares = summary.badge_share(layer, head)
            assert list(shares) == list(BADGES)
            assert [shares[b] for b in BADGES] == pytest.approx((expected["badges"][layer, head] / n).tolist())
            by_offset = summary.by_offset(layer, head)
            spreads = summary.offset_spread(layer, head)
            for i, offset in enumerate(OFFSETS):
                if expected["offset_pairs"][i] == 0:
                    assert offset not in by_offset
                    continue
                assert by_offset[offset] == pytest.approx(float(expected["offset_sum"][layer, head, i] / expected["offset_pairs"][i]), abs=1e-6)
                means = torch.stack(expected["offset_means"][i])[:, layer, head].numpy()
                assert spreads[offset].sentences == len(means)
                assert spreads[offset].std == pytest.approx(means.std(), abs=1e-5)
            # the previous token is offset −1 and the token itself offset 0: the same numbers both ways
            assert by_offset[-1] == pytest.approx(float(summary.mean("previous")[layer, head]), abs=1e-6)
            assert by_offset[0] == pytest.approx(float(summary.mean("self")[layer, head]), abs=1e-6)


@pytest.mark.parametrize("name", ["toy", "gpt2", "bert"])
def test_top_examples_are_the_traces_own_weights(models, loops, name):
    model = models[name]
    top = 7
    summary = corpus_summary(model, SENTENCES, top=top)
    patterns = loops(name)["patterns"]
    for layer in range(model.n_layers):
        for head in range(model.n_heads):
            examples = summary.top_examples(layer, head)
            assert len(examples) == top
            weights = [w for *_, w in examples]
            assert weights == sorted(weights, reverse=True)
            for sentence, query, key, weight in examples:
                assert weight == pytest.approx(float(patterns[sentence][layer, head, query, key]), abs=1e-6)
                tokens = summary.sentence_tokens(sentence)
                assert 1 <= query < len(tokens) and 0 <= key < len(tokens)
            every = torch.cat([p[layer, head, 1:, :].flatten() for p in patterns.values()])  # query rows 1 … n−1, every key
            assert weights == pytest.approx(every.sort(descending=True).values[:top].tolist(), abs=1e-6)


def test_batches_do_not_change_the_numbers(toy):
    one_at_a_time = corpus_summary(toy, SENTENCES, top=5, budget_bytes=1)
    together = corpus_summary(toy, SENTENCES, top=5)
    for statistic in STATISTICS:
        torch.testing.assert_close(one_at_a_time.mean(statistic), together.mean(statistic), atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(one_at_a_time.badge_counts, together.badge_counts)
    torch.testing.assert_close(one_at_a_time.top_weight, together.top_weight, atol=1e-6, rtol=1e-5)


def previous_token_toy():
    """A toy whose head 0 of layer 0 attends to the token before the query, built from position alone.

    The token embeddings are zero and position p is the one-hot vector e_p, so the first layer reads
    LayerNorm(e_p) = a·e_p − b·1 (the same a, b at every position). W_K[0] keeps the first 32 dimensions
    and W_Q[0] = c·S shifts them one place down (e_p ↦ e_{p−1}): q_i · k_j = c·a²·[j = i − 1] + terms that
    do not depend on j, so with c = 4 the weight on key i − 1 is close to 1. The other heads stay random.
    """
    model = load_model("toy-random", n_layers=2, n_heads=2, d_model=64, seed=1)
    module = model.module
    d_head = model.d_head  # 32
    with torch.no_grad():
        module.embed.weight.zero_()
        module.pe = torch.eye(module.config.n_ctx, module.config.d_model)  # position p → e_p (p < 64)
        attention = module.blocks[0].attn
        shift = torch.zeros(model.d_model, d_head)
        shift[torch.arange(1, d_head + 1), torch.arange(d_head)] = 4.0  # row m = dimension p, column p − 1
        attention.W_Q[0] = shift
        attention.W_K[0] = torch.eye(model.d_model, d_head)
        attention.b_Q.zero_(), attention.b_K.zero_()
    return model


def test_a_previous_token_head_is_previous_token_on_every_sentence():
    model = previous_token_toy()
    sentences = [s for s in classroom_sentences(40) if len(model.tokenizer.encode(s)) < model.d_head]
    summary = corpus_summary(model, sentences, top=10)
    assert summary.n_sentences == len(sentences) >= 30
    assert summary.badge_share(0, 0)["previous-token"] == 1.0
    assert summary.by_offset(0, 0)[-1] > 0.99
    assert summary.spread("previous", 0, 0).quantiles[0.1] > 0.98
    assert all(key == query - 1 for _, query, key, _ in summary.top_examples(0, 0))
    assert summary.badge_share(0, 1)["previous-token"] < 1.0  # a random head of the same layer is not


def test_memory_does_not_grow_with_the_corpus(toy):
    small = corpus_summary(toy, classroom_sentences(8), top=4)
    large = corpus_summary(toy, classroom_sentences(80), top=4)
    assert large.n_sentences == 10 * small.n_sentences
    assert large.stored_bytes() == small.stored_bytes()
    assert {name: tuple(t.shape) for name, t in vars(large).items() if isinstance(t, torch.Tensor)} == {
        name: tuple(t.shape) for name, t in vars(small).items() if isinstance(t, torch.Tensor)
    }
    held = set(large.top_sentence.flatten().tolist())
    assert set(large.tokens) == held and len(held) <= toy.n_layers * toy.n_heads * 4


def test_indexes_progress_and_left_out_sentences(toy):
    sentences = ["", "The cat sat on the mat.", "   ", "cat", "Anna read a long book about volcanoes."]
    assert len(toy.tokenizer.encode("cat")) == 1
    calls = []
    summary = corpus_summary(toy, sentences, top=3, progress=lambda done, total: calls.append((done, total)))
    assert summary.skipped == [0, 2, 3] and summary.n_sentences == 2
    assert calls[0] == (0, 2) and calls[-1] == (2, 2) and [d for d, _ in calls] == sorted(d for d, _ in calls)
    assert {s for s, *_ in summary.top_examples(0, 0)} <= {1, 4}
    assert summary.tokens and all(summary.sentence_tokens(s)[-1].strip() == "." for s in summary.tokens)
    assert any("left out" in notice for notice in summary.notices)


def test_a_corpus_with_nothing_to_read_is_refused(toy):
    with pytest.raises(InputError, match="No sentence to read"):
        corpus_summary(toy, ["", "cat", "   "])


def test_a_long_sentence_is_cut(toy):
    long = " ".join(["the river bank"] * 60) + "."
    summary = corpus_summary(toy, [long, "The cat sat on the mat."], top=3, max_tokens=40)
    assert summary.n_sentences == 2 and summary.n_rows <= 39 + len(toy.tokenizer.encode("The cat sat on the mat.")) - 1
    assert any("cut" in notice for notice in summary.notices)


def test_trace_without_the_language_model_head(models):
    model = models["gpt2"]
    with_head, without = model.trace(SENTENCES[:3]), model.trace(SENTENCES[:3], logits=False)
    assert with_head.logits is not None and without.logits is None and without.last_logits is None
    for layer in range(model.n_layers):
        torch.testing.assert_close(without.pattern(layer), with_head.pattern(layer), atol=0, rtol=0)


@pytest.mark.parametrize(
    "text, sentences",
    [
        (
            "<html><head><style>p {color: red}</style><script>alert('a < b')</script></head>"
            "<body><p>The cat sat on the mat.</p><p>Dogs &amp; cats <b>play</b> together.</p></body></html>",
            ["The cat sat on the mat.", "Dogs & cats play together."],
        ),
        ("x" * 10_000 + "\nThe heron stood in the water.", ["The heron stood in the water."]),
        ("The cat \x00sat on\x07 the mat.", ["The cat sat on the mat."]),
    ],
)
def test_hostile_text_gives_clean_sentences(toy, text, sentences):
    pasted = corpus_sentences(text)
    assert pasted.sentences == sentences
    assert pasted.notices  # what was removed or left out is said
    summary = corpus_summary(toy, pasted.sentences, top=3)
    assert summary.n_sentences == len(sentences)


def test_hostile_text_long_lines_are_cut():
    pasted = corpus_sentences(("word " * 2_000).strip() + "\n" + "a" * 300 + " " + "b" * 300 + " c d.")
    assert all(len(s) <= MAX_SENTENCE_CHARS for s in pasted.sentences)
    assert len(pasted.sentences) == 2_000 // 64 + 1 + 1
    assert any("cut" in notice for notice in pasted.notices)


@pytest.mark.parametrize(
    "text, message",
    [
        ("\x00\x01\x02\x03 binary \x04\x05\x06\x07" * 50, "looks like binary data"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary file"),
        ("caf\xe9".encode("latin-1"), "not UTF-8"),
        ("a" * 10_000, "No usable sentence"),
        ("x" * 100_001, "100,001 characters"),
        ("   \n  ", "empty"),
    ],
)
def test_hostile_text_gives_a_clear_message(text, message):
    with pytest.raises(InputError, match=message):
        corpus_sentences(text)


def test_the_benchmark_prints_its_figures(capsys):
    from bench.corpus import main

    assert main(["--models", "toy", "--sentences", "24"]) == 0
    lines = capsys.readouterr().out.splitlines()
    row = next(line for line in lines if line.startswith("toy "))
    assert "met" in row and "MB" in row and "≤5s" in row
    assert "24 classroom sentences" in lines[0]
