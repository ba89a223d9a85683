"""tests/bench/bench_cluster.py's bookkeeping (no cluster, no timing: the CPU figures are given)."""

from __future__ import annotations

import os

import pytest

from tests.bench.bench_cluster import cpu_of, cpu_spent, ratio_summary


def test_a_process_that_ended_in_between_does_not_make_the_cpu_negative() -> None:
    # root 1: backend 11 exited during the window (a previous server's, closing lazily), 12 started
    before = [{1: 5.0, 10: 2.0, 11: 40.0}, {2: 1.0}]
    after = [{1: 5.5, 10: 2.25, 12: 0.5}, {2: 1.0}]
    assert cpu_spent(before, after) == pytest.approx([0.5 + 0.25 + 0.5, 0.0])


def test_cpu_of_reads_this_process_by_pid() -> None:
    (mine,) = cpu_of([os.getpid()])
    assert os.getpid() in mine and mine[os.getpid()] > 0


def test_the_ratio_line_is_the_median_and_the_range() -> None:
    assert ratio_summary([1.3, 0.8, 1.1]) == "1.10 [0.80–1.30]"
    assert ratio_summary([0.5, 0.7]) == "0.60 [0.50–0.70]"  # an even count: the mean of the middle two
