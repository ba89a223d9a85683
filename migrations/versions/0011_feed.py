"""The feed read model (issue 15, a live feed for integrators; projections/feed.py): one row per
entry of a tenant's feed — settlements, rulings, discrepancies, parked events — numbered 1, 2, …
per tenant (``seq``, the feed's cursor), in the order the projector applied them.

The model's checkpoint starts at 0 (the projector adds it), so the first run after this revision
projects the whole log into it. Down drops the table, the checkpoint and the model's parked events.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

from alembic import context, op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def _role() -> str:
    role = context.config.attributes.get("db_role", "kwx_app")
    return str(role)


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE proj_feed (
            tenant text NOT NULL,
            seq bigint NOT NULL,
            kind varchar(16) NOT NULL,
            table_id varchar(64) NOT NULL,
            version integer NOT NULL,
            body jsonb NOT NULL,
            PRIMARY KEY (tenant, seq)
        )
        """
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON proj_feed TO {_role()}")


def downgrade() -> None:
    op.execute("DROP TABLE proj_feed")
    op.execute("DELETE FROM projection_checkpoints WHERE name = 'feed'")
    op.execute("DELETE FROM projection_parked WHERE model = 'feed'")
