"""A hand's own snapshot (read model ``snapshots``): the state right after its ``hand_started``, so
a hand's read (the timeline) folds only that hand. The timeline's helper for now; settlement and
audit get the same from another branch, to be unified at merge."""

from __future__ import annotations

from sqlalchemy import select

from projections.schema import snapshots
from projections.sql import Connection, fetch


def of_hand(conn: Connection, tenant: str, table_id: str, hand: int) -> tuple[int, bytes] | None:
    """(version of hand ``hand``'s last ``hand_started``, the encoded state right after it), if
    projected (a hand dealt again after ``hand_aborted`` has two: the later one)."""
    stmt = (
        select(snapshots.c.version, snapshots.c.state)
        .where(snapshots.c.tenant == tenant, snapshots.c.table_id == table_id, snapshots.c.hand == hand)
        .order_by(snapshots.c.version.desc())
        .limit(1)
    )
    rows = fetch(conn, stmt)
    return (int(rows[0][0]), bytes(rows[0][1])) if rows else None
