"""Every CSV of every page is a tidy table of what its figure shows: named columns (listed in the export
manifest), one row per number, and the numbers are the trace's own (built from the page's arrays,
`PageContent.figure_tables`, not read back out of the figures)."""

import io
import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from model import load_model, sinusoidal_positional_encoding
from model.generate import CannotGenerate, check_can_generate
from viz.content import attention_page, embeddings_page, generate_page, next_token_page, positional_page, run_model, tokens_page, why_page
from viz.content.figure_tables import columns_for
from viz.content.heads import ablation_section, heads_page, ranking_section
from viz.content.scaling import scaling_lab_page
from viz.content.settings import Settings
from viz.export import figure_to_csv, write_folder
from viz.stages import row_entropy

TEXT = "the bank of the river was steep .\nshe went to the bank for money ."
MODELS = ("toy", "bert-mlm", "gpt2-lm", "llama")
FROM_FIGURE = ("tokens-", "generate-tokens")  # the figures that carry their table in their own meta, built from the token rows


@pytest.fixture(scope="module", params=MODELS)
def model(request, tiny_model_dir):
    return load_model("toy") if request.param == "toy" else load_model(str(tiny_model_dir(request.param)))


def settings_for(model) -> Settings:
    return Settings(
        text=TEXT, model=model.name, heads=(0, 1), sinks=True, target="bank", references="river,money", senses="river, money", pe_positions=24, pe_d_model=16
    )


def every_page(model, settings: Settings) -> tuple[dict, object]:
    """Each page's content for `settings`, as the app builds it (the word-level Attention page too)."""
    trace = run_model(model, settings.sentences, settings.display)
    pages = {
        "tokens": tokens_page(settings, trace, model),  # with the other tokenizers' figures
        "positional": positional_page(settings, trace, model),
        "attention": attention_page(settings, trace, model=model),
        "attention-words": attention_page(replace(settings, words=True), trace, model=model),
        "embeddings": embeddings_page(settings, trace, model.name, model.tokenizer),
        "next-token": next_token_page(settings, trace, model),
        "heads": heads_page(settings, trace, model)
        .merge(ablation_section(settings, trace, model, [(0, 0)], word=1))
        .merge(ranking_section(settings, trace, model)),
        "scaling-lab": scaling_lab_page(16, trace.d_head),
        "why": why_page(settings, trace, model),
    }
    try:
        check_can_generate(model)
    except CannotGenerate:  # a model without a next-token head has no Generate page
        return pages, trace
    pages["generate"] = generate_page(model.generate("the bank of the river", 3), 1)
    return pages, trace


@pytest.fixture(scope="module")
def pages(model):
    return every_page(model, settings_for(model))


def table(content, figure_id: str) -> pd.DataFrame:
    """The figure's table as its CSV is read back by pandas (empty cells: missing)."""
    text = figure_to_csv(content.figures[figure_id], content.figure_tables[figure_id]())
    return pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""])


def test_every_csv_of_every_page_reads_with_pandas_and_has_the_manifest_s_columns(pages, tmp_path):
    contents, _ = pages
    seen = set()
    for page, content in contents.items():
        if not content.figures:
            continue
        assert set(content.figure_tables) <= set(content.figures), page
        out = tmp_path / page
        manifest = write_folder(content.figures, out, formats=("csv",), tables=content.figure_tables)
        listed = {entry["id"]: entry for entry in manifest["figures"]}
        assert listed.keys() == content.figures.keys()
        assert json.loads((out / "manifest.json").read_text())["figures"] == manifest["figures"]
        for figure_id, entry in listed.items():
            (name,) = entry["files"]
            read = pd.read_csv(out / name, keep_default_na=False, na_values=[""])
            expected = columns_for(figure_id, words=page == "attention-words")
            assert expected is not None, f"{page}: {figure_id} has no named columns"
            assert list(read.columns) == entry["columns"] == expected, f"{page}: {figure_id}"
            assert len(read) > 0, f"{page}: {figure_id} is empty"
            if not figure_id.startswith(FROM_FIGURE):
                assert figure_id in content.figure_tables, f"{page}: {figure_id} is read back out of its figure"
            seen.add(figure_id.split("-L")[0])
    assert {"head-view", "value-step", "output-step", "row-stats", "pe-curves", "pe-similarity", "stages", "tokens-compare-bpe", "head-shares"} <= seen


def test_the_head_view_s_weights_are_the_pattern(pages):
    contents, trace = pages
    stages = trace.stages(0)
    read = table(contents["attention"], "head-view-L0")
    assert list(read.columns) == ["layer", "head", "query_position", "query_token", "key_position", "key_token", "weight"]
    assert sorted(read["head"].unique()) == [0, 1]
    n = trace.input_ids.shape[1]
    assert len(read) == 2 * n * n
    for head in (0, 1):
        rows = read[read["head"] == head]
        weights = rows.pivot(index="query_position", columns="key_position", values="weight").to_numpy()
        pattern = stages.pattern[0, head].numpy()  # the first sentence, shown
        masked = ~stages.mask[0, head].numpy()
        assert np.isnan(weights[masked]).all()
        np.testing.assert_allclose(weights[~masked], pattern[~masked], rtol=1e-6, atol=1e-7)
    labels = [t.text for t in trace.tokens[0]]
    first = read[(read["head"] == 0) & (read["key_position"] < len(labels))]
    assert list(first.drop_duplicates("key_position")["key_token"]) == labels


def test_the_word_level_head_view_has_one_row_per_word_pair(pages):
    contents, _ = pages
    content = contents["attention-words"]
    read = content.figure_tables["head-view-L0"]()
    words = content.values["head_view"].labels
    assert len(read) == 2 * len(words) ** 2
    assert list(read.drop_duplicates("key_word_position")["key_word"]) == words
    sums = read.groupby(["head", "query_word_position"])["weight"].sum()
    assert np.allclose(sums[sums > 0], 1, atol=1e-5)  # each word's weights over the key words still sum to 1


def test_value_and_output_steps_are_the_model_s_z_and_output(pages, model):
    contents, trace = pages
    stages = trace.stages(0)
    value_step = table(contents["attention"], "value-step-L0-H1")
    z = value_step[value_step["matrix"] == "z"]
    assert z["key_position"].isna().all() and z["key_token"].isna().all()
    got = z.pivot(index="query_position", columns="d_head", values="value").to_numpy()
    np.testing.assert_allclose(got, stages.z[0, 1].numpy(), rtol=1e-6)
    v = value_step[value_step["matrix"] == "V"]
    np.testing.assert_allclose(v.pivot(index="key_position", columns="d_head", values="value").to_numpy(), trace.v[0, 0, 1].numpy(), rtol=1e-6)
    assert len(value_step) == trace.input_ids.shape[1] ** 2 + 2 * trace.input_ids.shape[1] * trace.d_head

    output_step = table(contents["attention"], "output-step-L0")
    out = output_step[output_step["matrix"] == "output"]
    expected = model.attention_output(0, stages.z[0:1])[0].numpy()
    np.testing.assert_allclose(out.pivot(index="query_position", columns="d_model", values="value").to_numpy(), expected, rtol=1e-5, atol=1e-6)
    w_o = output_step[output_step["matrix"] == "W_O"]
    one = w_o[(w_o["head"] == 1) & (w_o["d_head"] == 2)].sort_values("d_model")["value"].to_numpy()
    np.testing.assert_allclose(one, model.output_projection(0)[0][trace.d_head + 2].numpy(), rtol=1e-6)


def test_row_statistics_and_stages_are_the_trace_s(pages):
    contents, trace = pages
    stats = table(contents["attention"], "row-stats-L0-H0")
    assert list(stats.columns) == ["query_position", "query_token", "scaling", "entropy_bits", "largest_weight"]
    scaled = trace.pattern(0, 0, scale=True)[0].numpy()
    rows = stats[stats["scaling"] == "scaled"]
    np.testing.assert_allclose(rows["entropy_bits"].to_numpy(), row_entropy(scaled), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rows["largest_weight"].to_numpy(), scaled.max(axis=-1), rtol=1e-6)
    assert set(stats["scaling"]) == {"scaled", "unscaled"}

    stages = table(contents["attention"], "stages-L0-H0")
    assert list(stages["stage"].unique()) == ["scores_raw", "scores_scaled", "scores_masked", "pattern"]
    raw = stages[stages["stage"] == "scores_raw"].pivot(index="query_position", columns="key_position", values="value").to_numpy()
    np.testing.assert_allclose(raw, trace.stages(0).scores_raw[0, 0].numpy(), rtol=1e-6)


def test_positional_tables_are_the_encoding(pages):
    contents, _ = pages
    content = contents["positional"]
    pe = sinusoidal_positional_encoding(24, 16, 10000.0).numpy()
    matrix = table(content, "pe-matrix")
    np.testing.assert_allclose(matrix.pivot(index="position", columns="dimension", values="value").to_numpy(), pe, rtol=1e-6, atol=1e-7)
    curves = table(content, "pe-curves")
    assert list(curves.columns) == ["dimension", "position", "value"]
    np.testing.assert_allclose(curves[curves["dimension"] == 1]["value"].to_numpy(), pe[:, 1], rtol=1e-6, atol=1e-7)
    similarity = table(content, "pe-similarity")
    assert list(similarity.columns) == ["position_a", "position_b", "cosine"] and len(similarity) == 24 * 24
    unit = pe / np.linalg.norm(pe, axis=1, keepdims=True)
    np.testing.assert_allclose(similarity.pivot(index="position_a", columns="position_b", values="cosine").to_numpy(), unit @ unit.T, atol=1e-5)


def test_the_next_token_table_is_the_prediction(pages):
    contents, _ = pages
    content = contents["next-token"]
    if "next-token" not in content.figures:
        assert content.notices, "a model without a language-model head says so"
        return
    read = table(content, "next-token")
    assert list(read["rank"]) == list(range(1, len(read) + 1))
    assert (np.diff(read["probability"].to_numpy()) <= 1e-7).all()
    np.testing.assert_allclose(read["probability"].to_numpy(), content.tables["predictions"]["probability"].to_numpy(), atol=5e-5)


def test_a_long_input_s_stages_table_holds_the_blocks_drawn_with_their_first_positions():
    model = load_model("toy")
    text = " ".join(["the cat sat on the mat ."] * 30)
    settings = Settings(text=text, model="toy")
    trace = run_model(model, settings.sentences, settings.display)
    n = trace.input_ids.shape[1]
    assert n > 128
    content = attention_page(replace(settings, focus=60), trace, overview=False)
    focus = content.figure_tables["focus-L0-H0"]()
    window = focus[focus["stage"] == "pattern"].pivot(index="query_position", columns="key_position", values="value")
    pattern = trace.stages(0).pattern[0, 0].numpy()
    assert window.index[0] <= 60 <= window.index[-1] and len(window) == 40
    np.testing.assert_allclose(np.nan_to_num(window.to_numpy()), pattern[np.ix_(window.index, window.columns)], atol=1e-7)
    blocks = focus[focus["stage"] == "pattern (weights of blocks of tokens)"]
    assert blocks["query_position"].nunique() == 64 and blocks["query_token"].str.endswith("…").all()
    read = content.figure_tables["stages-L0-H0"]()
    pattern = read[read["stage"] == "pattern"]
    starts = sorted(pattern["query_position"].unique())
    assert len(starts) == 128 and starts[0] == 0 and starts[-1] < n
    sums = pattern.groupby("query_position")["value"].sum()
    np.testing.assert_allclose(sums.to_numpy(), 1, atol=1e-4)  # a block's weights over the key blocks still sum to 1


def test_the_overview_and_the_renormalised_pattern_are_the_weights_drawn(pages):
    contents, trace = pages
    content = contents["attention"]
    overview = table(content, "overview-all-heads")
    assert len(overview) == trace.n_layers * trace.n_heads * trace.input_ids.shape[1] ** 2
    for layer, head in ((0, 1), (trace.n_layers - 1, 0)):
        cells = overview[(overview["layer"] == layer) & (overview["head"] == head)]
        weights = cells.pivot(index="query_position", columns="key_position", values="value").to_numpy()
        pattern = trace.pattern(layer, 0).numpy()[head]
        masked = ~trace.attend()[0, 0].numpy()
        assert np.isnan(weights[masked]).all()
        np.testing.assert_allclose(weights[~masked], pattern[~masked], rtol=1e-6, atol=1e-7)

    renormalised = table(content, "renormalised-L0-H0")
    assert 0 not in set(renormalised["key_position"])  # the first token is a sink: hidden
    sums = renormalised.groupby("query_position")["value"].sum()
    assert np.allclose(sums[sums > 0], 1, atol=1e-5)


def test_the_why_maps_sum_to_the_raw_score_and_the_generate_row_is_the_step_s_pattern(pages, model):
    contents, trace = pages
    content = contents["why"]
    if "part-maps" in content.figures:
        maps = table(content, "part-maps")
        total = maps[maps["panel"] == "q·k (the sum)"].pivot(index="query_position", columns="key_position", values="score")
        parts = maps[maps["panel"] != "q·k (the sum)"].groupby(["query_position", "key_position"])["score"].sum(min_count=1).unstack()
        np.testing.assert_allclose(parts.to_numpy(), total.to_numpy(), rtol=1e-4, atol=1e-3)
        raw = trace.stages(0).scores_raw[0, 0].numpy()[: len(total), : len(total)]
        allowed = ~np.isnan(total.to_numpy())
        np.testing.assert_allclose(total.to_numpy()[allowed], raw[allowed], rtol=1e-3, atol=1e-3)
    if "generate" in contents:
        run = model.generate("the bank of the river", 3)
        row = table(contents["generate"], "generate-query-row")
        weights = row.pivot(index="head", columns="key_position", values="weight").to_numpy()
        np.testing.assert_allclose(weights, run.steps[1].pattern[0].numpy(), rtol=1e-6)
        assert set(row["query_position"]) == {run.steps[1].position}


def test_the_corpus_page_s_csvs_are_tidy_and_the_grid_is_the_summary_s_means(tmp_path):
    from model.corpus_heads import OFFSETS, classroom_sentences
    from model.heads import corpus_summary
    from viz.content.corpus import corpus_page

    model = load_model("toy-random", n_layers=2, n_heads=2, d_model=32, seed=5)
    summary = corpus_summary(model, classroom_sentences(8) + ["The =cmd cat sat."], top=6)
    content = corpus_page(summary, layer=1, head=0, compare=(0, 1), statistic="entropy")
    assert set(content.figure_tables) == set(content.figures)
    manifest = write_folder(content.figures, tmp_path, formats=("csv",), tables=content.figure_tables)
    for entry in manifest["figures"]:
        (name,) = entry["files"]
        read = pd.read_csv(tmp_path / name, keep_default_na=False, na_values=[""])
        assert list(read.columns) == entry["columns"] == columns_for(entry["id"]), entry["id"]
        assert len(read) > 0, entry["id"]
    grid = table(content, "grid-entropy")
    np.testing.assert_allclose(grid.pivot(index="layer", columns="head", values="mean").to_numpy(), summary.mean("entropy").numpy(), rtol=1e-6)
    offsets = table(content, "by-offset")
    assert list(offsets["offset"]) == list(OFFSETS)
    by_offset = summary.by_offset(1, 0)
    for offset, mean in by_offset.items():
        assert offsets.loc[offsets["offset"] == offset, "mean_weight"].item() == pytest.approx(mean, rel=1e-6)
    examples = table(content, "top-examples")
    assert list(examples["rank"]) == list(range(1, len(examples) + 1)) and set(examples[["layer", "head"]].itertuples(index=False)) == {(1, 0)}


def test_a_page_s_table_builders_are_counted_in_its_bytes(pages):
    """What a builder keeps (copies of one head's arrays) is part of the content a cache measures."""
    from ui.shared_cache import size_of

    contents, trace = pages
    content = contents["attention"]
    builder = content.figure_tables["value-step-L0-H0"]
    n = trace.input_ids.shape[1]
    kept = n * n + 2 * n * trace.d_head  # pattern, V and z of one head, float32
    assert size_of(builder) >= 4 * kept
    merged = content.merge(contents["positional"])
    assert merged.figure_tables["value-step-L0-H0"]().equals(builder())
