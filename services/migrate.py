"""Apply the Alembic migrations under ``migrations/`` (used by `kwx migrate` and the service's start)."""

from __future__ import annotations

from pathlib import Path

MIGRATIONS_DIR = Path(__file__).resolve().parents[1] / "migrations"


def _config(url: str, role: str):  # type: ignore[no-untyped-def]
    from alembic.config import Config

    cfg = Config(str(MIGRATIONS_DIR / "alembic.ini"))
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["url"] = url
    cfg.attributes["db_role"] = role
    return cfg


def upgrade(url: str, role: str = "kwx_app", revision: str = "head") -> None:
    import psycopg
    from alembic import command

    from services.db import log_epoch

    command.upgrade(_config(url, role), revision)
    with psycopg.connect(url) as conn:  # a restored or upgraded cluster: a new log epoch now
        log_epoch(conn)


def downgrade(url: str, role: str = "kwx_app", revision: str = "base") -> None:
    from alembic import command

    command.downgrade(_config(url, role), revision)


def current(url: str) -> str | None:
    import psycopg

    with psycopg.connect(url) as conn:
        exists = conn.execute("SELECT to_regclass('alembic_version')").fetchone()
        if not exists or exists[0] is None:
            return None
        row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        return row[0] if row else None


_HEADS: tuple[str, ...] | None = None


def heads() -> tuple[str, ...]:
    """The revisions at the head of ``migrations/`` (one, unless the history branches), read once:
    the schema this code expects (``/v1/health/ready`` compares the database's with it)."""
    global _HEADS
    if _HEADS is None:
        from alembic.script import ScriptDirectory

        _HEADS = tuple(sorted(ScriptDirectory.from_config(_config("", "kwx_app")).get_heads()))
    return _HEADS
