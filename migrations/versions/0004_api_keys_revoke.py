"""API keys can be revoked by `kwx keys revoke`, which runs as the service role: ``kwx_app`` gets
``UPDATE`` on the one column ``revoked_at`` (nothing else of a key can change), and a trigger makes
revocation one-way — ``revoked_at`` may go from null to a time, never back nor to another time
(for everyone, the owner included, like the immutability of ``events``).

Revision ID: 0004_api_keys_revoke
Revises: 0003_projections
"""

from __future__ import annotations

from alembic import context, op

revision = "0004_api_keys_revoke"
down_revision = "0003_projections"
branch_labels = None
depends_on = None


def _role() -> str:
    role = context.config.attributes.get("db_role", "kwx_app")
    if not str(role).replace("_", "").isalnum():  # pragma: no cover - settings guard
        raise ValueError(f"bad role name {role!r}")
    return str(role)


def upgrade() -> None:
    op.execute("""
        CREATE FUNCTION kwx_api_keys_revoke_once() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF OLD.revoked_at IS NOT NULL AND NEW.revoked_at IS DISTINCT FROM OLD.revoked_at THEN
                RAISE EXCEPTION 'kwx: a revoked API key stays revoked (%)', OLD.key_id;
            END IF;
            RETURN NEW;
        END $$
    """)
    op.execute("""
        CREATE TRIGGER api_keys_revoke_once BEFORE UPDATE OF revoked_at ON api_keys
            FOR EACH ROW EXECUTE FUNCTION kwx_api_keys_revoke_once()
    """)
    op.execute(f"GRANT UPDATE (revoked_at) ON api_keys TO {_role()}")


def downgrade() -> None:
    op.execute(f"REVOKE UPDATE (revoked_at) ON api_keys FROM {_role()}")
    op.execute("DROP TRIGGER api_keys_revoke_once ON api_keys")
    op.execute("DROP FUNCTION kwx_api_keys_revoke_once()")
