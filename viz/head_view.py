"""The head view: a sentence twice, with a line from each query token to each key it attends to.

One colour per head, a line's opacity is its weight, lines below a threshold are not drawn. The
interactive view is a Streamlit component (ui/head_view.py, JavaScript in ui/components/head_view/);
this module builds the plain data it draws, the same drawing as a plotly figure (so PNG and SVG go
through the export path of every other figure), the pinned row as CSV, and a standalone HTML page.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass

import numpy as np

from viz import plain
from viz.export.tables import frame_to_csv
from viz.labels import safe_label

THRESHOLD = 0.02  # lines of a smaller weight are not drawn (the view says how many)
FOCUS_WINDOW = 128  # longer inputs are shown this many positions at a time
OPACITY_BINS = 8  # the figure groups lines into this many opacity steps (one plotly trace each)

# Okabe & Ito without black, then Paul Tol's muted colours: twelve heads, one colour each.
HEAD_COLORS = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#C9B200",
    "#882255",
    "#44AA99",
    "#999933",
    "#332288",
    "#AA4499",
)


def head_color(head: int) -> str:
    return HEAD_COLORS[head % len(HEAD_COLORS)]


@dataclass
class HeadView:
    """What the head view draws: attention weights of some heads between the positions of a sentence."""

    labels: list[str]  # per position (token, or word when `words`), as typed
    heads: list[int]  # the head numbers drawn
    weights: np.ndarray  # [head, query_pos, key_pos] float32, rows sum to 1 (0 on fully masked rows)
    masked: np.ndarray  # [head, query_pos, key_pos] bool, True where the mask hides the key
    layer: int
    title: str
    words: bool = False  # merged into words: sum over a word's key pieces, mean over its query pieces
    pieces: list[list[int]] | None = None  # with `words`, the token positions of each word
    threshold: float = THRESHOLD

    @property
    def n(self) -> int:
        return len(self.labels)

    def hidden_lines(self) -> tuple[int, int]:
        """(lines not drawn because their weight is below the threshold, lines with any weight)."""
        nonzero = self.weights > 0
        return int((nonzero & (self.weights < self.threshold)).sum()), int(nonzero.sum())

    def note(self) -> str:
        hidden, total = self.hidden_lines()
        parts = [f"Lines below a weight of {self.threshold:g} are not drawn ({hidden:,} of {total:,})."]
        if self.words:
            parts.insert(0, "Word level: a word's weight to a key word is the sum over the key word's pieces, averaged over the query word's pieces.")
        if self.n > FOCUS_WINDOW:
            parts.append(f"{self.n} positions: shown {FOCUS_WINDOW} at a time (focus window).")
        return " ".join(parts)


def head_view_data(trace, sentence: int, layer: int, heads: list[int], words: bool = False, stages=None) -> HeadView:
    """The head view of one sentence, layer and set of heads, read from a trace (positions padded to the batch)."""
    from model.words import word_groups, word_pattern

    stages = stages if stages is not None else trace.stages(layer)
    n_pos = trace.input_ids.shape[1]
    pattern = stages.pattern[sentence, heads]  # [head, query_pos, key_pos]
    masked = ~stages.mask[sentence, heads]
    tokens = trace.tokens[sentence]
    labels = [t.text for t in tokens] + ["[PAD]"] * (n_pos - len(tokens))
    pieces = None
    if words:
        groups = word_groups(tokens, trace.texts[sentence], n_pos=n_pos)
        pattern = word_pattern(pattern, groups)
        # a word pair is masked when every piece pair is
        masked = word_pattern((~masked).double(), groups) == 0
        labels, pieces = groups.labels, groups.positions
    level = "words" if words else "tokens"
    title = f"{safe_label(trace.model_name)} · layer {layer} · head{'s' if len(heads) > 1 else ''} {', '.join(map(str, heads))} · {level}"
    return HeadView(
        labels=labels,
        heads=list(heads),
        weights=pattern.float().numpy().astype(np.float32),
        masked=masked.numpy().astype(bool),
        layer=layer,
        title=title,
        words=words,
        pieces=pieces,
    )


def focus_start(n: int, pinned: int | None, window: int = FOCUS_WINDOW) -> int:
    """The first position of the focus window that centres the pinned token (0 when all fit)."""
    if n <= window or pinned is None:
        return 0
    return int(min(max(pinned - window // 2, 0), n - window))


STANDALONE_FULL = 256  # a standalone page carries every weight up to this many positions (for its table)


def component_data(view: HeadView, pinned: int | None = None, pair: tuple[int, int] | None = None, seq: int = 0, full: bool = False) -> dict:
    """The JSON the component draws: lines above the threshold (weights in thousandths), the pinned row in full.

    With `full`, every row's weights too (a standalone page has no server to ask for a pinned row).
    """
    lines = []
    for index, head in enumerate(view.heads):
        w = view.weights[index]
        q, k = np.nonzero(w >= view.threshold)
        lines.append(
            dict(
                head=head,
                color=head_color(head),
                q=q.tolist(),
                k=k.tolist(),
                w=np.rint(w[q, k] * 1000).astype(int).tolist(),
            )
        )
    row = None
    if pinned is not None and 0 <= pinned < view.n:
        row = dict(
            query=pinned,
            weights=[[round(float(x), 6) for x in view.weights[i, pinned]] for i in range(len(view.heads))],
            masked=[bool(x) for x in view.masked[:, pinned].all(axis=0)],
        )
    hidden, total = view.hidden_lines()
    return dict(
        signature=f"{view.title}|{view.n}|{hash(view.weights.tobytes())}",
        tokens=view.labels,
        lines=lines,
        threshold=view.threshold,
        hidden=hidden,
        total=total,
        note=view.note(),
        words=view.words,
        pinned=pinned if row is not None else None,
        row=row,
        pair=list(pair) if pair is not None else None,
        seq=seq,
        window=FOCUS_WINDOW,
        title=view.title,
        full=[dict(weights=np.round(view.weights[:, q], 6).tolist(), masked=view.masked[:, q].all(axis=0).tolist()) for q in range(view.n)] if full else None,
    )


def head_view_figure(view: HeadView, pinned: int | None = None, pair: tuple[int, int] | None = None) -> dict:
    """The head view as a plotly figure: the drawing the component shows, for PNG and SVG export.

    With a pinned token only its row is drawn, otherwise every line above the threshold. Inputs longer
    than the focus window are drawn around the pinned token (or from the start).
    """
    start = focus_start(view.n, pinned)
    stop = min(view.n, start + FOCUS_WINDOW)
    shown = range(start, stop)
    data = []
    left, right = 0.0, 1.0
    gap = 0.03  # between a label and the end of its lines
    spread = min(0.12, 0.5 / (len(view.heads) - 1)) if len(view.heads) > 1 else 0.0
    for index, head in enumerate(view.heads):
        shift = (index - (len(view.heads) - 1) / 2) * spread  # heads side by side, as in the component
        w = view.weights[index]
        rows = [pinned] if pinned is not None else list(shown)
        q, k = np.nonzero(w[rows][:, start:stop] >= view.threshold)
        q = np.asarray(rows)[q]
        k = k + start
        weight = w[q, k]
        bins = np.minimum((weight * OPACITY_BINS).astype(int), OPACITY_BINS - 1)
        for b in range(OPACITY_BINS):
            chosen = bins == b
            if not chosen.any():
                continue
            xs, ys = [], []
            for qi, ki in zip(q[chosen], k[chosen]):
                xs += [left + gap, right - gap, None]
                ys += [-(qi - start) - shift, -(ki - start) - shift, None]
            data.append(
                dict(
                    type="scatter",
                    x=xs,
                    y=ys,
                    mode="lines",
                    hoverinfo="skip",
                    line=dict(color=head_color(head), width=2),
                    opacity=(b + 1) / OPACITY_BINS,
                    name=f"head {head}",
                    legendgroup=f"head {head}",
                    showlegend=False,
                )
            )
        data.append(
            dict(  # the legend entry of the head
                type="scatter",
                x=[None],
                y=[None],
                mode="lines",
                line=dict(color=head_color(head), width=3),
                name=f"head {head}",
                legendgroup=f"head {head}",
            )
        )
    if pair is not None and start <= pair[0] < stop and start <= pair[1] < stop:
        data.append(
            dict(
                type="scatter",
                x=[left + gap, right - gap],
                y=[-(pair[0] - start), -(pair[1] - start)],
                mode="lines",
                hoverinfo="skip",
                line=dict(color="black", width=3, dash="dot"),
                name="worked example",
            )
        )
    labels = [safe_label(view.labels[i], max_chars=24) for i in shown]
    ys = [-(i - start) for i in shown]
    bold = lambda i, text: f"<b>{text}</b>" if i == pinned else text  # noqa: E731
    data.append(
        dict(
            type="scatter",
            x=[left] * len(ys),
            y=ys,
            mode="text",
            text=[bold(i, t) for i, t in zip(shown, labels)],
            textposition="middle left",
            hoverinfo="skip",
            showlegend=False,
            meta={"role": "decoration"},
        )
    )
    data.append(
        dict(
            type="scatter",
            x=[right] * len(ys),
            y=ys,
            mode="text",
            text=labels,
            textposition="middle right",
            hoverinfo="skip",
            showlegend=False,
            meta={"role": "decoration"},
        )
    )
    pinned_note = f" · row of “{safe_label(view.labels[pinned], max_chars=24)}” ({pinned})" if pinned is not None else ""
    window_note = f" · positions {start}–{stop - 1} of {view.n}" if view.n > FOCUS_WINDOW else ""
    layout = dict(
        title=dict(text=f"{view.title}{pinned_note}{window_note}<br><sup>{html.escape(view.note())}</sup>"),
        height=max(360, 22 * len(ys) + 160),
        width=720,
        xaxis=dict(visible=False, range=[-0.9, 1.9]),
        yaxis=dict(visible=False, range=[-(len(ys) - 0.5), 0.8]),
        plot_bgcolor="white",
        paper_bgcolor="white",
        margin=dict(l=20, r=20, t=90, b=20),
        legend=dict(orientation="h", y=-0.02, yanchor="top"),
        annotations=[
            dict(x=left, y=0.8, text="query (attends from)", showarrow=False, xanchor="right", font=dict(size=12)),
            dict(x=right, y=0.8, text="key (attends to)", showarrow=False, xanchor="left", font=dict(size=12)),
        ],
    )
    return plain.figure(data, layout, template="plotly")  # plotly's default template, as drawn before (no template of its own)


TOKEN_COLUMNS = ["layer", "head", "query_position", "query_token", "key_position", "key_token", "weight"]
WORD_COLUMNS = ["layer", "head", "query_word_position", "query_word", "key_word_position", "key_word", "weight"]


def head_view_table(view: HeadView, query: int | None = None):
    """Every weight of the view as a tidy `pandas.DataFrame`, lines below the threshold included: a row
    per head, query and key (`TOKEN_COLUMNS`; `WORD_COLUMNS` at word level), masked pairs empty.
    `query`: that query's rows only."""
    import pandas as pd

    columns = WORD_COLUMNS if view.words else TOKEN_COLUMNS
    queries = np.arange(view.n) if query is None else np.array([query])
    weights = np.where(view.masked, np.nan, view.weights)[:, queries]  # [head, query, key]
    n_heads, n_queries, n_keys = weights.shape
    head_index = np.repeat(np.arange(n_heads), n_queries * n_keys)
    query_positions = np.tile(np.repeat(queries, n_keys), n_heads)
    key_positions = np.tile(np.arange(n_keys), n_heads * n_queries)
    labels = np.array(view.labels, dtype=object)
    cells = (
        np.full(weights.size, view.layer),
        np.asarray(view.heads)[head_index],
        query_positions,
        labels[query_positions],
        key_positions,
        labels[key_positions],
        weights.ravel().astype(np.float32),
    )
    return pd.DataFrame(dict(zip(columns, cells)))


def pinned_row_csv(view: HeadView, pinned: int) -> str:
    """The pinned query's weights to every key, in every head of the view: `head_view_table`'s rows of
    that query as CSV (masked keys empty, formulas neutralised)."""
    return frame_to_csv(head_view_table(view, pinned))


def head_view_html(view: HeadView, js: str, css: str, pinned: int | None = None) -> bytes:
    """A standalone page with the interactive head view (its own JavaScript and CSS inline, no network)."""
    data = component_data(view, pinned, full=view.n <= STANDALONE_FULL)
    module = js.replace("export default function", "function", 1)
    payload = json.dumps(data).replace("</", "<\\/")
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(view.title)}</title>
<style>
:root {{ --st-text-color: #31333f; --st-background-color: #ffffff; --st-primary-color: #ff4b4b;
  --st-border-color: #d6d6d9; --st-secondary-background-color: #f0f2f6;
  --st-font: "Source Sans Pro", system-ui, sans-serif; }}
body {{ font-family: var(--st-font); color: var(--st-text-color); margin: 24px; }}
{css}
</style></head>
<body><h1 style="font-size:1.2rem">{html.escape(view.title)}</h1><div id="root"></div>
<script>
{module}
const root = document.getElementById("root");
const state = {{ data: {payload} }};
const rerender = () => headView({{
  data: state.data, key: "standalone", name: "head_view", parentElement: root,
  setStateValue: () => {{}},
  setTriggerValue: (name, value) => {{
    if (name === "pin") {{ state.data = {{ ...state.data, pinned: value.index, seq: value.seq, row: null }}; rerender(); }}
  }},
}});
rerender();
</script></body></html>
"""
    return page.encode("utf-8")
