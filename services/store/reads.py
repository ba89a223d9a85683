"""The store's reads: a table's head, a table's events in version order, the global log in commit
order. One stored row → :class:`StoredEvent` (:func:`stored`) and one stored event → wire item
(:func:`wire`, an item of ``GET /v1/tables/{id}/events`` and a line of its NDJSON export).

A table is ``(tenant, table_id)``: every read keys by both (:func:`table_is`), so another tenant's
table of the same id is never seen.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec
import sqlalchemy as sa
from psycopg_pool import ConnectionPool

from services.db import fetch, read_rows
from services.store.schema import events as ev
from services.store.schema import table_heads as heads


@dataclass(frozen=True, slots=True)
class Head:
    tenant: str
    table_id: str
    version: int
    last_hash: bytes
    snapshot_version: int


@dataclass(frozen=True, slots=True)
class StoredEvent:
    table_id: str
    version: int
    position: int
    tx_id: int
    recorded_at: datetime
    event_id: str
    type: str
    body: str  # the event as JSON text (jsonb output)
    ruling: str | None  # JSON text, or None
    tenant: str = ""
    epoch: int = 1  # the log epoch (read_all fills it in; docs/operations.md, the gap-free read)


def table_is(t: sa.Table, tenant: str, table_id: str) -> tuple[Any, Any]:
    """The WHERE clauses of one table in ``t`` (a table is (tenant, table_id))."""
    return (t.c.tenant == tenant, t.c.table_id == table_id)


def stored_columns() -> sa.Select[Any]:
    """The columns of an ``events`` row that :func:`stored` reads, in its order."""
    return sa.select(
        ev.c.table_id,
        ev.c.version,
        ev.c.position,
        sa.cast(ev.c.tx_id, sa.Text),
        ev.c.recorded_at,
        ev.c.event_id,
        ev.c.type,
        sa.cast(ev.c.body, sa.Text),
        sa.cast(ev.c.ruling, sa.Text),
        ev.c.tenant,
    )


def stored(row: tuple[Any, ...], epoch: int = 1) -> StoredEvent:
    """A row of :func:`stored_columns` as a :class:`StoredEvent`."""
    return StoredEvent(
        row[0], row[1], row[2], int(row[3]), row[4], row[5], row[6], row[7], row[8], row[9], epoch
    )


def wire(event: StoredEvent) -> dict[str, Any]:
    """The event as the events page and its NDJSON export show it (``schemas.StoredEvent``): the
    stored body and ruling as they are (raw JSON), no global position."""
    return {
        "version": event.version,
        "recorded_at": event.recorded_at.isoformat(),
        "id": event.event_id,
        "type": event.type,
        "event": msgspec.Raw(event.body.encode()),
        "ruling": msgspec.Raw(event.ruling.encode()) if event.ruling is not None else None,
    }


def head(pool: ConnectionPool, tenant: str, table_id: str) -> Head | None:
    """The tenant's table ``table_id``, or None (another tenant's table of that id is not it)."""
    stmt = sa.select(heads.c.version, heads.c.last_hash, heads.c.snapshot_version).where(
        *table_is(heads, tenant, table_id)
    )
    rows = read_rows(pool, stmt)[0]
    if not rows:
        return None
    version, last_hash, snapshot_version = rows[0]
    return Head(tenant, table_id, version, bytes(last_hash), snapshot_version)


def read_table(pool: ConnectionPool, tenant: str, table_id: str, after: int, limit: int) -> list[StoredEvent]:
    """Events of the tenant's table with version > ``after``, in version order (once more on
    another connection if the first one broke under the read: ``services.db.reading``)."""
    stmt = (
        stored_columns()
        .where(*table_is(ev, tenant, table_id), ev.c.version > after)
        .order_by(ev.c.version)
        .limit(limit)
    )
    return [stored(row) for row in read_rows(pool, stmt)[0]]


def read_all(pool: ConnectionPool, after: tuple[int, int, int], limit: int) -> list[StoredEvent]:
    """The global log, gap-free, strictly after ``after`` = (epoch, tx_id, position):
    ``EventStore.read_all``."""
    from projections import log

    epoch, tx, pos = after
    stmt = (
        stored_columns()
        .add_columns(sa.literal_column("events.epoch"))
        .where(
            sa.text(log.after("events", (":epoch", ":tx", ":pos"))).bindparams(
                epoch=epoch, tx=str(tx), pos=pos
            ),
            sa.text(log.fence("events")),
        )
        .order_by(sa.text(log.log_order("events")))
        .limit(limit)
    )
    with pool.connection() as conn:
        return [stored(row[:-1], row[-1]) for row in fetch(conn, stmt)]
