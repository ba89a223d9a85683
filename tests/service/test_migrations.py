"""Every migration is reversible: upgrade → downgrade → upgrade on a fresh database."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from services import migrate

pytestmark = pytest.mark.db

OURS = ("events", "table_heads", "api_keys")


def tables(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    return {r[0] for r in rows}


def test_upgrade_downgrade_upgrade(pg_cluster: Any) -> None:
    url = pg_cluster.create_database("kwx_migrations")
    migrate.upgrade(url)
    head = migrate.current(url)
    assert head is not None and set(OURS) <= tables(url)
    migrate.downgrade(url, revision="base")
    assert migrate.current(url) is None
    assert not (set(OURS) & tables(url))
    migrate.upgrade(url)
    assert migrate.current(url) == head and set(OURS) <= tables(url)


def test_each_step_down_and_up(pg_cluster: Any) -> None:
    from alembic.script import ScriptDirectory

    from services.migrate import _config

    url = pg_cluster.create_database("kwx_migration_steps")
    script = ScriptDirectory.from_config(_config(url, "kwx_app"))
    revisions = [r.revision for r in reversed(list(script.walk_revisions()))]
    for revision in revisions:
        migrate.upgrade(url, revision=revision)
        assert migrate.current(url) == revision
        migrate.downgrade(url, revision="-1")
        migrate.upgrade(url, revision=revision)
        assert migrate.current(url) == revision
