"""2-D maps of embedding vectors (after a projection such as PCA).

A *static* embedding is the row of the embedding table: "bank" has one
vector whatever the sentence. A *contextual* embedding is the hidden state
after some layers, so "bank" in "river bank" and in "bank account" ends up
in different places. ``projection_figure`` draws both, with an arrow from
each static point to its contextual versions; ``trajectory_figure`` follows
one token through the layers.

Both figures use equal axis scales: in a PCA projection a distance along
PC 1 means the same as along PC 2, and stretching one axis would lie.
"""

from __future__ import annotations


from . import plain
from ._common import nothing_to_draw
from .labels import safe_label
from .placement import LABELLED, place_point_labels
from .theme import PALETTE

STEP_NAMES = {"static": "static embedding", "input": "model input (before layer 0)"}
SYMBOLS = ("circle", "diamond", "square", "triangle-up", "cross", "star")


def _equal_axes(title: str) -> dict:
    """The layout of a PC 1 / PC 2 map: equal scales on both axes."""
    return dict(
        showlegend=True,
        title=plain.title(title),
        xaxis=dict(title=plain.title("PC 1"), zeroline=False),
        yaxis=dict(title=plain.title("PC 2"), zeroline=False, scaleanchor="x", scaleratio=1),
        legend=dict(itemsizing="constant"),
    )


# The sense figure has a fixed size, so that label boxes can be placed in pixels. Labels are placed
# for the print theme's font (the largest): a box centred on the same spot with a smaller font lies
# inside it, so labels that do not overlap in print do not overlap on screen either.
FIGURE_WIDTH, FIGURE_HEIGHT = 900, 620
MARGIN = dict(l=60, r=20, t=135, b=60)  # the legend sits in one row under the title
LABEL_FONT = 13  # on screen
PLACEMENT_FONT = 18  # the print theme's
MARKER_RADIUS = 8  # px: markers are obstacles too
NO_SENSE = "no sense given"
# Where the chart's box is narrower than FIGURE_WIDTH (a tablet's is about 736 px, a phone's 328-358 px), the
# browser draws the widest of these that fits, with the labels placed again for it (`_narrower`). A phone's
# plot has no room for labels placed for the print theme's font: its labels are placed for the screen's and
# keep it in the print theme too (label_font).
NARROWER = (
    dict(width=700, height=FIGURE_HEIGHT, margin=MARGIN),
    dict(width=320, height=480, margin=dict(l=50, r=12, t=135, b=55), label_font=LABEL_FONT),
)


def label_box_size(text: str, font_size: float = PLACEMENT_FONT) -> tuple[float, float]:
    """A generous estimate of a one-line label's box in pixels (width, height)."""
    return 0.62 * font_size * max(len(text), 1) + 8, 1.35 * font_size + 4


def _overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    """Whether two boxes (x0, y0, x1, y1) intersect."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _hits_circle(box: tuple[float, float, float, float], cx: float, cy: float, r: float) -> bool:
    nearest_x, nearest_y = min(max(cx, box[0]), box[2]), min(max(cy, box[1]), box[3])
    return (nearest_x - cx) ** 2 + (nearest_y - cy) ** 2 < r * r


def _crosses(box: tuple[float, float, float, float], segment: tuple[float, float, float, float]) -> bool:
    """Whether a segment (x0, y0, x1, y1) passes through a box (x0, y0, x1, y1): Liang–Barsky clipping."""
    x0, y0, x1, y1 = segment
    dx, dy = x1 - x0, y1 - y0
    enter, leave = 0.0, 1.0
    for p, q in ((-dx, x0 - box[0]), (dx, box[2] - x0), (-dy, y0 - box[1]), (dy, box[3] - y0)):
        if p == 0:
            if q < 0:
                return False  # parallel to this edge and outside it
        elif p < 0:
            enter = max(enter, q / p)
        else:
            leave = min(leave, q / p)
    return enter < leave


def place_labels(
    anchors: list[tuple[float, float]],
    texts: list[str],
    width: float,
    height: float,
    font_size: float = PLACEMENT_FONT,
    segments: list[tuple[float, float, float, float]] = (),
) -> list[tuple[float, float]]:
    """Offsets (dx, dy) in pixels, one per label, from its anchor to its box centre, so that no two boxes
    overlap, no box covers a marker, and boxes stay in the `width` × `height` plot area and off the
    `segments` (arrows, x0, y0, x1, y1) when they can.

    anchors: the points in pixels (x to the right, y downwards). Greedy: each label takes the nearest
    free spot on rings of growing radius around its point: inside the plot area and off the arrows, else
    inside it, else anywhere.
    """
    import math

    placed: list[tuple[float, float, float, float]] = []
    offsets = []
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))  # long labels first: they are the hardest
    chosen: dict[int, tuple[float, float]] = {}
    for i in order:
        (ax, ay), (w, h) = anchors[i], label_box_size(texts[i], font_size)
        best = None
        for inside, clear in ((True, True), (True, False), (False, True), (False, False)):
            if not clear and not segments:
                continue  # tried already
            for radius in (14, 22, 32, 44, 58, 75, 95, 120, 150, 185, 225, 270, 320, 380, 450):
                steps = max(8, int(2 * math.pi * radius / 18))
                for k in range(steps):
                    angle = -math.pi / 2 + 2 * math.pi * k / steps  # start above the point
                    dx, dy = radius * math.cos(angle) * (1 + w / (2 * h) * 0.35), radius * math.sin(angle)
                    box = (ax + dx - w / 2, ay + dy - h / 2, ax + dx + w / 2, ay + dy + h / 2)
                    if inside and (box[0] < 0 or box[1] < 0 or box[2] > width or box[3] > height):
                        continue
                    if any(_overlaps(box, other) for other in placed):
                        continue
                    if any(_hits_circle(box, px, py, MARKER_RADIUS) for px, py in anchors):
                        continue
                    if clear and any(_crosses(box, segment) for segment in segments):
                        continue
                    best = (dx, dy, box)
                    break
                if best:
                    break
            if best:
                break
        if best is None:  # nowhere free: stack it below everything placed (never on top of a label)
            bottom = max((b[3] for b in placed), default=ay)
            best = (0.0, bottom + h / 2 + 2 - ay, (ax - w / 2, bottom + 2, ax + w / 2, bottom + 2 + h))
        placed.append(best[2])
        chosen[i] = (best[0], best[1])
    offsets = [chosen[i] for i in range(len(texts))]
    return offsets


def _plot_ranges(xs: list[float], ys: list[float], plot_w: float, plot_h: float, pad: float = 0.12) -> tuple[list[float], list[float]]:
    """Axis ranges with equal scale in both directions that fill a `plot_w` × `plot_h` area."""
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    span = max(x1 - x0, y1 - y0, 1e-6)
    x0, x1, y0, y1 = x0 - pad * span, x1 + pad * span, y0 - pad * span, y1 + pad * span
    scale = min(plot_w / (x1 - x0), plot_h / (y1 - y0))  # px per unit
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    half_w, half_h = plot_w / scale / 2, plot_h / scale / 2
    return [cx - half_w, cx + half_w], [cy - half_h, cy + half_h]


def _placed(labelled: list[tuple], arrows: list[dict], width: float, height: float, margin: dict, font_size: float = PLACEMENT_FONT) -> tuple[list, list, list]:
    """For labelled points `(x, y, text, …)` and `arrows` in a figure `width` × `height` px with `margin`: the
    axis ranges (equal scales, filling the plot area) and each label's offset from its point (`place_labels`)."""
    plot_w, plot_h = width - margin["l"] - margin["r"], height - margin["t"] - margin["b"]
    x_range, y_range = _plot_ranges([l[0] for l in labelled], [l[1] for l in labelled], plot_w, plot_h)
    scale = plot_w / (x_range[1] - x_range[0])  # px per unit, the same on both axes

    def pixels(x: float, y: float) -> tuple[float, float]:  # x to the right, y downwards, from the plot's corner
        return (x - x_range[0]) * scale, (y_range[1] - y) * scale

    anchors = [pixels(x, y) for x, y, *_ in labelled]
    segments = [(*pixels(float(a["x0"]), float(a["y0"])), *pixels(float(a["x1"]), float(a["y1"]))) for a in arrows]
    return list(x_range), list(y_range), place_labels(anchors, [l[2] for l in labelled], plot_w, plot_h, font_size, segments)


def _narrower(labelled: list[tuple], arrows: list[dict], *, width: int, height: int, margin: dict, label_font: float | None = None) -> dict:
    """The figure's layout patch for a chart `width` px wide (ui/components/chart/chart.js, `narrower`):
    its size and margins, the axis ranges of the same points in that plot area, and each label's offset
    placed again for it (for `label_font`, which the labels then keep, else for PLACEMENT_FONT). The
    annotations are patched item by item: the arrows (first) keep theirs."""
    x_range, y_range, offsets = _placed(labelled, arrows, width, height, margin, label_font or PLACEMENT_FONT)
    font = dict(font=dict(size=label_font)) if label_font else {}
    annotations = [{} for _ in arrows] + [dict(ax=dx, ay=dy, **font) for dx, dy in offsets]
    return dict(width=width, height=height, margin=dict(margin), xaxis=dict(range=x_range), yaxis=dict(range=y_range), annotations=annotations)


def _series_key(point: dict) -> tuple[str, str | None]:
    group = str(point.get("group", ""))
    if group == "contextual":
        return group, point.get("sense") or NO_SENSE
    return group, None


def projection_figure(
    points: list[dict],
    arrows: list[dict],
    *,
    title: str,
    centroids: dict[str, tuple[float, float]] | None = None,
) -> dict:
    """Labelled points in the PC 1 / PC 2 plane, contextual points grouped by sense, arrows between them.

    ``points``: dicts with ``label``, ``group`` ("static", "contextual", "reference"), ``sense`` (a
    name or None), ``x``, ``y``. Contextual points are coloured and shaped by sense (one legend entry
    per sense), static points are black squares, reference words grey diamonds; so the chart reads in
    greyscale and for colour-blind readers. ``centroids``: sense → (x, y), drawn as a cross with the
    sense's name. ``arrows``: dicts ``{x0, y0, x1, y1, label}`` from the static point to each
    contextual one. Labels are placed so that they never overlap (see ``place_labels``).

    The figure is ``FIGURE_WIDTH`` px wide; ``layout.meta.narrower`` holds the same plane for narrower
    charts (``NARROWER``: a tablet's, a phone's), its labels placed again, and the browser draws the widest
    that fits the chart's box. Exports keep the figure as it is.
    """
    centroids = centroids or {}
    senses = list(dict.fromkeys(_series_key(p)[1] for p in points if p.get("group") == "contextual"))
    colour = {sense: PALETTE[i % len(PALETTE)] for i, sense in enumerate(s for s in senses if s != NO_SENSE)}
    colour[NO_SENSE] = "#777777"
    sense_symbol = {sense: SYMBOLS[i % len(SYMBOLS)] for i, sense in enumerate(senses)}
    style = {
        "static": dict(symbol="square", color="#222222", name="static (embedding table)"),
        "reference": dict(symbol="diamond", color="#999999", name="reference words (in context)"),
    }

    if not points:
        return nothing_to_draw(title, "the word occurs in none of the sentences")
    series: dict[tuple[str, str | None], list[dict]] = {}
    for point in points:
        series.setdefault(_series_key(point), []).append(point)

    data, annotations = [], []
    for (group, sense), members in series.items():
        if group == "contextual":
            look = dict(symbol=sense_symbol[sense], color=colour[sense], name=f"in context · {sense}")
        else:
            look = style.get(group, dict(symbol="circle", color="#555555", name=group))
        data.append(
            dict(
                type="scatter",
                x=[float(p["x"]) for p in members],
                y=[float(p["y"]) for p in members],
                mode="markers",
                name=safe_label(look["name"]),
                text=[safe_label(p.get("label", "")) for p in members],
                marker=dict(size=13 if group == "contextual" else 11, symbol=look["symbol"], color=look["color"], line=dict(width=1, color="white")),
                hovertemplate="%{text}<br>%{fullData.name}<br>(%{x:.3f}, %{y:.3f})<extra></extra>",
            )
        )
    if centroids:
        data.append(
            dict(
                type="scatter",
                x=[c[0] for c in centroids.values()],
                y=[c[1] for c in centroids.values()],
                mode="markers",
                name="centre of each sense",
                text=[safe_label(name) for name in centroids],
                marker=dict(size=16, symbol="x-thin", line=dict(width=3, color=[colour.get(n, "#777777") for n in centroids])),
                hovertemplate="centre of “%{text}”<br>(%{x:.3f}, %{y:.3f})<extra></extra>",
            )
        )

    for arrow in arrows:
        annotations.append(
            dict(
                x=float(arrow["x1"]),
                y=float(arrow["y1"]),
                ax=float(arrow["x0"]),
                ay=float(arrow["y0"]),
                xref="x",
                yref="y",
                axref="x",
                ayref="y",
                text="",
                hovertext=safe_label(arrow.get("label", "")),
                showarrow=True,
                arrowhead=2,
                arrowsize=1.1,
                arrowwidth=1.2,
                arrowcolor="rgba(90,90,90,0.55)",
                standoff=8,
                startstandoff=7,
            )
        )

    layout = _equal_axes(title)
    labelled = [(float(p["x"]), float(p["y"]), safe_label(p.get("label", "")), p) for p in points]
    labelled += [(c[0], c[1], safe_label(f"centre: {name}"), None) for name, c in centroids.items()]
    x_range, y_range, offsets = _placed(labelled, arrows, FIGURE_WIDTH, FIGURE_HEIGHT, MARGIN)
    for (x, y, text, point), (dx, dy) in zip(labelled, offsets):
        sense = _series_key(point)[1] if point else None
        annotations.append(
            dict(
                x=x,
                y=y,
                xref="x",
                yref="y",
                text=text,
                ax=dx,
                ay=dy,
                axref="pixel",
                ayref="pixel",
                showarrow=True,
                arrowhead=0,
                arrowwidth=0.8,
                arrowcolor="rgba(120,120,120,0.7)",
                standoff=6,
                xanchor="center",
                yanchor="middle",
                font=dict(size=LABEL_FONT, color=colour.get(sense, "#333333") if point and point.get("group") == "contextual" else "#333333"),
                bgcolor="rgba(255,255,255,0.75)",
                name="label",
            )
        )
    layout["xaxis"]["range"], layout["yaxis"]["range"] = x_range, y_range
    layout["annotations"] = annotations
    layout["legend"].update(orientation="h", yanchor="bottom", y=1.01, x=0, xanchor="left")
    layout["title"].update(y=0.97, yanchor="top")
    layout.update(width=FIGURE_WIDTH, height=FIGURE_HEIGHT, margin=dict(MARGIN))
    layout["meta"] = dict(narrower=[_narrower(labelled, arrows, **size) for size in NARROWER])
    return plain.figure(data, layout)


def sense_layers_figure(by_layer: list[dict], *, title: str) -> dict:
    """Per layer: mean similarity of an occurrence to the others of its sense, and to the other sense's.

    ``by_layer``: dicts ``{layer, same, other, ratio}`` from the static embedding ("static") through
    the input (0) to the last layer. Where the two lines part is where the network tells the senses apart.
    """
    if not by_layer:
        return nothing_to_draw(title, "give the sense of the word in at least two sentences of two senses")
    names = [("static" if b["layer"] == "static" else "input" if b["layer"] == 0 else f"after layer {b['layer'] - 1}") for b in by_layer]
    x = list(range(len(by_layer)))
    data = []
    for key, name, colour, dash in (("same", "same sense", PALETTE[0], "solid"), ("other", "other sense", PALETTE[5], "dash")):
        data.append(
            dict(
                type="scatter",
                x=x,
                y=[float(b[key]) for b in by_layer],
                mode="lines+markers",
                name=name,
                line=dict(color=colour, width=2.5, dash=dash),
                marker=dict(size=9, color=colour),
                customdata=[[n, float(b["ratio"])] for n, b in zip(names, by_layer)],
                hovertemplate="%{customdata[0]}<br>" + name + ": mean cosine %{y:.3f}<br>centre distance ÷ spread %{customdata[1]:.2f}<extra></extra>",
            )
        )
    layout = dict(
        title=plain.title(title),
        xaxis=dict(title=plain.title("where in the network"), tickmode="array", tickvals=x, ticktext=names),
        yaxis=dict(title=plain.title("mean cosine similarity (centred)")),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0),
        height=420,
    )
    return plain.figure(data, layout)


def trajectory_figure(tracks: dict[str, list[tuple[float, float]]], *, title: str) -> dict:
    """Paths of tokens through the layers, one line per token.

    ``tracks`` maps a label to its ``(x, y)`` points: the static embedding,
    the model input, then the output of each layer. Markers are named
    "static", "input", "L0", "L1", … (layers count from 0), so the reader can
    follow where in the network a token's meaning moves.
    """
    if not tracks:
        return nothing_to_draw(title, "the word occurs in none of the sentences")
    data = []
    for index, (label, points) in enumerate(tracks.items()):
        steps = ["static", "input", *(f"L{layer}" for layer in range(len(points) - 2))][: len(points)]
        name = safe_label(label)
        colour = PALETTE[index % len(PALETTE)]
        data.append(
            dict(
                type="scatter",
                x=[float(x) for x, _ in points],
                y=[float(y) for _, y in points],
                mode="lines+markers+text",
                name=name,
                text=steps,
                customdata=[STEP_NAMES.get(step, f"after layer {step[1:]}") for step in steps],
                textposition="top center",
                textfont=dict(size=11, color=colour),
                line=dict(color=colour, width=2),
                marker=dict(size=9, color=colour),
                hovertemplate="%{fullData.name}<br>%{customdata}<br>(%{x:.3f}, %{y:.3f})<extra></extra>",
                meta=dict(role=LABELLED, labels=steps),
            )
        )
    return place_point_labels(plain.figure(data, _equal_axes(title)))
