"""Parked events: what a read model could not apply, kept aside so that it moves on (issue 11 §1).

KurrentDB's persistent subscriptions are the model: a message its consumer fails to handle is
*parked* (written to a parked-messages stream with the reason) and the subscription carries on;
an operator *replays* the parked messages once the cause is fixed. Here:

* ``projection_parked`` (migration 0007) holds one row per (model, event): the event's log place,
  tenant, table, version and id, the error (class and message), when, how many tries — or, for an
  event parked only to keep its table's order, ``behind``: the position of the first parked event
  of that table for that model.
* **Per-table order**: once an event of a table is parked for a model, that model's later events
  of the table are parked behind it (a hand's settlement needs the whole hand; a table's
  settlements are numbered in order), never applied around it. Other tables — of the same tenant
  too — and every other model carry on.
* ``kwx projections retry`` (:meth:`projections.projector.Projector.retry`) applies a table's
  parked events in version order; an event that applies leaves the table, the first that fails
  again stays (``tries`` + 1, its new error) with every later one of its table behind it.

What counts as poison: any exception of a model's pure ``rows(fact)`` (it depends on nothing but
the event); from a model's ``write`` (:func:`parkable`), PostgreSQL refusing the rows (data
exceptions, class 22: a number out of range, bad text; integrity violations, class 23) or a
Python error about values (``ValueError``, ``TypeError``, ``ArithmeticError``, ``LookupError``,
msgspec's). Anything else — the connection lost, a timeout, a privilege or schema error, a
``RuntimeError`` — is the database's, the deployment's or the process's, the same for every
event: the batch fails and is tried again, as before, instead of parking everything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import msgspec
import psycopg

from projections.log import LogPlace
from projections.sql import Connection

TABLE = "projection_parked"


@dataclass(frozen=True, slots=True)
class Park:
    """One event to park for one model: ``error`` the exception it failed with, or None when it
    is parked ``behind`` (a position) the first parked event of its table."""

    model: str
    place: LogPlace  # (epoch, tx_id, position)
    tenant: str
    table_id: str
    version: int
    behind: int | None
    error: BaseException | None

    def behind_of(self, position: int) -> Park:
        return replace(self, behind=position, error=None)

    def failed(self, error: BaseException) -> Park:
        return replace(self, behind=None, error=error)

    def record(self) -> dict[str, Any]:
        if self.error is not None:
            error_class, message = describe(self.error)
        else:
            error_class, message = "parked_behind", f"waits for the parked event at position {self.behind}"
        return {
            "model": self.model, "epoch": self.place[0], "tx_id": self.place[1], "position": self.place[2],
            "tenant": self.tenant, "table_id": self.table_id, "version": self.version,
            "behind": self.behind, "error_class": error_class, "error": message,
        }  # fmt: skip


def describe(error: BaseException) -> tuple[str, str]:
    """(class, message) as stored: the driver's SQLSTATE class name and its primary message."""
    message = error.diag.message_primary if isinstance(error, psycopg.Error) else None
    # (no NUL: a text column cannot hold one, and the park itself must not fail)
    return type(error).__name__, (message or str(error))[:2000].replace("\x00", "\\0")


# What a model's write raising says about the rows it was given (their values), not about the
# database or the code's state: a RuntimeError, an OSError, … fail the batch as before.
_DATA_ERRORS = (psycopg.DataError, psycopg.IntegrityError, ValueError, TypeError, ArithmeticError,
                LookupError, msgspec.MsgspecError)  # fmt: skip


def parkable(error: BaseException) -> bool:
    """Whether a model's write failing with ``error`` says these rows cannot be stored (poison)
    rather than that the database cannot be used right now (module docstring). (A model's pure
    ``rows(fact)`` raising anything parks the event: it depends on nothing but the event.)"""
    if isinstance(error, psycopg.Error):
        return isinstance(error, psycopg.DataError | psycopg.IntegrityError)
    return isinstance(error, _DATA_ERRORS)


_INSERT = f"""
INSERT INTO {TABLE} (model, epoch, tx_id, position, tenant, table_id, version, event_id, behind,
                     error_class, error)
SELECT p.model, p.epoch, p.tx_id, p.position, p.tenant, p.table_id, p.version, e.event_id, p.behind,
       p.error_class, p.error
  FROM json_to_recordset(%s::json) AS p(model text, epoch int4, tx_id numeric, position int8,
       tenant text, table_id text, version int8, behind int8, error_class text, error text)
  JOIN events e ON e.position = p.position
"""


def insert(conn: Connection, parks: Sequence[Park]) -> None:
    if parks:
        conn.execute(_INSERT, (msgspec.json.encode([p.record() for p in parks]).decode(),))


def blocked(conn: Connection) -> dict[tuple[str, str, str], int]:
    """(model, tenant, table) → the position of its first parked event, for every blocked table."""
    rows = conn.execute(
        f"SELECT model, tenant, table_id, min(position) FROM {TABLE} GROUP BY 1, 2, 3"
    ).fetchall()
    return {(m, t, tid): int(pos) for m, t, tid, pos in rows}


def forget(conn: Connection, names: Sequence[str]) -> None:
    """Drop the parked events of ``names`` (their read models are being rebuilt from the log)."""
    conn.execute(f"DELETE FROM {TABLE} WHERE model = ANY(%s)", (list(names),))


def summary(conn: Connection) -> dict[str, tuple[int, str | None]]:
    """model → (parked events, when the oldest was parked, ISO 8601 UTC)."""
    rows = conn.execute(
        f"SELECT model, count(*), to_char(min(parked_at) AT TIME ZONE 'UTC', "
        f'\'YYYY-MM-DD"T"HH24:MI:SS"Z"\') FROM {TABLE} GROUP BY model'
    ).fetchall()
    return {m: (int(n), oldest) for m, n, oldest in rows}


def total(conn: Connection) -> int:
    row = conn.execute(f"SELECT count(*) FROM {TABLE}").fetchone()
    return int(row[0]) if row else 0


def of_tenant(conn: Connection, tenant: str, limit: int) -> list[dict[str, Any]]:
    """One tenant's parked events, oldest first: what the tenant may see of them (no log
    positions, which count every tenant's events; ``waits_for`` is the version of its own table's
    event it is parked behind)."""
    rows = conn.execute(
        f"SELECT p.model, p.table_id, p.version, p.event_id, p.error_class, p.error, "
        f"to_char(p.parked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), p.tries, "
        f"(SELECT b.version FROM {TABLE} b WHERE b.model = p.model AND b.position = p.behind) "
        f"FROM {TABLE} p WHERE p.tenant = %s ORDER BY p.parked_at, p.model, p.table_id, p.version "
        f"LIMIT %s",
        (tenant, limit),
    ).fetchall()
    return [
        {"model": m, "table_id": tid, "version": int(v), "event_id": eid, "error_class": cls,
         "error": err, "parked_at": at, "tries": int(tries), "waits_for": None if w is None else int(w)}
        for m, tid, v, eid, cls, err, at, tries, w in rows
    ]  # fmt: skip
