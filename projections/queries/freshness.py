"""How far the checkpointed read models are behind the log: ``/v1/health``'s ``projections`` and
``kwx projections status``. Log-wide (the log's order counts every tenant's events), so neither
answer names a tenant or a table; both are built from :mod:`projections.log`'s helpers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from projections import parked, registry
from projections.log import CHECKPOINTS, CURRENT_EPOCH, NEXT_XID, LogPlace, after, log_order, stale
from projections.sql import Connection

OLDEST_PENDING = (
    "SELECT extract(epoch FROM statement_timestamp() - e.recorded_at)::float8 FROM events e "
    f"WHERE {after('e')} ORDER BY {log_order('e')} LIMIT 1"
)
BEHIND_COUNT = f"SELECT count(*) FROM events e WHERE {after('e')}"


def _read_checkpoints(conn: Connection) -> tuple[dict[str, LogPlace], dict[str, int], int, int]:
    """(name → checkpoint, name → parked count, current epoch, next xid) of every checkpoint row."""
    rows = conn.execute(CHECKPOINTS).fetchall()
    done = {name: (int(ep), int(tx), int(pos)) for name, ep, tx, pos, *_ in rows}
    parked_by = {name: int(n) for name, _, _, _, n, *_ in rows}
    epoch, next_xid = (int(rows[0][5]), int(rows[0][6])) if rows else (0, 0)
    return done, parked_by, epoch, next_xid


def _log_now(conn: Connection) -> tuple[int, int]:
    """(current epoch, next xid) read on their own: when there is no checkpoint row to bring them."""
    row = conn.execute(f"SELECT {CURRENT_EPOCH}, {NEXT_XID}").fetchone()
    return (int(row[0] or 0), int(row[1])) if row else (0, 0)


@dataclass(frozen=True, slots=True)
class Freshness:
    """The slowest model's checkpoint (a model that has none yet starts at the beginning), then the
    first stored event after it, by the log's order (its index: one probe): caught up, or how long
    ago that event was recorded; the parked count; the stale checkpoints. Two small statements.
    Over ``names``: the read models the deployment keeps (``KWX_READ_MODELS``) — one it does not
    keep stays behind on purpose and is no lag; ``models`` in the answer names them."""

    models: ClassVar[tuple[str, ...]] = registry.NAMES
    names: Sequence[str] = registry.NAMES

    def __call__(self, conn: Connection) -> dict[str, Any]:
        kept = [n for n in registry.NAMES if n in self.names]
        done, parked_by, epoch, next_xid = _read_checkpoints(conn)
        parked_count = sum(n for name, n in parked_by.items() if name in kept)
        lag, row = 0.0, None
        if kept:
            ep, tx, position = min(done.get(name, (0, 0, 0)) for name in kept)
            row = conn.execute(OLDEST_PENDING, (ep, str(tx), position)).fetchone()
            lag = 0.0 if row is None else max(0.0, round(float(row[0]), 3))
        stale_ones = sorted(n for n, cp in done.items() if n in kept and stale(cp, epoch, next_xid))
        return {"caught_up": row is None and not stale_ones, "lag_seconds": lag, "parked": parked_count,
                "stale": stale_ones, "models": kept}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Status:
    """Per model of ``names``: its checkpoint, how many stored events are after it, its parked
    events (count, when the oldest was parked) and whether the checkpoint is stale, with a message
    for an operator when it is. A model without a checkpoint row is at (0, 0, 0)."""

    models: ClassVar[tuple[str, ...]] = registry.NAMES
    names: Sequence[str] = registry.NAMES

    def __call__(self, conn: Connection) -> list[dict[str, Any]]:
        done, _, epoch, next_xid = _read_checkpoints(conn)
        if not done:  # no rows to bring the epoch and next xid along
            epoch, next_xid = _log_now(conn)
        summary = parked.summary(conn)
        out = []
        for name in self.names:
            ep, tx, pos = done.get(name, (0, 0, 0))
            (behind,) = conn.execute(BEHIND_COUNT, (ep, str(tx), pos)).fetchone() or (0,)
            count, oldest = summary.get(name, (0, None))
            is_stale = stale((ep, tx, pos), epoch, next_xid)
            line = {"projection": name, "epoch": ep, "tx_id": tx, "position": pos, "behind": behind,
                    "parked": count, "oldest_parked": oldest, "stale": is_stale}  # fmt: skip
            if is_stale:
                line["message"] = (
                    f"checkpoint ahead of the log (epoch {epoch}, next xid {next_xid}): restored or "
                    "copied read models; run kwx projections rebuild"
                )
            out.append(line)
        return out


BEHIND_CAPPED = f"SELECT count(*) FROM (SELECT 1 FROM events e WHERE {after('e')} LIMIT %s) behind"


@dataclass(frozen=True, slots=True)
class PerModel:
    """Per read model, for the metrics (services/metrics.py): how long ago the oldest event it lacks
    was recorded (0 when caught up), how many it lacks (counted up to ``cap``, so a scrape of a far
    behind store stays cheap), its parked events and whether its checkpoint is stale. Log-wide: no
    tenant, no table. Over ``names``: the kept read models (one not kept is behind on purpose)."""

    models: ClassVar[tuple[str, ...]] = registry.NAMES
    cap: int = 1_000_000
    names: Sequence[str] = registry.NAMES

    def __call__(self, conn: Connection) -> list[dict[str, Any]]:
        done, parked_by, epoch, next_xid = _read_checkpoints(conn)
        if not done:
            epoch, next_xid = _log_now(conn)
        out = []
        for name in (n for n in registry.NAMES if n in self.names):
            ep, tx, pos = done.get(name, (0, 0, 0))
            row = conn.execute(OLDEST_PENDING, (ep, str(tx), pos)).fetchone()
            lag = 0.0 if row is None else max(0.0, round(float(row[0]), 3))
            (behind,) = conn.execute(BEHIND_CAPPED, (ep, str(tx), pos, self.cap)).fetchone() or (0,)
            is_stale = stale((ep, tx, pos), epoch, next_xid)
            out.append({"projection": name, "lag_seconds": lag, "behind": int(behind),
                        "parked": parked_by.get(name, 0), "stale": is_stale})  # fmt: skip
        return out
