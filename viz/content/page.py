"""What one page shows, as plain data: figures, tables, notices and numbers, each under a stable id.

A page function (`attention_page`, `tokens_page`, …) builds a `PageContent` from the settings and a
trace; the Streamlit page lays it out, the command line writes its figures to files, and the
benchmark times and measures it. Nothing here imports streamlit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

LEVELS = ("info", "warning", "caption")


@dataclass(frozen=True)
class Notice:
    """A message for the reader. `text` is plain text (it may hold what a user typed): escape it to show it."""

    id: str
    text: str
    level: str = "info"  # "info", "warning" or "caption"

    def __post_init__(self):
        if self.level not in LEVELS:
            raise ValueError(f"notice level must be one of {LEVELS}, got {self.level!r}")


class TableBuilder:
    """A figure's table, built when called: `build()` (see `PageContent.figure_tables`). `held` names what
    `build` keeps alive (the arrays its closure captured), so that a cache that measures a content's bytes
    by following its attributes (ui.shared_cache.size_of) counts them too."""

    def __init__(self, build: Callable[[], pd.DataFrame]):
        self.build = build.build if isinstance(build, TableBuilder) else build
        self.held = tuple(cell.cell_contents for cell in (getattr(self.build, "__closure__", None) or ()))

    def __call__(self) -> pd.DataFrame:
        return self.build()


class TableBuilders(dict):
    """`{figure id: TableBuilder}`: a dict whose every value is wrapped as a `TableBuilder`, however it is set."""

    def __init__(self, *args, **kwargs):
        super().__init__()
        self.update(*args, **kwargs)

    def __setitem__(self, key, build) -> None:
        super().__setitem__(key, TableBuilder(build))

    def update(self, *args, **kwargs) -> None:
        for key, build in dict(*args, **kwargs).items():
            self[key] = build

    def setdefault(self, key, build=None):
        if key not in self:
            self[key] = build
        return self[key]


@dataclass
class PageContent:
    """Figures, tables and notices keyed by stable ids (the ids name the exported files), and the
    numbers a page writes into its prose (`values`).

    `figure_tables` holds, under a figure's id, what builds that figure's tidy table (its CSV: named
    columns, one row per number the figure shows; see `viz.content.figure_tables`), made from the arrays
    the page drew the figure from, not read back out of the figure. It is called only when a CSV is
    asked for, so drawing a page costs nothing more. A figure without one is written as a generic table
    read from its traces (`viz.export.figure_to_csv`)."""

    figures: dict[str, dict] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    notices: list[Notice] = field(default_factory=list)
    values: dict[str, object] = field(default_factory=dict)
    figure_tables: dict[str, Callable[[], pd.DataFrame]] = field(default_factory=TableBuilders)

    def __post_init__(self):
        if not isinstance(self.figure_tables, TableBuilders):
            self.figure_tables = TableBuilders(self.figure_tables)

    def notice(self, id: str, text: str, level: str = "info") -> None:
        self.notices.append(Notice(id, text, level))

    def notice_ids(self) -> list[str]:
        return [n.id for n in self.notices]

    def notices_for(self, prefix: str) -> list[Notice]:
        """The notices whose id starts with `prefix` (a page shows each group where it belongs)."""
        return [n for n in self.notices if n.id.startswith(prefix)]

    def merge(self, other: PageContent) -> PageContent:
        """Both contents in one (ids must not collide)."""
        clash = (set(self.figures) & set(other.figures)) | (set(self.tables) & set(other.tables))
        if clash:
            raise ValueError(f"ids used twice: {sorted(clash)}")
        return PageContent(
            {**self.figures, **other.figures},
            {**self.tables, **other.tables},
            self.notices + other.notices,
            {**self.values, **other.values},
            {**self.figure_tables, **other.figure_tables},
        )
