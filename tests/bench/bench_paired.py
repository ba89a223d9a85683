"""`make bench`'s line for tests/bench/paired.py: the base commit (``KWX_BENCH_BASE``, else 461a6ab)
against HEAD in paired, interleaved rounds, at paired.py's defaults (``KWX_BENCH_PAIRS`` pairs). A base
commit the clone doesn't have (a shallow clone) is reported and skipped."""

from __future__ import annotations


def run() -> None:
    from tests.bench.paired import main

    main([])
