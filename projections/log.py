"""The projector's read of the global log: the store's gap-free predicate, lean rows.

Same SQL predicate and order as ``services.store.events.EventStore.read_all`` — events of
transactions older than every one still running (``tx_id < pg_snapshot_xmin(pg_current_snapshot())``,
in the current log epoch; every event of an older epoch), strictly after ``(epoch, tx_id,
position)``, in ``(epoch, tx_id, position)`` order (docs/operations.md) — but only the columns the
projector uses, one fixed statement text (no SQLAlchemy compile per page), plain tuples instead of
``StoredEvent`` objects, and on the caller's connection: the projector reads inside its batch
transaction instead of checking out a second connection.

Reading inside that transaction keeps the guarantee: the statement takes its own snapshot (READ
COMMITTED), and if the transaction already has an xid, ``pg_snapshot_xmin`` is at most that xid, so
the read can only be *more* conservative (an event committed meanwhile by a newer transaction comes
with the next page), never skip one.
"""

from __future__ import annotations

from typing import Any

import psycopg

LogRow = tuple[str, int, int, int, str, "str | None", str, int]
"""One event of the log: ``(table_id, version, position, tx_id, body, ruling, tenant, epoch)`` —
``body`` the event as JSON text (jsonb output), ``ruling`` its stored ruling as JSON text (a
recorded violation) or None; a table is (tenant, table_id); ``epoch`` its log epoch. Plain tuples as
psycopg gives them: the projector unpacks them in its loop (a NamedTuple's ``_make`` per row and
attribute reads cost ≈ 0.6 µs per event)."""

LogPlace = tuple[int, int, int]
"""A place in the log: ``(epoch, tx_id, position)`` of an event; ``(0, 0, 0)`` is before the first."""


# The fence (tx_id below the oldest transaction still running) applies to the current epoch only:
# an older epoch's transactions ran on a cluster that is gone (a dump's source, the cluster before
# pg_upgrade), so all of them are final — and their xids mean nothing to this cluster's snapshot.
# The current epoch is the latest one (``kwx_log_epoch()`` opens it before kwx writes anything).
def fence(alias: str) -> str:
    """The gap-free predicate on the events table named ``alias`` in the query."""
    return (
        f"({alias}.epoch < (SELECT max(l.epoch) FROM log_epochs l) "
        f"OR {alias}.tx_id < pg_snapshot_xmin(pg_current_snapshot()))"
    )


# ORDER BY names the table's columns: an output column named ``tx_id`` would win over the column
# (and sort by the converted value, e.g. xids as text: "1000" < "764").
READ_PAGE = (
    "SELECT e.table_id, e.version, e.position, e.tx_id::text::int8 AS tx_int, e.body::text AS body_text, "
    "e.ruling::text AS ruling_text, e.tenant, e.epoch "
    "FROM events e "
    "WHERE (e.epoch, e.tx_id, e.position) > (%s, %s::text::xid8, %s) "
    f"AND {fence('e')} "
    "ORDER BY e.epoch, e.tx_id, e.position LIMIT %s"
)


def read_page(conn: psycopg.Connection[Any], after: LogPlace, limit: int) -> list[LogRow]:
    """Up to ``limit`` events strictly after ``after`` = (epoch, tx_id, position), gap-free, in log
    order."""
    # (tx_id as int8: xid8 values stay far below 2**63)
    rows: list[LogRow] = conn.execute(READ_PAGE, (after[0], str(after[1]), after[2], limit)).fetchall()
    return rows
