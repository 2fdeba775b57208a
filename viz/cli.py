"""`python -m viz.export`: the figures of a view, written to a folder for slides, without a browser tab.

    python -m viz.export --text "The cat sat on the mat." --model toy --out slides/ --layer 1 --head 0 --mask causal

writes every figure as PNG, SVG, HTML and CSV, and `manifest.json` listing each figure (id, title,
files) and the settings used.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from viz.export.bundle import FORMATS, check_formats, write_folder
from viz.theme import apply_print_theme
from viz.views import embedding_figures, overview_figure, positional_figures, scaling_figures, stages_of_head, tokens_figures


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m viz.export", description=__doc__.split("\n\n")[0])
    parser.add_argument("--text", action="append", required=True, help="a sentence (repeat for a batch)")
    parser.add_argument("--model", default="toy", help="toy (trained), toy-random, minilm, a Hugging Face id or a local folder")
    parser.add_argument("--tokenizer", default="word", choices=["word", "char", "gpt2-bpe"], help="tokenizer of toy-random")
    parser.add_argument("--out", required=True, type=Path, help="folder to write into (created if needed)")
    parser.add_argument("--layer", type=int, default=0)
    parser.add_argument("--head", type=int, action="append", help="head to draw (repeat; default 0)")
    parser.add_argument("--sentence", type=int, default=0, help="which sentence of the batch (0-based)")
    parser.add_argument("--mask", default=None, help="none, causal, padding, causal+padding (default: the model's own)")
    parser.add_argument("--no-scale", action="store_true", help="do not divide by √d_k")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--target", default="bank", help="word followed on the embedding figures")
    parser.add_argument("--refs", default="river,water,money,deposit", help="reference words, comma-separated")
    parser.add_argument("--formats", default=",".join(FORMATS), help="comma-separated subset of png,svg,html,csv")
    parser.add_argument("--png-scale", type=float, default=2.0, help="PNG resolution multiplier (2 = 192 dpi)")
    parser.add_argument("--print-theme", action="store_true", help="white background, large fonts")
    return parser.parse_args(argv)


def build_figures(args: argparse.Namespace):
    """Run the model once and build the view's figures: returns (figures by id, settings, notices)."""
    from model import MaskSpec, cosine_similarity_matrix, load_model, similarity_by_distance, sinusoidal_positional_encoding
    from model.embeddings import embedding_projection

    model = load_model(args.model, tokenizer=args.tokenizer) if args.model == "toy-random" else load_model(args.model)
    mask = MaskSpec.parse(args.mask) if args.mask else None
    run = model.trace(args.text, mask=mask, scale=not args.no_scale, temperature=args.temperature)
    trace = run if model.is_toy else run.with_view(run.mask if mask is None else mask, not args.no_scale, args.temperature)
    if not 0 <= args.layer < trace.n_layers:
        raise ValueError(f"--layer must be in 0…{trace.n_layers - 1}")
    heads = args.head or [0]
    if any(not 0 <= h < trace.n_heads for h in heads):
        raise ValueError(f"--head must be in 0…{trace.n_heads - 1}")
    sentence = args.sentence if 0 <= args.sentence < len(trace.texts) else 0

    figures = dict(tokens_figures(trace, model.tokenizer.label))
    stages = trace.stages(args.layer)
    for head in heads:
        figures[f"stages-L{args.layer}-H{head}"] = stages_of_head(trace, sentence, args.layer, head, stages)
        figures.update(scaling_figures(trace, sentence, args.layer, head))
    figures["overview-all-heads"] = overview_figure(trace, sentence)
    n_positions = max(trace.input_ids.shape[1], 2)
    pe = sinusoidal_positional_encoding(n_positions, model.d_model)
    similarity = cosine_similarity_matrix(pe)
    distances, means = similarity_by_distance(similarity)
    figures.update(positional_figures(pe.numpy(), similarity.numpy(), distances.numpy(), means.numpy(), 10000.0, [0, 1]))
    references = tuple(w.strip() for w in args.refs.split(",") if w.strip())
    figures.update(embedding_figures(embedding_projection(trace, args.target, references), model.name))
    settings = dict(
        texts=trace.texts,
        model=model.name,
        tokenizer=model.tokenizer.label,
        layer=args.layer,
        heads=heads,
        sentence=sentence,
        mask=trace.mask.name,
        scale=trace.scale,
        temperature=trace.temperature,
        target=args.target,
        references=list(references),
        what_if=trace.what_if,
    )
    return figures, settings, trace.notices


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        formats = check_formats(f.strip() for f in args.formats.split(",") if f.strip())
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        figures, settings, notices = build_figures(args)
    except Exception as error:  # bad input or a model that cannot be loaded: say so, no traceback
        print(f"error: {error}", file=sys.stderr)
        return 1
    for notice in notices:
        print(f"note: {notice}", file=sys.stderr)
    if args.print_theme:
        figures = {figure_id: apply_print_theme(figure) for figure_id, figure in figures.items()}
    manifest = write_folder(figures, args.out, formats=formats, png_scale=args.png_scale, settings=settings)
    for note in manifest["notes"]:
        print(f"note: {note}", file=sys.stderr)
    print(f"wrote {len(manifest['figures'])} figures to {args.out}")
    return 0
