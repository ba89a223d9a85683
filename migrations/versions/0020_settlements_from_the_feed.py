"""A settled hand's §2 document is written once: ``proj_hand_settlements`` is a view of the feed's
settlement entries (issue 16: fewer rows per hand).

The projector wrote each settled hand's §2 object twice — as a ``proj_hand_settlements`` row and as
the body of the tenant's feed entry of kind ``settlement``, which holds the same fields (ordinal,
hand, preset, end, dealer, next dealer, players, net, house, the object) — ≈ 0.7 KB of JSON that the
server checked and stored, and that no endpoint read from the table: the settlement of a hand is
folded from its events, the feed is read from ``proj_feed``. The read model ``hand_settlements``
is gone; ``proj_hand_settlements`` is a view of ``proj_feed`` with the table's columns but
``position`` (a global log position: the feed holds none), for whoever reads it with SQL. Its rows
are the feed's: a rebuild of ``feed`` rebuilds them. Measured in docs/projections.md §6 ("The
settlement written once").

On a Citus cluster the table was distributed (0013) and ``proj_feed`` is a coordinator table: the
view is the coordinator's, as the feed is.

Down makes the table again, empty (distributed again on Citus), with no checkpoint for the read
model ``hand_settlements``: the projector of the kwx that runs that schema projects it from position
0, as it does any read model it has not run yet.

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

from alembic import context, op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

VIEW = """
    CREATE VIEW proj_hand_settlements AS
    SELECT f.tenant, f.table_id::text AS table_id, (f.body ->> 'ordinal')::integer AS ordinal,
           (f.body ->> 'hand')::integer AS hand, f.body ->> 'preset' AS preset,
           (f.body ->> 'end_kind')::varchar(16) AS end_kind, (f.body ->> 'dealer')::integer AS dealer,
           (f.body ->> 'next_dealer')::integer AS next_dealer, f.body -> 'players' AS players,
           f.body -> 'net' AS net, (f.body ->> 'house')::bigint AS house, f.version AS settled_event,
           f.body -> 'settlement' AS settlement
    FROM proj_feed f
    WHERE f.kind = 'settlement'
"""

TABLE = """
    CREATE TABLE proj_hand_settlements (
        table_id       text NOT NULL,
        ordinal        integer NOT NULL,
        hand           integer NOT NULL,
        tenant         text NOT NULL,
        preset         text NOT NULL,
        end_kind       varchar(16) NOT NULL,
        dealer         integer NOT NULL,
        next_dealer    integer NOT NULL,
        players        json NOT NULL,
        net            json NOT NULL,
        house          bigint NOT NULL,
        settled_event  integer NOT NULL,
        position       bigint NOT NULL,
        settlement     json NOT NULL,
        CONSTRAINT proj_hand_settlements_pkey PRIMARY KEY (tenant, table_id, ordinal)
    )
"""
UNQUERIED = ("players", "net", "settlement", "house", "settled_event", "position")  # 0018's


def _role() -> str:
    role = context.config.attributes.get("db_role", "kwx_app")
    if not str(role).replace("_", "").isalnum():  # pragma: no cover - settings guard
        raise ValueError(f"bad role name {role!r}")
    return str(role)


def _citus() -> bool:
    found = op.get_bind().exec_driver_sql("SELECT 1 FROM pg_extension WHERE extname = 'citus'").first()
    return found is not None


def _sequential_on_citus() -> bool:
    """On a Citus cluster, the DDL on the distributed table one connection per node: a migration
    that runs after this one in the same transaction (a downgrade past 0013 does) may not mix
    parallel and sequential access to a shard (as 0013–0017)."""
    if not _citus():
        return False
    op.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
    return True


def upgrade() -> None:
    _sequential_on_citus()
    op.execute("DROP TABLE proj_hand_settlements")
    op.execute(VIEW)
    op.execute(f"GRANT SELECT ON proj_hand_settlements TO {_role()}")
    op.execute("DELETE FROM projection_checkpoints WHERE name = 'hand_settlements'")
    op.execute("DELETE FROM projection_parked WHERE model = 'hand_settlements'")


def downgrade() -> None:
    citus = _sequential_on_citus()
    op.execute("DROP VIEW proj_hand_settlements")
    op.execute(TABLE)
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON proj_hand_settlements TO {_role()}")
    if citus:
        op.execute(
            "SELECT create_distributed_table('proj_hand_settlements', 'table_id', "
            "colocate_with => 'table_heads')"
        )
    else:
        changes = ", ".join(f"ALTER COLUMN {c} SET STATISTICS 0" for c in UNQUERIED)
        op.execute(f"ALTER TABLE proj_hand_settlements {changes}")
