"""The Generate page: one step of a run (`model.generate`): the text so far, the pick, the query row, the cache."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from model.generate import Candidate
from viz.content import figure_tables as tables
from viz.content.page import PageContent
from viz.generate import cache_growth_figure, cache_rows_figure, candidates_figure, written_strip
from viz.labels import safe_label
from viz.prediction import last_row_figure


def plain_token(text: str) -> str:
    """A token for a notice (plain text): invisible characters as escapes ("\\n"), no HTML entities."""
    return html.unescape(safe_label(text))


def picking(run) -> str:
    """How the run picked its tokens: "greedy" or "sampled at T = 0.8, top-k 5, top-p 0.9, seed 0"."""
    if run.temperature == 0:
        return "greedy"
    cuts = "".join(f", {name} {value:g}" for name, value in (("top-k", run.top_k), ("top-p", run.top_p)) if value is not None)
    return f"sampled at T = {run.temperature:g}{cuts}, seed {run.seed}"


def run_table(run) -> pd.DataFrame:
    """The run as a tidy table: a row per step and candidate (the top tokens of the step, and the written one
    when it is not among them). Columns: step, position (where the written token goes), token, id,
    probability (before the cut), drawn_probability (after it), rank, kept (by the cut), written."""
    rows = []
    for step in run.steps:
        candidates = list(step.candidates)
        if step.chosen not in {c.id for c in candidates}:
            candidates.append(Candidate(step.rank, step.chosen, run.tokens[step.position + 1], step.probability, bool(step.kept[step.chosen])))
        for c in candidates:
            rows.append(
                dict(
                    step=step.index,
                    position=step.position + 1,
                    token=c.text,
                    id=c.id,
                    probability=round(c.probability, 6),
                    drawn_probability=round(c.probability / step.kept_probability if c.kept else 0.0, 6),
                    rank=c.rank,
                    kept=c.kept,
                    written=c.id == step.chosen,
                )
            )
    return pd.DataFrame(rows, columns=["step", "position", "token", "id", "probability", "drawn_probability", "rank", "kept", "written"])


def cut_text(run, step) -> str:
    """What the step could draw from, in numbers."""
    if run.temperature == 0:
        return "greedy: the most likely token is written"
    kept = step.n_kept
    return f"{kept:,} token{'s' * (kept != 1)} kept by the cut, holding {step.kept_probability:.1%} of the probability"


def generate_page(run, step: int, layer: int = 0, k: int = 10) -> PageContent:
    """Figures `generate-tokens` (prompt and tokens written, the new one marked), `generate-candidates` (the
    top `k` the token was chosen from, the cut shown), `generate-query-row` (the new query row of every head
    of `layer` over every key so far), `generate-cache` (bytes against tokens), `generate-cache-keys` (the
    layer's cached keys, the rows this step added outlined); table `candidates`; values for the page's
    prose. The whole run's table is `run_table(run)`, the same for every step.

    `run` is a `model.generate.Generation`; `step` counts from 0."""
    content = PageContent()
    if not 0 <= step < len(run.steps):
        raise IndexError(f"step {step} out of range 0…{len(run.steps) - 1}")
    if not 0 <= layer < run.n_layers:
        raise IndexError(f"layer {layer} out of range 0…{run.n_layers - 1}")
    s = run.steps[step]
    n_prompt = len(run.prompt_ids)
    written_at = s.position + 1
    new_token = run.tokens[written_at]
    content.figures["generate-tokens"] = written_strip(
        run.tokens[: written_at + 1],
        run.ids[: written_at + 1],
        n_prompt,
        title=f"Step {step + 1} of {len(run.steps)}: “{safe_label(new_token)}” written at position {written_at} ({picking(run)})",
    )

    shown = s.candidates[:k]
    chosen = next((i for i, c in enumerate(shown) if c.id == s.chosen), None)
    candidate_rows = [dict(rank=c.rank, token=c.text, id=c.id, probability=c.probability, kept=c.kept, written=c.id == s.chosen) for c in shown]
    content.figure_tables["generate-candidates"] = lambda: pd.DataFrame(candidate_rows, columns=tables.COLUMNS["generate-candidates"])
    content.figures["generate-candidates"] = candidates_figure(
        [c.text for c in shown],
        [c.probability for c in shown],
        [c.kept for c in shown],
        chosen,
        title=f"After “{safe_label(run.tokens[s.position])}”: the {len(shown)} most likely next tokens (T = {s.temperature:g}); {cut_text(run, s)}",
    )

    keys = run.tokens[: s.n_keys]
    group = run.group_size
    head_names = [f"head {h}" + (f" · K/V {h // group}" if group > 1 else "") for h in range(run.n_heads)]
    query_rows = s.pattern[layer].numpy().copy()  # [head, key_pos]
    content.figure_tables["generate-query-row"] = lambda: tables.query_row_table(query_rows, run.n_heads, s.position, keys).assign(layer=layer)
    content.figures["generate-query-row"] = last_row_figure(
        query_rows,
        keys,
        head_names,
        title=f"Layer {layer}: the query of “{safe_label(run.tokens[s.position])}” (position {s.position}) over the {s.n_keys} keys in the cache",
    )

    n_tokens = [t.n_keys for t in run.steps]
    n_bytes = [t.cache_bytes for t in run.steps]
    each = [run.cache_bytes_for(n, n_kv_heads=run.n_heads) for n in n_tokens] if group > 1 else None
    formula = f"2 · {run.n_layers} layers · {run.n_kv_heads} K/V heads · {run.d_head} d_head · {run.bytes_per_element} bytes · {s.n_keys} tokens"
    cache_rows = {
        "step": np.arange(1, len(n_tokens) + 1),
        "n_tokens": n_tokens,
        "cache_bytes": n_bytes,
        "cache_bytes_one_per_head": each or [None] * len(n_tokens),
    }
    content.figure_tables["generate-cache"] = lambda: pd.DataFrame(cache_rows).astype({"cache_bytes_one_per_head": "Int64"})
    content.figures["generate-cache"] = cache_growth_figure(
        n_tokens,
        n_bytes,
        current=step,
        title=f"The key/value cache: {formula} = {s.cache_bytes:,} bytes",
        bytes_per_head_each=each,
        group_size=group,
    )
    new_rows = n_prompt if step == 0 else 1
    group_names = [f"K/V head {g} (heads {g * group}–{(g + 1) * group - 1})" if group > 1 else f"head {g}" for g in range(run.n_kv_heads)]
    cached = s.keys[layer].numpy().copy()  # [kv_head, key_pos, d_head]
    content.figure_tables["generate-cache-keys"] = lambda: tables.cache_keys_table(cached, keys, layer=layer, new_rows=new_rows)
    content.figures["generate-cache-keys"] = cache_rows_figure(
        cached,
        keys,
        new_rows=new_rows,
        group_names=group_names,
        title=f"Layer {layer}: the cached keys, {s.n_keys} rows; step {step + 1} added {new_rows} (outlined)",
    )

    content.tables["candidates"] = pd.DataFrame(
        [dict(rank=c.rank, token=c.text, id=c.id, probability=round(c.probability, 6), kept=c.kept, written=c.id == s.chosen) for c in shown]
    )

    content.notice(
        "generate-step",
        f"Step {step + 1} of {len(run.steps)} read “{plain_token(run.tokens[s.position])}” (position {s.position}) "
        f"and wrote “{plain_token(new_token)}” (id {s.chosen}) at position {written_at}: "
        f"probability {s.probability:.1%}, rank {s.rank:,} of {len(s.logits):,}.",
        "caption",
    )
    content.notice("generate-cache", f"{formula} = {s.cache_bytes:,} bytes.", "caption")
    if group > 1:
        groups = "; ".join(f"heads {heads[0]}–{heads[-1]} read K/V head {g}" for g, heads in enumerate(run.kv_groups()))
        content.notice(
            "generate-gqa",
            f"{run.n_heads} query heads share {run.n_kv_heads} cached key/value heads ({groups}): {s.cache_bytes:,} bytes "
            f"where one per query head would take {run.cache_bytes_for(s.n_keys, n_kv_heads=run.n_heads):,} (×{group}).",
            "caption",
        )
    if run.stopped != "length":
        reason = "the model wrote its end token" if run.stopped == "end" else f"the model's context is full ({len(run.ids)} tokens)"
        content.notice("generate-stopped", f"The run stopped after {len(run.steps)} tokens: {reason}.", "info")
    content.values.update(
        step=step,
        n_steps=len(run.steps),
        position=written_at,
        token=new_token,
        token_id=s.chosen,
        probability=s.probability,
        rank=s.rank,
        n_keys=s.n_keys,
        cache_bytes=s.cache_bytes,
        cache_formula=formula,
        n_kv_heads=run.n_kv_heads,
        group_size=group,
        kv_groups=run.kv_groups(),
        gqa_saving=group,
        picking=picking(run),
        text=run.text,
        layer=layer,
    )
    return content
