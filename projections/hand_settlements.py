"""Read model ``hand_settlements``: one row per settled hand with its CONTRACT.md §2 object."""

from __future__ import annotations

from typing import Any

import msgspec

from projections.memo import last_fact
from projections.model import Fact, HandSettled
from projections.schema import hand_settlements
from projections.sql import Connection, MultiRowInsert

NAME = "hand_settlements"


def settlement_json(settlement: Any) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(settlement)
    return out


@last_fact  # the feed's settlement entry asks again for the same fact
def rows(fact: Fact) -> list[dict[str, Any]]:
    """The fact's row (a new settlement), or none."""
    if not isinstance(fact, HandSettled):
        return []
    return _row(fact)


def _row(fact: HandSettled) -> list[dict[str, Any]]:
    s = fact.settlement
    return [
        {
            "table_id": fact.info.table_id,
            "ordinal": fact.ordinal,
            "hand": s.hand,
            "tenant": fact.info.tenant,
            "preset": fact.info.preset,
            "end_kind": s.end,
            "dealer": s.dealer,
            "next_dealer": s.next_dealer,
            "players": list(fact.info.players),
            "net": list(s.net),
            "house": s.house,
            "settled_event": fact.at.version,
            "position": fact.at.position,
            "settlement": settlement_json(s),
        }
    ]


def write(conn: Connection, batch: list[dict[str, Any]]) -> None:
    if not batch:
        return
    _INSERT.execute(conn, batch)


# Idempotent on the key: a re-applied batch (impossible with the checkpoint, but cheap) is a no-op.
_INSERT = MultiRowInsert(
    hand_settlements,
    [c.name for c in hand_settlements.columns],
    "ON CONFLICT (tenant, table_id, ordinal) DO NOTHING",
)
