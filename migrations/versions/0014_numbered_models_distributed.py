"""The per-table read models numbered per tenant distributed too (issue 14; docs/SCALING.md).

0013 left two per-table read models on a Citus coordinator, ``proj_discrepancies`` (its
``feed_seq``) and ``proj_discovery_tables`` (its ``seq``), because the projector numbered their
rows 1, 2, … per tenant in its ``INSERT … SELECT`` with correlated ``max(seq)`` subqueries, which
Citus refuses on a distributed table. The projector now reads each tenant's greatest number and
inserts plain numbered rows (``projections.sql.last_number``; the same numbers, the same on one
node), so on a cluster both tables follow the other per-table tables:

* ``proj_discrepancies`` and ``proj_discovery_tables`` are distributed on ``table_id``, co-located
  with ``table_heads``;
* ``proj_discovery_tables_seq``, a unique index on ``(tenant, seq)``, becomes a plain index of the
  same name: a unique index of a distributed table must hold its distribution column. The numbers
  stay unique because one projector numbers them, one batch at a time, under its lock;
* ``proj_discovery_players`` (a player's tables: ``(tenant, player_id, seq)`` → table) is
  distributed on ``table_id`` too, its primary key widened to ``(tenant, player_id, seq,
  table_id)`` for the same reason — the same rows, since a seq names one table of its tenant. So a
  player's list, which joins these rows to their tables, is one co-located join per shard, merged
  newest first by the coordinator, instead of a join of a coordinator table with a distributed one.

On every PostgreSQL, ``proj_discovery_players.table_id`` becomes ``text`` (it was
``varchar(64)``), the type of ``table_heads.table_id``, as 0013 did for the other read models (no
rewrite). Down: the three tables back on the coordinator (``undistribute_table``), the unique index
and the primary key as they were.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

DISTRIBUTED = ("proj_discrepancies", "proj_discovery_tables", "proj_discovery_players")


def _citus() -> bool:
    found = op.get_bind().exec_driver_sql("SELECT 1 FROM pg_extension WHERE extname = 'citus'").first()
    return found is not None


def upgrade() -> None:
    op.execute("ALTER TABLE proj_discovery_players ALTER COLUMN table_id TYPE text")
    if not _citus():
        return
    op.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
    op.execute("DROP INDEX proj_discovery_tables_seq")
    op.execute("CREATE INDEX proj_discovery_tables_seq ON proj_discovery_tables (tenant, seq)")
    op.execute("ALTER TABLE proj_discovery_players DROP CONSTRAINT proj_discovery_players_pkey")
    op.execute(
        "ALTER TABLE proj_discovery_players ADD CONSTRAINT proj_discovery_players_pkey "
        "PRIMARY KEY (tenant, player_id, seq, table_id)"
    )
    for table in DISTRIBUTED:
        op.execute(f"SELECT create_distributed_table('{table}', 'table_id', colocate_with => 'table_heads')")
    for table in DISTRIBUTED:
        op.execute(f"SELECT truncate_local_data_after_distributing_table('{table}')")


def downgrade() -> None:
    if _citus():
        _undistribute()
    op.execute("ALTER TABLE proj_discovery_players ALTER COLUMN table_id TYPE varchar(64)")


def _undistribute() -> None:
    op.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
    for table in reversed(DISTRIBUTED):
        op.execute(f"SELECT undistribute_table('{table}')")
    op.execute("ALTER TABLE proj_discovery_players DROP CONSTRAINT proj_discovery_players_pkey")
    op.execute(
        "ALTER TABLE proj_discovery_players ADD CONSTRAINT proj_discovery_players_pkey "
        "PRIMARY KEY (tenant, player_id, seq)"
    )
    op.execute("DROP INDEX proj_discovery_tables_seq")
    op.execute("CREATE UNIQUE INDEX proj_discovery_tables_seq ON proj_discovery_tables (tenant, seq)")
