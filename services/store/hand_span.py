"""Store reads for one hand's audit (services/api/hand_reads.py): the hash chain over a span of
a table's events, and the ``settlement_reported`` events for a hand made after its span.

The span's chain is checked as ``kwx verify`` checks a whole table (chain.py): from the stored
hash of the event before the span (the genesis hash before event 1), each event's hash is
recomputed from its canonical body and compared with the stored one; a missing version breaks it.
"""

from __future__ import annotations

from typing import Any

import psycopg

from services.store import chain

_SPAN_SQL = (
    "SELECT version, body::text, hash FROM events"
    " WHERE tenant = %s AND table_id = %s AND version BETWEEN %s AND %s ORDER BY version"
)
_REPORTS_SQL = (
    "SELECT version, body::text FROM events"
    " WHERE tenant = %s AND table_id = %s AND version > %s AND type = 'settlement_reported'"
    " AND body->>'hand' = %s ORDER BY version"
)


def verify_span(
    conn: psycopg.Connection[Any], tenant: str, table_id: str, first: int, last: int
) -> dict[str, Any]:
    """The audit's ``hash_chain`` for events ``first``..``last``: ``ok``, ``events_checked`` and
    ``first_broken`` (version and reason, or None)."""
    rows = conn.execute(_SPAN_SQL, (tenant, table_id, max(first - 1, 1), last)).fetchall()
    previous = chain.genesis(table_id) if first <= 1 else None
    expected = first
    checked = 0
    broken: dict[str, Any] | None = None
    for version, body, stored_hash in rows:
        if version < first:  # the event before the span: its stored hash seeds the check
            previous = bytes(stored_hash)
            continue
        if previous is None or version != expected:
            missing = expected - 1 if previous is None else expected
            broken = {"version": missing, "reason": f"version {missing} is missing"}
            break
        checked += 1
        previous = chain.link(previous, chain.canonical_json(body))
        if previous != bytes(stored_hash):
            broken = {"version": version, "reason": "hash mismatch: the event or an earlier one changed"}
            break
        expected += 1
    if broken is None and expected <= last:
        broken = {"version": expected, "reason": f"version {expected} is missing"}
    return {"ok": broken is None, "events_checked": checked, "first_broken": broken}


def reports_after(
    conn: psycopg.Connection[Any], tenant: str, table_id: str, after: int, hand: int
) -> list[tuple[int, str]]:
    """(version, body JSON) of the table's ``settlement_reported`` events for ``hand`` after
    version ``after``, in order."""
    rows = conn.execute(_REPORTS_SQL, (tenant, table_id, after, str(hand))).fetchall()
    return [(int(v), body) for v, body in rows]
