"""Generation reads a growing key/value cache, and every number of a step is the one a full pass computes.

For the toy, a random GPT-2, a random Llama (grouped-query: 4 query heads, 2 key/value heads) and SmolLM2:
each step's query row equals the same row of one pass over the final text, the cache equals that pass's
keys and values, and each step's logits equal that pass's logits at the step's position. Greedy runs equal
transformers' own `generate`.
"""

import plotly.graph_objects as go
import pytest
import torch

from model import InputError, load_model
from model.generate import CannotGenerate, cut

PROMPT = "The cat sat on the"
N_NEW = 5


@pytest.fixture(autouse=True)
def one_thread():
    """One torch thread, as the app's process runs (ui.view.torch_threads): on the shared 2-core machine a second
    thread mostly spins, and SmolLM2's steps took ten times longer with it. Restored after each test."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def models(tiny_model_dir):
    """name → loaded model (SmolLM2 comes from its session fixture, loaded once)."""
    loaded = {"toy": load_model("toy")}
    loaded["gpt2"] = load_model(str(tiny_model_dir("gpt2-lm")))
    loaded["llama"] = load_model(str(tiny_model_dir("llama")))
    return loaded


def get_model(name, models, request):
    return request.getfixturevalue("smollm2") if name == "smollm2" else models[name]


def full_pass(model, run):
    """One pass over the prompt and every token read (the last token written is never read)."""
    return model.trace_ids(run.ids[:-1])


@pytest.mark.parametrize("name", ["toy", "gpt2", "llama", "smollm2"])
def test_each_step_equals_the_full_pass(name, models, request):
    model = get_model(name, models, request)
    run = model.generate("The capital of France is" if name == "smollm2" else PROMPT, N_NEW)
    assert len(run.steps) == len(run.token_ids) == N_NEW and run.stopped == "length"
    trace = full_pass(model, run)
    n_prompt = len(run.prompt_ids)
    for step in run.steps:
        assert step.position == n_prompt - 1 + step.index
        assert step.read_id == run.ids[step.position] and step.chosen == run.ids[step.position + 1]
        assert step.pattern.shape == (model.n_layers, model.n_heads, step.position + 1)
        full_rows = torch.stack([trace.pattern(layer, 0)[:, step.position, : step.n_keys] for layer in range(model.n_layers)])
        torch.testing.assert_close(step.pattern, full_rows, atol=1e-5, rtol=0)
        # q, k and v are not bounded like weights (SmolLM2's reach ±10): equal to float32 rounding, relative 1e-5
        torch.testing.assert_close(step.query, trace.q[:, 0, :, step.position], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(step.logits, trace.logits[0, step.position], atol=1e-4, rtol=0)
        torch.testing.assert_close(step.pattern.sum(-1), torch.ones(model.n_layers, model.n_heads), atol=1e-5, rtol=0)
        # the cache this step read: one key/value head per group of query heads, repeated as the full trace stores it
        group = run.group_size
        keys, values = step.keys.repeat_interleave(group, dim=1), step.values.repeat_interleave(group, dim=1)
        torch.testing.assert_close(keys, trace.k[:, 0, :, : step.n_keys], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(values, trace.v[:, 0, :, : step.n_keys], atol=1e-5, rtol=1e-5)
        assert step.cache_bytes == run.cache_bytes_for(step.n_keys) == 2 * model.n_layers * run.n_kv_heads * model.d_head * 4 * step.n_keys


@pytest.mark.parametrize("name", ["toy", "llama"])
def test_the_cache_is_the_models_own_and_grows_by_one_row(name, models, request):
    """Each row was written once, by the step that read its token: the model's own cache at the end holds the
    same rows, so no step changed an earlier one."""
    model = get_model(name, models, request)
    run = model.generate(PROMPT, 4)
    own = run.cache
    own_keys = own.keys if name == "toy" else [layer.keys for layer in own.layers]
    own_values = own.values if name == "toy" else [layer.values for layer in own.layers]
    for layer in range(model.n_layers):
        assert torch.equal(run.keys[layer], own_keys[layer][0]) and torch.equal(run.values[layer], own_values[layer][0])
    sizes = [step.n_keys for step in run.steps]
    assert sizes == list(range(len(run.prompt_ids), len(run.prompt_ids) + 4))
    assert [b.cache_bytes - a.cache_bytes for a, b in zip(run.steps, run.steps[1:])] == [run.cache_bytes_for(1)] * 3
    real = sum(t.numel() * t.element_size() for t in (*own_keys, *own_values))
    assert real == run.steps[-1].cache_bytes


@pytest.mark.parametrize("name", ["gpt2", "llama", "smollm2"])
def test_greedy_equals_transformers_generate(name, models, request):
    model = get_model(name, models, request)
    n_new = 6
    run = model.generate("The capital of France is", n_new)
    input_ids = torch.tensor([run.prompt_ids])
    with torch.no_grad():
        expected = model.module.generate(input_ids, attention_mask=torch.ones_like(input_ids), max_new_tokens=n_new, do_sample=False)
    assert run.token_ids == expected[0, len(run.prompt_ids) :].tolist()
    assert run.text == model.tokenizer.decode(run.token_ids)
    assert all(step.rank == 1 for step in run.steps)


def test_smollm2_writes_paris_with_grouped_heads(smollm2):
    run = smollm2.generate("The capital of France is", 2)
    assert run.text.startswith(" Paris")
    assert run.steps[0].candidates[0].text == " Paris" and run.steps[0].candidates[0].rank == 1
    assert 0.7 < run.steps[0].probability < 0.85  # the model's own 77%, as the Next token page shows
    assert (run.n_heads, run.n_kv_heads, run.d_head, run.group_size) == (9, 3, 64, 3)
    assert run.kv_groups() == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    n_keys = run.steps[-1].n_keys
    assert run.steps[-1].cache_bytes == 2 * 30 * 3 * 64 * 4 * n_keys
    assert run.cache_bytes_for(n_keys, n_kv_heads=9) == 3 * run.steps[-1].cache_bytes


def test_a_seeded_sample_is_reproducible_and_differs_across_seeds():
    model = load_model("toy-random")  # random weights: a flat distribution, so two seeds part quickly
    first = model.generate(PROMPT, 8, temperature=1.0, seed=1)
    again = model.generate(PROMPT, 8, temperature=1.0, seed=1)
    other = model.generate(PROMPT, 8, temperature=1.0, seed=2)
    assert first.token_ids == again.token_ids
    assert first.token_ids != other.token_ids
    assert any(step.rank > 1 for step in first.steps)  # it drew, rather than took the most likely
    for step in first.steps:
        torch.testing.assert_close(step.probabilities, torch.softmax(step.logits, -1), atol=1e-6, rtol=0)


def test_temperature_scales_the_distribution():
    model = load_model("toy")
    step = model.generate(PROMPT, 1, temperature=2.0).steps[0]
    assert step.temperature == 2.0
    torch.testing.assert_close(step.distribution, torch.softmax(step.logits / 2.0, -1))
    greedy = model.generate(PROMPT, 1).steps[0]
    assert greedy.temperature == 1.0 and greedy.chosen == int(greedy.logits.argmax()) and greedy.n_kept == model.tokenizer.d_vocab


def test_top_k_and_top_p_cut():
    distribution = torch.tensor([0.05, 0.4, 0.1, 0.3, 0.15])
    assert cut(distribution, top_k=2).tolist() == [False, True, False, True, False]
    assert cut(distribution, top_p=0.7).tolist() == [False, True, False, True, False]  # 0.4 + 0.3 reaches 0.7
    assert cut(distribution, top_p=0.71).tolist() == [False, True, False, True, True]  # one more is needed
    assert cut(distribution, top_p=0.01).tolist() == [False, True, False, False, False]  # the most likely is always kept
    # top-p reads what top-k left, renormalised: 0.4 / 0.7 < 0.6 ≤ (0.4 + 0.3) / 0.7
    assert cut(distribution, top_k=2, top_p=0.6).tolist() == [False, True, False, True, False]
    assert cut(distribution, top_k=3, top_p=0.5).tolist() == [False, True, False, True, False]

    model = load_model("toy-random")
    run = model.generate(PROMPT, 6, temperature=1.0, top_k=5, top_p=0.9, seed=0)
    for step in run.steps:
        kept = step.kept.nonzero().flatten()
        assert 1 <= len(kept) <= 5 and bool(step.kept[step.chosen])
        top5 = torch.topk(step.distribution, 5).indices
        assert set(kept.tolist()) <= set(top5.tolist())
        torch.testing.assert_close(step.probabilities.sum(), torch.tensor(1.0))
        assert step.kept_probability == pytest.approx(float(step.distribution[step.kept].sum()))
        assert float(step.probabilities[~step.kept].abs().sum()) == 0.0
        assert [c.kept for c in step.candidates] == [bool(step.kept[c.id]) for c in step.candidates]
        assert [c.rank for c in step.candidates] == list(range(1, len(step.candidates) + 1))


@pytest.mark.parametrize("name", ["toy-bidirectional", "toy-bidirectional-random", "bert-mlm"])
def test_a_bidirectional_model_cannot_generate(name, tiny_model_dir):
    model = load_model(str(tiny_model_dir(name)) if name == "bert-mlm" else name)
    with pytest.raises(CannotGenerate, match="bidirectional") as error:
        model.generate(PROMPT, 3)
    assert isinstance(error.value, InputError)


def test_a_model_without_next_token_head_cannot_generate(tiny_model_dir):
    with pytest.raises(CannotGenerate, match="no next-token head"):
        load_model(str(tiny_model_dir("gpt2"))).generate(PROMPT, 3)


def test_the_run_stops_at_the_context():
    model = load_model("toy-random", n_ctx=8)
    run = model.generate(PROMPT, 10)
    assert run.stopped == "context" and len(run.prompt_ids) + len(run.token_ids) == 8
    with pytest.raises(InputError, match="no room"):
        model.generate("one two three four five six seven eight nine", 3)
    with pytest.raises(ValueError, match="top_p"):
        model.generate(PROMPT, 3, temperature=1.0, top_p=1.5)


def test_the_page_shows_one_step():
    import numpy as np

    from viz.content.generate import generate_page, run_table

    model = load_model("toy")
    run = model.generate(PROMPT, 6, temperature=1.0, top_k=3, seed=0)
    step, layer = 2, 1
    content = generate_page(run, step, layer=layer, k=5)
    figs = {name: go.Figure(fig) for name, fig in content.figures.items()}  # read through plotly's validated objects
    s = run.steps[step]
    assert set(figs) == {"generate-tokens", "generate-candidates", "generate-query-row", "generate-cache", "generate-cache-keys"}

    tokens = figs["generate-tokens"].layout.meta["table"]["rows"]
    assert [row[2] for row in tokens] == run.ids[: s.position + 2]
    assert [row[3] for row in tokens].count("new") == 1 and tokens[-1][3] == "new" and tokens[len(run.prompt_ids)][3] == "written"

    bars = figs["generate-candidates"].data
    by_name = {bar.name: bar for bar in bars}
    kept, removed, written = by_name["kept by the cut"], by_name["removed by the cut"], by_name["written"]
    assert len(kept.x) + len(written.x) == s.n_kept == 3 and len(removed.x) == 2  # top-k 3 of the 5 shown
    assert sorted([*kept.y, *removed.y, *written.y]) == list(range(5))
    assert list(written.y) == [s.rank - 1] and written.x[0] == pytest.approx(s.probability) and written.text[0] == f"{s.probability:.1%}"
    assert figs["generate-candidates"].layout.yaxis.ticktext[s.rank - 1].startswith("<b>")  # the written token's name in bold
    assert written.marker.line.width == 3 and kept.marker.line.width == 0

    grid = figs["generate-query-row"].data[0]
    np.testing.assert_allclose(np.asarray(grid.z), s.pattern[layer].numpy())
    assert len(grid.x) == s.n_keys == s.position + 1

    growth = figs["generate-cache"].data
    so_far = next(t for t in growth if t.name == "the cache (keys and values)")
    assert list(so_far.x) == [t.n_keys for t in run.steps[: step + 1]]
    np.testing.assert_allclose(np.asarray(so_far.y) * 1024, [t.cache_bytes for t in run.steps[: step + 1]])
    keys = figs["generate-cache-keys"].data[0]
    np.testing.assert_allclose(np.asarray(keys.z)[:, : model.d_head], s.keys[layer, 0].numpy())

    assert set(content.tables) == {"candidates"}  # the run's table is the same at every step: `run_table`, once
    table = run_table(run)
    assert list(table.columns) == ["step", "position", "token", "id", "probability", "drawn_probability", "rank", "kept", "written"]
    written_rows = table[table.written]
    assert written_rows.id.tolist() == run.token_ids and written_rows.position.tolist() == [t.position + 1 for t in run.steps]
    assert written_rows["rank"].tolist() == [t.rank for t in run.steps]
    assert (table.groupby("step").drawn_probability.sum() <= 1 + 1e-6).all()
    for t in run.steps:
        rows = table[table.step == t.index]
        np.testing.assert_allclose(rows.drawn_probability, [float(t.probabilities[i]) for i in rows.id], atol=1e-6)
    assert content.values["cache_bytes"] == s.cache_bytes and content.values["token_id"] == s.chosen
    step_notice = next(n.text for n in content.notices if n.id == "generate-step")
    assert f"{s.probability:.1%}" in step_notice and f"rank {s.rank}" in step_notice


def test_the_page_states_the_grouped_heads_saving(models):
    from viz.content.generate import generate_page

    run = models["llama"].generate(PROMPT, 3)  # 4 query heads share 2 key/value heads
    content = generate_page(run, 2, layer=0)
    figs = {name: go.Figure(fig) for name, fig in content.figures.items()}
    gqa = next(n.text for n in content.notices if n.id == "generate-gqa")
    n_keys = run.steps[2].n_keys
    assert f"{run.cache_bytes_for(n_keys):,} bytes" in gqa and f"{2 * run.cache_bytes_for(n_keys):,}" in gqa and "(×2)" in gqa
    assert "heads 0–1 read K/V head 0; heads 2–3 read K/V head 1" in gqa
    dashed = next(t for t in figs["generate-cache"].data if "one K/V head per query head" in t.name)
    assert [round(y * 1024) for y in dashed.y] == [2 * t.cache_bytes for t in run.steps]
    assert figs["generate-query-row"].layout.yaxis.ticktext[3] == "head 3 · K/V 1"


@pytest.mark.parametrize("name", ["toy", "gpt2"])
def test_trace_ids_is_the_trace_of_the_same_tokens(name, models):
    model = models[name]
    trace = model.trace(PROMPT)
    by_ids = model.trace_ids(trace.input_ids[0].tolist())
    assert [t.id for t in by_ids.tokens[0]] == trace.input_ids[0].tolist() and by_ids.texts == [model.tokenizer.decode(trace.input_ids[0].tolist())]
    assert torch.equal(by_ids.q, trace.q) and torch.equal(by_ids.logits, trace.logits)


def test_the_run_stops_after_the_end_token_as_transformers_does(models):
    model = models["gpt2"]
    first = model.generate(PROMPT, 6)
    config = model.module.generation_config
    own_end = config.eos_token_id
    config.eos_token_id = first.token_ids[2]
    try:
        run = model.generate(PROMPT, 6)
        input_ids = torch.tensor([run.prompt_ids])
        with torch.no_grad():
            expected = model.module.generate(input_ids, attention_mask=torch.ones_like(input_ids), max_new_tokens=6, do_sample=False)
    finally:
        config.eos_token_id = own_end
    stop = first.token_ids.index(first.token_ids[2]) + 1  # the first time that token is written
    assert run.stopped == "end" and run.token_ids == first.token_ids[:stop] == expected[0, len(run.prompt_ids) :].tolist()
    assert run.keys.shape[2] == run.steps[-1].n_keys == len(run.prompt_ids) + stop - 1


def test_the_pages_figures_are_sent_as_plotly_would_validate_them(models):
    """The figures are plain plotly JSON (viz.plain): passed through plotly's validators again, nothing sent changes."""
    import json

    import plotly.io as pio

    from viz import apply_print_theme
    from viz.content import generate_page

    from viz.plain import plotly_dict

    for name, kwargs in (("toy", dict(temperature=1.0, top_k=4, seed=3)), ("llama", {})):
        run = models[name].generate(PROMPT, 4, **kwargs)
        for step in (0, 3):
            for key, fig in generate_page(run, step, layer=1).figures.items():
                assert json.loads(pio.to_json(plotly_dict(fig), validate=False)) == json.loads(go.Figure(fig).to_json()), (name, step, key)
                apply_print_theme(fig)  # the print export takes it too
