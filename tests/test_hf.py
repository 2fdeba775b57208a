"""Hugging Face models traced through hooks: the trace's pattern is the model's own attention."""

import pytest
import torch

from model import load_model

BATCH = [
    "The man sat on the river bank.",
    "A woman is fishing",
    "Write a poem about money from the bank, and the cat on the mat was unbelievable.",
]


@pytest.mark.parametrize("kind", ["distilbert", "bert", "gpt2"])
def test_pattern_equals_output_attentions_with_padding(tiny_model_dir, kind):
    model = load_model(str(tiny_model_dir(kind)))
    trace = model.trace(BATCH)
    assert not trace.key_valid.all(), "the batch must contain padding"
    with torch.no_grad():
        output = model.module(input_ids=trace.input_ids, attention_mask=trace.key_valid.long(), output_attentions=True)
    assert len(output.attentions) == trace.n_layers == 2
    for layer, expected in enumerate(output.attentions):
        stages = trace.stages(layer)
        assert stages.pattern.shape == expected.shape
        torch.testing.assert_close(stages.pattern, expected, atol=1e-6, rtol=0)
    assert trace.what_if is None
    assert trace.model_mask.causal == (kind == "gpt2")


@pytest.mark.parametrize("kind", ["distilbert", "gpt2"])
def test_hidden_states_and_static_embeddings(tiny_model_dir, kind):
    model = load_model(str(tiny_model_dir(kind)))
    trace = model.trace(BATCH[:2])
    assert trace.hidden_states.shape[:3] == (3, 2, trace.input_ids.shape[1])
    embedding = model.module.get_input_embeddings().weight
    torch.testing.assert_close(trace.static_embeddings[0, 0], embedding[trace.input_ids[0, 0]])
    assert trace.positional.shape == (trace.input_ids.shape[1], model.d_model)
    assert trace.positional_kind == "learned"


def test_what_if_recomputes_from_captured_scores(tiny_model_dir):
    model = load_model(str(tiny_model_dir("bert")))
    own = model.trace(BATCH)
    what_if = model.trace(BATCH, mask="causal+padding", scale=False, temperature=2.0)
    torch.testing.assert_close(what_if.hidden_states, own.hidden_states)  # the model ran as trained
    assert "What-if" in what_if.what_if and "causal" in what_if.what_if and "later layers" in what_if.what_if
    stages = what_if.stages(1)
    torch.testing.assert_close(stages.scores_raw, own.stages(1).scores_raw)
    torch.testing.assert_close(stages.scores_scaled, stages.scores_raw)
    assert stages.pattern[0, 0, 0, 1:].abs().sum() == 0  # causal: the first query sees only itself


def test_special_tokens_marked_and_batch_padding_masked(tiny_model_dir):
    model = load_model(str(tiny_model_dir("distilbert")))
    trace = model.trace(BATCH)
    first = trace.tokens[0]
    assert first[0].text == "[CLS]" and first[0].kind == "special"
    assert first[-1].text == "[SEP]" and first[-1].kind == "special"
    n = len(first)
    assert trace.stages(0).pattern[0, :, :, n:].abs().sum() == 0


def test_long_input_truncated_to_model_context(tiny_model_dir):
    model = load_model(str(tiny_model_dir("distilbert")))
    trace = model.trace("the cat sat on the mat . " * 30)
    assert trace.input_ids.shape[1] == 64
    assert trace.tokens[0][-1].text == "[SEP]"
    assert any("64" in notice for notice in trace.notices)
