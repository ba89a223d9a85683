"""Migration 0008 (player statistics by day) keeps the numbers both ways: given a player's totals row
and two day rows → down to 0007 the totals row is the player's row (the day rows go) → up again it
is the totals row (0001-01-01); a rebuild adds the day rows."""

from __future__ import annotations

import datetime
from typing import Any

import psycopg
import pytest

from services import migrate

pytestmark = pytest.mark.db
COLUMNS = "SELECT column_name FROM information_schema.columns WHERE table_name = 'proj_player_stats'"

INSERT = ("INSERT INTO proj_player_stats (tenant, player_id, preset, day, wins, net_coins, hu_violations, "
          "max_multiplier) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)")  # fmt: skip


def test_0008_down_keeps_the_totals_rows_and_up_keeps_them_as_totals(pg_cluster: Any) -> None:
    url = pg_cluster.create_database("kwx_migration_0008")
    migrate.upgrade(url, revision="0008")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(INSERT, ("acme", "ann", "default", datetime.date(1, 1, 1), 5, 6, 1, 16))
        conn.execute(INSERT, ("acme", "ann", "default", datetime.date(2026, 11, 1), 2, 10, 1, 4))
        conn.execute(INSERT, ("acme", "ann", "default", datetime.date(2026, 11, 2), 3, -4, 0, 16))
        conn.execute(INSERT, ("acme", "bo", "default", datetime.date(1, 1, 1), 1, -6, 0, 2))
    migrate.downgrade(url, revision="0007")
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT player_id, wins, net_coins, max_multiplier FROM proj_player_stats ORDER BY 1"
        ).fetchall()
        columns = {r[0] for r in conn.execute(COLUMNS)}
    assert rows == [("ann", 5, 6, 16), ("bo", 1, -6, 2)]
    assert "day" not in columns and "hu_violations" not in columns
    migrate.upgrade(url, revision="0008")
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT player_id, day, wins, net_coins, hu_violations FROM proj_player_stats ORDER BY 1"
        ).fetchall()
    assert rows == [("ann", datetime.date(1, 1, 1), 5, 6, 0), ("bo", datetime.date(1, 1, 1), 1, -6, 0)]
