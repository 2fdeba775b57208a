"""The tidy table of each page figure: named columns, one row per number the figure shows.

Each function takes the arrays a page function drew its figure from and returns a `pandas.DataFrame`;
the page keeps a function that builds it under the figure's id (`PageContent.figure_tables`), called
only when a CSV is asked for. Positions count from 0, tokens are as the tokenizer wrote them (leading space kept), masked
cells of an attention matrix are rows with an empty value. An axis that does not apply to a row (the
key of a z row in the value step) is empty too.

`COLUMNS` names each table's columns by its figure id's prefix; `tests/test_figure_tables.py` reads every
CSV of every page with pandas and checks it against them and against the trace's numbers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from viz.head_view import TOKEN_COLUMNS, WORD_COLUMNS
from viz.overview import overview_table

ATTENTION = ["stage", "layer", "head", "query_position", "query_token", "key_position", "key_token", "value"]

# figure id prefix → the columns of its CSV (the longest prefix that matches an id applies)
COLUMNS: dict[str, list[str]] = {
    "tokens-": ["position", "token", "id", "kind"],
    "pe-matrix": ["position", "dimension", "value"],
    "pe-curves": ["dimension", "position", "value"],
    "pe-similarity": ["position_a", "position_b", "cosine"],
    "learned-position-similarity": ["position_a", "position_b", "cosine"],
    "pe-similarity-by-distance": ["encoding", "distance", "mean_cosine"],
    "learned-vs-sinusoidal-by-distance": ["encoding", "distance", "mean_cosine"],
    "rotary-angles": ["position", "dimension_pair", "angle_radians", "angle_wrapped"],
    "rotary-by-distance": ["distance", "relative_dot"],
    "input-composition": ["term", "position", "token", "dimension", "value"],
    "stages-": ATTENTION,
    "focus-": ATTENTION,
    "renormalised-": ATTENTION,
    "softmax-scaled-": ATTENTION,
    "softmax-unscaled-": ATTENTION,
    "overview-all-heads": ATTENTION,
    "row-stats-": ["query_position", "query_token", "scaling", "entropy_bits", "largest_weight"],
    "value-step-": ["matrix", "layer", "head", "query_position", "query_token", "key_position", "key_token", "d_head", "value"],
    "output-step-": ["matrix", "layer", "query_position", "query_token", "head", "d_head", "d_model", "value"],
    "head-view-": TOKEN_COLUMNS,
    "projection-": ["point", "group", "sentence", "sense", "state", "pc1", "pc2"],
    "senses-": ["state", "same_sense", "other_sense", "centre_distance_over_spread"],
    "trajectory-": ["occurrence", "step", "state", "pc1", "pc2"],
    "next-token": ["rank", "token", "id", "logit", "probability"],
    "last-token-attention": ["layer", "head", "query_position", "query_token", "key_position", "key_token", "weight"],
    "head-grid": ["layer", "head", "badge", "entropy", "entropy_normalised", "distance", "previous", "self", "first", "delimiter", "punctuation"],
    "value-norms-": ["layer", "head", "query_position", "query_token", "key_position", "key_token", "weight", "sent_norm"],
    "value-shares-": ["layer", "head", "key_position", "key_token", "weight_share", "sent_share"],
    "rollout": ["query_position", "query_token", "key_position", "key_token", "share"],
    "flow": ["key_position", "key_token", "rollout", "flow"],
    "diff-change": ["layer", "head", "mean_tv_distance"],
    "diff-L": ["layer", "head", "query_position", "query_token", "key_position", "key_token", "difference"],
    "head-effects": ["layer", "head", "effect"],
    "head-ranking": ["rank", "layer", "head", "effect"],
    "ablation-prediction": ["token", "probability_before", "probability_after"],
    "ablation-word": ["state", "cosine"],
    "dot-spread": ["d_k", "std_dot", "sqrt_d_k", "std_dot_over_sqrt_d_k", "marked"],
    "softmax-row-": ["key", "scaling", "weight"],
    "generate-candidates": ["rank", "token", "id", "probability", "kept", "written"],
    "generate-query-row": ["layer", "head", "query_position", "query_token", "key_position", "key_token", "weight"],
    "generate-cache": ["step", "n_tokens", "cache_bytes", "cache_bytes_one_per_head"],
    "generate-cache-keys": ["layer", "kv_head", "key_position", "key_token", "d_head", "value", "added_this_step"],
    "generate-tokens": ["position", "token", "id", "role"],
    "part-maps": ["panel", "query_position", "query_token", "key_position", "key_token", "score"],
    "pair-maps": ["panel", "query_position", "query_token", "key_position", "key_token", "score"],
    "score-parts": ["part", "score"],
    "pair-parts": ["pair", "theta", "contribution"],
    "score-by-distance": ["series", "distance", "score"],
    "head-shares": ["layer", "head", "position_share", "badge"],
    "top-examples": ["layer", "head", "rank", "sentence_index", "query_position", "query_token", "key_position", "key_token", "offset", "weight", "context"],
    "by-offset": ["head", "offset", "mean_weight", "p10", "p90"],
    "compare-offset": ["head", "offset", "mean_weight", "p10", "p90"],
    "shares": ["head", "key", "mean_share", "p10", "p90"],
    "compare-shares": ["head", "key", "mean_share", "p10", "p90"],
    "badge-shares": ["head", "badge", "share_of_sentences"],
    "compare-badges": ["head", "badge", "share_of_sentences"],
    "grid-badges": ["layer", "head", "badge", "share_of_sentences"],
    "grid-": ["layer", "head", "statistic", "mean"],
}


def columns_for(figure_id: str, words: bool = False) -> list[str] | None:
    """The columns of the CSV of the figure `figure_id` (None for an id no page makes)."""
    if words and figure_id.startswith("head-view-"):
        return WORD_COLUMNS
    matches = [prefix for prefix in COLUMNS if figure_id.startswith(prefix)]
    return COLUMNS[max(matches, key=len)] if matches else None


def _optional(values) -> pd.array:
    """Integers that may be missing (an axis a row has not), written as integers or empty."""
    return pd.array(values, dtype="Int64")


def grid(matrix: np.ndarray, rows: str, columns: str, value: str, *, masked: np.ndarray | None = None, **constant) -> pd.DataFrame:
    """`matrix` `[row, column]` as one row per cell: `rows` and `columns` hold the positions (from 0),
    `value` the number (empty where `masked`); `constant` columns go first."""
    values = np.asarray(matrix, dtype=np.float32)
    if masked is not None:
        values = np.where(masked, np.nan, values)
    n_rows, n_columns = values.shape
    table = {name: [item] * values.size for name, item in constant.items()}
    table[rows] = np.repeat(np.arange(n_rows), n_columns)
    table[columns] = np.tile(np.arange(n_columns), n_rows)
    table[value] = values.ravel()
    return pd.DataFrame(table)


TOKEN_AXES = ("query_position", "query_token", "key_position", "key_token")


def token_grid(matrix, query_tokens: list[str], key_tokens: list[str], value: str, *, masked=None, axes: tuple = TOKEN_AXES, **constant) -> pd.DataFrame:
    """An attention-like matrix `[query_pos, key_pos]` with each position's token beside it; `axes`
    names the query position, query token, key position and key token columns."""
    query_position, query_token, key_position, key_token = axes
    table = grid(matrix, query_position, key_position, value, masked=masked, **constant)
    table.insert(len(constant) + 1, query_token, [query_tokens[i] for i in table[query_position]])
    table.insert(len(constant) + 3, key_token, [key_tokens[i] for i in table[key_position]])
    return table


def attention_cells(matrix, stage: str, query_positions, query_tokens, key_positions, key_tokens, *, layer, head) -> pd.DataFrame:
    """An attention matrix `[query, key]` of one head as a tidy table (`ATTENTION`): a row per cell, NaN
    (a masked cell) empty. The positions and tokens name its rows and columns."""
    values = np.asarray(matrix, dtype=np.float32)[None, None]  # one layer of one head
    table = overview_table(values, query_positions, key_positions, query_tokens, key_tokens, stage=stage)
    return table.assign(layer=layer, head=head)


def pe_matrix_table(pe: np.ndarray) -> pd.DataFrame:
    """The sinusoidal encoding `[position, dimension]`."""
    return grid(pe, "position", "dimension", "value")


def pe_curves_table(pe: np.ndarray, dimensions: list[int]) -> pd.DataFrame:
    """The chosen dimensions of the encoding, one line each: `dimension, position, value`."""
    parts = [pd.DataFrame({"dimension": dim, "position": np.arange(pe.shape[0]), "value": np.asarray(pe[:, dim], dtype=np.float32)}) for dim in dimensions]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS["pe-curves"])


def similarity_table(similarity: np.ndarray) -> pd.DataFrame:
    """Cosine similarity of every pair of positions, at full resolution (the figure may show block means)."""
    return grid(similarity, "position_a", "position_b", "cosine")


def by_distance_table(lines: dict[str, tuple]) -> pd.DataFrame:
    """Mean cosine similarity by distance, one line per encoding: `{name: (distances, means)}`."""
    parts = [
        pd.DataFrame({"encoding": name, "distance": np.asarray(xs).astype(int), "mean_cosine": np.asarray(ys, dtype=np.float32)})
        for name, (xs, ys) in lines.items()
    ]
    return pd.concat(parts, ignore_index=True)


def rotary_angles_table(angles: np.ndarray) -> pd.DataFrame:
    """Rotation angle of each dimension pair at each position, in radians and wrapped to (−π, π] as drawn."""
    table = grid(angles, "position", "dimension_pair", "angle_radians")
    table["angle_wrapped"] = np.angle(np.exp(1j * table["angle_radians"].to_numpy(np.float64))).astype(np.float32)
    return table


def rotary_distance_table(distances, dots) -> pd.DataFrame:
    return pd.DataFrame({"distance": np.asarray(distances).astype(int), "relative_dot": np.asarray(dots, dtype=np.float32)})


def composition_table(panels: list[tuple[str, np.ndarray]], tokens: list[str]) -> pd.DataFrame:
    """Each term of the model's input recipe and their result, `[position, dimension]` each."""
    parts = []
    for name, values in panels:
        part = grid(values, "position", "dimension", "value", term=name)
        part.insert(2, "token", [tokens[i] for i in part["position"]])
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def row_stats_table(rows: dict[str, tuple[np.ndarray, np.ndarray]], tokens: list[str]) -> pd.DataFrame:
    """Entropy (bits) and largest weight of every query row, `{scaling: (entropy, largest)}`."""
    parts = [
        pd.DataFrame(
            {
                "query_position": np.arange(len(tokens)),
                "query_token": tokens,
                "scaling": scaling,
                "entropy_bits": np.asarray(entropy, dtype=np.float32),
                "largest_weight": np.asarray(largest, dtype=np.float32),
            }
        )
        for scaling, (entropy, largest) in rows.items()
    ]
    return pd.concat(parts, ignore_index=True)


def value_step_table(pattern, v, z, tokens: list[str], *, layer: int, head: int, masked=None) -> pd.DataFrame:
    """pattern `[query_pos, key_pos]` · V `[key_pos, d_head]` = z `[query_pos, d_head]` of one head, as
    one table: a row per number, `matrix` saying which, the axes a matrix has not left empty."""
    columns = COLUMNS["value-step-"]
    weights = grid(pattern, "query_position", "key_position", "value", masked=masked)
    values = grid(v, "key_position", "d_head", "value")
    outputs = grid(z, "query_position", "d_head", "value")
    parts = []
    for name, part in (("pattern", weights), ("V", values), ("z", outputs)):
        part = part.assign(matrix=name, layer=layer, head=head)
        for axis in ("query_position", "key_position", "d_head"):
            part[axis] = _optional(part[axis]) if axis in part else _optional([None] * len(part))
        part["query_token"] = [None if pd.isna(p) else tokens[p] for p in part["query_position"]]
        part["key_token"] = [None if pd.isna(p) else tokens[p] for p in part["key_position"]]
        parts.append(part[columns])
    return pd.concat(parts, ignore_index=True)


def output_step_table(z_heads, w_o, output, tokens: list[str], *, layer: int) -> pd.DataFrame:
    """[z_0 | z_1 | …] (`[head, query_pos, d_head]`) · W_O (`[head · d_head, d_model]`) = output
    (`[query_pos, d_model]`) of one layer, as one table: `matrix` says which, the other axes left empty."""
    columns = COLUMNS["output-step-"]
    z_heads = np.asarray(z_heads, dtype=np.float32)
    n_heads, n_query, d_head = z_heads.shape
    z = pd.concat([grid(z_heads[h], "query_position", "d_head", "value", head=h) for h in range(n_heads)], ignore_index=True).assign(matrix="z")
    weights = grid(w_o, "row", "d_model", "value").assign(matrix="W_O")
    weights["head"], weights["d_head"] = weights["row"] // d_head, weights["row"] % d_head
    out = grid(output, "query_position", "d_model", "value").assign(matrix="output")
    parts = []
    for part in (z, weights, out):
        for axis in ("query_position", "head", "d_head", "d_model"):
            part[axis] = _optional(part[axis]) if axis in part else _optional([None] * len(part))
        part["query_token"] = [None if pd.isna(p) else tokens[p] for p in part["query_position"]]
        part["layer"] = layer
        parts.append(part[columns])
    return pd.concat(parts, ignore_index=True)


def state_name(index) -> str:
    """A hidden state by what it is: 0 is the model input, k the output of layer k − 1; "static" stays."""
    if not isinstance(index, (int, np.integer)):
        return str(index)
    return "the model input" if index == 0 else f"after layer {index - 1}"


def projection_table(points: list[dict], centroids: dict) -> pd.DataFrame:
    """Every point of the PCA plane (static, contextual, reference; `group` says which; `state`: the hidden
    state a contextual or reference point is taken from), then the centre of each sense."""

    def state(point: dict):
        return None if point.get("layer") is None or point["group"] == "static" else state_name(point["layer"])

    rows = [dict(point=p["label"], group=p["group"], sentence=p.get("sentence"), sense=p.get("sense"), state=state(p), pc1=p["x"], pc2=p["y"]) for p in points]
    rows += [dict(point=sense, group="centroid", sentence=None, sense=sense, state=None, pc1=x, pc2=y) for sense, (x, y) in centroids.items()]
    table = pd.DataFrame(rows, columns=COLUMNS["projection-"])
    table["sentence"] = _optional([None if pd.isna(v) else int(v) + 1 for v in table["sentence"]])  # counted from 1, as on the page
    return table


def senses_table(by_layer: list) -> pd.DataFrame:
    """Per hidden state: mean cosine to the same sense and to the other, and the centre distance over the spread."""
    rows = [dict(state=state_name(b.layer), same_sense=b.same, other_sense=b.other, centre_distance_over_spread=b.ratio) for b in by_layer]
    return pd.DataFrame(rows, columns=COLUMNS["senses-"])


def trajectory_table(tracks: dict[str, list[tuple[float, float]]]) -> pd.DataFrame:
    """Each occurrence's point on the plane: the static embedding (step 0), the input (1), after each layer."""
    rows = [
        dict(occurrence=label, step=step, state="static" if step == 0 else state_name(step - 1), pc1=float(x), pc2=float(y))
        for label, points in tracks.items()
        for step, (x, y) in enumerate(points)
    ]
    return pd.DataFrame(rows, columns=COLUMNS["trajectory-"])


def prediction_table(prediction: dict) -> pd.DataFrame:
    """The k most likely tokens, from rank 1: token, id, logit, probability (after ÷ T)."""
    n = len(prediction["tokens"])
    return pd.DataFrame(
        {
            "rank": np.arange(1, n + 1),
            "token": list(prediction["tokens"]),
            "id": list(prediction["ids"]),
            "logit": np.asarray(prediction["logits"], dtype=np.float32),
            "probability": np.asarray(prediction["probabilities"], dtype=np.float32),
        }
    )


def query_row_table(rows: np.ndarray, n_heads: int, position: int, tokens: list[str]) -> pd.DataFrame:
    """The weights of one query over the keys, for every head of every layer (`rows` `[layer · head, key_pos]`)."""
    rows = np.asarray(rows, dtype=np.float32)
    table = grid(rows, "row", "key_position", "weight")
    table.insert(0, "layer", table["row"] // n_heads)
    table.insert(1, "head", table["row"] % n_heads)
    table["query_position"], table["query_token"] = position, tokens[position]
    table["key_token"] = [tokens[k] for k in table["key_position"]]
    return table[COLUMNS["last-token-attention"]]


def head_grid_table(summary_rows: list[dict]) -> pd.DataFrame:
    """Every head's badge and the numbers the badge rules read (`model.heads.HeadSummary.rows`)."""
    return pd.DataFrame(summary_rows, columns=COLUMNS["head-grid"])


def value_norms_table(pattern, norms, tokens: list[str], *, layer: int, head: int, masked=None) -> pd.DataFrame:
    """α_ij beside ‖α_ij·f(x_j)‖ for every query and key of one head."""
    table = token_grid(pattern, tokens, tokens, "weight", masked=masked, layer=layer, head=head)
    sent = np.asarray(norms, dtype=np.float32)
    table["sent_norm"] = (np.where(masked, np.nan, sent) if masked is not None else sent).ravel()
    return table


def key_shares_table(weight_share, norm_share, tokens: list[str], *, layer: int, head: int) -> pd.DataFrame:
    """Each key's share of all weight and of all that is sent (both sum to 1)."""
    return pd.DataFrame(
        {
            "layer": layer,
            "head": head,
            "key_position": np.arange(len(tokens)),
            "key_token": tokens,
            "weight_share": np.asarray(weight_share, dtype=np.float32),
            "sent_share": np.asarray(norm_share, dtype=np.float32),
        }
    )


def flow_table(rollout_row, flow_row, tokens: list[str]) -> pd.DataFrame:
    """Rollout and flow of the last token over the input tokens (flow empty beyond its token limit)."""
    flow = np.full(len(tokens), np.nan, dtype=np.float32) if flow_row is None else np.asarray(flow_row, dtype=np.float32)
    return pd.DataFrame({"key_position": np.arange(len(tokens)), "key_token": tokens, "rollout": np.asarray(rollout_row, dtype=np.float32), "flow": flow})


def per_head_table(values, value: str) -> pd.DataFrame:
    """A number per head, `[layer, head]`."""
    return grid(values, "layer", "head", value)


def ranking_table(top: list[tuple[int, int, float]]) -> pd.DataFrame:
    """Heads ranked by their effect, from rank 1."""
    return pd.DataFrame([dict(rank=i + 1, layer=l, head=h, effect=v) for i, (l, h, v) in enumerate(top)], columns=COLUMNS["head-ranking"])


def before_after_table(tokens: list[str], before, after) -> pd.DataFrame:
    return pd.DataFrame({"token": tokens, "probability_before": np.asarray(before, dtype=np.float32), "probability_after": np.asarray(after, dtype=np.float32)})


def cosine_by_state_table(cosines) -> pd.DataFrame:
    """Cosine of a token's vector before and after a change, at the input and after each layer."""
    return pd.DataFrame({"state": [state_name(i) for i in range(len(cosines))], "cosine": np.asarray(cosines, dtype=np.float32)})


def dot_spread_table(dims: list[int], spreads: list[float], d_k: int, model_d_k: int | None) -> pd.DataFrame:
    """Measured std of q·k against d_k, √d_k, and their ratio; `marked`: the chosen d_k, the model's own."""
    marks = [", ".join(name for name, mark in (("chosen", d_k), ("model", model_d_k)) if d == mark) or None for d in dims]
    roots = np.sqrt(np.asarray(dims, dtype=np.float64))
    return pd.DataFrame(
        {
            "d_k": dims,
            "std_dot": np.asarray(spreads, dtype=np.float64),
            "sqrt_d_k": roots,
            "std_dot_over_sqrt_d_k": np.asarray(spreads) / roots,
            "marked": marks,
        }
    )


def softmax_row_table(with_division, without_division) -> pd.DataFrame:
    """One query's weights over its keys, with and without ÷ √d_k."""
    n = len(with_division)
    return pd.DataFrame(
        {
            "key": np.tile(np.arange(n), 2),
            "scaling": ["scaled"] * n + ["unscaled"] * n,
            "weight": np.concatenate([np.asarray(with_division, dtype=np.float64), np.asarray(without_division, dtype=np.float64)]),
        }
    )


def attention_table(
    matrices: dict[str, np.ndarray],
    tokens: list[str],
    *,
    layer: int,
    head: int,
    masked=None,
    masked_stages=("scores_masked", "pattern"),
    positions: list[int] | None = None,
) -> pd.DataFrame:
    """Attention matrices `{stage: [query_pos, key_pos]}` of one head, every stage in turn: the `ATTENTION`
    columns. Cells of the stages in `masked_stages` where `masked` is True are empty. `positions`: the
    first position of each row and column when the matrices are blocks of tokens (`tokens` then names
    the blocks), else 0, 1, …"""
    parts = []
    for stage, matrix in matrices.items():
        part = token_grid(matrix, tokens, tokens, "value", masked=masked if stage in masked_stages else None, stage=stage, layer=layer, head=head)
        if positions is not None:
            part["query_position"] = np.asarray(positions)[part["query_position"].to_numpy()]
            part["key_position"] = np.asarray(positions)[part["key_position"].to_numpy()]
        parts.append(part)
    table = pd.concat(parts, ignore_index=True)
    table["value"] = table["value"].where(np.isfinite(table["value"]))  # −∞ of a masked score: empty, as drawn
    return table[ATTENTION]


def panels_table(panels: list[tuple[str, np.ndarray]], tokens: list[str], masked=None) -> pd.DataFrame:
    """Maps `[query_pos, key_pos]` side by side (the Why page's parts of a score, which sum to the last
    panel): a row per panel and cell, masked cells empty."""
    parts = [token_grid(np.asarray(values, dtype=np.float32), tokens, tokens, "score", masked=masked, panel=name) for name, values in panels]
    return pd.concat(parts, ignore_index=True)[COLUMNS["part-maps"]]


def curves_table(distances, curves: dict[str, np.ndarray]) -> pd.DataFrame:
    """Curves over one shared x, `{series: values}`: series, distance, score."""
    distances = np.asarray(distances).astype(int)
    parts = [pd.DataFrame({"series": name, "distance": distances, "score": np.asarray(values, dtype=np.float64)}) for name, values in curves.items()]
    return pd.concat(parts, ignore_index=True)


def cache_keys_table(keys, tokens: list[str], *, layer: int, new_rows: int) -> pd.DataFrame:
    """One layer's cached keys `[kv_head, key_pos, d_head]`, a row per number; `added_this_step`: the
    rows the step wrote (the last `new_rows`)."""
    keys = np.asarray(keys, dtype=np.float32)
    n_kv, n_keys, d_head = keys.shape
    kv_head, key, dim = (index.ravel() for index in np.indices(keys.shape))
    return pd.DataFrame(
        {
            "layer": layer,
            "kv_head": kv_head,
            "key_position": key,
            "key_token": np.asarray(tokens, dtype=object)[key],
            "d_head": dim,
            "value": keys.ravel(),
            "added_this_step": key >= n_keys - new_rows,
        }
    )


def spread_table(axis: str, values: list, series: list[dict], value: str) -> pd.DataFrame:
    """Bars with whiskers, one series per head (`{"name", "mean", "low", "high"}` at each of `values`):
    head, the `axis` value, the mean (`value`), its 10th and 90th percentile; empty where a head has none."""
    rows = [
        {"head": one["name"], axis: at, value: mean, "p10": low, "p90": high}
        for one in series
        for at, mean, low, high in zip(values, one["mean"], one["low"], one["high"])
    ]
    return pd.DataFrame(rows, columns=["head", axis, value, "p10", "p90"])


def badge_shares_table(badges: list[str], series: list[dict]) -> pd.DataFrame:
    """How often each head gets each badge (`{"name", "shares"}`): head, badge, share_of_sentences."""
    rows = [{"head": one["name"], "badge": badge, "share_of_sentences": share} for one in series for badge, share in zip(badges, one["shares"])]
    return pd.DataFrame(rows, columns=COLUMNS["badge-shares"])
