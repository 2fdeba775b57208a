"""All-pairs covering arrays: a small set of rows in which every pair of factor levels occurs.

A full product of a dozen factors is millions of rows; most faults need only one or two factors set
in a particular way (Kuhn, Wallace & Gallo, "Software fault interactions and implications for
software testing", IEEE TSE 2004: in the systems they studied, 70–95 % of faults were triggered by a
single factor or a pair). An all-pairs array is a few times the product of the two largest factors.

`all_pairs` builds one greedily, in the spirit of AETG (Cohen et al., IEEE TSE 1997): each new row starts
from a pair not yet covered, then gives every other factor, in a seeded random order, the level that
covers the most pairs not yet covered (ties broken by the seeded generator). The best of a few
candidate rows is kept. Same factors and seed, same rows.
"""

from __future__ import annotations

import itertools
import random


def uncovered_pairs(factors: dict[str, tuple], rows: list[dict]) -> set[tuple]:
    """The pairs ((factor, level), (factor, level)) that no row holds."""
    names = list(factors)
    wanted = {((a, x), (b, y)) for a, b in itertools.combinations(names, 2) for x in range(len(factors[a])) for y in range(len(factors[b]))}
    for row in rows:
        index = {name: factors[name].index(row[name]) for name in names}
        wanted -= {((a, index[a]), (b, index[b])) for a, b in itertools.combinations(names, 2)}
    return wanted


def all_pairs(factors: dict[str, tuple], seed: int = 0, candidates: int = 20) -> list[dict]:
    """Rows (dicts factor → level) covering every pair of levels of every two factors."""
    names = list(factors)
    position = {name: i for i, name in enumerate(names)}
    left = {((a, x), (b, y)) for a, b in itertools.combinations(names, 2) for x in range(len(factors[a])) for y in range(len(factors[b]))}
    rng = random.Random(seed)
    rows: list[dict[str, int]] = []

    def pair(a: str, x: int, b: str, y: int) -> tuple:
        return ((a, x), (b, y)) if position[a] < position[b] else ((b, y), (a, x))

    while left:
        start = min(left)  # the first uncovered pair: deterministic, and every pair is reached
        best, best_gain = None, -1
        for _ in range(candidates):
            row = {start[0][0]: start[0][1], start[1][0]: start[1][1]}
            rest = [n for n in names if n not in row]
            rng.shuffle(rest)
            for name in rest:
                gains = [sum(pair(name, level, other, row[other]) in left for other in row) for level in range(len(factors[name]))]
                top = max(gains)
                row[name] = rng.choice([level for level, gain in enumerate(gains) if gain == top])
            gain = sum(pair(a, row[a], b, row[b]) in left for a, b in itertools.combinations(names, 2))
            if gain > best_gain:
                best, best_gain = row, gain
        rows.append(best)
        left -= {pair(a, best[a], b, best[b]) for a, b in itertools.combinations(names, 2)}
    return [{name: factors[name][row[name]] for name in names} for row in rows]
