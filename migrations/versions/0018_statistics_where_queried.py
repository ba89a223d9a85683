"""Column statistics only where a query can use them (issue 16: what autovacuum costs the read models).

``ANALYZE`` samples up to 30,000 rows of a table and, for every column, sorts the sample's values
to find the common ones and a histogram — ≈ 10 ms of CPU per column of such a sample. Autovacuum
analyzes a table each time a tenth of it has changed, so a growing table is analyzed often: a
fresh database under load analyzed ``events`` and ``proj_ledger_entries`` every few seconds (0.4 and
0.24 s of CPU each time; docs/projections.md §6, "Statistics where queried"). No statement filters,
joins or sorts on the payload columns below — the event's body, its ruling, facts and hash; a
ledger entry's amounts and references; a hand's details; the statistics' counters (the leaderboard
sums them per player and sorts the sums) — so their statistics were never read: ``SET STATISTICS
0`` stops collecting them. The key and filter columns keep theirs (the default target).

Catalog only. Down puts the default target (-1) back. On a Citus cluster only the coordinator's own
tables change (the ledger, the statistics): Citus refuses ``ALTER COLUMN … SET STATISTICS`` on a
distributed table ("alter table command is currently unsupported"), whose shards are analyzed on
their workers.

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

_COUNTERS = (
    "hands_played", "hands_aborted", "hands_exhausted", "hands_dealt", "wins", "wins_self_draw",
    "wins_discard", "wins_robbed_kong", "wins_double", "deal_ins", "deal_ins_double", "robbed_kongs",
    "bao_hu_paid", "bao_hu_coins", "liang_dao_declared", "liang_dao_won", "lou_hu_incurred",
    "hu_violations", "kongs_concealed", "kongs_added", "kongs_exposed", "kongs_in_chain",
    "sum_multiplier", "sum_payable", "coins_won", "coins_lost", "net_coins", "max_multiplier",
)  # fmt: skip

UNQUERIED = {
    "events": ("body", "ruling", "facts", "hash"),
    "proj_ledger_entries": (
        "amount", "balance", "counterparty", "counterparty_kind", "hand", "ordinal", "line", "event",
        "reason", "seat", "detail", "position",
    ),
    "proj_discovery_hands": (
        "ordinal", "start_event", "end_event", "dealer", "end_kind", "winners", "net", "flags", "at",
    ),
    "proj_hand_settlements": ("players", "net", "settlement", "house", "settled_event", "position"),
    "proj_player_stats": _COUNTERS,
}  # fmt: skip


def _distributed() -> set[str]:
    """The tables a Citus cluster distributes (none on one PostgreSQL)."""
    bind = op.get_bind()
    if bind.exec_driver_sql("SELECT 1 FROM pg_extension WHERE extname = 'citus'").first() is None:
        return set()
    return {str(r[0]) for r in bind.exec_driver_sql("SELECT logicalrelid::text FROM pg_dist_partition")}


def _target(value: int) -> None:
    distributed = _distributed()
    for table, columns in UNQUERIED.items():
        if table in distributed:
            continue
        changes = ", ".join(f"ALTER COLUMN {c} SET STATISTICS {value}" for c in columns)
        op.execute(f"ALTER TABLE {table} {changes}")


def upgrade() -> None:
    _target(0)


def downgrade() -> None:
    _target(-1)
