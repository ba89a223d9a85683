"""Read model ``hand_settlements``: one row per settled hand with its CONTRACT.md §2 object."""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy.dialects.postgresql import insert

from projections.model import Fact, HandSettled
from projections.schema import hand_settlements
from projections.sql import Connection, execute_many

NAME = "hand_settlements"


def settlement_json(settlement: Any) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(settlement)
    return out


def rows(fact: Fact) -> list[dict[str, Any]]:
    if not isinstance(fact, HandSettled):
        return []
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
    # Idempotent on the key: a re-applied batch (impossible with the checkpoint, but cheap) is a no-op.
    execute_many(conn, _insert, batch, cache="hand_settlements.1")


def _insert() -> Any:
    return insert(hand_settlements).on_conflict_do_nothing(index_elements=["table_id", "ordinal"])
