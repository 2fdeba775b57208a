"""The toy transformer: deterministic, and its trace is exactly what it computed."""

import torch

from model import MaskSpec, load_model
from model.adapters import ToyModel
from model.loading import TOY_CHECKPOINT
from model.toy import ToyConfig, ToyTransformer

SENTENCES = ["The cat sat on the mat.", "A man is fishing on the river bank with a little boat."]


def recompose_logits(model: ToyModel, trace):
    """Rebuild every layer's output and the logits from the trace alone and the model's weights."""
    module = model.module
    x = trace.hidden_states[0]
    torch.testing.assert_close(x, trace.static_embeddings + trace.positional)
    for layer, block in enumerate(module.blocks):
        q, k, v = block.attn.qkv(block.ln1(x))
        torch.testing.assert_close(q, trace.q[layer])
        torch.testing.assert_close(k, trace.k[layer])
        torch.testing.assert_close(v, trace.v[layer])
        x = x + block.attn.combine(trace.stages(layer).z)
        x = x + block.mlp(block.ln2(x))
        torch.testing.assert_close(x, trace.hidden_states[layer + 1])
    return module.unembed(module.ln_final(x))


def test_forward_equals_recomposed_trace():
    model = load_model("toy-random", n_layers=3)
    trace = model.trace(SENTENCES, mask="causal+padding", temperature=1.7)
    with torch.no_grad():
        logits = model.module(trace.input_ids, trace.key_valid, trace.mask, trace.scale, trace.temperature)
        recomposed = recompose_logits(model, trace)
    torch.testing.assert_close(recomposed, logits)
    last = trace.key_valid.sum(1) - 1
    torch.testing.assert_close(trace.last_logits, logits[torch.arange(2), last])


def test_chosen_mask_scaling_and_temperature_change_later_layers():
    model = load_model("toy")
    base = model.trace(SENTENCES)
    for options in (dict(mask="padding"), dict(scale=False), dict(temperature=3.0), dict(hide=(1,))):
        other = model.trace(SENTENCES, **options)
        assert not torch.allclose(other.hidden_states[-1], base.hidden_states[-1])
        assert not torch.allclose(other.q[1], base.q[1])  # layer 1 sees a different layer-0 output
        torch.testing.assert_close(other.q[0], base.q[0])  # layer 0's input does not change


def test_padding_does_not_change_a_sentence():
    model = load_model("toy")
    alone = model.trace([SENTENCES[0]])
    batched = model.trace(SENTENCES)
    n = len(alone.tokens[0])
    assert batched.input_ids.shape[1] > n and not batched.key_valid[0, n:].any()
    torch.testing.assert_close(batched.hidden_states[:, 0, :n], alone.hidden_states[:, 0], atol=1e-5, rtol=1e-5)
    pattern = batched.stages(1).pattern[0]
    assert pattern[:, :, n:].abs().sum() == 0  # nobody attends to padding


def test_weights_are_seeded():
    a = ToyTransformer(ToyConfig(seed=3)).state_dict()
    b = ToyTransformer(ToyConfig(seed=3)).state_dict()
    c = ToyTransformer(ToyConfig(seed=4)).state_dict()
    assert all(torch.equal(a[name], b[name]) for name in a)
    assert not torch.equal(a["blocks.0.attn.W_Q"], c["blocks.0.attn.W_Q"])


def test_save_and_load_round_trip(tmp_path):
    module = ToyTransformer(ToyConfig(n_layers=1, pe_base=100.0, causal=False, tokenizer="char", seed=5))
    module.save(tmp_path)
    loaded = ToyTransformer.load(tmp_path)
    assert loaded.config == module.config
    ids = torch.tensor([[5, 6, 7]])
    torch.testing.assert_close(loaded(ids), module(ids))


def test_toy_options_shape_the_trace():
    model = load_model("toy-random", tokenizer="gpt2-bpe", n_heads=8, d_model=32, pe_base=10.0, causal=False)
    trace = model.trace("hello world")
    assert trace.q.shape == (2, 1, 8, 2, 4)  # [n_layers, batch, head, pos, d_head]
    assert trace.mask == MaskSpec(causal=False, padding=True)
    assert trace.stages(0).scale == 2.0  # √d_head = √4
    assert trace.last_logits.shape == (1, 50257)


def test_long_input_is_cut_to_context_with_notice():
    model = load_model("toy-random", n_ctx=16, tokenizer="word")
    trace = model.trace("the cat " * 20)
    assert trace.input_ids.shape[1] == 16
    assert any("16" in n and "40" in n for n in trace.notices)


def test_trace_does_not_hold_every_stage_of_every_head():
    model = load_model("toy-random", n_heads=8, d_model=64)
    trace = model.trace(" ".join(["cat"] * 512))
    held = sum(value.numel() * value.element_size() for value in vars(trace).values() if isinstance(value, torch.Tensor))
    one_layer_of_stages = 4 * 8 * 512 * 512 * 4
    assert held < one_layer_of_stages / 4


def test_toy_ablation_equals_zeroed_output_projection_rows():
    model = load_model("toy")
    text = ["the fisherman sat on the bank of the river", "she went to the bank"]
    trace = model.trace(text, ablate=[(1, 2)])
    own = model.trace(text)
    module = ToyTransformer.load(TOY_CHECKPOINT)
    d_head = module.config.d_head
    with torch.no_grad():
        module.blocks[1].attn.W_O[2 * d_head : 3 * d_head] = 0.0  # W_O is [head · d_head, d_model]
        logits = module(trace.input_ids, trace.key_valid)
    torch.testing.assert_close(trace.logits, logits, atol=1e-5, rtol=0)
    assert (trace.logits - own.logits).abs().max() > 1e-3
    assert trace.what_ifs == ["head 1.2 ablated (zero)"] and own.what_ifs == []


def test_toy_input_recipe_is_token_plus_sinusoid():
    model = load_model("toy")
    trace = model.trace("she went to the bank")
    recipe = model.input_recipe(trace.input_ids)
    assert list(recipe.terms) == ["token", "position"] and recipe.formula == "token + sinusoidal position"
    torch.testing.assert_close(recipe.result, trace.hidden_states[0])
