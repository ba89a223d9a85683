"""Read model ``snapshots``: the engine state of every table right after each ``hand_started``.

``GET /v1/tables/{id}/state?at=N`` starts from the latest snapshot at or before N and folds only
the events of that hand, and a hand's reads (:mod:`projections.hand_reads`) start from the hand's
own, so reading any point of a long table costs one hand of folding. A snapshot is only a cache:
when one is missing or cannot be decoded (engine changed), the reader folds from an earlier one or
from event 1.

**Where a snapshot lives** (issue 16, migration 0015): the append judges every event once and
stores a ``hand_started``'s facts — the state after it among them (``SnapshotTaken``) — in the
event's own row (``events.facts``, by this build's judge). A reader takes the state from there,
found through the partial index ``events_hand_starts``; the projector no longer copies it. The
table ``proj_table_snapshots`` holds the snapshots of the events the projector *folds* — stored by
another judge (an older or newer kwx, or before migration 0012) — so after an engine change
``kwx projections rebuild snapshots`` still renews them. :func:`latest` and :data:`LOCATE` read
both, newest first; an event's stored state is used only when its judge is the reader's own
(:data:`projections.stored_facts.JUDGE`, read at call time).
"""

from __future__ import annotations

from typing import Any

from projections import stored_facts
from projections.model import Fact, SnapshotTaken
from projections.schema import snapshots
from projections.sql import Connection, MultiRowInsert

NAME = "snapshots"


def rows(fact: Fact) -> list[dict[str, Any]]:
    # a stored fact's state stays in its event's row (stored_facts.decode(states=False) empties it)
    if not isinstance(fact, SnapshotTaken) or not fact.state:
        return []
    return [
        {"tenant": fact.info.tenant, "table_id": fact.info.table_id, "version": fact.at.version,
         "hand": fact.hand, "state": fact.state}
    ]  # fmt: skip


def write(conn: Connection, batch: list[dict[str, Any]]) -> None:
    _INSERT.execute(conn, batch)


_INSERT = MultiRowInsert(
    snapshots,
    ["tenant", "table_id", "version", "hand", "state"],
    "ON CONFLICT (tenant, table_id, version) DO NOTHING",
)

# The hand starts whose stored facts this reader may take: judged by its own judge (the events of
# another are folded by the projector, and their snapshots are in proj_table_snapshots).
_JUDGED_START = (
    "e.tenant = %(tenant)s AND e.table_id = %(table_id)s AND e.type = 'hand_started' "
    "AND e.judge = %(judge)s AND e.facts IS NOT NULL"
)

_LATEST = (
    "SELECT version, state, facts FROM ("
    f"(SELECT s.version, s.state, NULL::bytea AS facts FROM {snapshots.name} s "
    "WHERE s.tenant = %(tenant)s AND s.table_id = %(table_id)s AND s.version <= %(at)s "
    "ORDER BY s.version DESC LIMIT 1) UNION ALL "
    "(SELECT e.version, NULL::bytea, e.facts FROM events e "
    f"WHERE {_JUDGED_START} AND e.version <= %(at)s ORDER BY e.version DESC LIMIT 1)"
    ") AS found ORDER BY version DESC, facts IS NULL LIMIT 1"
)

LOCATE = (
    "SELECT version, hand, state, facts FROM ("
    "(SELECT s.version, s.hand::numeric AS hand, CASE WHEN s.hand = %(following)s THEN NULL ELSE s.state END "
    f"AS state, NULL::bytea AS facts FROM {snapshots.name} s "
    "WHERE s.tenant = %(tenant)s AND s.table_id = %(table_id)s AND s.hand <= %(following)s "
    "ORDER BY s.version DESC LIMIT 2) UNION ALL "
    "(SELECT e.version, (e.body->>'hand')::numeric, NULL::bytea, "
    "CASE WHEN (e.body->>'hand')::numeric = %(following)s THEN NULL ELSE e.facts END FROM events e "
    f"WHERE {_JUDGED_START} AND (e.body->>'hand')::numeric <= %(following)s ORDER BY e.version DESC LIMIT 2)"
    ") AS found ORDER BY version DESC, facts IS NULL LIMIT 4"
)
"""At most two snapshots of each source read backwards on their keys, newest first: hand n+1's
(its version − 1 is hand n's last event; no state sent) and the latest of a hand ≤ n (its state,
or its event's stored facts). A version found in both sources comes twice (its event's first): the
caller skips the repeat. Parameters: tenant, table_id, following (n + 1), judge. The hand number of
an event is its body's, as ``numeric``: the engine bounds it below only, and a cast to a narrower
type would fail the read for a hand number beyond it."""


def params(tenant: str, table_id: str, **more: Any) -> dict[str, Any]:
    return {"tenant": tenant, "table_id": table_id, "judge": stored_facts.JUDGE, **more}


def state_of(state: bytes | None, facts: bytes | None) -> bytes | None:
    """The engine state of a found snapshot: the table's own, or the one in its event's stored
    facts (None when they hold none)."""
    if state is not None:
        return bytes(state)
    return stored_facts.snapshot_state(bytes(facts)) if facts is not None else None


def latest(conn: Connection, tenant: str, table_id: str, at: int) -> tuple[int, bytes] | None:
    """(version, encoded engine state) of the tenant's table's latest snapshot at or before ``at``;
    None: there is none (fold from event 1)."""
    row = conn.execute(_LATEST, params(tenant, table_id, at=at)).fetchone()
    if row is None:
        return None
    state = state_of(row[1], row[2])
    return (int(row[0]), state) if state is not None else None
