"""Migration 0019 (the ledger's balances are its entries'): given entries booked under 0018 →
``proj_ledger_accounts`` is a view showing each account's last balance and count, the entries keyed
by (tenant, account kind, account, seq) without a serial; down to 0018 the accounts are a table again
with the same rows and the entries are numbered in booking order; up again, the same view."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from services import migrate

pytestmark = pytest.mark.db

ENTRY = (
    "INSERT INTO proj_ledger_entries (tenant, account, account_kind, seq, amount, balance, counterparty, "
    "counterparty_kind, table_id, hand, ordinal, line, event, reason, seat, detail, position) "
    "VALUES (%s, %s, %s, %s, %s, %s, 'x', 'player', 't1', 1, 1, %s, 9, 'hu', 0, '', %s)"
)
ACCOUNTS = "SELECT tenant, account_kind, account, balance, entries FROM proj_ledger_accounts ORDER BY 1, 2, 3"
KEY = (
    "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
    "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = 'proj_ledger_entries'::regclass AND i.indisprimary "
    "ORDER BY array_position(i.indkey::int2[], a.attnum)"
)
KIND = "SELECT relkind FROM pg_class WHERE relname = 'proj_ledger_accounts'"


def _book(conn: psycopg.Connection[Any]) -> None:
    """ann +5, bo −5 (position 10), then ann −2 (position 11), and the house +1 (position 11)."""
    for args in (
        ("acme", "ann", "player", 1, 5, 5, 0, 10), ("acme", "bo", "player", 1, -5, -5, 0, 10),
        ("acme", "ann", "player", 2, -2, 3, 1, 11), ("acme", "house", "house", 1, 1, 1, 2, 11),
    ):  # fmt: skip
        conn.execute(ENTRY, args)


def test_0019_the_accounts_become_a_view_of_the_entries_and_back(pg_cluster: Any) -> None:
    url = pg_cluster.create_database("kwx_migration_0019")
    migrate.upgrade(url, revision="0018")
    with psycopg.connect(url, autocommit=True) as conn:
        _book(conn)
        conn.execute(
            "INSERT INTO proj_ledger_accounts VALUES ('acme', 'player', 'ann', 3, 2), "
            "('acme', 'player', 'bo', -5, 1), ('acme', 'house', 'house', 1, 1)"
        )
        before = conn.execute(ACCOUNTS).fetchall()
    migrate.upgrade(url, revision="0019")
    with psycopg.connect(url) as conn:
        assert conn.execute(ACCOUNTS).fetchall() == before
        assert conn.execute(KIND).fetchone() == ("v",)
        assert [r[0] for r in conn.execute(KEY)] == ["tenant", "account_kind", "account", "seq"]
        columns = {r[0] for r in conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'proj_ledger_entries'"
        )}  # fmt: skip
        assert "entry_id" not in columns
        # a new entry moves the view with it
        conn.execute(ENTRY, ("acme", "bo", "player", 2, 2, -3, 3, 12))
        assert ("acme", "player", "bo", -3, 2) in conn.execute(ACCOUNTS).fetchall()
        conn.rollback()
    migrate.downgrade(url, revision="0018")
    with psycopg.connect(url) as conn:
        assert conn.execute(KIND).fetchone() == ("r",)
        assert conn.execute(ACCOUNTS).fetchall() == before
        assert [r[0] for r in conn.execute(KEY)] == ["entry_id"]
        numbered = conn.execute(
            "SELECT entry_id, account, seq FROM proj_ledger_entries ORDER BY entry_id"
        ).fetchall()
        # in booking order: by position, settlement and line, a transfer's debit before its credit
        assert numbered == [(1, "bo", 1), (2, "ann", 1), (3, "ann", 2), (4, "house", 1)]
        # the serial goes on after them
        conn.execute(ENTRY, ("acme", "bo", "player", 2, 2, -3, 3, 12))
        (last,) = conn.execute("SELECT max(entry_id) FROM proj_ledger_entries").fetchone() or (None,)
        assert last == 5
        conn.commit()
    migrate.upgrade(url, revision="0019")
    with psycopg.connect(url) as conn:
        assert ("acme", "player", "bo", -3, 2) in conn.execute(ACCOUNTS).fetchall()
