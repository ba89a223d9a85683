"""Migration 0021 (a ledger entry's derivation in Chinese): given an entry booked under 0020 → after
the upgrade it has no Chinese (``detail_zh`` null, and the ledger's page says null rather than a
made-up text), an entry booked after has it, made whole on the page, and the column collects no
statistics; down to 0020 the column is gone and the entries are as they were."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from projections.queries.ledger import LedgerPage
from services import migrate

pytestmark = pytest.mark.db

COLUMNS = "SELECT column_name FROM information_schema.columns WHERE table_name = 'proj_ledger_entries'"
ENTRY = (
    "INSERT INTO proj_ledger_entries (tenant, account, account_kind, seq, amount, balance, counterparty, "
    "counterparty_kind, table_id, hand, ordinal, line, event, reason, seat, detail, position) "
    "VALUES ('acme', 'ann', 'player', %s, -4, %s, 'bo', 'player', 't1', 1, 1, 0, 9, 'kong', 0, "
    "'直杠 6p, the discarder pays; 2 points × base 2 = 4', 10)"
)


def test_0021_books_the_chinese_derivation_from_now_on_and_says_null_for_older_entries(
    pg_cluster: Any,
) -> None:
    url = pg_cluster.create_database("kwx_migration_0021")
    migrate.upgrade(url, revision="0020")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(ENTRY, (1, -4))
    migrate.upgrade(url, revision="0021")
    with psycopg.connect(url) as conn:
        assert "detail_zh" in {r[0] for r in conn.execute(COLUMNS)}
        (target,) = conn.execute(
            "SELECT attstattarget FROM pg_attribute "
            "WHERE attrelid = 'proj_ledger_entries'::regclass AND attname = 'detail_zh'"
        ).fetchone() or (None,)
        assert target == 0
        conn.execute(ENTRY.replace("position)", "position, detail_zh)").replace("10)", "11, %s)"),
                     (2, -8, "直杠 6p，点杠者付；2 × 底分 2 = 4"))  # fmt: skip
        page = LedgerPage("acme", "player", "ann", 0, 10)(conn)
        assert page is not None
        older, newer = page["entries"]
        assert (older["seq"], older["detail_zh"]) == (1, None)  # booked before: no Chinese until rebuilt
        assert older["detail"] == newer["detail"]
        assert newer["detail_zh"] == "直杠 6筒，点杠者付；2 × 底分 2 = 4"  # made whole where it is read
        conn.rollback()
    migrate.downgrade(url, revision="0020")
    with psycopg.connect(url) as conn:
        assert "detail_zh" not in {r[0] for r in conn.execute(COLUMNS)}
        assert conn.execute("SELECT seq, balance FROM proj_ledger_entries").fetchall() == [(1, -4)]
    migrate.upgrade(url, revision="0021")
