"""Benchmarks: ``make bench`` runs every ``bench_*.py`` (``python -m tests.bench [NAME …]``)."""

from __future__ import annotations

import os
from datetime import UTC, datetime

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
