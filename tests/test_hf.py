"""Hugging Face models run their attention through `attention_stages` (registered with transformers).

Every reference here is the same checkpoint loaded again with transformers' own eager attention.
"""

import dataclasses

import pytest
import torch
from transformers import AutoModel, AutoModelForCausalLM, AutoModelForMaskedLM

from conftest import runs_our_attention
from model import load_model
from model.loading import ModelLoadError

BATCH = [
    "The man sat on the river bank.",
    "A woman is fishing",
    "Write a poem about money from the bank, and the cat on the mat was unbelievable.",
]
FAMILIES = ["distilbert", "bert", "gpt2", "gpt2-lm", "llama", "qwen2", "mistral", "gemma"]
REFERENCE_CLASS = {"gpt2-lm": AutoModelForCausalLM, "bert-mlm": AutoModelForMaskedLM}
REFERENCE_CLASS.update({kind: AutoModelForCausalLM for kind in ("llama", "qwen2", "mistral", "gemma")})


def eager(folder, kind):
    """The same checkpoint with transformers' own attention."""
    model_class = REFERENCE_CLASS.get(kind, AutoModel)
    return model_class.from_pretrained(str(folder), attn_implementation="eager").eval()


def eager_run(reference, trace, attention_mask=None, **kwargs):
    mask = trace.key_valid.long() if attention_mask is None else attention_mask
    with torch.no_grad():
        return reference(input_ids=trace.input_ids, attention_mask=mask, output_attentions=True, output_hidden_states=True, **kwargs)


@pytest.fixture(scope="module")
def loaded(tiny_model_dir):
    """`loaded(kind)` → (our model, the eager reference), each built once per module."""
    cache = {}

    def get(kind):
        if kind not in cache:
            folder = tiny_model_dir(kind)
            cache[kind] = (load_model(str(folder)), eager(folder, kind))
        return cache[kind]

    return get


@pytest.mark.parametrize("kind", FAMILIES)
def test_pattern_equals_eager_output_attentions_with_padding(loaded, kind):
    model, reference = loaded(kind)
    trace = model.trace(BATCH)
    assert not trace.key_valid.all(), "the batch must contain padding"
    expected = eager_run(reference, trace)
    assert len(expected.attentions) == trace.n_layers == 2
    for layer, attentions in enumerate(expected.attentions):
        pattern = trace.stages(layer).pattern
        assert pattern.shape == attentions.shape
        real = trace.key_valid[:, None, :, None]  # rows of padding queries are not compared
        torch.testing.assert_close(pattern * real, attentions * real, atol=1e-6, rtol=0)
    # the residual stream after the last block: the reference's last entry is the final norm of it
    n = trace.n_layers
    if kind in ("bert", "distilbert"):
        torch.testing.assert_close(trace.hidden_states[n], expected.hidden_states[n], atol=1e-5, rtol=0)
    torch.testing.assert_close(trace.hidden_states[1], expected.hidden_states[1], atol=1e-5, rtol=0)
    if model.lm_head:
        torch.testing.assert_close(trace.logits, expected.logits, atol=1e-4, rtol=0)
    assert trace.what_ifs == []
    assert trace.mask.causal == (kind not in ("bert", "distilbert"))


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
def test_grouped_query_attention_one_pattern_per_query_head(loaded, kind):
    model, _ = loaded(kind)
    trace = model.trace(BATCH[:2])
    assert (trace.n_heads, trace.n_kv_heads, model.n_kv_heads) == (4, 2, 2)
    assert [trace.kv_head(h) for h in range(4)] == [0, 0, 1, 1] == [model.kv_head(h) for h in range(4)]
    assert torch.equal(trace.k[:, :, 0], trace.k[:, :, 1]) and torch.equal(trace.v[:, :, 2], trace.v[:, :, 3])
    assert not torch.equal(trace.k[:, :, 1], trace.k[:, :, 2])
    assert not torch.allclose(trace.q[:, :, 0], trace.q[:, :, 1])  # each query head has its own pattern
    assert trace.positional_kind == "rotary" and trace.positional.abs().sum() == 0


@pytest.mark.parametrize("kind", ["distilbert", "gpt2"])
def test_hidden_states_and_static_embeddings(loaded, kind):
    model, _ = loaded(kind)
    trace = model.trace(BATCH[:2])
    assert trace.hidden_states.shape[:3] == (3, 2, trace.input_ids.shape[1])
    embedding = model.module.get_input_embeddings().weight
    torch.testing.assert_close(trace.static_embeddings[0, 0], embedding[trace.input_ids[0, 0]])
    assert trace.positional.shape == (trace.input_ids.shape[1], model.d_model)
    assert trace.positional_kind == "learned"


@pytest.mark.parametrize("kind", ["bert", "distilbert", "gpt2", "llama", "gemma"])
def test_input_recipe_reproduces_first_hidden_state(loaded, kind):
    model, _ = loaded(kind)
    trace = model.trace(BATCH)
    recipe = model.input_recipe(trace.input_ids, trace.key_valid)
    torch.testing.assert_close(recipe.result, trace.hidden_states[0], atol=1e-5, rtol=0)
    expected_terms = {
        "bert": ["token", "position", "token type"],
        "distilbert": ["token", "position"],
        "gpt2": ["token", "position"],
        "llama": ["token"],
        "gemma": ["token", "× √d_model"],
    }[kind]
    assert list(recipe.terms) == expected_terms
    assert ("LayerNorm" in recipe.formula) == (kind in ("bert", "distilbert"))
    if kind == "bert":  # the BERT first layer does not read token + position
        plain = recipe.terms["token"] + recipe.terms["position"]
        assert (plain - trace.hidden_states[0]).abs().max() > 0.1


def test_what_ifs_run_through_the_whole_model(loaded):
    model, _ = loaded("bert")
    own = model.trace(BATCH)
    what_if = model.trace(BATCH, mask="causal+padding", scale=False, temperature=2.0)
    torch.testing.assert_close(what_if.hidden_states[0], own.hidden_states[0])  # the input is the same
    assert (what_if.hidden_states[2] - own.hidden_states[2]).abs().max() > 1e-3  # later layers changed
    assert what_if.what_ifs == ["mask causal+padding (model: padding)", "scaling off", "temperature 2"]
    stages = what_if.stages(1)
    torch.testing.assert_close(stages.scores_scaled, stages.scores_raw)
    assert stages.pattern[0, 0, 0, 1:].abs().sum() == 0  # causal: the first query sees only itself


def _zeroed_columns(reference, path, layer, head, d_head, mean_z=None):
    """Set one head's columns of the output projection to zero (and move its mean output into the bias)."""
    block = reference.base_model
    for part in path.split("."):
        block = getattr(block, part)
    projection = block[layer]
    for part in {"bert": "attention.output.dense", "gpt2": "attn.c_proj", "llama": "self_attn.o_proj"}[reference.config.model_type].split("."):
        projection = getattr(projection, part)
    cols = slice(head * d_head, (head + 1) * d_head)
    with torch.no_grad():
        if reference.config.model_type == "gpt2":  # Conv1D: weight [in, out]
            weight = projection.weight[cols, :]
            if mean_z is not None:
                projection.bias += mean_z @ weight
            weight.zero_()
        else:
            weight = projection.weight[:, cols]
            if mean_z is not None:
                if projection.bias is None:
                    projection.bias = torch.nn.Parameter(torch.zeros(projection.weight.shape[0]))
                projection.bias += weight @ mean_z
            weight.zero_()


@pytest.mark.parametrize("kind,path", [("bert", "encoder.layer"), ("gpt2-lm", "h"), ("llama", "layers")])
def test_ablating_a_head_equals_zeroed_output_projection_columns(tiny_model_dir, kind, path):
    folder = tiny_model_dir(kind)
    model = load_model(str(folder))
    trace = model.trace(BATCH, ablate=[(0, 1)])
    reference = eager(folder, kind)
    _zeroed_columns(reference, path, 0, 1, model.d_head)
    expected = eager_run(reference, trace)
    torch.testing.assert_close(
        trace.stages(1).pattern * trace.key_valid[:, None, :, None], expected.attentions[1] * trace.key_valid[:, None, :, None], atol=1e-6, rtol=0
    )
    assert trace.what_ifs == ["head 0.1 ablated (zero)"]
    if model.lm_head:
        torch.testing.assert_close(trace.logits, expected.logits, atol=1e-4, rtol=0)


def test_mean_ablation_equals_mean_output_in_the_bias(tiny_model_dir):
    folder = tiny_model_dir("bert")
    model = load_model(str(folder))
    own = model.trace(BATCH)
    trace = model.trace(BATCH, ablate=[(1, 2)], ablate_with="mean")
    mean_z = own.stages(1).z[:, 2][own.key_valid].mean(dim=0)  # layer 1 reads the unchanged layer 0
    reference = eager(folder, "bert")
    _zeroed_columns(reference, "encoder.layer", 1, 2, model.d_head, mean_z=mean_z)
    expected = eager_run(reference, trace)
    torch.testing.assert_close(trace.hidden_states[2], expected.hidden_states[2], atol=1e-5, rtol=0)
    assert (trace.hidden_states[2] - own.hidden_states[2]).abs().max() > 1e-3


def test_ablate_names_the_heads_that_exist(loaded):
    model, _ = loaded("bert")
    with pytest.raises(ValueError, match=r"head 2\.0 does not exist: layers 0…1, heads 0…2"):
        model.trace(BATCH, ablate=[(2, 0)])
    with pytest.raises(ValueError, match="zero or mean|zero, mean"):
        model.trace(BATCH, ablate=[(0, 0)], ablate_with="half")


def test_hide_equals_attention_mask_zero(loaded):
    model, reference = loaded("gpt2-lm")
    trace = model.trace(BATCH, hide=(2,))
    attention_mask = trace.key_valid.long().clone()
    attention_mask[:, 2] = 0
    expected = eager_run(reference, trace, attention_mask=attention_mask)
    torch.testing.assert_close(trace.logits[:, 3:], expected.logits[:, 3:], atol=1e-4, rtol=0)
    assert trace.what_ifs == ["hidden: position 2 in every sentence"]


def test_prediction_at_every_position(loaded):
    model, reference = loaded("gpt2-lm")
    trace = model.trace(BATCH[:2])
    expected = eager_run(reference, trace).logits.softmax(dim=-1)
    for position in (0, 3, len(trace.tokens[1]) - 1):
        prediction = trace.prediction(1, position, model.tokenizer.id_to_text, k=3)
        top = expected[1, position].topk(3)
        assert prediction["ids"] == top.indices.tolist()
        assert prediction["probabilities"] == pytest.approx(top.values.tolist(), abs=1e-5)
    last = trace.next_token(1, model.tokenizer.id_to_text, k=3)
    assert last["position"] == len(trace.tokens[1]) - 1
    with pytest.raises(IndexError):
        trace.prediction(1, len(trace.tokens[1]), model.tokenizer.id_to_text)


def test_masked_word_head(loaded):
    model, reference = loaded("bert-mlm")
    assert model.lm_head == "masked"
    trace = model.trace(BATCH[:1])
    assert trace.last_logits is None and trace.logits.shape == (1, len(trace.tokens[0]), model.tokenizer.d_vocab)
    torch.testing.assert_close(trace.logits, eager_run(reference, trace).logits, atol=1e-4, rtol=0)


def test_trace_is_frozen(loaded):
    model, _ = loaded("bert")
    trace = model.trace(BATCH[:1])
    with pytest.raises(dataclasses.FrozenInstanceError):
        trace.scale = False


def test_unsupported_architecture_names_the_families(tmp_path):
    from transformers import AutoTokenizer, OPTConfig, OPTModel  # noqa: F401

    OPTModel(
        OPTConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, ffn_dim=32, num_attention_heads=2, max_position_embeddings=32, word_embed_proj_dim=16)
    ).save_pretrained(tmp_path)
    with pytest.raises(ModelLoadError) as error:
        load_model(str(tmp_path))
    message = str(error.value)
    assert "'opt'" in message
    for family in ("BERT", "DistilBERT", "GPT-2", "Llama", "Qwen2", "Mistral", "Gemma"):
        assert family in message


def test_model_over_the_budget_is_refused_before_loading(tiny_model_dir, monkeypatch):
    import model.loading as loading

    folder = tiny_model_dir("llama")
    n_params = sum(p.numel() for p in AutoModel.from_pretrained(str(folder)).parameters())
    monkeypatch.setenv("ATTENTION_VIZ_MAX_MODEL_BYTES", "1000000")

    def not_loaded(*args, **kwargs):
        raise AssertionError("the weights were loaded")

    monkeypatch.setattr(loading, "_from_pretrained", not_loaded)
    with pytest.raises(ModelLoadError) as error:
        load_model(str(folder))
    message = str(error.value)
    assert f"{n_params * 4 / 1e6:.1f} MB as float32" in message and "budget of 1.0 MB" in message
    assert f"{n_params / 1e6:,.1f} million parameters" in message
    assert loading.parameter_count(AutoModel.from_pretrained(str(folder)).config) == n_params


def test_special_tokens_marked_and_batch_padding_masked(loaded):
    model, _ = loaded("distilbert")
    trace = model.trace(BATCH)
    first = trace.tokens[0]
    assert first[0].text == "[CLS]" and first[0].kind == "special"
    assert first[-1].text == "[SEP]" and first[-1].kind == "special"
    n = len(first)
    assert trace.stages(0).pattern[0, :, :, n:].abs().sum() == 0


def test_long_input_truncated_to_model_context(loaded):
    model, _ = loaded("distilbert")
    trace = model.trace("the cat sat on the mat . " * 30)
    assert trace.input_ids.shape[1] == 64
    assert trace.tokens[0][-1].text == "[SEP]"
    assert any("64" in notice for notice in trace.notices)


def test_engine_benchmark_times_the_trace_against_the_eager_forward(loaded):
    """`python -m bench.engine`'s measurement on a tiny Llama: both passes run on the same tokens, the
    eager implementation is restored afterwards, and the report gives the ratio against the target."""
    from bench import engine

    model, _ = loaded("llama")
    row = engine.forward_vs_trace(model, repeats=2, n_tokens=24)
    assert row["tokens"] == 24 and row["layers"] == model.n_layers and row["heads"] == model.n_heads
    assert row["eager_forward_s"] > 0 and row["trace_s"] > 0
    assert row["ratio"] == pytest.approx(row["trace_s"] / row["eager_forward_s"], rel=0.01)
    assert runs_our_attention(model)  # the bench's eager runs gave the model its own attention back
    report = engine.format_report(dict(forward_vs_trace=[row], peak_memory=[]))
    verdict = "meets" if row["ratio"] <= engine.TARGET_RATIO else "misses"
    assert f"{row['ratio']:.2f}" in report and f"{verdict} the target ≤1.3×" in report


@pytest.mark.parametrize("kind", ["bert", "gpt2", "llama"])
def test_output_projection_is_the_matrix_the_layer_multiplies_by(loaded, kind):
    """W_O and b_O as shown on the page: z (heads side by side) · W_O + b_O is the layer's own output step,
    whether the model keeps its weight as nn.Linear ([out, in]) or as GPT-2's Conv1D ([in, out])."""
    model = loaded(kind)[0]
    trace = model.trace(BATCH)
    z = torch.randn(2, model.n_heads, 5, trace.d_head)
    weight, bias = model.output_projection(0)
    assert weight.shape == (model.n_heads * trace.d_head, weight.shape[1])
    by_hand = z.transpose(1, 2).reshape(2, 5, -1) @ weight + bias
    torch.testing.assert_close(by_hand, model.attention_output(0, z), atol=1e-5, rtol=1e-5)
