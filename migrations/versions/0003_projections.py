"""The read models of projections/ (issue 4) and the NOTIFY that wakes the projector.

Tables (described for the code in projections/schema.py): one checkpoint per projection, hand
settlements, the double-entry ledger and its account balances, player statistics and pattern
counts, settlement discrepancies, per-hand state snapshots. Plus a statement-level trigger on
``events`` that sends ``NOTIFY kwx_events`` with each appending statement (COPY included); the
notification is delivered at commit, so a woken projector always finds the new events.

Revision ID: 0003_projections
Revises: 0002
"""

from __future__ import annotations

from alembic import context, op

revision = "0003_projections"
down_revision = "0002"
branch_labels = None
depends_on = None

TABLES = (
    "projection_checkpoints",
    "proj_hand_settlements",
    "proj_ledger_entries",
    "proj_ledger_accounts",
    "proj_player_stats",
    "proj_player_patterns",
    "proj_discrepancies",
    "proj_table_snapshots",
)

COUNTERS = (
    "hands_played", "hands_aborted", "hands_exhausted", "hands_dealt", "wins", "wins_self_draw",
    "wins_discard", "wins_robbed_kong", "wins_double", "deal_ins", "deal_ins_double", "robbed_kongs",
    "bao_hu_paid", "bao_hu_coins", "liang_dao_declared", "liang_dao_won", "lou_hu_incurred",
    "kongs_concealed", "kongs_added", "kongs_exposed", "kongs_in_chain", "sum_multiplier",
    "sum_payable", "coins_won", "coins_lost", "net_coins",
)  # fmt: skip


def _role() -> str:
    role = context.config.attributes.get("db_role", "kwx_app")
    if not str(role).replace("_", "").isalnum():  # pragma: no cover - settings guard
        raise ValueError(f"bad role name {role!r}")
    return str(role)


def upgrade() -> None:
    role = _role()
    op.execute("""
        CREATE TABLE projection_checkpoints (
            name      varchar(64) PRIMARY KEY,
            tx_id     numeric(20, 0) NOT NULL,
            position  bigint NOT NULL,
            events    bigint NOT NULL DEFAULT 0
        )
    """)
    op.execute("""
        CREATE TABLE proj_hand_settlements (
            table_id       varchar(64) NOT NULL,
            ordinal        integer NOT NULL,
            hand           integer NOT NULL,
            tenant         text NOT NULL,
            preset         text NOT NULL,
            end_kind       varchar(16) NOT NULL,
            dealer         integer NOT NULL,
            next_dealer    integer NOT NULL,
            players        jsonb NOT NULL,
            net            jsonb NOT NULL,
            house          bigint NOT NULL,
            settled_event  integer NOT NULL,
            position       bigint NOT NULL,
            settlement     jsonb NOT NULL,
            PRIMARY KEY (table_id, ordinal)
        )
    """)
    op.execute("CREATE INDEX proj_hand_settlements_hand ON proj_hand_settlements (table_id, hand)")
    op.execute("""
        CREATE TABLE proj_ledger_entries (
            entry_id           bigserial PRIMARY KEY,
            tenant             text NOT NULL,
            account            text NOT NULL,
            account_kind       varchar(8) NOT NULL CHECK (account_kind IN ('player', 'house')),
            seq                bigint NOT NULL,
            amount             bigint NOT NULL,
            balance            bigint NOT NULL,
            counterparty       text NOT NULL,
            counterparty_kind  varchar(8) NOT NULL,
            table_id           varchar(64) NOT NULL,
            hand               integer NOT NULL,
            ordinal            integer NOT NULL,
            line               integer NOT NULL,
            event              integer NOT NULL,
            reason             varchar(16) NOT NULL,
            seat               integer,
            detail             text NOT NULL,
            position           bigint NOT NULL,
            UNIQUE (tenant, account_kind, account, seq)
        )
    """)
    op.execute("CREATE INDEX proj_ledger_entries_table ON proj_ledger_entries (table_id, ordinal)")
    op.execute("""
        CREATE TABLE proj_ledger_accounts (
            tenant        text NOT NULL,
            account_kind  varchar(8) NOT NULL,
            account       text NOT NULL,
            balance       bigint NOT NULL,
            entries       bigint NOT NULL,
            PRIMARY KEY (tenant, account_kind, account)
        )
    """)
    counters = ",\n".join(f"            {c} bigint NOT NULL DEFAULT 0" for c in COUNTERS)
    op.execute(f"""
        CREATE TABLE proj_player_stats (
            tenant          text NOT NULL,
            player_id       text NOT NULL,
            preset          text NOT NULL,
{counters},
            max_multiplier  bigint NOT NULL DEFAULT 0,
            PRIMARY KEY (tenant, player_id, preset)
        )
    """)
    op.execute("CREATE INDEX proj_player_stats_net ON proj_player_stats (tenant, net_coins DESC)")
    op.execute("""
        CREATE TABLE proj_player_patterns (
            tenant     text NOT NULL,
            player_id  text NOT NULL,
            preset     text NOT NULL,
            pattern    varchar(64) NOT NULL,
            wins       bigint NOT NULL,
            PRIMARY KEY (tenant, player_id, preset, pattern)
        )
    """)
    op.execute("""
        CREATE TABLE proj_discrepancies (
            table_id        varchar(64) NOT NULL,
            reported_event  integer NOT NULL,
            hand            integer NOT NULL,
            tenant          text NOT NULL,
            position        bigint NOT NULL,
            lines           jsonb NOT NULL,
            net_computed    jsonb NOT NULL,
            net_reported    jsonb NOT NULL,
            reported        jsonb NOT NULL,
            computed        jsonb,
            PRIMARY KEY (table_id, reported_event)
        )
    """)
    op.execute("CREATE INDEX proj_discrepancies_feed ON proj_discrepancies (tenant, position)")
    op.execute("""
        CREATE TABLE proj_table_snapshots (
            table_id  varchar(64) NOT NULL,
            version   integer NOT NULL,
            hand      integer NOT NULL,
            state     bytea NOT NULL,
            PRIMARY KEY (table_id, version)
        )
    """)
    # Wake the projector: one notification per appending statement, delivered at commit.
    op.execute("""
        CREATE FUNCTION kwx_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_notify('kwx_events', '');
            RETURN NULL;
        END $$
    """)
    op.execute("""
        CREATE TRIGGER events_notify AFTER INSERT ON events
            FOR EACH STATEMENT EXECUTE FUNCTION kwx_events_notify()
    """)
    for table in TABLES:
        op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON {table} TO {role}")
    op.execute(f"GRANT USAGE ON SEQUENCE proj_ledger_entries_entry_id_seq TO {role}")


def downgrade() -> None:
    role = _role()
    op.execute("DROP TRIGGER events_notify ON events")
    op.execute("DROP FUNCTION kwx_events_notify()")
    op.execute(f"REVOKE ALL ON SEQUENCE proj_ledger_entries_entry_id_seq FROM {role}")
    for table in reversed(TABLES):
        op.execute(f"REVOKE ALL ON {table} FROM {role}")
        op.execute(f"DROP TABLE {table}")
