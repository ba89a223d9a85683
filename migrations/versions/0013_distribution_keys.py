"""Distribution keys (issue 14): the per-table tables distributed by table id on a Citus cluster.

On every PostgreSQL:

* every primary and unique key of a per-table table already holds ``(tenant, table_id)`` (0006);
  what was left is the column's type: ``table_id`` of the per-table read models becomes ``text``,
  the type of ``events.table_id`` (it was ``varchar(64)``; tables co-located on a column need one
  type; the API already refuses an id longer than 64). varchar → text is binary-compatible: no
  rewrite, the indexes are kept;
* ``kwx_log_epoch()`` (0007) reads ``max(position)`` of ``events`` into a variable before it inserts
  the new epoch's row, instead of in a subquery of the ``INSERT``: the same on one node, and on a
  cluster, where ``log_epochs`` is a coordinator table and ``events`` distributed, Citus refuses the
  subquery ("subqueries are not supported within INSERT queries") — every pool connection of a
  restored cluster failed there.

Only where the ``citus`` extension is installed in the database (a Citus coordinator;
docs/SCALING.md):

* ``table_heads``, ``events``, ``proj_table_snapshots``, ``proj_hand_settlements`` and
  ``proj_discovery_hands`` are distributed on ``table_id``, co-located with ``table_heads``: one
  table's head, events and per-table read-model rows live in one shard group on one worker, so an
  append (the head's conditional ``UPDATE`` and the events' ``INSERT``) is a single-node
  transaction;
* ``api_keys`` becomes a reference table (a copy on every node). kwx has no ``tenants`` table: a
  tenant is a name on keys and rows;
* the rest stays on the coordinator (Citus local tables): the per-tenant read models (ledger,
  statistics, discovery's players, the feed), ``projection_checkpoints``, ``projection_parked``,
  ``log_epochs``, ``alembic_version`` — and two per-table read models that number their rows per
  tenant, ``proj_discrepancies`` (``feed_seq``) and ``proj_discovery_tables`` (``seq``): the
  projector numbers them in its ``INSERT … SELECT`` from a ``json_to_recordset`` with correlated
  ``max(seq)`` subqueries, which Citus refuses on a distributed table ("correlated subqueries are
  not supported when the FROM clause contains a set returning function", "complex joins are only
  supported when all distributed tables are co-located…"). Distributing them needs that numbering
  done differently (docs/SCALING.md, what is not built);
* Citus refuses to distribute a table with triggers: the immutability triggers (``events``) and the
  revoke-once trigger (``api_keys``) are dropped, the tables distributed, and the triggers created
  again with ``citus.enable_unsafe_triggers`` (they then fire on the shards, where the rows are);
  the projector's ``events_notify`` trigger is not: on a shard its NOTIFY would go to the worker,
  where nobody listens, and a transaction that has sent one cannot be prepared, so it would make
  every two-phase commit that touches ``events`` fail. On a cluster the projector's poll (1 s)
  is what wakes it (docs/SCALING.md);
* the app role gets ``LOGIN``: Citus opens its connections to the workers as the *current* user,
  which after the service's ``SET ROLE`` is the app role (a ``NOLOGIN`` role is refused there).
  It still has no password: which hosts may use it is ``pg_hba.conf``'s to say (docs/SCALING.md).

Downgrade: on Citus, every distributed and reference table goes back to a local table on the
coordinator (``undistribute_table``, triggers set aside and created again, ``events_notify``
included; the role keeps ``LOGIN``: roles are cluster-wide and another database of the cluster may
still need it); everywhere, the read models' ``table_id`` is ``varchar(64)`` again and
``kwx_log_epoch()`` 0007's.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

from alembic import context, op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

# co-located with the first; the order is the order of distribution
DISTRIBUTED = (
    "table_heads",
    "events",
    "proj_table_snapshots",
    "proj_hand_settlements",
    "proj_discovery_hands",
)
REFERENCE = ("api_keys",)
# per-table read models whose table_id was varchar(64)
READ_MODELS = (*DISTRIBUTED[2:], "proj_discrepancies", "proj_discovery_tables")

TRIGGERS = {
    "events": (
        "CREATE TRIGGER events_immutable BEFORE UPDATE OR DELETE ON events "
        "FOR EACH ROW EXECUTE FUNCTION kwx_events_immutable()",
        "CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events "
        "FOR EACH STATEMENT EXECUTE FUNCTION kwx_events_immutable()",
        "CREATE TRIGGER events_notify AFTER INSERT ON events "
        "FOR EACH STATEMENT EXECUTE FUNCTION kwx_events_notify()",
    ),
    "api_keys": (
        "CREATE TRIGGER api_keys_revoke_once BEFORE UPDATE OF revoked_at ON api_keys "
        "FOR EACH ROW EXECUTE FUNCTION kwx_api_keys_revoke_once()",
    ),
}
TRIGGER_NAMES = {
    "events": ("events_immutable", "events_no_truncate", "events_notify"),
    "api_keys": ("api_keys_revoke_once",),
}


EPOCH_FUNCTION = """
    CREATE OR REPLACE FUNCTION kwx_log_epoch() RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    DECLARE
        running    bigint := (SELECT system_identifier FROM pg_control_system());
        latest     integer;
        latest_id  bigint;
        last_pos   bigint;
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
        SELECT coalesce(max(position), 0) INTO last_pos FROM events;
        INSERT INTO log_epochs (epoch, system_identifier, next_xid, last_position)
        VALUES (latest, running, pg_snapshot_xmax(pg_current_snapshot()), last_pos);
        EXECUTE format('ALTER TABLE events ALTER COLUMN epoch SET DEFAULT %s', latest);
        RAISE LOG 'kwx: log epoch % opened (cluster %)', latest, running;
        RETURN latest;
    END $$
"""


def _epoch_function_0007() -> str:
    """0007's text of the function, for the downgrade."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).with_name("0007_parked_and_epochs.py")
    spec = importlib.util.spec_from_file_location("kwx_migration_0007", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.EPOCH_FUNCTION).replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)


def _role() -> str:
    role = context.config.attributes.get("db_role", "kwx_app")
    if not role.replace("_", "").isalnum():  # pragma: no cover - settings guard
        raise ValueError(f"bad role name {role!r}")
    return str(role)


def _citus() -> bool:
    found = op.get_bind().exec_driver_sql("SELECT 1 FROM pg_extension WHERE extname = 'citus'").first()
    return found is not None


def _drop_triggers() -> None:
    for table, names in TRIGGER_NAMES.items():
        for name in names:
            op.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")


def _create_triggers(*, notify: bool) -> None:
    for statements in TRIGGERS.values():
        for statement in statements:
            if notify or "events_notify" not in statement:
                op.execute(statement)


def _undistribute_events() -> None:
    """``undistribute_table`` refuses a table with an identity column (``position``), and Citus
    refuses ``DROP IDENTITY`` on a distributed table: copy the rows into a local table of the same
    definition instead, then give it the old names, privileges and sequence position."""
    bind = op.get_bind()
    last, called = bind.exec_driver_sql("SELECT last_value, is_called FROM events_position_seq").one()
    named = bind.exec_driver_sql(
        "SELECT c.relname, pg_get_indexdef(i.indexrelid), k.conname IS NOT NULL FROM pg_index i "
        "JOIN pg_class c ON c.oid = i.indexrelid LEFT JOIN pg_constraint k ON k.conindid = i.indexrelid "
        "AND k.conrelid = i.indrelid WHERE i.indrelid = 'events'::regclass"
    ).all()
    op.execute("ALTER TABLE events RENAME TO events_citus")
    op.execute("CREATE TABLE events (LIKE events_citus INCLUDING ALL)")
    op.execute("INSERT INTO events OVERRIDING SYSTEM VALUE SELECT * FROM events_citus")
    op.execute("DROP TABLE events_citus")
    fresh = dict(
        bind.exec_driver_sql(
            "SELECT regexp_replace(pg_get_indexdef(i.indexrelid), '^CREATE (UNIQUE )?INDEX \\S+ ', ''), "
            "c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = 'events'::regclass"
        ).all()
    )
    for old_name, definition, is_constraint in named:
        shape = definition.split(" ON ", 1)[1].replace("events_citus", "events")
        new_name = fresh["ON " + shape]
        if new_name != old_name:
            if is_constraint:
                op.execute(f"ALTER TABLE events RENAME CONSTRAINT {new_name} TO {old_name}")
            else:
                op.execute(f"ALTER INDEX {new_name} RENAME TO {old_name}")
    sequence = bind.exec_driver_sql("SELECT pg_get_serial_sequence('events', 'position')").scalar_one()
    if sequence != "public.events_position_seq":
        op.execute(f"ALTER SEQUENCE {sequence} RENAME TO events_position_seq")
    op.execute(f"SELECT setval('events_position_seq', {int(last)}, {'true' if called else 'false'})")
    role = _role()
    op.execute(f"GRANT SELECT, INSERT ON events TO {role}")
    op.execute(f"GRANT USAGE ON SEQUENCE events_position_seq TO {role}")


def upgrade() -> None:
    for table in READ_MODELS:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN table_id TYPE text")
    op.execute(EPOCH_FUNCTION)  # CREATE OR REPLACE keeps its owner and grants
    if not _citus():
        return
    # one connection per worker for the whole migration: DDL and the copies of existing rows in
    # one transaction (Citus refuses to mix parallel and sequential access to a shard otherwise)
    op.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
    op.execute("SET LOCAL citus.enable_unsafe_triggers TO on")
    role = _role()
    op.execute(f"ALTER ROLE {role} LOGIN")
    _drop_triggers()
    for table in REFERENCE:
        op.execute(f"SELECT create_reference_table('{table}')")
    first = DISTRIBUTED[0]
    op.execute(f"SELECT create_distributed_table('{first}', 'table_id')")
    for table in DISTRIBUTED[1:]:
        op.execute(f"SELECT create_distributed_table('{table}', 'table_id', colocate_with => '{first}')")
    # existing rows were copied into the shards; the coordinator's own copy goes (before the
    # TRUNCATE trigger is back)
    for table in (*REFERENCE, *DISTRIBUTED):
        op.execute(f"SELECT truncate_local_data_after_distributing_table('{table}')")
    _create_triggers(notify=False)


def downgrade() -> None:
    if _citus():
        op.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
        op.execute("SET LOCAL citus.enable_unsafe_triggers TO on")
        _drop_triggers()
        for table in (*reversed(DISTRIBUTED), *REFERENCE):
            if table == "events":
                _undistribute_events()
            else:
                op.execute(f"SELECT undistribute_table('{table}')")
        _create_triggers(notify=True)
        # the role keeps LOGIN: it is cluster-wide, and the cluster's other databases may still be
        # distributed and use it (as 0001's downgrade keeps the role itself)
    op.execute(_epoch_function_0007())
    for table in READ_MODELS:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN table_id TYPE varchar(64)")
