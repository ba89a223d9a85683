"""Cheaper read models (issue 16; docs/projections.md §6, "Fewer rows per hand").

* ``events_hand_starts``: a partial index on ``events (tenant, table_id, version) WHERE type =
  'hand_started'``. The append stores each ``hand_started``'s facts, its engine state among them
  (``SnapshotTaken``), in the event's own row (0012); a reader now finds the latest hand start of a
  table at or before any version through this index and takes the state from there, so the
  projector no longer copies the same state into ``proj_table_snapshots`` (that table keeps the
  snapshots of events another judge stored, which the projector folds). One index entry per hand
  (≈ 1 event in 50) is all it adds to an append.
* ``proj_player_stats_net`` (``(tenant, net_coins DESC)``) is dropped: no query reads it (the
  leaderboard sums the rows of a player before it ranks, a player's stats read the primary key),
  and ``net_coins`` changes with every hand, so every upsert of a stats row also wrote a new entry
  into it, where without it the update can stay on its page (a HOT update: no index entry at all).
* ``proj_ledger_entries_table`` (``(tenant, table_id, ordinal)``) and ``proj_hand_settlements_hand``
  (``(tenant, table_id, hand)``) are dropped too: no query of kwx reads through them (a ledger is
  read by account, a hand's settlement is folded from its events), and they were an index entry
  for each of a hand's ≈ 5 ledger entries and for its settlement row.
* ``fillfactor = 70`` on the tables the projector updates in place — player stats and patterns,
  ledger accounts, discovery tables and hands — leaves room on each page for those HOT updates.
  Only pages written from now on are affected; no rewrite.

On a Citus cluster the DDL runs one connection per node (``citus.multi_shard_modify_mode``
sequential, for this transaction), as 0014's does. Down restores the indexes and the default fill
factor and drops the partial index (the snapshots a reader finds then come from
``proj_table_snapshots`` only: ``kwx projections rebuild snapshots --refold`` fills it again).

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

UNREAD = {
    "proj_player_stats_net": "proj_player_stats (tenant, net_coins DESC)",
    "proj_ledger_entries_table": "proj_ledger_entries (tenant, table_id, ordinal)",
    "proj_hand_settlements_hand": "proj_hand_settlements (tenant, table_id, hand)",
}  # indexes no query reads: dropped, and made again on the way down
UPDATED_IN_PLACE = (
    "proj_player_stats", "proj_player_patterns", "proj_ledger_accounts", "proj_discovery_tables",
    "proj_discovery_hands",
)  # fmt: skip


def _sequential_on_citus() -> None:
    """On a Citus cluster, DDL on the distributed tables one connection per node: a migration runs in
    one transaction with others, and a later one that creates a function (0013's ``kwx_log_epoch``
    on the way down) is refused after a parallel operation on a distributed table (as in 0014)."""
    found = op.get_bind().exec_driver_sql("SELECT 1 FROM pg_extension WHERE extname = 'citus'").first()
    if found is not None:
        op.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")


def upgrade() -> None:
    _sequential_on_citus()
    op.execute(
        "CREATE INDEX IF NOT EXISTS events_hand_starts ON events (tenant, table_id, version) "
        "WHERE type = 'hand_started'"
    )
    for index in UNREAD:
        op.execute(f"DROP INDEX IF EXISTS {index}")
    for table in UPDATED_IN_PLACE:
        op.execute(f"ALTER TABLE {table} SET (fillfactor = 70)")


def downgrade() -> None:
    _sequential_on_citus()
    for table in UPDATED_IN_PLACE:
        op.execute(f"ALTER TABLE {table} RESET (fillfactor)")
    for index, definition in UNREAD.items():
        op.execute(f"CREATE INDEX IF NOT EXISTS {index} ON {definition}")
    op.execute("DROP INDEX IF EXISTS events_hand_starts")
