"""Small helpers shared by the figure modules (not part of the public API)."""

from __future__ import annotations

import numpy as np

from . import plain

# Traces that only decorate a chart (the "×" marks on masked cells, the outlines
# of token boxes) carry this ``meta`` so exports such as CSV can leave them out.
DECORATION_META = {"role": "decoration"}


def labels_meta(x_labels: list[str] | None, y_labels: list[str] | None) -> dict:
    """Trace ``meta`` holding every label of the x and/or y axis.

    Long axes show only every k-th tick label, so ``ticktext`` alone cannot
    give an export the full list; this copy can.
    """
    meta = {}
    if x_labels is not None:
        meta["x_labels"] = list(x_labels)
    if y_labels is not None:
        meta["y_labels"] = list(y_labels)
    return meta


def meta_labels(trace, letter: str, n: int) -> list[str] | None:
    """The labels stored by ``labels_meta`` for axis ``letter``, if there are ``n``."""
    meta = trace.get("meta") if isinstance(trace, dict) else getattr(trace, "meta", None)
    labels = meta.get(f"{letter}_labels") if isinstance(meta, dict) else None
    return list(labels) if labels is not None and len(labels) == n else None


def is_decoration(trace) -> bool:
    """Whether a trace (an object or its plotly JSON) was marked as decoration with ``DECORATION_META``."""
    meta = trace.get("meta") if isinstance(trace, dict) else getattr(trace, "meta", None)
    return isinstance(meta, dict) and meta.get("role") == DECORATION_META["role"]


def as_float32(array, *, ndim: int | None = None, name: str = "array") -> np.ndarray:
    """Copy ``array`` to float32 with every non-finite value turned into NaN.

    float32 keeps the figure JSON small (plotly sends numpy arrays as base64
    typed arrays, 4 bytes a value) and NaN is what plotly.js draws as a gap;
    ``-inf`` from a causal mask must never reach the browser as a colour.
    """
    out = np.array(array, dtype=np.float32, copy=True)
    if ndim is not None and out.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {out.shape}")
    out[~np.isfinite(out)] = np.nan
    return out


def apply_mask(matrix: np.ndarray, masked) -> np.ndarray:
    """Set the cells where ``masked`` is True to NaN (in place) and return ``matrix``."""
    if masked is None:
        return matrix
    mask = np.asarray(masked, dtype=bool)
    if mask.shape != matrix.shape:
        raise ValueError(f"masked has shape {mask.shape}, the matrix has {matrix.shape}")
    matrix[mask] = np.nan
    return matrix


def check_labels(labels, n: int, name: str) -> list[str]:
    """Return ``labels`` as a list, checking there is one per position."""
    labels = list(labels)
    if len(labels) != n:
        raise ValueError(f"{name} has {len(labels)} labels for {n} positions")
    return labels


def finite_range(*arrays: np.ndarray, symmetric: bool = False) -> tuple[float, float]:
    """The (min, max) of the finite values, widened so it is never empty.

    With ``symmetric`` the range is ``(-m, m)`` for the largest magnitude ``m``,
    which keeps zero at the centre of a diverging scale.
    """
    values = [a[np.isfinite(a)] for a in arrays]
    values = np.concatenate([v.ravel() for v in values]) if values else np.array([])
    if values.size == 0:
        return (-1.0, 1.0) if symmetric else (0.0, 1.0)
    low, high = float(values.min()), float(values.max())
    if symmetric:
        m = max(abs(low), abs(high)) or 1.0
        return -m, m
    if low == high:
        return low - 0.5, high + 0.5
    return low, high


def nothing_to_draw(title: str, why: str) -> dict:
    """An empty figure that says why it is empty ("no tokens", "no dimensions chosen").

    Figure functions return this for an input with nothing in it, instead of raising or drawing a
    blank chart; the annotation is named "message" so a test or an export can find it.
    """
    message = dict(name="message", text=f"Nothing to draw: {why}.", x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font=dict(size=16))
    return plain.figure([], dict(annotations=[message], title=plain.title(title), xaxis=dict(visible=False), yaxis=dict(visible=False), height=260))


LEGEND_BELOW_AXIS_PX = 58  # from the plot's bottom edge past its tick labels and axis title


def legend_below(plot_px: float, **more) -> dict:
    """A horizontal legend under the x axis's title, ``plot_px`` the plot's height: hung from its top, so
    that the rows a narrow screen or the print theme's fonts add grow down into the bottom margin, never up
    over the axis."""
    return dict(orientation="h", yanchor="top", y=-LEGEND_BELOW_AXIS_PX / max(plot_px, 1.0), xanchor="left", x=0.0, **more)


PANELS_MIN_WIDTH = 720  # side-by-side heatmap panels drawn narrower than this on a phone lose their labels


def keeps_width(layout: dict, px: int = PANELS_MIN_WIDTH) -> dict:
    """``layout``, whose chart keeps at least ``px`` of width on a narrower screen and scrolls inside its box
    there (ui/components/chart: ``meta.min_width``), as the Attention page's stages do."""
    layout.setdefault("meta", {})["min_width"] = px
    return layout
