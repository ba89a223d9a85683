"""The append's statements on a Citus cluster (issue 14; docs/SCALING.md).

On one PostgreSQL an append is one statement (the fast path's ``WITH head AS (UPDATE …) INSERT …
SELECT``) or a ``COPY`` (the locking path). On Citus both become an ``INSERT … SELECT`` through the
coordinator or a ``COPY`` into the shard, and Citus commits those with two-phase commit: the
coordinator's own transaction ends *before* the worker's ``COMMIT PREPARED`` makes the rows
visible. The log's fence (``tx_id < pg_snapshot_xmin``, with ``tx_id`` the coordinator's
transaction id: the column default is evaluated there) needs the opposite order — a transaction
that is no longer running on the coordinator must be visible on the workers — which is what Citus's
one-phase commit of a single-node transaction gives (the worker commits in the coordinator's
pre-commit). So on Citus the append stores its rows with router statements only, in one
transaction on the table's one worker: the head's ``UPDATE … WHERE version = …`` (or ``INSERT …
ON CONFLICT DO NOTHING``), then one multi-row ``INSERT … VALUES`` of the events. Measured here: those
commit with one ``COMMIT`` on the worker, no ``PREPARE TRANSACTION`` (tests/citus_test_*.py).

Whether a database is a Citus database is asked once per pool (the ``citus`` extension in it).
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool

_ON_CITUS: weakref.WeakKeyDictionary[object, bool] = weakref.WeakKeyDictionary()

_ASK = "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')"

COLUMNS = "(tenant, table_id, version, event_id, type, body, ruling, hash, facts, judge)"
_CASTS = ("", "", "", "", "", "::jsonb", "::jsonb", "", "::bytea", "::integer")  # per column of COLUMNS


def on_citus(pool: ConnectionPool | AsyncConnectionPool, conn: psycopg.Connection[Any]) -> bool:
    """Whether ``pool``'s database has the ``citus`` extension (asked on ``conn`` the first time)."""
    known = _ON_CITUS.get(pool)
    if known is None:
        row = conn.execute(_ASK).fetchone()
        known = _ON_CITUS[pool] = bool(row and row[0])
    return known


async def on_citus_async(pool: AsyncConnectionPool, conn: psycopg.AsyncConnection[Any]) -> bool:
    known = _ON_CITUS.get(pool)
    if known is None:
        row = await (await conn.execute(_ASK)).fetchone()
        known = _ON_CITUS[pool] = bool(row and row[0])
    return known


@functools.lru_cache(maxsize=128)
def insert_sql(count: int) -> str:
    """A router ``INSERT … VALUES`` of ``count`` rows in the columns of ``locked.COPY``, with
    PostgreSQL's own placeholders (``$1``, ``$2``, …), for a raw cursor. With psycopg's ``%s`` a
    100-event batch's 1,000 placeholders were parsed on every append — psycopg caches that parse
    only for statements of at most 50 parameters — ≈ 2.9 ms of CPU per batch (bench_cluster's
    "where the time goes"); a raw cursor sends the text as it is (≈ 0.1 ms)."""
    width = len(_CASTS)
    rows = (
        "(" + ", ".join(f"${i * width + j + 1}{cast}" for j, cast in enumerate(_CASTS)) + ")"
        for i in range(count)
    )
    return f"INSERT INTO events {COLUMNS} VALUES " + ", ".join(rows)


def flat(rows: list[tuple[Any, ...]]) -> list[Any]:
    return [value for row in rows for value in row]


def insert_rows(conn: psycopg.Connection[Any], rows: list[tuple[Any, ...]]) -> int:
    """The locking path's rows (``Batch.rows``) as one router statement; the rows inserted."""
    with psycopg.RawCursor(conn) as cur:
        cur.execute(insert_sql(len(rows)), flat(rows))
        return cur.rowcount


async def insert_rows_async(conn: psycopg.AsyncConnection[Any], rows: list[tuple[Any, ...]]) -> int:
    async with psycopg.AsyncRawCursor(conn) as cur:
        await cur.execute(insert_sql(len(rows)), flat(rows))
        return cur.rowcount
