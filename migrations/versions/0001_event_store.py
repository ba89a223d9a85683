"""The event store: the append-only events table, one head row per table, the app role.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

from alembic import context, op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _role() -> str:
    role = context.config.attributes.get("db_role", "kwx_app")
    if not role.replace("_", "").isalnum():  # pragma: no cover - settings guard
        raise ValueError(f"bad role name {role!r}")
    return str(role)


def upgrade() -> None:
    role = _role()
    # The role the service runs as. Roles are cluster-wide, so create it only when missing
    # (several databases of one cluster may share it) and make the migrating user a member so
    # the service can SET ROLE to it.
    op.execute(f"""
        DO $$
        BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN
                BEGIN
                    CREATE ROLE {role} NOLOGIN;
                EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
                END;
            END IF;
            IF NOT pg_has_role(current_user, '{role}', 'MEMBER') THEN
                EXECUTE format('GRANT {role} TO %I', current_user);
            END IF;
        END $$;
    """)
    op.execute("""
        CREATE TABLE table_heads (
            table_id          text PRIMARY KEY,
            tenant            text NOT NULL,
            version           bigint NOT NULL DEFAULT 0 CHECK (version >= 0),
            last_hash         bytea NOT NULL,
            snapshot          bytea,
            snapshot_version  bigint NOT NULL DEFAULT 0,
            created_at        timestamptz NOT NULL DEFAULT now(),
            updated_at        timestamptz NOT NULL DEFAULT now()
        )
    """)
    op.execute("CREATE INDEX table_heads_tenant ON table_heads (tenant, table_id)")
    op.execute("""
        CREATE TABLE events (
            position     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            table_id     text NOT NULL,
            version      bigint NOT NULL CHECK (version >= 1),
            event_id     text NOT NULL,
            type         text NOT NULL,
            body         jsonb NOT NULL,
            recorded_at  timestamptz NOT NULL DEFAULT now(),
            tx_id        xid8 NOT NULL DEFAULT pg_current_xact_id(),
            ruling       jsonb,
            hash         bytea NOT NULL CHECK (octet_length(hash) = 32),
            CONSTRAINT events_table_version UNIQUE (table_id, version),
            CONSTRAINT events_table_event_id UNIQUE (table_id, event_id)
        )
    """)
    # The gap-free global read walks (tx_id, position); see docs/operations.md.
    op.execute("CREATE INDEX events_tx_position ON events (tx_id, position)")
    op.execute("""
        CREATE FUNCTION kwx_events_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'kwx: events are immutable (% refused)', TG_OP
                USING ERRCODE = 'insufficient_privilege';
        END $$
    """)
    op.execute("""
        CREATE TRIGGER events_immutable BEFORE UPDATE OR DELETE ON events
            FOR EACH ROW EXECUTE FUNCTION kwx_events_immutable()
    """)
    op.execute("""
        CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
            FOR EACH STATEMENT EXECUTE FUNCTION kwx_events_immutable()
    """)
    op.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
    op.execute(f"GRANT SELECT, INSERT ON events TO {role}")
    op.execute(f"GRANT USAGE ON SEQUENCE events_position_seq TO {role}")
    op.execute(f"GRANT SELECT, INSERT, UPDATE ON table_heads TO {role}")


def downgrade() -> None:
    role = _role()
    op.execute(f"REVOKE ALL ON table_heads FROM {role}")
    op.execute(f"REVOKE ALL ON SEQUENCE events_position_seq FROM {role}")
    op.execute(f"REVOKE ALL ON events FROM {role}")
    op.execute("DROP TABLE events")
    op.execute("DROP FUNCTION kwx_events_immutable()")
    op.execute("DROP TABLE table_heads")
    # The role stays: it is cluster-wide and other databases of the cluster may still use it.
