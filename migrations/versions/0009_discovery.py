"""The discovery read model (issue 13, find it): tables, a player's tables and a table's hands
without a scan (projections/discovery.py; docs/projections.md, discovery).

* ``proj_discovery_tables`` (tenant, table_id), and a unique index (tenant, seq): the newest-first
  list of a tenant's tables, paged by seq.
* ``proj_discovery_players`` (tenant, player_id, seq): a player's tables newest first.
* ``proj_discovery_hands`` (tenant, table_id, hand): a table's hands in order.

The model's checkpoint starts at 0 (the projector adds it), so the first run after this revision
projects the whole log into it. Down drops the three tables and the checkpoint.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from alembic import context, op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

TABLES = ("proj_discovery_tables", "proj_discovery_players", "proj_discovery_hands")


def _role() -> str:
    role = context.config.attributes.get("db_role", "kwx_app")
    return str(role)


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE proj_discovery_tables (
            tenant text NOT NULL,
            table_id varchar(64) NOT NULL,
            seq bigint NOT NULL,
            players jsonb NOT NULL,
            preset text NOT NULL,
            hands integer NOT NULL,
            first_at timestamptz,
            last_at timestamptz,
            flags integer NOT NULL,
            PRIMARY KEY (tenant, table_id)
        )
        """
    )
    op.execute("CREATE UNIQUE INDEX proj_discovery_tables_seq ON proj_discovery_tables (tenant, seq)")
    op.execute(
        """
        CREATE TABLE proj_discovery_players (
            tenant text NOT NULL,
            player_id text NOT NULL,
            seq bigint NOT NULL,
            table_id varchar(64) NOT NULL,
            PRIMARY KEY (tenant, player_id, seq)
        )
        """
    )
    op.execute(
        """
        CREATE TABLE proj_discovery_hands (
            tenant text NOT NULL,
            table_id varchar(64) NOT NULL,
            hand integer NOT NULL,
            ordinal integer,
            start_event integer,
            end_event integer,
            dealer integer,
            end_kind varchar(16),
            winners jsonb,
            net jsonb,
            flags integer NOT NULL,
            at timestamptz,
            PRIMARY KEY (tenant, table_id, hand)
        )
        """
    )
    for table in TABLES:
        op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON {table} TO {_role()}")


def downgrade() -> None:
    op.execute("DROP TABLE proj_discovery_hands")
    op.execute("DROP TABLE proj_discovery_players")
    op.execute("DROP TABLE proj_discovery_tables")
    op.execute("DELETE FROM projection_checkpoints WHERE name = 'discovery'")
    op.execute("DELETE FROM projection_parked WHERE model = 'discovery'")
