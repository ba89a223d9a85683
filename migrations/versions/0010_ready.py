"""Readiness (issue 15): the service's role may read ``alembic_version``, so ``/v1/health/ready``
can say whether the database's schema is at the migrations' head without the owner's credentials.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

from alembic import context, op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def _role() -> str:
    role = context.config.attributes.get("db_role", "kwx_app")
    return str(role)


def upgrade() -> None:
    op.execute(f"GRANT SELECT ON alembic_version TO {_role()}")


def downgrade() -> None:
    op.execute(f"REVOKE SELECT ON alembic_version FROM {_role()}")
