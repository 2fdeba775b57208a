"""`python -m viz.export`: the figures of a view, written to a folder for slides, without a browser tab.

    python -m viz.export --text "The cat sat on the mat." --model toy --out slides/ --layer 1 --head 0 --mask causal

writes every figure as PNG, SVG, HTML and CSV, and `manifest.json` listing each figure (id, title,
files) and the settings used.
"""

from __future__ import annotations

import argparse
import math
import sys
from urllib.parse import urlencode
from dataclasses import asdict, replace
from pathlib import Path

from viz.export.bundle import FORMATS, OutputFolderError, check_folder, check_formats, describe, write_folder
from viz.theme import apply_print_theme


def hidden_token(value: str) -> tuple[int | None, int]:
    """ "2:5" → (1, 5): position 5 of sentence 2 (sentences counted from 1); "5" → (None, 5), every sentence."""
    sentence, _, position = value.rpartition(":")
    try:
        pair = (int(sentence) - 1 if sentence else None, int(position))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not S:P (sentence from 1, position from 0) or P") from None
    if pair[1] < 0 or (pair[0] is not None and pair[0] < 0):
        raise argparse.ArgumentTypeError(f"{value!r}: sentences count from 1, positions from 0")
    return pair


MAX_PNG_SCALE = 10.0  # 12,800 × 7,200 pixels for a figure of the default size: more than any slide or page needs


def png_scale(value: str) -> float:
    """ "2" → 2.0: a PNG resolution multiplier, finite and in (0, MAX_PNG_SCALE]."""
    try:
        scale = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not math.isfinite(scale) or not 0 < scale <= MAX_PNG_SCALE:
        raise argparse.ArgumentTypeError(f"{value!r}: the scale must be a number above 0 and at most {MAX_PNG_SCALE:g}")
    return scale


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m viz.export", description=__doc__.split("\n\n")[0])
    parser.add_argument("--text", action="append", required=True, help="a sentence (repeat for a batch)")
    parser.add_argument("--model", default="toy", help="toy (trained), toy-random, minilm, a Hugging Face id or a local folder")
    parser.add_argument("--tokenizer", help="tokenizer of toy-random, one of the app's toy tokenizers (default: the app's)")
    parser.add_argument("--out", required=True, type=Path, help="folder to write into (created if needed)")
    parser.add_argument("--layer", type=int, default=0)
    parser.add_argument("--head", type=int, action="append", help="head to draw (repeat; default 0)")
    parser.add_argument("--sentence", type=int, default=1, help="which sentence of the batch (counted from 1)")
    parser.add_argument("--mask", default=None, help="none, causal, padding, causal+padding (default: the model's own)")
    parser.add_argument("--no-scale", action="store_true", help="do not divide by √d_k")
    parser.add_argument(
        "--hide",
        type=hidden_token,
        action="append",
        default=[],
        help="S:P hides the token at position P of sentence S (counted from 1) from that sentence's queries; P alone, in every sentence (repeat)",
    )
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--target", default="bank", help="word followed on the embedding figures")
    parser.add_argument("--refs", default="river,water,money,deposit", help="reference words, comma-separated")
    parser.add_argument("--formats", default=",".join(FORMATS), help="comma-separated subset of png,svg,html,csv")
    parser.add_argument("--png-scale", type=png_scale, default=2.0, help=f"PNG resolution multiplier, above 0 and at most {MAX_PNG_SCALE:g} (2 = 192 dpi)")
    parser.add_argument("--print-theme", action="store_true", help="white background, large fonts")
    parser.add_argument("--pattern-colour", default="fixed", choices=["fixed", "own"], help="weights coloured 0 to 1, or 0 to each figure's maximum")
    parser.add_argument("--sinks", action="store_true", help="also draw each pattern with the first token, [CLS] and [SEP] hidden, rows renormalised")
    parser.add_argument("--focus", type=int, default=-1, help="inputs over 128 tokens: the position the focus window is centred on")
    parser.add_argument("--app", default="http://localhost:8501", help="the app's address, for the manifest's link back to the view")
    return parser.parse_args(argv)


def build_figures(args: argparse.Namespace):
    """Run the model once and build the pages' figures, with the same page functions the app calls:
    returns (a `PageContent` holding the figures by id and their tables' builders, settings, notices)."""
    from model import load_model
    from viz.content import attention_page, embeddings_page, positional_page, run_model, tokens_page
    from viz.content.page import PageContent
    from viz.content.settings import PE_LIMIT, TOY_TOKENIZERS, Settings, to_query

    tokenizer = args.tokenizer or Settings.tokenizer
    if tokenizer not in TOY_TOKENIZERS:
        raise SystemExit(f"--tokenizer {tokenizer!r}: choose one of {', '.join(TOY_TOKENIZERS)}")
    model = load_model(args.model, tokenizer=tokenizer) if args.model == "toy-random" else load_model(args.model)
    settings = Settings(
        text="\n".join(args.text),
        model=args.model,
        tokenizer=tokenizer,
        layer=args.layer,
        heads=tuple(args.head or [0]),
        mask=args.mask or "model",
        hidden=tuple((s, p) for s0, p in args.hide for s in ([s0] if s0 is not None else range(len(args.text)))),
        scaling=not args.no_scale,
        temperature=args.temperature,
        target=args.target,
        references=args.refs,
        pattern_colour=args.pattern_colour,
        sinks=args.sinks,
        focus=args.focus,
    )
    trace = run_model(model, args.text, settings.display)
    if not 0 <= args.layer < trace.n_layers:
        raise ValueError(f"--layer must be in 0…{trace.n_layers - 1}")
    if any(not 0 <= h < trace.n_heads for h in settings.heads):
        raise ValueError(f"--head must be in 0…{trace.n_heads - 1}")
    n_positions = max(trace.input_ids.shape[1], 2)
    settings = replace(
        settings,
        sentence=args.sentence - 1 if 1 <= args.sentence <= len(trace.texts) else 0,
        pe_positions=min(n_positions, PE_LIMIT),
        pe_d_model=min(model.d_model, PE_LIMIT),
    )

    content = PageContent()  # the figures written, and what builds each one's table (its CSV)

    def take(part: PageContent, ids) -> None:
        content.figures.update((figure_id, part.figures[figure_id]) for figure_id in ids)
        content.figure_tables.update((figure_id, part.figure_tables[figure_id]) for figure_id in ids if figure_id in part.figure_tables)

    tokens = tokens_page(settings, trace, model, tokenizers={})
    take(tokens, tokens.figures)
    for head in settings.heads:  # the page draws the scaling comparison for its first head; slides get every head's
        one = attention_page(replace(settings, heads=(head,)), trace, overview=False, model=model)
        take(one, one.figures)
    every_head = attention_page(settings, trace)  # the head view of every chosen head (not the last one's), and the overview
    take(every_head, [f"head-view-L{settings.layer}", "overview-all-heads"])
    positional = positional_page(settings, trace, model, dimensions=[0, 1])
    take(positional, [k for k in positional.figures if k.startswith("pe-")])
    embeddings = embeddings_page(settings, trace, model.name)
    take(embeddings, embeddings.figures)
    manifest_settings = dict(
        asdict(settings),
        texts=trace.texts,
        model=model.name,
        tokenizer=model.tokenizer.label,
        heads=list(settings.heads),
        mask=trace.mask.name,
        what_if="; ".join(trace.what_ifs) or None,
        link=f"{args.app.rstrip('/')}/Attention?{urlencode(to_query(settings))}",
    )
    manifest_settings.pop("text")
    return content, manifest_settings, trace.notices


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        formats = check_formats(f.strip() for f in args.formats.split(",") if f.strip())
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:  # before the model runs: a bad folder is told at once (it is created once there is something to write)
        check_folder(args.out)
    except OutputFolderError as error:
        print(f"error: --out: {error}", file=sys.stderr)
        return 2
    try:
        content, settings, notices = build_figures(args)
    except Exception as error:  # bad input or a model that cannot be loaded: say so, no traceback
        print(f"error: {error}", file=sys.stderr)
        return 1
    for notice in notices:
        print(f"note: {notice}", file=sys.stderr)
    figures = content.figures
    if args.print_theme:  # restyled copies; the tables are the page's, by figure id
        figures = {figure_id: apply_print_theme(figure) for figure_id, figure in figures.items()}
    every = dict(settings, formats=list(formats), png_scale=args.png_scale, print_theme=args.print_theme)
    about = describe(every.pop("model"), every.pop("texts"), every, every.pop("link"))
    try:
        manifest = write_folder(figures, args.out, formats=formats, png_scale=args.png_scale, about=about, tables=content.figure_tables)
    except OutputFolderError as error:
        print(f"error: --out: {error}", file=sys.stderr)
        return 2
    for note in manifest["notes"]:
        print(f"note: {note}", file=sys.stderr)
    print(f"wrote {len(manifest['figures'])} figures to {args.out}")
    return 0
