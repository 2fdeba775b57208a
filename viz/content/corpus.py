"""The Corpus page: what one head does over hundreds of sentences, two heads side by side, every head at once.

The page reads a `CorpusSummary` (`model.heads.corpus_summary`, one batched pass a page caches per model and
corpus); each section is a function `summary, choices → PageContent`, and `corpus_page` merges them.
Captions say what the numbers are and which is largest; nothing here runs a model.

    sentences, notices = corpus_texts("classroom")
    summary = corpus_summary(model, sentences, top=100, progress=bar)
    content = corpus_page(summary, layer=1, head=3, compare=(0, 2), page=0, view=settings, sentences=sentences)

With the page's `view` and the `sentences` read, each example of the table `top-examples` gets a link to the
Attention page (`example_view`): its sentence, that layer and head, its query pinned and its cell worked through.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from urllib.parse import urlencode

import pandas as pd

from model.corpus_heads import OFFSETS, STATISTICS, UNITS, CorpusSummary, classroom_sentences, heldout_sentences
from model.heads import BADGE_RULES, BADGES
from model.own_text import corpus_sentences
from viz.content import figure_tables as tables
from viz.content.page import PageContent
from viz.content.settings import SESSION_MODEL, Settings, to_query
from viz.corpus import badge_grid_figure, badge_shares_figure, marked_text, spread_bars_figure, statistic_grid_figure, top_examples_figure
from viz.export.tables import table_to_csv
from viz.labels import safe_label

SOURCES = ("classroom", "held-out", "own text")
PAGE_SIZE = 20  # examples shown at once
ATTENTION_ADDRESS = "Attention"  # the Attention page (pages/3_Attention.py), relative to the app's address
LOW, HIGH = 0.1, 0.9  # the whiskers: the middle 80 % of the sentences
SHARES = {  # statistic → what the bar is called
    "first": "first token",
    "previous": "previous token",
    "self": "itself",
    "delimiter": "delimiters ([SEP]-like)",
    "punctuation": "punctuation",
}
NAMES = {**SHARES, "entropy": "entropy (bits)", "entropy_normalised": "entropy (of a uniform row's)", "distance": "mean distance (tokens)"}


def corpus_texts(source: str, text: str | bytes | None = None) -> tuple[list[str], list[str]]:
    """The sentences of a corpus and notices about them: "classroom" (the first 500 sentences of the toy's
    training corpus), "held-out" (model/heldout.py) or "own text" (a pasted or uploaded text, cut as the Train
    page cuts it; raises `InputError` with a message for the user)."""
    if source == "classroom":
        return classroom_sentences(), []
    if source == "held-out":
        return heldout_sentences(), []
    if source == "own text":
        pasted = corpus_sentences(text if text is not None else "")
        return pasted.sentences, list(pasted.notices)
    raise ValueError(f"unknown corpus {source!r}; choose one of {', '.join(SOURCES)}")


def head_name(layer: int, head: int) -> str:
    return f"layer {layer}, head {head}"


def examples_range(page: int, examples: int, page_size: int = PAGE_SIZE) -> str:
    """Which examples page `page` (from 0) shows, e.g. "21–40 of 100"."""
    first = page * page_size + 1
    return f"{first}–{min(first + page_size - 1, examples)} of {examples}"


def example_view(view: Settings, text: str, layer: int, head: int, query: int, key: int) -> Settings:
    """The Attention page's view of one example: `text` (its sentence) as the only sentence, `layer` and
    `head` chosen, the `query` token pinned in the head view, the focus window around it, and the cell
    (`query`, `key`) worked through; the model as trained (no what-if), as the corpus was read. The model,
    its tokenizer and the page's other settings are `view`'s.

    Positions count the tokens as the model reads the sentence alone ([CLS] or a first token included),
    as the corpus summary counts them: the same tokens on both pages."""
    return replace(
        view,
        text=text,
        sentence=0,
        layer=layer,
        heads=(head,),
        mask="model",
        hidden=(),
        scaling=True,
        temperature=1.0,
        ablate=(),
        words=False,
        pinned=query,
        cell=(query, key),
        focus=query,
    )


def example_link(view: Settings, text: str, layer: int, head: int, query: int, key: int) -> str:
    """The address of `example_view`, relative to the app's: a page of the app links to it as it is."""
    return f"{ATTENTION_ADDRESS}?{urlencode(to_query(example_view(view, text, layer, head, query, key)))}"


def _quantile(spread, q: float) -> float | None:
    return None if spread.quantiles is None else spread.quantiles[q]


def _corpus_words(summary: CorpusSummary) -> str:
    return f"{summary.n_sentences:,} sentences ({summary.n_rows:,} query tokens)"


# --- tables and CSV -----------------------------------------------------------------------------------


def example_pages(examples: int, page_size: int = PAGE_SIZE) -> int:
    """How many pages `examples` examples fill (at least one, empty)."""
    return max(1, -(-examples // page_size))


def example_rows(summary: CorpusSummary, layer: int, head: int) -> list[dict]:
    """The head's top examples, strongest first, with their tokens and the sentence around them."""
    rows = []
    for rank, (sentence, query, key, weight) in enumerate(summary.top_examples(layer, head), start=1):
        tokens = summary.sentence_tokens(sentence)
        rows.append(
            dict(
                rank=rank,
                sentence=sentence,
                query=query,
                key=key,
                offset=key - query,
                weight=weight,
                query_token=tokens[query],
                key_token=tokens[key],
                tokens=tokens,
            )
        )
    return rows


EXAMPLE_COLUMNS = ["layer", "head", "rank", "sentence_index", "query_position", "query_token", "key_position", "key_token", "offset", "weight", "context"]


def examples_table(summary: CorpusSummary, heads: list[tuple[int, int]] | None = None) -> pd.DataFrame:
    """Tidy: one row per top example of each head (every head by default). `sentence_index` counts from 0 in
    the corpus as given; `context` is the sentence around them, the query in [brackets], the key in «guillemets»."""
    heads = heads if heads is not None else [(l, h) for l in range(summary.n_layers) for h in range(summary.n_heads)]
    records = []
    for layer, head in heads:
        for row in example_rows(summary, layer, head):
            records.append(
                [
                    layer,
                    head,
                    row["rank"],
                    row["sentence"],
                    row["query"],
                    row["query_token"],
                    row["key"],
                    row["key_token"],
                    row["offset"],
                    row["weight"],
                    marked_text(row["tokens"], row["query"], row["key"], markup=False),
                ]
            )
    return pd.DataFrame(records, columns=EXAMPLE_COLUMNS)


STATISTIC_COLUMNS = ["layer", "head", "measure", "offset", "mean", "sentence_mean", "std", "p10", "p25", "p50", "p75", "p90", "sentences"]


def statistics_table(summary: CorpusSummary) -> pd.DataFrame:
    """Tidy: one row per head and measure. Measures: each statistic (`mean` over query tokens, the sentences'
    `sentence_mean`, `std` and quantiles for numbers in [0, 1]), `weight at offset` (one row per offset), and
    `badge: <name>` (`mean` = the share of sentences)."""
    records = []
    for layer in range(summary.n_layers):
        for head in range(summary.n_heads):
            for name, spread in summary.statistics(layer, head).items():
                quantiles = [spread.quantiles[q] if spread.quantiles else None for q in (0.1, 0.25, 0.5, 0.75, 0.9)]
                records.append([layer, head, name, None, spread.mean, spread.sentence_mean, spread.std, *quantiles, spread.sentences])
            for offset, spread in summary.offset_spread(layer, head).items():
                quantiles = [spread.quantiles[q] for q in (0.1, 0.25, 0.5, 0.75, 0.9)]
                records.append([layer, head, "weight at offset", offset, spread.mean, spread.sentence_mean, spread.std, *quantiles, spread.sentences])
            for badge, share in summary.badge_share(layer, head).items():
                records.append([layer, head, f"badge: {badge}", None, share, None, None, None, None, None, None, None, summary.n_sentences])
    return pd.DataFrame(records, columns=STATISTIC_COLUMNS)


def table_csv(table: pd.DataFrame) -> str:
    """A tidy table as CSV text (missing cells empty; a token such as "=" cannot run as a spreadsheet formula)."""
    rows = [[None if pd.isna(v) else v for v in row] for row in table.itertuples(index=False, name=None)]
    return table_to_csv(list(table.columns), rows)


def examples_csv(summary: CorpusSummary) -> str:
    return table_csv(examples_table(summary))


def statistics_csv(summary: CorpusSummary) -> str:
    return table_csv(statistics_table(summary))


# --- sections -----------------------------------------------------------------------------------------


def examples_section(
    summary: CorpusSummary,
    layer: int,
    head: int,
    page: int = 0,
    page_size: int = PAGE_SIZE,
    view: Settings | None = None,
    sentences: Sequence[str] | None = None,
) -> PageContent:
    """Figure and table `top-examples`: page `page` (from 0) of the head's strongest examples; values
    `examples_page`, `examples_pages`, `examples`. With the page's `view` and the `sentences` the summary
    read, the table's column `open` holds each example's `example_link` (none for a model trained in a
    browser session, which a link cannot carry)."""
    content = PageContent()
    rows = example_rows(summary, layer, head)
    pages = example_pages(len(rows), page_size)
    page = min(max(page, 0), pages - 1)
    shown = rows[page * page_size : (page + 1) * page_size]
    first = page * page_size + 1
    ranks = {r["rank"] for r in shown}

    def shown_examples() -> pd.DataFrame:  # the examples drawn (this page of them), tidy
        every = examples_table(summary, [(layer, head)])
        return every[every["rank"].isin(ranks)].reset_index(drop=True)

    content.figure_tables["top-examples"] = shown_examples
    content.figures["top-examples"] = top_examples_figure(
        shown,
        title=f"{head_name(layer, head).capitalize()}: its strongest weights over {summary.n_sentences:,} sentences"
        + (f" (examples {first}–{first + len(shown) - 1} of {len(rows)})" if pages > 1 else ""),
    )
    content.tables["top-examples"] = pd.DataFrame(
        [
            dict(
                rank=r["rank"],
                sentence=r["sentence"] + 1,
                query=f"{r['query']}: {r['query_token'].strip() or repr(r['query_token'])}",
                key=f"{r['key']}: {r['key_token'].strip() or repr(r['key_token'])}",
                offset=r["offset"],
                weight=round(r["weight"], 4),
                context=marked_text(r["tokens"], r["query"], r["key"], markup=False),
            )
            for r in shown
        ]
    )
    if view is not None and sentences is not None and view.model != SESSION_MODEL and shown:
        content.tables["top-examples"]["open"] = [example_link(view, sentences[r["sentence"]], layer, head, r["query"], r["key"]) for r in shown]
    content.values.update(examples_page=page, examples_pages=pages, examples=len(rows))
    if not rows:
        content.notice("examples-none", "No sentence of two tokens or more: there is no example to show.", "warning")
        return content
    offsets = [r["offset"] for r in rows]
    common = max(set(offsets), key=offsets.count)
    content.notice(
        "examples-caption",
        f"The {len(rows)} largest weights of {head_name(layer, head)} over {_corpus_words(summary)}: the query, in [brackets], "
        f"gives that weight to the key (bold). Query row 0 is left out, as on the Heads page. "
        f"{offsets.count(common)} of the {len(rows)} have the key at offset {common:+d} from the query; "
        f"weights from {rows[-1]['weight']:.3f} to {rows[0]['weight']:.3f}.",
        "caption",
    )
    return content


def _offset_series(summary: CorpusSummary, layer: int, head: int) -> dict:
    spreads = summary.offset_spread(layer, head)
    return dict(
        name=head_name(layer, head),
        mean=[spreads[o].mean if o in spreads else None for o in OFFSETS],
        low=[_quantile(spreads[o], LOW) if o in spreads else None for o in OFFSETS],
        high=[_quantile(spreads[o], HIGH) if o in spreads else None for o in OFFSETS],
    )


def _share_series(summary: CorpusSummary, layer: int, head: int) -> dict:
    spreads = summary.statistics(layer, head)
    return dict(
        name=head_name(layer, head),
        mean=[spreads[name].mean for name in SHARES],
        low=[_quantile(spreads[name], LOW) for name in SHARES],
        high=[_quantile(spreads[name], HIGH) for name in SHARES],
    )


WHISKERS = "whiskers: the 10th to 90th percentile of the sentences' own values"


def _spread_figures(content: PageContent, offset_id: str, shares_id: str, offsets, kinds, titles: tuple[str, str]) -> None:
    """The mean weight by offset and on kinds of token of one head or more (one series each), with the spread
    across sentences, and their tables."""
    content.figure_tables[offset_id] = lambda: tables.spread_table("offset", list(OFFSETS), offsets, "mean_weight")
    content.figure_tables[shares_id] = lambda: tables.spread_table("key", list(SHARES.values()), kinds, "mean_share")
    labels = [f"{o:+d}" if o else "0" for o in OFFSETS]
    content.figures[offset_id] = spread_bars_figure(
        labels, offsets, title=titles[0], x_title="offset of the key from the query (−1 = the previous token)", y_title="mean weight"
    )
    content.figures[shares_id] = spread_bars_figure(list(SHARES.values()), kinds, title=titles[1], x_title="key", y_title="mean share of a row's weight")


def head_section(summary: CorpusSummary, layer: int, head: int) -> PageContent:
    """Figures `by-offset`, `shares`, `badge-shares` of one head; table `head-statistics`; values
    `by_offset`, `badge_share`, `top_badge`, `top_badge_share`, `entropy`, `entropy_std`, `entropy_normalised`."""
    content = PageContent()
    name = head_name(layer, head)
    offsets, kinds = [_offset_series(summary, layer, head)], [_share_series(summary, layer, head)]
    _spread_figures(
        content,
        "by-offset",
        "shares",
        offsets,
        kinds,
        (
            f"{name.capitalize()}: mean weight by offset (key − query) over {summary.n_sentences:,} sentences",
            f"{name.capitalize()}: its weight on kinds of token",
        ),
    )
    shares = summary.badge_share(layer, head)
    badge_series = [dict(name=name, shares=[shares[b] for b in BADGES])]
    content.figures["badge-shares"] = badge_shares_figure(
        list(BADGES), badge_series, title=f"{name.capitalize()}: how often it gets each badge of the Heads page"
    )
    content.figure_tables["badge-shares"] = lambda: tables.badge_shares_table(list(BADGES), badge_series)
    statistics = summary.statistics(layer, head)
    content.tables["head-statistics"] = pd.DataFrame(
        [
            dict(
                measure=NAMES[key],
                mean=round(s.mean, 4),
                std_over_sentences=round(s.std, 4),
                p10=None if s.quantiles is None else round(s.quantiles[0.1], 3),
                median=None if s.quantiles is None else round(s.quantiles[0.5], 3),
                p90=None if s.quantiles is None else round(s.quantiles[0.9], 3),
            )
            for key, s in statistics.items()
        ]
    )
    content.tables["badge-rules"] = pd.DataFrame({"badge": list(BADGE_RULES), "rule (first that holds)": list(BADGE_RULES.values())})
    by_offset = summary.by_offset(layer, head)
    top_badge = max(BADGES, key=lambda b: shares[b])
    entropy = statistics["entropy"]
    content.values.update(
        by_offset=by_offset,
        badge_share=shares,
        top_badge=top_badge,
        top_badge_share=shares[top_badge],
        entropy=entropy.mean,
        entropy_std=entropy.std,
        entropy_normalised=statistics["entropy_normalised"].mean,
        n_sentences=summary.n_sentences,
        n_rows=summary.n_rows,
    )
    if not by_offset:
        return content
    peak = max(by_offset, key=by_offset.get)
    content.notice(
        "offset-caption",
        f"Bars: the mean weight at each offset over the query tokens that have a key there; {WHISKERS}. "
        f"The largest mean is at offset {peak:+d}: {by_offset[peak]:.3f}"
        + (f"; the previous token (−1) gets {by_offset[-1]:.3f}." if -1 in by_offset and peak != -1 else "."),
        "caption",
    )
    ordered = sorted(SHARES, key=lambda k: -statistics[k].mean)
    content.notice(
        "shares-caption",
        f"Mean share of a row's weight over the query tokens; {WHISKERS}. Largest: {SHARES[ordered[0]]} ({statistics[ordered[0]].mean:.0%}), "
        f"then {SHARES[ordered[1]]} ({statistics[ordered[1]].mean:.0%}). The shares overlap (the first token can be the previous one).",
        "caption",
    )
    others = [f"{b} on {shares[b]:.0%}" for b in sorted(BADGES, key=lambda b: -shares[b]) if b != top_badge and shares[b] >= 0.005]
    content.notice(
        "badges-caption",
        f"Badged “{top_badge}” on {shares[top_badge]:.0%} of the {summary.n_sentences:,} sentences" + (f"; {', '.join(others)}." if others else "."),
        "caption",
    )
    content.notice(
        "entropy-caption",
        f"Mean entropy {entropy.mean:.2f} {UNITS['entropy']} per row (standard deviation over sentences {entropy.std:.2f}); "
        f"on average {statistics['entropy_normalised'].mean:.0%} of a uniform row's.",
        "caption",
    )
    return content


def compare_section(summary: CorpusSummary, first: tuple[int, int], second: tuple[int, int]) -> PageContent:
    """Two heads side by side: figures `compare-offset`, `compare-shares`, `compare-badges`, table `compare`."""
    content = PageContent()
    (l1, h1), (l2, h2) = first, second
    a, b = head_name(l1, h1), head_name(l2, h2)
    offsets = [_offset_series(summary, l1, h1), _offset_series(summary, l2, h2)]
    kinds = [_share_series(summary, l1, h1), _share_series(summary, l2, h2)]
    _spread_figures(
        content,
        "compare-offset",
        "compare-shares",
        offsets,
        kinds,
        (
            f"Mean weight by offset: {a} beside {b}",
            f"Weight on kinds of token: {a} beside {b}",
        ),
    )
    shares_a, shares_b = summary.badge_share(l1, h1), summary.badge_share(l2, h2)
    badge_series = [dict(name=a, shares=[shares_a[x] for x in BADGES]), dict(name=b, shares=[shares_b[x] for x in BADGES])]
    content.figures["compare-badges"] = badge_shares_figure(list(BADGES), badge_series, title=f"How often each badge fires: {a} beside {b}")
    content.figure_tables["compare-badges"] = lambda: tables.badge_shares_table(list(BADGES), badge_series)
    stats_a, stats_b = summary.statistics(l1, h1), summary.statistics(l2, h2)
    rows = [dict(measure=NAMES[k], **{a: round(stats_a[k].mean, 4), b: round(stats_b[k].mean, 4)}) for k in STATISTICS]
    rows += [dict(measure=f"badge “{x}”, share of sentences", **{a: round(shares_a[x], 4), b: round(shares_b[x], 4)}) for x in BADGES]
    content.tables["compare"] = pd.DataFrame(rows)
    if first == second:
        content.notice("compare-same", "The two heads are the same head: choose another to compare.", "caption")
    return content


def grid_section(summary: CorpusSummary, statistic: str = "previous") -> PageContent:
    """Every head at once: figure `grid-badges` (the badge each head gets most often), figure `grid-<statistic>`
    (that statistic's mean, a heatmap), table `grid` (one row per head, every number; sortable)."""
    if statistic not in STATISTICS:
        raise ValueError(f"unknown statistic {statistic!r}; choose one of {', '.join(STATISTICS)}")
    content = PageContent()
    badges, shares = summary.most_common_badge()
    hover = [
        [
            f"{badges[l][h]} on {shares[l, h]:.0%} of sentences · prev {summary.mean('previous')[l, h]:.0%} · first {summary.mean('first')[l, h]:.0%} · "
            f"self {summary.mean('self')[l, h]:.0%} · delim+punct {summary.mean('delimiter')[l, h] + summary.mean('punctuation')[l, h]:.0%} · "
            f"entropy {summary.mean('entropy')[l, h]:.2f} bits"
            for h in range(summary.n_heads)
        ]
        for l in range(summary.n_layers)
    ]
    model = safe_label(summary.model_name)
    content.figures["grid-badges"] = badge_grid_figure(
        badges, shares.tolist(), hover, title=f"Every head of {model} over {summary.n_sentences:,} sentences: its most common badge, and on what share"
    )
    badge_rows = [
        dict(layer=l, head=h, badge=badges[l][h], share_of_sentences=float(shares[l, h])) for l in range(summary.n_layers) for h in range(summary.n_heads)
    ]
    content.figure_tables["grid-badges"] = lambda: pd.DataFrame(badge_rows, columns=tables.COLUMNS["grid-badges"])
    means = summary.mean(statistic).numpy().copy()  # [layer, head]
    content.figure_tables[f"grid-{statistic}"] = lambda: tables.grid(means, "layer", "head", "mean").assign(statistic=statistic)[tables.COLUMNS["grid-"]]
    bounded = statistic not in UNITS
    content.figures[f"grid-{statistic}"] = statistic_grid_figure(
        summary.mean(statistic).numpy(),
        title=f"Every head of {model}: {NAMES[statistic]}, mean over the query tokens",
        value_title=NAMES[statistic],
        zmax=1.0 if bounded else None,
        percent=bounded,
    )
    table = pd.DataFrame(summary.grid())
    content.tables["grid"] = table.round(4)
    content.values["grid_badge_counts"] = table["badge"].value_counts().to_dict()
    strong = {b: [(int(r.layer), int(r.head)) for r in table.itertuples() if r.badge == b and r.badge_share >= 0.9] for b in BADGES if b != "mixed"}
    found = [f"{b}: {_listed(heads)}" for b, heads in strong.items() if heads]
    content.values["heads_by_badge"] = strong
    content.notice(
        "grid-caption",
        f"Each square is a head (layer down, head across) in the colour of the badge it gets on most of the {summary.n_sentences:,} sentences. "
        + (
            "Heads (layer.head) with one badge on at least 90 % of the sentences — " + "; ".join(found) + "."
            if found
            else "No head gets one badge on 90 % of the sentences."
        ),
        "caption",
    )
    return content


LISTED = 10  # heads named in a caption before "and N more"


def _listed(heads: list[tuple[int, int]]) -> str:
    named = ", ".join(f"{l}.{h}" for l, h in heads[:LISTED])
    return named + (f" and {len(heads) - LISTED} more" if len(heads) > LISTED else "")


def corpus_page(
    summary: CorpusSummary,
    layer: int = 0,
    head: int = 0,
    compare: tuple[int, int] | None = None,
    page: int = 0,
    page_size: int = PAGE_SIZE,
    statistic: str = "previous",
    view: Settings | None = None,
    sentences: Sequence[str] | None = None,
) -> PageContent:
    """The whole page: the chosen head (examples, offsets, shares, badges), a second head beside it when
    `compare` is given, and every head at once. With `view` and `sentences`, links to the Attention page
    (`examples_section`). Tables `examples-csv`-ready: see `examples_csv`, `statistics_csv`."""
    layer = min(max(layer, 0), summary.n_layers - 1)
    head = min(max(head, 0), summary.n_heads - 1)
    content = examples_section(summary, layer, head, page, page_size, view, sentences).merge(head_section(summary, layer, head))
    if compare is not None:
        other = (min(max(compare[0], 0), summary.n_layers - 1), min(max(compare[1], 0), summary.n_heads - 1))
        content = content.merge(compare_section(summary, (layer, head), other))
    content = content.merge(grid_section(summary, statistic))
    for i, notice in enumerate(summary.notices):
        content.notice(f"corpus-notice-{i}", notice, "info")
    content.values.update(layer=layer, head=head)
    return content
