"""Queries of the ``discrepancies`` read model: the tenant's feed, and whether it is caught up."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sqlalchemy import select

from projections import discrepancies
from projections.log import after, checkpoint_of, log_order
from projections.schema import discrepancies as feed
from projections.sql import Connection, fetch

# Whether the feed holds every event of the tenant stored so far: none of the tenant's events is
# after the model's checkpoint in the log's order — a model that never ran: all are. A scan of the
# log's tail after the checkpoint (the events_log_order index), as long as the lag: the checkpoint
# comes as scalar subqueries and the ORDER BY … LIMIT 1 matches the index, so the plan is that
# index range scan from the checkpoint on, never a scan of the whole table.
PENDING = (
    f"SELECT 1 FROM events e WHERE {after('e', checkpoint_of(discrepancies.NAME))} "
    f"AND e.tenant = %s ORDER BY {log_order('e')} LIMIT 1"
)  # a row: some event of the tenant is not in the feed yet


def pending(conn: Connection, tenant: str) -> bool:
    """Some event of ``tenant`` stored so far is not in the feed yet."""
    return conn.execute(PENDING, (tenant,)).fetchone() is not None


@dataclass(frozen=True, slots=True)
class FeedPage:
    """The tenant's feed in the order kwx learned the entries: ``seq`` 1, 2, … counts this tenant's
    discrepancies only; entries after ``after``, at most ``limit``; ``caught_up``: every event of
    the tenant stored so far is in the feed."""

    models: ClassVar[tuple[str, ...]] = (discrepancies.NAME,)
    tenant: str
    after: int
    limit: int

    def __call__(self, conn: Connection) -> dict[str, Any]:
        d = feed.c
        # caught_up first: the page read after it holds at least what it counted as in the feed
        behind = pending(conn, self.tenant)
        rows = fetch(
            conn,
            select(d.feed_seq, d.table_id, d.hand, d.reported_event, d.lines, d.net_computed,
                   d.net_reported, d.reported)
            .where(d.tenant == self.tenant, d.feed_seq > self.after)
            .order_by(d.feed_seq)
            .limit(self.limit + 1),
        )  # fmt: skip
        more = len(rows) > self.limit
        items = [
            {"seq": int(r[0]), "table_id": r[1], "hand": r[2], "reported_event": r[3], "lines": r[4],
             "net_computed": r[5], "net_reported": r[6], "reported": r[7]}
            for r in rows[: self.limit]
        ]  # fmt: skip
        return {"discrepancies": items, "next_after": items[-1]["seq"] if more else None,
                "caught_up": not behind}  # fmt: skip
