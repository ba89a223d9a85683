"""Read model ``snapshots``: the engine state of every table right after each ``hand_started``.

``GET /v1/tables/{id}/state?at=N`` starts from the latest snapshot at or before N and folds only
the events of that hand, so reading any point of a long table costs one hand of folding. A
snapshot is only a cache: when one is missing or cannot be decoded (engine changed), the reader
folds from event 1, and ``kwx projections rebuild snapshots`` renews them.
"""

from __future__ import annotations

from typing import Any

from projections.model import Fact, SnapshotTaken
from projections.schema import snapshots
from projections.sql import Connection, MultiRowInsert

NAME = "snapshots"


def rows(fact: Fact) -> list[dict[str, Any]]:
    if not isinstance(fact, SnapshotTaken):
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
