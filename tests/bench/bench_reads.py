"""Reads under a flood (issue 11 §3): ``KWX_BENCH_READS`` (500) concurrent GETs of one read route
by tenant A against a real ``kwx serve`` (one worker, pool of ``KWX_POOL_SIZE`` 4, projector and
rate limits off, loopback), route by route, while tenant B reads its own table's state one request
at a time. Per route: the count of 200 / 503 (each with ``Retry-After``) / anything else, the
flood's p50 and p99, and B's p99 during the flood against B's p99 alone, measured just before in
the same run (the ratio says how much one tenant's flood slows another down).

Run: ``.venv/bin/python -m tests.bench reads`` (or ``make bench``). Bounded: N requests per route,
each with a 120-s timeout; B makes at most 2,000 requests per flood.
"""

from __future__ import annotations

import shutil
import tempfile
import time
import warnings
from pathlib import Path

from tests.bench import knob

N = knob("KWX_BENCH_READS", 500, 20)
ALONE = 40  # B's requests alone, before each flood


def _line(
    base: str, name: str, path: str, headers: dict[str, str], other: tuple[str, dict[str, str]]
) -> None:
    """One route's flood and its line."""
    from tests.service.readload import flood, sequential, summary

    alone = summary(sequential(base, *other, ALONE))
    started = time.perf_counter()
    result = flood(base, path, headers, N, other)
    seconds = time.perf_counter() - started
    counts = result.counts()
    no_retry = sum(1 for a in result.answers if a.status == 503 and not a.retry_after)
    flood_ms = summary(result.answers)
    during = summary(result.other)
    ratio = during["p99"] / alone["p99"] if alone["p99"] else float("nan")
    print(f"  {name:13} 200 {counts['200']:4}  503 {counts['503']:4}"
          f"{f' ({no_retry} without Retry-After)' if no_retry else ''}  other {counts['other']:3}  "
          f"p50 {flood_ms['p50']:6.0f} ms  p99 {flood_ms['p99']:6.0f} ms  in {seconds:4.1f} s;  B: p99 "
          f"{during['p99']:6.1f} ms during ({during['n']} reads) vs {alone['p99']:5.1f} ms alone "
          f"(x{ratio:.1f})")  # fmt: skip
    others = sorted({str(a.status) for a in result.answers if a.status not in (200, 503)})
    if others:
        print(f"      other answers: {', '.join(others)}")


def run() -> None:
    warnings.filterwarnings("ignore", module="platformdirs")
    from services.db import ensure_database, start_embedded
    from tests.service.readload import load_tables, routes, sequential
    from tests.service.serving import serving

    base_dir = Path(tempfile.mkdtemp(prefix="kwx-bench-reads-"))
    server = start_embedded(base_dir / "pg", cleanup_mode="delete")
    try:
        ensure_database(server.get_uri("postgres"), "bench")
        url = server.get_uri("bench")
        loaded = load_tables(url)
        env = {"KWX_PROJECTOR": "off", "KWX_LOG_LEVEL": "warning", "KWX_RATE_LIMIT_KEY": "off",
               "KWX_RATE_LIMIT_TENANT": "off"}  # fmt: skip
        other = (f"/v1/tables/{loaded.other_table}/state", loaded.other_key)
        configs = [
            ("the read gate as by default (KWX_READ_CONCURRENCY = pool size 4, KWX_READ_QUEUE 256, "
             "KWX_READ_WAIT 2 s)", {}),
            ("no gate to speak of (KWX_READ_CONCURRENCY=1000: every read runs at once, as before)",
             {"KWX_READ_CONCURRENCY": "1000", "KWX_READ_QUEUE": "1000"}),
        ]  # fmt: skip
        for label, extra in configs:
            with serving(url, base_dir / "serve.out", workers=1, **env, **extra) as (_, base, _):
                sequential(base, *other, 10)  # warm
                print(f"{N} concurrent GETs per route by tenant A, 1 worker, pool of 4, {label}; tenant "
                      "B's state reads meanwhile, one at a time:")  # fmt: skip
                for name, (path, headers) in routes(loaded).items():
                    _line(base, name, path, headers, other)
    finally:
        server.cleanup()
        shutil.rmtree(base_dir, ignore_errors=True)


if __name__ == "__main__":
    run()
