"""API keys: stored as SHA-256 of the secret, never in clear.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from alembic import context, op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _role() -> str:
    return str(context.config.attributes.get("db_role", "kwx_app"))


def upgrade() -> None:
    op.execute("""
        CREATE TABLE api_keys (
            key_id      text PRIMARY KEY,
            key_hash    bytea NOT NULL UNIQUE CHECK (octet_length(key_hash) = 32),
            tenant      text NOT NULL CHECK (tenant ~ '^[A-Za-z0-9_.-]{1,64}$'),
            role        text NOT NULL CHECK (role IN ('platform', 'support', 'dashboard')),
            created_at  timestamptz NOT NULL DEFAULT now(),
            revoked_at  timestamptz
        )
    """)
    op.execute(f"GRANT SELECT, INSERT ON api_keys TO {_role()}")


def downgrade() -> None:
    op.execute(f"REVOKE ALL ON api_keys FROM {_role()}")
    op.execute("DROP TABLE api_keys")
