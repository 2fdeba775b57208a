"""The attention maths: every stage, masking by position, scaling by √d_head, temperature."""

import math

import pytest
import torch

from model import MaskSpec, attention_stages
from model.attention import attention_output, masked_softmax


def random_qkv(batch=2, heads=3, n_pos=5, d_head=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(batch, heads, n_pos, d_head, generator=g) for _ in range(3)]


def causal(n_pos):
    return MaskSpec(causal=True).build(torch.ones(1, n_pos, dtype=torch.bool))


def test_zero_scores_under_causal_mask_give_uniform_prefixes():
    n_pos = 5
    q = torch.zeros(1, 1, n_pos, 4)
    k = torch.zeros(1, 1, n_pos, 4)
    v = torch.randn(1, 1, n_pos, 4)
    stages = attention_stages(q, k, v, causal(n_pos))
    for i in range(n_pos):
        expected = torch.zeros(n_pos)
        expected[: i + 1] = 1 / (i + 1)
        torch.testing.assert_close(stages.pattern[0, 0, i], expected)
    assert torch.isinf(stages.scores_masked[0, 0]).sum() == n_pos * (n_pos - 1) / 2


def test_each_stage_is_kept_and_scaling_uses_d_head_not_d_model():
    q, k, v = random_qkv(d_head=16)  # d_model would be 3 × 16 = 48
    stages = attention_stages(q, k, v)
    torch.testing.assert_close(stages.scores_raw, q @ k.transpose(-1, -2))
    torch.testing.assert_close(stages.scores_scaled, stages.scores_raw / 4.0)
    assert stages.scale == 4.0
    torch.testing.assert_close(stages.scores_masked, stages.scores_scaled)
    torch.testing.assert_close(stages.pattern, torch.softmax(stages.scores_scaled, dim=-1))
    torch.testing.assert_close(stages.z, stages.pattern @ v)


def test_unscaled_keeps_raw_scores():
    q, k, v = random_qkv()
    stages = attention_stages(q, k, v, scale=False)
    torch.testing.assert_close(stages.scores_scaled, stages.scores_raw)
    assert stages.scale == 1.0


def test_matches_torch_reference_implementation():
    q, k, v = random_qkv(n_pos=7)
    mask = causal(7)
    stages = attention_stages(q, k, v, mask)
    reference = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(stages.z, reference, atol=1e-6, rtol=1e-5)


def test_temperature_divides_before_softmax():
    q, k, v = random_qkv()
    stages = attention_stages(q, k, v, temperature=2.5)
    torch.testing.assert_close(stages.pattern, torch.softmax(stages.scores_scaled / 2.5, dim=-1))
    cold = attention_stages(q, k, v, temperature=0.1).pattern.max(dim=-1).values
    warm = attention_stages(q, k, v, temperature=10.0).pattern.max(dim=-1).values
    assert bool((cold >= warm).all())


def test_masking_is_by_position_not_by_score_value():
    q = torch.tensor([[[[1.0, 0.0]]]])  # one query
    k = torch.tensor([[[[0.0, 1.0], [1.0, 0.0]]]])  # first key scores exactly 0
    v = torch.eye(2)[None, None]
    stages = attention_stages(q, k, v)
    assert stages.scores_raw[0, 0, 0, 0] == 0.0
    assert stages.pattern[0, 0, 0, 0] > 0.2  # a zero score is an ordinary score, not a masked one
    hidden = attention_stages(q, k, v, mask=torch.tensor([True, False]))
    assert hidden.pattern[0, 0, 0].tolist() == [1.0, 0.0]


def test_fully_masked_row_is_zero_not_nan():
    q, k, v = random_qkv(batch=1, heads=1, n_pos=3)
    mask = torch.ones(3, 3, dtype=torch.bool)
    mask[1] = False
    stages = attention_stages(q, k, v, mask)
    assert not torch.isnan(stages.pattern).any() and not torch.isnan(stages.z).any()
    assert stages.pattern[0, 0, 1].abs().sum() == 0
    assert stages.z[0, 0, 1].abs().sum() == 0
    assert stages.fully_masked_rows[0, 0].tolist() == [False, True, False]
    torch.testing.assert_close(stages.pattern[0, 0, [0, 2]].sum(-1), torch.ones(2))


@pytest.mark.parametrize("temperature", [0, -1, float("nan"), float("inf")])
def test_bad_temperature_is_refused(temperature):
    q, k, v = random_qkv()
    with pytest.raises(ValueError):
        attention_stages(q, k, v, temperature=temperature)


def test_mask_spec_builds_causal_padding_and_hidden_keys():
    key_valid = torch.tensor([[True, True, True, True], [True, True, False, False]])
    mask = MaskSpec(causal=True, padding=True, hidden_keys=(0,)).build(key_valid)
    assert mask.shape == (2, 1, 4, 4)
    assert mask[0, 0].tolist() == [
        [False, False, False, False],
        [False, True, False, False],
        [False, True, True, False],
        [False, True, True, True],
    ]
    assert mask[1, 0, 3].tolist() == [False, True, False, False]  # padding keys hidden from every query
    no_padding = MaskSpec.parse("none").build(key_valid)
    assert bool(no_padding.all())
    assert MaskSpec.parse("causal+padding", [2, 2]).hidden_keys == (2,)
    both = MaskSpec.parse("none", [3, (1, 0), [1, 0]])
    assert both.hidden_keys == (3,) and both.hidden_in == ((1, 0),) and both.hidden_for(1) == (0, 3) and both.hidden_for(0) == (3,)
    with pytest.raises(ValueError):
        MaskSpec.parse("diagonal")


def test_scaling_keeps_score_spread_independent_of_head_size():
    spreads = []
    for d_head in (4, 64, 1024):
        q, k, _ = random_qkv(batch=4, heads=4, n_pos=32, d_head=d_head, seed=d_head)
        spreads.append(attention_stages(q, k, k).scores_scaled.std().item())
    assert max(spreads) / min(spreads) < 1.3
    assert all(abs(s - 1) < 0.2 for s in spreads)
    assert math.isclose(attention_stages(*random_qkv(d_head=9)).scale, 3.0)


def test_worked_example_follows_the_cell_through_every_step():
    from model.attention import worked_example

    q, k, v = random_qkv(batch=1, heads=2, n_pos=4, d_head=9)
    stages = attention_stages(q, k, v, causal(4), temperature=2.0)
    step = worked_example(stages, 0, 1, 2, 1)
    assert math.isclose(step["raw"], float(q[0, 1, 2] @ k[0, 1, 1]), rel_tol=1e-5)
    assert math.isclose(step["scaled"], step["raw"] / 3.0, rel_tol=1e-6)
    assert step["allowed"] and math.isclose(step["logit"], step["scaled"] / 2.0, rel_tol=1e-6)
    assert math.isclose(step["exp"] / step["row_sum"], step["weight"], rel_tol=1e-5)
    masked = worked_example(stages, 0, 1, 1, 3)
    assert not masked["allowed"] and masked["weight"] == 0 and masked["exp"] == 0


def test_mask_spec_hides_a_key_in_one_sentence_only():
    key_valid = torch.tensor([[True, True, True, True], [True, True, True, False]])
    mask = MaskSpec(causal=False, padding=True, hidden_in=((0, 2), (1, 0), (5, 1), (0, 9))).build(key_valid)  # rows or keys beyond the batch: ignored
    plain = MaskSpec(causal=False, padding=True).build(key_valid)
    expected = plain.clone()
    expected[0, :, :, 2] = False  # sentence 0: key 2 hidden from each of its queries
    expected[1, :, :, 0] = False  # sentence 1: key 0
    assert torch.equal(mask, expected)
    assert mask[1, 0, 0].tolist() == [False, True, True, False] and mask[0, 0, 3].tolist() == [True, True, False, True]


@pytest.mark.parametrize("temperature", [0.3, 1.0, 4.0])
@pytest.mark.parametrize("scale", [True, False])
def test_forward_pass_attention_is_bit_for_bit_the_stages(temperature, scale):
    """What a model runs in each layer (`attention_output`) equals `attention_stages`' pattern and z exactly,
    with a causal + padding + hidden-key mask that leaves one query row with no key at all."""
    q, k, v = random_qkv(batch=2, heads=3, n_pos=6, d_head=8, seed=3)
    key_valid = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    mask = MaskSpec(causal=True, padding=True, hidden_keys=(0,)).build(key_valid)  # query 0 sees no key
    stages = attention_stages(q, k, v, mask, scale=scale, temperature=temperature)
    pattern, z = attention_output(q, k, v, mask, scale=scale, temperature=temperature)
    assert torch.equal(pattern, stages.pattern) and torch.equal(z, stages.z)
    assert not pattern.isnan().any() and pattern[:, :, 0].eq(0).all()  # the row with no key attends to nothing
    torch.testing.assert_close(pattern[1, :, 3, :4].sum(-1), torch.ones(3))
    assert pattern[1, :, :, 4:].eq(0).all() and pattern[..., 0].eq(0).all()  # padding and the hidden key


def test_masked_softmax_writes_forbidden_scores_as_exact_zeros():
    scores = torch.tensor([[[2.0, 0.0, -1.0], [0.0, 0.0, 0.0]]])
    allowed = torch.tensor([[[True, True, False], [False, False, False]]])
    pattern = masked_softmax(scores.clone(), allowed, temperature=0.5)
    expected = torch.softmax(torch.tensor([4.0, 0.0]), dim=-1)
    torch.testing.assert_close(pattern[0, 0, :2], expected)
    assert pattern[0, 0, 2] == 0 and pattern[0, 1].eq(0).all()  # a score of 0 is kept where allowed


def test_trace_pattern_is_the_stages_pattern_for_one_sentence_or_all():
    from model import load_model

    trace = load_model("toy").trace(["the cat sat on the mat", "a dog ran"], hide=(1,), temperature=0.7)
    for layer in range(trace.n_layers):
        stages = trace.stages(layer)
        assert torch.equal(trace.pattern(layer), stages.pattern)
        assert torch.equal(trace.pattern(layer, 1), stages.pattern[1])
        unscaled = trace.stages(layer, scale=False, mask=MaskSpec.parse("none"))
        assert torch.equal(trace.pattern(layer, 0, scale=False, mask=MaskSpec.parse("none")), unscaled.pattern[0])
    assert trace.pattern(0, 1)[:, :, 1].eq(0).all()  # the hidden key


def test_masked_softmax_in_place_equals_torch_softmax_on_long_rows():
    """The softmax is taken in place (no second pos² tensor); on rows as long as the models' it gives
    exactly torch's out-of-place result."""
    scores = torch.randn(2, 4, 512, 512, generator=torch.Generator().manual_seed(1)) * 5
    expected = torch.softmax(scores, dim=-1)
    assert torch.equal(masked_softmax(scores.clone(), torch.ones((), dtype=torch.bool)), expected)
