"""Parked events and log epochs (issue 11 §1, §2; docs/projections.md §1, docs/operations.md).

* ``projection_parked``: an event a read model could not apply (its rows raised, or PostgreSQL
  refused them: a value out of range, a constraint) — or a later event of the same table for the
  same model, parked behind it to keep the table's order — with the model, the event's log place,
  tenant, table, version, event id, the error and how many tries. The model moves on;
  ``kwx projections retry`` applies them after a fix. ``projection_checkpoints.parked`` counts a
  model's parked events (the projector reloads which tables are blocked only when it changes).
* ``log_epochs`` and ``events.epoch``: the global log's order becomes ``(epoch, tx_id, position)``.
  An epoch is a run of one cluster's transaction counter (``pg_control_system()``'s
  ``system_identifier``); ``kwx_log_epoch()`` — called by every pool connection kwx opens and by
  ``kwx migrate`` — opens a new epoch when the running cluster is not the latest epoch's (a dump
  restored into another cluster, ``pg_upgrade``, a logical replica) and sets the column's
  constant default to it (``ALTER … SET DEFAULT``: no per-row cost on the append path). Existing
  events and checkpoints are epoch 1 (``ADD COLUMN … DEFAULT 1``: catalog only, no rewrite).

Revision ID: 0007
Revises: 0005
"""

from __future__ import annotations

from alembic import context, op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def _role() -> str:
    role = context.config.attributes.get("db_role", "kwx_app")
    if not str(role).replace("_", "").isalnum():  # pragma: no cover - settings guard
        raise ValueError(f"bad role name {role!r}")
    return str(role)


# 0x6B777865 "kwxe": one epoch check at a time; SECURITY DEFINER so the app role can open an epoch
# (insert it, move the column default) without owning the tables.
EPOCH_FUNCTION = """
    CREATE FUNCTION kwx_log_epoch() RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    DECLARE
        running    bigint := (SELECT system_identifier FROM pg_control_system());
        latest     integer;
        latest_id  bigint;
    BEGIN
        SELECT epoch, system_identifier INTO latest, latest_id FROM log_epochs ORDER BY epoch DESC LIMIT 1;
        IF latest_id = running THEN
            RETURN latest;
        END IF;
        PERFORM pg_advisory_xact_lock(1802991717);
        SELECT epoch, system_identifier INTO latest, latest_id FROM log_epochs ORDER BY epoch DESC LIMIT 1;
        IF latest_id = running THEN
            RETURN latest;
        END IF;
        latest := coalesce(latest, 0) + 1;
        INSERT INTO log_epochs (epoch, system_identifier, next_xid, last_position)
        VALUES (latest, running, pg_snapshot_xmax(pg_current_snapshot()),
                (SELECT coalesce(max(position), 0) FROM events));
        EXECUTE format('ALTER TABLE events ALTER COLUMN epoch SET DEFAULT %s', latest);
        RAISE LOG 'kwx: log epoch % opened (cluster %)', latest, running;
        RETURN latest;
    END $$
"""


def upgrade() -> None:
    role = _role()
    op.execute("""
        CREATE TABLE log_epochs (
            epoch              integer PRIMARY KEY,
            system_identifier  bigint NOT NULL,
            opened_at          timestamptz NOT NULL DEFAULT now(),
            next_xid           xid8 NOT NULL,
            last_position      bigint NOT NULL
        )
    """)
    op.execute("""
        INSERT INTO log_epochs (epoch, system_identifier, next_xid, last_position)
        SELECT 1, system_identifier, pg_snapshot_xmax(pg_current_snapshot()),
               (SELECT coalesce(max(position), 0) FROM events)
          FROM pg_control_system()
    """)
    op.execute("ALTER TABLE events ADD COLUMN epoch integer NOT NULL DEFAULT 1")
    op.execute("CREATE INDEX events_log_order ON events (epoch, tx_id, position)")
    op.execute("DROP INDEX events_tx_position")
    op.execute(EPOCH_FUNCTION)
    op.execute("ALTER TABLE projection_checkpoints ADD COLUMN epoch integer NOT NULL DEFAULT 1")
    op.execute("ALTER TABLE projection_checkpoints ADD COLUMN parked bigint NOT NULL DEFAULT 0")
    op.execute("""
        CREATE TABLE projection_parked (
            model        varchar(64) NOT NULL,
            epoch        integer NOT NULL,
            tx_id        numeric(20, 0) NOT NULL,
            position     bigint NOT NULL,
            tenant       text NOT NULL,
            table_id     text NOT NULL,
            version      bigint NOT NULL,
            event_id     text NOT NULL,
            behind       bigint,
            error_class  text NOT NULL,
            error        text NOT NULL,
            parked_at    timestamptz NOT NULL DEFAULT now(),
            retried_at   timestamptz,
            tries        integer NOT NULL DEFAULT 1,
            PRIMARY KEY (model, position)
        )
    """)
    op.execute("CREATE INDEX projection_parked_table ON projection_parked (model, tenant, table_id, version)")
    op.execute("CREATE INDEX projection_parked_tenant ON projection_parked (tenant, parked_at)")
    op.execute(f"GRANT SELECT ON log_epochs TO {role}")
    op.execute(f"GRANT EXECUTE ON FUNCTION kwx_log_epoch() TO {role}")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON projection_parked TO {role}")


def downgrade() -> None:
    role = _role()
    op.execute(f"REVOKE ALL ON projection_parked FROM {role}")
    op.execute("DROP TABLE projection_parked")
    op.execute("ALTER TABLE projection_checkpoints DROP COLUMN parked")
    op.execute("ALTER TABLE projection_checkpoints DROP COLUMN epoch")
    op.execute(f"REVOKE ALL ON FUNCTION kwx_log_epoch() FROM {role}")
    op.execute("DROP FUNCTION kwx_log_epoch()")
    op.execute("CREATE INDEX events_tx_position ON events (tx_id, position)")
    op.execute("DROP INDEX events_log_order")
    op.execute("ALTER TABLE events DROP COLUMN epoch")
    op.execute(f"REVOKE ALL ON log_epochs FROM {role}")
    op.execute("DROP TABLE log_epochs")
