"""The Positional encoding page: the sinusoidal matrix, chosen dimensions, similarity between
positions, a pretrained model's learned positions, and token embedding + position."""

from __future__ import annotations

import numpy as np

from model import cosine_similarity_matrix, similarity_by_distance, sinusoidal_positional_encoding
from model.positional import rotary_angles, rotary_dot_by_distance
from viz.content import figure_tables as tables
from viz.content.common import sentence_labels
from viz.content.page import PageContent
from viz.heatmap import downsample
from viz.labels import safe_label
from viz.positional import pe_curves, pe_heatmap, position_similarity_heatmap, similarity_by_distance_figure
from viz.rotary import input_recipe_figure, rotary_angle_heatmap, rotary_distance_figure

TERM_NAMES = {"token": "token embedding", "position": "+ position", "token type": "+ token type"}

COMPOSITION_TOKENS = 64  # rows of the token embedding + position figure
SIMILARITY_CELLS = 256  # a position-similarity matrix larger than this per side is sent as block means


def default_dimensions(d_model: int) -> list[int]:
    return list(dict.fromkeys(dim for dim in (0, 1, d_model // 2, d_model - 2) if 0 <= dim < d_model))


def similarity_figure(similarity, title: str) -> dict:
    """Cosine similarity between positions, `[pos, pos]`, as block means beyond 256 positions (its table,
    `figure_tables.similarity_table`, holds every pair)."""
    n = similarity.shape[0]
    if n > SIMILARITY_CELLS:
        similarity = downsample(similarity, SIMILARITY_CELLS)
        block = int(np.ceil(n / SIMILARITY_CELLS))
        title += f" (means of {block}×{block} blocks)"
    return position_similarity_heatmap(similarity, title=title)


def positional_page(settings, trace, model, dimensions: list[int] | None = None) -> PageContent:
    """Figures `pe-matrix`, `pe-curves`, `pe-similarity`, `pe-similarity-by-distance`; for a pretrained
    model with learned positions `learned-position-similarity` and `learned-vs-sinusoidal-by-distance`;
    for a rotary (Llama-family) model `rotary-angles` and `rotary-by-distance`; `input-composition`: the
    model's own input recipe (toy: token + sinusoid; GPT-2: token + learned position; BERT: LayerNorm of
    token + position + token type; Llama: token only) for the sentence shown (its first 64 tokens)."""
    content = PageContent()
    table = content.figure_tables  # each figure's tidy table, from the arrays it is drawn from
    n, d, base = settings.pe_positions, settings.pe_d_model, settings.pe_base
    dimensions = default_dimensions(d) if dimensions is None else [dim for dim in dimensions if 0 <= dim < d]
    pe = sinusoidal_positional_encoding(n, d, float(base))
    similarity = cosine_similarity_matrix(pe)
    distances, means = similarity_by_distance(similarity)
    content.values.update(dimensions=dimensions, default_dimensions=default_dimensions(d))
    values = pe.numpy()  # [position, dimension]
    content.figures["pe-matrix"] = pe_heatmap(values, title=f"Sinusoidal positional encoding ({n} positions × {d} dimensions, base {base:g})")
    table["pe-matrix"] = lambda: tables.pe_matrix_table(values)
    content.figures["pe-curves"] = pe_curves(values, dimensions)
    table["pe-curves"] = lambda: tables.pe_curves_table(values, dimensions)
    content.figures["pe-similarity"] = similarity_figure(similarity.numpy(), "Sinusoidal: cosine similarity between positions")
    table["pe-similarity"] = lambda: tables.similarity_table(similarity.numpy())  # every pair (the figure may show block means)
    content.figures["pe-similarity-by-distance"] = similarity_by_distance_figure(distances.numpy(), means.numpy(), label=f"sinusoidal, base {base:g}")
    sinusoidal = {f"sinusoidal, base {base:g}": (distances.numpy(), means.numpy())}
    table["pe-similarity-by-distance"] = lambda: tables.by_distance_table(sinusoidal)
    if model.positional_kind == "rotary":
        frequencies = model.rotary_inverse_frequencies()
        angles = rotary_angles(n, frequencies)
        content.figures["rotary-angles"] = rotary_angle_heatmap(
            angles.numpy(), title=f"{safe_label(model.name)}: rotation angle of each dimension pair of q and k"
        )
        table["rotary-angles"] = lambda: tables.rotary_angles_table(angles.numpy())
        rotary_distances, dots = rotary_dot_by_distance(frequencies, n)
        content.figures["rotary-by-distance"] = rotary_distance_figure(rotary_distances.numpy(), dots.numpy(), label=f"{model.name}: d_head {model.d_head}")
        table["rotary-by-distance"] = lambda: tables.rotary_distance_table(rotary_distances.numpy(), dots.numpy())
        content.values.update(rotary_pairs=len(frequencies), fastest_turn=float(2 * np.pi / frequencies[0]), slowest_turn=float(2 * np.pi / frequencies[-1]))
    elif not model.is_toy:
        learned = cosine_similarity_matrix(model.position_matrix(n))
        learned_distances, learned_means = similarity_by_distance(learned)
        content.figures["learned-position-similarity"] = similarity_figure(learned.numpy(), f"{safe_label(model.name)}: learned position embeddings")
        table["learned-position-similarity"] = lambda: tables.similarity_table(learned.numpy())
        lines = {f"sinusoidal, base {base}": (distances.numpy(), means.numpy()), f"{model.name}: learned": (learned_distances.numpy(), learned_means.numpy())}
        content.figures["learned-vs-sinusoidal-by-distance"] = similarity_by_distance_figure(
            distances.numpy(), means.numpy(), label=f"sinusoidal, base {base}", series=dict(list(lines.items())[1:])
        )
        table["learned-vs-sinusoidal-by-distance"] = lambda: tables.by_distance_table(lines)
    b = settings.sentence
    total = len(trace.tokens[b])
    count = min(total, COMPOSITION_TOKENS)
    if total > count:
        content.notice("composition-cut", f"The first {count} tokens of {total}.", "caption")
    labels = sentence_labels(trace, b)[:count]
    recipe = model.input_recipe(trace.input_ids[b : b + 1, :count])
    panels = []
    for name, term in recipe.terms.items():
        if term.dim() == 0:  # a scalar factor (Gemma's √d_model) is named in the result's panel
            continue
        panels.append((TERM_NAMES.get(name, name), (term[0] if term.dim() == 3 else term[:count]).detach().numpy()))
    first_input = trace.hidden_states[0, b, :count]
    layer_norm = recipe.formula.startswith("LayerNorm")
    panels.append(("= LayerNorm(sum): first-layer input" if layer_norm else "= first-layer input", first_input.numpy()))
    content.figures["input-composition"] = input_recipe_figure(
        panels, labels, title=f"What the first layer of {safe_label(model.name)} reads: {recipe.formula}", separate_result=layer_norm
    )
    table["input-composition"] = lambda: tables.composition_table(panels, labels)
    content.values.update(
        input_recipe=recipe.formula,
        recipe_difference=float((recipe.result[0] - first_input).abs().max()),
        plain_sum_difference=float((trace.static_embeddings[b, :count] + trace.positional[:count] - first_input).abs().max()),
    )
    if model.is_toy:
        content.values["toy_pe_base"] = float(model.module.config.pe_base)
    content.values["d_model"] = model.d_model
    return content
