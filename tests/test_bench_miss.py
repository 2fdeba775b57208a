"""`python -m bench.miss`: the CPU of a cache miss per page, printed against issue 19's target."""

from __future__ import annotations

import re

import pytest

from bench.miss import PAGES, TARGET_S, main


def test_the_miss_benchmark_prints_a_row_per_page_and_size_with_its_verdict(capsys):
    assert main(["--sizes", "8,12", "--repeats", "1", "--pages", "next-token,tokens"]) == 0
    out = capsys.readouterr().out
    assert f"target {TARGET_S} s" in out
    rows = re.findall(r"^\s+(\d+)\s+(\S+)\s+([\d.]+)s\s+([\d.]+)s\s+([\d.]+)s\s+([\d.]+)s\s+(\d+)\s+(met|NOT met)\s+[\d.]+$", out, re.M)
    assert [(size, page) for size, page, *_ in rows] == [("8", "next-token"), ("8", "tokens"), ("12", "next-token"), ("12", "tokens")]
    for _, _, figures, json_s, cpu, _wall, n, verdict in rows:
        assert abs(float(figures) + float(json_s) - float(cpu)) <= 0.0015  # the CPU column is the sum of its parts
        assert int(n) >= 2 and verdict == ("met" if float(cpu) <= TARGET_S else "NOT met")
    assert "attention" in PAGES and "heads" in PAGES


def test_the_miss_benchmark_refuses_an_unknown_page(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--pages", "nowhere"])
    assert stop.value.code == 2
    assert "unknown page(s) ['nowhere']" in capsys.readouterr().err
