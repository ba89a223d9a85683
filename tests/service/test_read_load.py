"""500 concurrent reads of every read route against a real ``kwx serve`` (one worker, a pool of 4,
the read gate as by default; issue 11 §3) while another tenant reads its own table: every answer
is a 200 or a 503 with ``Retry-After`` (the gate's quick refusal), nothing else — no other 5xx, no
connection dropped, nothing past the 120-s bound per request. Outcomes only; the latencies are
tests/bench/bench_reads.py's to print."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.service.readload import Answer, Loaded, flood, load_tables, routes
from tests.service.serving import serving

pytestmark = pytest.mark.db

N = 500


@pytest.fixture(scope="module")
def server(pg_cluster: Any) -> Iterator[tuple[str, Loaded]]:
    url = pg_cluster.create_database("kwx_readload")
    loaded = load_tables(url)
    out = Path(tempfile.mkdtemp(prefix="kwx-readload-")) / "serve.out"
    with serving(
        url,
        out,
        workers=1,
        KWX_PROJECTOR="off",
        KWX_LOG_LEVEL="warning",
        KWX_RATE_LIMIT_KEY="off",
        KWX_RATE_LIMIT_TENANT="off",
    ) as (_, base, _):
        yield base, loaded


def _wrong(answers: list[Answer]) -> list[Any]:
    """The answers that are neither a 200 nor a 503 with Retry-After."""
    refused = 503, True
    return [
        (a.status, a.retry_after)
        for a in answers
        if a.status != 200 and (a.status, bool(a.retry_after)) != refused
    ]


_NAMES = list(routes(Loaded({r: {} for r in ("platform", "support", "dashboard")}, "t", "p", {}, "o")))


@pytest.mark.parametrize("route", _NAMES)
def test_500_concurrent_reads_end_in_200_or_a_503_with_retry_after(
    server: tuple[str, Loaded], route: str
) -> None:
    base, loaded = server
    path, headers = routes(loaded)[route]
    result = flood(base, path, headers, N, other=(f"/v1/tables/{loaded.other_table}/state", loaded.other_key))
    assert len(result.answers) == N
    assert _wrong(result.answers) == []
    assert result.counts()["200"] > 0  # the gate serves while it refuses
    assert _wrong(result.other) == []  # the other tenant: served, or told to retry, never worse
