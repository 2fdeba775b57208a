"""Plotly figures for teaching attention, built from plain numpy data.

Every function takes numpy arrays and lists of strings and returns a
figure as a plain dict of plotly JSON (``viz.plain``: ``{"data": [...],
"layout": {...}}``, which plotly.js, kaleido and ``plotly.io`` all take);
nothing here knows about torch or
streamlit. Shapes use the words ``batch, head, query_pos, key_pos,
d_head``; an attention matrix is ``[query_pos, key_pos]``.

Modules: ``labels`` (safe token labels); attention figures in ``heatmap``
(heatmap primitives, one matrix), ``stages`` (scores to pattern side by side,
row statistics) and ``overview`` (every head as small multiples);
``positional``, ``embeddings``, ``tokens``, ``prediction`` (figures);
``focus`` (a window of a long input beside the whole; sink tokens hidden and
rows renormalised), ``values`` (z = pattern · V, the heads concatenated, W_O);
``placement`` (point labels that do not collide);
``theme`` (colours, print theme); ``export`` (a package: PNG/SVG, HTML, CSV,
zip and folder; also the command line ``python -m viz.export``, whose code is
``cli``). The figures, tables and notices of each page come from ``viz.content``.
"""

from .focus import focus_figure, focus_range, renormalised_figure, renormalised_without
from .heatmap import attention_heatmap, block_weights, downsample, weight_scale
from .overview import heads_overview
from .stages import row_entropy, row_stats_figure, stage_titles, stages_figure
from .embeddings import projection_figure, sense_layers_figure, trajectory_figure
from .labels import position_labels, safe_label, tick_axis
from .positional import (
    input_composition_figure,
    pe_curves,
    pe_heatmap,
    position_similarity_heatmap,
    similarity_by_distance_figure,
)
from .theme import DIVERGING, SEQUENTIAL, apply_print_theme
from .tokens import tokens_figure
from .values import output_step_figure, value_step_figure

__all__ = [
    "DIVERGING",
    "SEQUENTIAL",
    "apply_print_theme",
    "attention_heatmap",
    "block_weights",
    "downsample",
    "focus_figure",
    "focus_range",
    "heads_overview",
    "input_composition_figure",
    "output_step_figure",
    "pe_curves",
    "pe_heatmap",
    "position_labels",
    "position_similarity_heatmap",
    "projection_figure",
    "sense_layers_figure",
    "renormalised_figure",
    "renormalised_without",
    "row_entropy",
    "row_stats_figure",
    "safe_label",
    "similarity_by_distance_figure",
    "stage_titles",
    "stages_figure",
    "tick_axis",
    "tokens_figure",
    "trajectory_figure",
    "value_step_figure",
    "weight_scale",
]
