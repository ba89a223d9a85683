"""Migration 0018: the columns no statement filters, joins or sorts on collect no statistics — given
the migrated database, when its tables are analyzed, then ``pg_stats`` has no row for them and
still has the keys' (on a Citus cluster the distributed tables keep the default: Citus refuses the
change there, and the migration skips them; a table a later migration made a view of another —
``proj_hand_settlements``, 0020 — has no statistics of its own)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import psycopg
import pytest

pytestmark = pytest.mark.db


def _migration() -> Any:
    versions = Path(__file__).resolve().parents[2] / "migrations" / "versions"
    path = versions / "0018_statistics_where_queried.py"
    spec = importlib.util.spec_from_file_location("migration_0018", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MIGRATION = _migration()
DEFAULT = (None, -1)  # a column's default target in pg_attribute: NULL since PostgreSQL 17, -1 before


def test_unqueried_columns_are_not_analyzed_and_the_keys_are(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        distributed: set[str] = set()
        if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'").fetchone():
            distributed = {r[0] for r in conn.execute("SELECT logicalrelid::text FROM pg_dist_partition")}
        views = {
            r[0]
            for r in conn.execute(
                "SELECT relname FROM pg_class WHERE relkind = 'v' AND relname = ANY(%s)",
                (list(MIGRATION.UNQUERIED),),
            )
        }
        assert "proj_hand_settlements" in views  # migration 0020
        changed = {t: cols for t, cols in MIGRATION.UNQUERIED.items() if t not in distributed | views}
        assert "proj_ledger_entries" in changed and "proj_player_stats" in changed
        targets = dict(
            conn.execute(
                "SELECT attrelid::regclass::text || '.' || attname, attstattarget FROM pg_attribute "
                "WHERE attrelid::regclass::text = ANY(%s) AND attnum > 0 AND NOT attisdropped",
                (list(MIGRATION.UNQUERIED),),
            ).fetchall()
        )
        for table, columns in MIGRATION.UNQUERIED.items():
            if table in views:  # a view's columns are its query's: nothing is analyzed
                continue
            for column in columns:
                got = targets[f"{table}.{column}"]
                assert (got == 0) if table in changed else (got in DEFAULT), (table, column, got)
        keys = ("events.tenant", "events.table_id", "proj_ledger_entries.account", "proj_player_stats.day")
        for key in keys:
            assert targets[key] in DEFAULT, key  # the keys keep the default target

        conn.execute("ANALYZE proj_ledger_entries")
        analyzed = {
            r[0]
            for r in conn.execute(
                "SELECT attname FROM pg_stats WHERE schemaname = 'public' AND tablename = %s",
                ("proj_ledger_entries",),
            )
        }
        if conn.execute("SELECT count(*) FROM proj_ledger_entries").fetchone() != (0,):
            assert {"tenant", "account", "seq"} <= analyzed
        assert not analyzed & set(MIGRATION.UNQUERIED["proj_ledger_entries"])
