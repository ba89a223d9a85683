"""Benchmarks: ``make bench`` runs every ``bench_*.py`` (``python -m tests.bench [NAME …]``)."""

from __future__ import annotations

import os
from datetime import UTC, datetime

QUICK = os.environ.get("KWX_BENCH_QUICK", "") == "1"
"""``KWX_BENCH_QUICK=1`` (``make bench-quick``, run by ``.ci/run``): every benchmark at a size that
only proves it still runs to its end and prints its lines — its numbers mean nothing. Nothing else
runs the benchmarks, and two of them once failed on every run unseen."""


def knob(env: str, full: int, quick: int) -> int:
    """A benchmark's size: ``env`` when set, else ``quick`` under :data:`QUICK`, else ``full``."""
    value = os.environ.get(env)
    if value:
        return int(value)
    return quick if QUICK else full


AT = os.environ.get("KWX_BENCH_AT", "") == "1"
"""``KWX_BENCH_AT=1``: the simulated tables' events carry an ``at`` (each table from 2026-11-01
08:00 UTC), as a platform that sends its times does — so each settled hand counts in a player's day
row as well as the totals row (docs/projections.md §3). Without it (the default, the corpus issue 16's
numbers were measured on) no event has a time and the statistics write the totals rows only."""


def start() -> datetime | None:
    """The simulated tables' first ``at`` (:data:`AT`), or None: no times."""
    return datetime(2026, 11, 1, 8, 0, tzinfo=UTC) if AT else None


def said() -> str:
    """What a bench's ``events:`` line adds when the events carry times (:data:`AT`), else nothing."""
    return ", each with an at (KWX_BENCH_AT=1)" if AT else ""
