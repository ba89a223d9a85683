"""The state of a table after any event, fast: the latest per-hand snapshot at or before the
event (:func:`projections.snapshots.latest`: a ``hand_started``'s stored facts, or
``proj_table_snapshots``), then only the events of that hand. Used by the state endpoint;
the property test checks that it equals folding from event 1.

The snapshot is read first (:func:`projections.snapshots.latest`, on a connection the caller then
gives back), the events after it by ``source`` (the store, one pooled connection per page): nothing
here holds one pooled connection while waiting for another, so reads cannot deadlock a small pool
(issue 11 §3; tests/service/test_read_pool.py runs every read route with a pool of one)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from domain.engine import Replayer, TableState
from domain.events import decode

if TYPE_CHECKING:
    from projections.projector import EventSource


def state_at(
    snap: tuple[int, bytes] | None, source: EventSource, engine: Replayer, tenant: str, table_id: str, at: int
) -> tuple[TableState, int]:
    """(state after event ``at`` of the tenant's table, the version the fold started from: 0 or a
    snapshot's), from ``snap`` (:func:`projections.snapshots.latest` for ``at``, already read) and the events
    ``source`` reads, each applied as it was accepted (``engine.replay``)."""
    state = engine.initial()
    start = 0
    if snap is not None:
        try:
            state = engine.decode_state(snap[1])
            start = snap[0]
        except Exception:  # a snapshot of an older engine: fold from the start instead
            state, start = engine.initial(), 0
    after = start
    while after < at:
        page = source.read_table(tenant, table_id, after=after, limit=min(1000, at - after))
        if not page:
            break
        for ev in page:
            state = engine.replay(state, decode(ev.body))
            after = ev.version
    return state, start
