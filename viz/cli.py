"""`python -m viz.export`: the figures of a view, written to a folder for slides, without a browser tab.

    python -m viz.export --text "The cat sat on the mat." --model toy --out slides/ --layer 1 --head 0 --mask causal

writes every figure as PNG, SVG, HTML and CSV, and `manifest.json` listing each figure (id, title,
files) and the settings used.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from viz.export import figure_to_csv, figure_to_html, figure_to_png, figure_to_svg, safe_filename, static_export_available
from viz.theme import apply_print_theme
from viz.views import embedding_figures, overview_figure, positional_figures, scaling_figures, stages_of_head, tokens_figures

FORMATS = ("png", "svg", "html", "csv")


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


def write_figures(figures: dict, out: Path, formats: tuple[str, ...], png_scale: float, print_theme: bool) -> list[dict]:
    """Write each figure in each format into `out` only; returns the manifest entries."""
    can_render, why = static_export_available()
    writers = {
        "png": lambda fig: figure_to_png(fig, scale=png_scale),
        "svg": figure_to_svg,
        "html": figure_to_html,
        "csv": lambda fig: figure_to_csv(fig).encode("utf-8"),
    }
    out.mkdir(parents=True, exist_ok=True)
    entries = []
    for figure_id, figure in figures.items():
        figure = apply_print_theme(figure) if print_theme else figure
        stem = safe_filename(figure_id)
        files = []
        for fmt in formats:
            if fmt in ("png", "svg") and not can_render:
                continue
            path = out / f"{stem}.{fmt}"
            path.write_bytes(writers[fmt](figure))
            files.append(path.name)
        title = figure.layout.title.text or figure_id
        entries.append(dict(id=figure_id, title=title, files=files))
    if not can_render and {"png", "svg"} & set(formats):
        print(f"PNG and SVG skipped: {why}", file=sys.stderr)
    return entries


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    formats = tuple(f.strip() for f in args.formats.split(",") if f.strip())
    unknown = set(formats) - set(FORMATS)
    if unknown:
        print(f"error: unknown format(s) {', '.join(sorted(unknown))}; choose from {', '.join(FORMATS)}", file=sys.stderr)
        return 2
    try:
        figures, settings, notices = build_figures(args)
    except Exception as error:  # bad input or a model that cannot be loaded: say so, no traceback
        print(f"error: {error}", file=sys.stderr)
        return 1
    for notice in notices:
        print(f"note: {notice}", file=sys.stderr)
    entries = write_figures(figures, args.out, formats, args.png_scale, args.print_theme)
    manifest = dict(settings=settings, figures=entries)
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False), encoding="utf-8")
    print(f"wrote {len(entries)} figures to {args.out}")
    return 0
