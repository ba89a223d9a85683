"""The projector's read of the global log: the store's gap-free predicate, lean rows.

Same SQL predicate and order as ``services.store.events.EventStore.read_all`` — events of
transactions older than every one still running (``tx_id < pg_snapshot_xmin(pg_current_snapshot())``),
strictly after ``(tx_id, position)``, in ``(tx_id, position)`` order — but only the columns the
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

LogRow = tuple[str, int, int, int, str, "str | None", str]
"""One event of the log: ``(table_id, version, position, tx_id, body, ruling, tenant)`` — ``body``
the event as JSON text (jsonb output), ``ruling`` its stored ruling as JSON text (a recorded
violation) or None; a table is (tenant, table_id). Plain tuples as psycopg gives them: the
projector unpacks them in its loop (a NamedTuple's ``_make`` per row and attribute reads cost
≈ 0.6 µs per event)."""


# ORDER BY names the table's columns: an output column named ``tx_id`` would win over the column
# (and sort by the converted value, e.g. xids as text: "1000" < "764").
READ_PAGE = (
    "SELECT e.table_id, e.version, e.position, e.tx_id::text::int8 AS tx_int, e.body::text AS body_text, "
    "e.ruling::text AS ruling_text, e.tenant "
    "FROM events e "
    "WHERE (e.tx_id, e.position) > (%s::text::xid8, %s) "
    "AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot()) "
    "ORDER BY e.tx_id, e.position LIMIT %s"
)


def read_page(conn: psycopg.Connection[Any], after: tuple[int, int], limit: int) -> list[LogRow]:
    """Up to ``limit`` events strictly after ``after`` = (tx_id, position), gap-free, in log order."""
    # (tx_id as int8: xid8 values stay far below 2**63)
    rows: list[LogRow] = conn.execute(READ_PAGE, (str(after[0]), after[1], limit)).fetchall()
    return rows
