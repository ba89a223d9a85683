"""``kwx verify``: recompute the hash chain of every table (definition in ``chain.py``) and report
the first broken link of each: a missing version, a hash mismatch, a head that disagrees with its
chain, or events whose head row is gone. A table is (tenant, table_id); tables are checked in the
byte order of (tenant, id) (``COLLATE "C"``), so every server reports the same link first whatever
its collation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
import sqlalchemy as sa
from psycopg_pool import ConnectionPool

from services.db import fetch
from services.store import chain
from services.store.schema import events as ev
from services.store.schema import table_heads as heads


@dataclass(frozen=True, slots=True)
class BrokenLink:
    table_id: str
    version: int
    reason: str
    tenant: str = ""


def verify(
    pool: ConnectionPool, table_id: str | None = None, *, tenant: str | None = None
) -> tuple[int, int, list[BrokenLink]]:
    """Recompute every table's hash chain — only the tables of ``tenant`` and / or with the id
    ``table_id`` when given (an id alone: that id in every tenant). Returns (tables, events, first
    broken link per table)."""
    problems: list[BrokenLink] = []
    tables = checked = 0
    with pool.connection() as conn:
        head_stmt = sa.select(heads.c.tenant, heads.c.table_id, heads.c.version, heads.c.last_hash).order_by(
            heads.c.tenant.collate("C"), heads.c.table_id.collate("C")
        )
        orphans = (
            sa.select(ev.c.tenant, ev.c.table_id, sa.func.min(ev.c.version))
            .group_by(ev.c.tenant, ev.c.table_id)
            .where(~sa.exists().where(heads.c.tenant == ev.c.tenant, heads.c.table_id == ev.c.table_id))
            .order_by(ev.c.tenant.collate("C"), ev.c.table_id.collate("C"))
        )
        if table_id is not None:
            head_stmt = head_stmt.where(heads.c.table_id == table_id)
            orphans = orphans.where(ev.c.table_id == table_id)
        if tenant is not None:
            head_stmt = head_stmt.where(heads.c.tenant == tenant)
            orphans = orphans.where(ev.c.tenant == tenant)
        for owner, tid, head_version, last_hash in fetch(conn, head_stmt):
            tables += 1
            broken, n = _verify_table(conn, owner, tid, head_version, bytes(last_hash))
            checked += n
            if broken is not None:
                problems.append(broken)
        # events whose table has no head row (the head was deleted behind the service's back)
        for owner, tid, first in fetch(conn, orphans):
            tables += 1
            problems.append(BrokenLink(tid, first, "events without a table head row", owner))
    return tables, checked, problems


def _verify_table(
    conn: psycopg.Connection[Any], tenant: str, table_id: str, head_version: int, last_hash: bytes
) -> tuple[BrokenLink | None, int]:
    previous = chain.genesis(table_id)
    expected_version = 0
    with conn.transaction(), conn.cursor(name="kwx_verify") as cur:
        cur.itersize = 2000
        cur.execute(
            "SELECT version, body::text, hash FROM events"
            " WHERE tenant = %s AND table_id = %s ORDER BY version",
            (tenant, table_id),
        )
        for version, body, stored_hash in cur:
            expected_version += 1
            if version != expected_version:
                return BrokenLink(
                    table_id, expected_version, f"version {expected_version} is missing", tenant
                ), version
            previous = chain.link(previous, chain.canonical_json(body))
            if previous != bytes(stored_hash):
                return BrokenLink(
                    table_id, version, "hash mismatch: the event or an earlier one changed", tenant
                ), version
    if expected_version != head_version:
        reason = f"head says version {head_version}, events end at {expected_version}"
        return BrokenLink(table_id, expected_version + 1, reason, tenant), expected_version
    if previous != last_hash:
        reason = "head hash differs from the chain"
        return BrokenLink(table_id, head_version, reason, tenant), expected_version
    return None, expected_version
