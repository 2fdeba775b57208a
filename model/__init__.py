"""Models, tokenizers and the attention trace. Pure torch/transformers: no UI code here.

from model import load_model
trace = load_model("toy").trace(["The cat sat on the mat."], mask="causal")
stages = trace.stages(layer=0)   # scores_raw, scores_scaled, scores_masked, pattern, z
parts = trace.score_parts(layer=0, head=2)  # "token·position" → [query_pos, key_pos]; they sum to scores_raw
"""

from model.attention import AttentionStages, MaskSpec, attention_stages
from model.loading import ModelLoadError, available_bundled, load_model
from model.positional import cosine_similarity_matrix, similarity_by_distance, sinusoidal_positional_encoding
from model.trace import InputError, Trace

__all__ = [
    "AttentionStages",
    "InputError",
    "MaskSpec",
    "ModelLoadError",
    "Trace",
    "attention_stages",
    "available_bundled",
    "cosine_similarity_matrix",
    "load_model",
    "similarity_by_distance",
    "sinusoidal_positional_encoding",
]
