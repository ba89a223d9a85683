"""The ledger's balances are its entries' (issue 16: fewer rows per hand).

``proj_ledger_accounts`` held, per account, its balance and its number of entries: what the
account's last entry already says (its running ``balance`` and its ``seq``, 1, 2, … per account
with no gaps). The projector upserted it for every account a batch touched (≈ 3.5 rows a hand)
and read it back for the next batch's opening balances. Now the account's last entry is the one
source (one backward probe of the ``(tenant, account_kind, account, seq)`` key), and
``proj_ledger_accounts`` is a view of exactly that, with the same columns, for whoever reads it
with SQL. ``proj_ledger_entries`` loses its serial ``entry_id`` (no query reads it; every insert
drew a number from its sequence and added an entry to its index): ``(tenant, account_kind,
account, seq)`` is the primary key. Measured in docs/projections.md §6 ("The ledger from its
entries").

The ledger tables stay on the coordinator of a Citus cluster (0013), so this is the same DDL
there. Down makes the table again from the view's rows and numbers the entries in the order of
their log position.

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

from alembic import context, op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

UNIQUE = "proj_ledger_entries_tenant_account_kind_account_seq_key"  # 0003's UNIQUE, by its default name
VIEW = """
    CREATE VIEW proj_ledger_accounts AS
    SELECT DISTINCT ON (e.tenant, e.account_kind, e.account)
           e.tenant, e.account_kind, e.account, e.balance, e.seq AS entries
    FROM proj_ledger_entries e
    ORDER BY e.tenant, e.account_kind, e.account, e.seq DESC
"""


def _role() -> str:
    role = context.config.attributes.get("db_role", "kwx_app")
    if not str(role).replace("_", "").isalnum():  # pragma: no cover - settings guard
        raise ValueError(f"bad role name {role!r}")
    return str(role)


def upgrade() -> None:
    op.execute("DROP TABLE proj_ledger_accounts")
    op.execute(VIEW)
    op.execute(f"GRANT SELECT ON proj_ledger_accounts TO {_role()}")
    op.execute("ALTER TABLE proj_ledger_entries DROP COLUMN entry_id")  # its key and sequence with it
    op.execute(
        f"ALTER TABLE proj_ledger_entries DROP CONSTRAINT {UNIQUE}, "
        "ADD PRIMARY KEY (tenant, account_kind, account, seq)"
    )


def downgrade() -> None:
    role = _role()
    op.execute("""
        CREATE TABLE proj_ledger_accounts_0018 (
            tenant        text NOT NULL,
            account_kind  varchar(8) NOT NULL,
            account       text NOT NULL,
            balance       bigint NOT NULL,
            entries       bigint NOT NULL,
            CONSTRAINT proj_ledger_accounts_pkey PRIMARY KEY (tenant, account_kind, account)
        ) WITH (fillfactor = 70)
    """)
    op.execute("INSERT INTO proj_ledger_accounts_0018 SELECT * FROM proj_ledger_accounts")
    op.execute("DROP VIEW proj_ledger_accounts")
    op.execute("ALTER TABLE proj_ledger_accounts_0018 RENAME TO proj_ledger_accounts")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON proj_ledger_accounts TO {role}")
    op.execute(
        "ALTER TABLE proj_ledger_entries DROP CONSTRAINT proj_ledger_entries_pkey, "
        f"ADD CONSTRAINT {UNIQUE} UNIQUE (tenant, account_kind, account, seq)"
    )
    # the entries numbered again in the order the projector booked them (log position, then line)
    op.execute("ALTER TABLE proj_ledger_entries ADD COLUMN entry_id bigint")
    op.execute("CREATE SEQUENCE proj_ledger_entries_entry_id_seq OWNED BY proj_ledger_entries.entry_id")
    op.execute(
        "UPDATE proj_ledger_entries e SET entry_id = n.id FROM (SELECT tenant, account_kind, account, seq, "
        "row_number() OVER (ORDER BY position, ordinal, line, amount) AS id FROM proj_ledger_entries) n "
        "WHERE (e.tenant, e.account_kind, e.account, e.seq) = (n.tenant, n.account_kind, n.account, n.seq)"
    )
    op.execute(
        "SELECT setval('proj_ledger_entries_entry_id_seq', "
        "coalesce((SELECT max(entry_id) FROM proj_ledger_entries), 0) + 1, false)"
    )
    op.execute(
        "ALTER TABLE proj_ledger_entries ALTER COLUMN entry_id SET DEFAULT "
        "nextval('proj_ledger_entries_entry_id_seq'), ALTER COLUMN entry_id SET NOT NULL, "
        "ADD CONSTRAINT proj_ledger_entries_pkey PRIMARY KEY (entry_id)"
    )
    op.execute(f"GRANT USAGE ON SEQUENCE proj_ledger_entries_entry_id_seq TO {role}")
