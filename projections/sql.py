"""Run SQLAlchemy Core statements on a psycopg connection (the service has one pool and one
driver: psycopg_pool; statements are built with Core and compiled for the psycopg dialect)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from sqlalchemy.dialects import postgresql as pg_dialects
from sqlalchemy.sql import ClauseElement

_DIALECT = pg_dialects.psycopg.dialect()  # type: ignore[attr-defined]


def _adapt(value: Any) -> Any:
    return Jsonb(value) if isinstance(value, dict | list) else value


def compiled(stmt: ClauseElement, column_keys: Sequence[str] | None = None) -> tuple[str, dict[str, Any]]:
    c = stmt.compile(
        dialect=_DIALECT,
        column_keys=list(column_keys) if column_keys is not None else None,
        compile_kwargs={"render_postcompile": True},
    )
    return str(c), {k: _adapt(v) for k, v in c.params.items()}


def fetch(conn: psycopg.Connection[Any], stmt: ClauseElement) -> list[tuple[Any, ...]]:
    text, params = compiled(stmt)
    cur = conn.execute(text, params)  # type: ignore[arg-type]  # compiled SQL text
    return cur.fetchall() if cur.description else []


_TEXTS: dict[tuple[str, tuple[str, ...]], str] = {}


def execute_many(
    conn: psycopg.Connection[Any],
    stmt: ClauseElement | Callable[[], ClauseElement],
    rows: Sequence[dict[str, Any]],
    cache: str | None = None,
) -> None:
    """One statement for many rows (``INSERT … VALUES (%(col)s, …)`` executed as a batch).
    ``cache``: a name for the statement, to compile it once per process and column set; ``stmt``
    may then be a function that builds it, called only when the text is not cached yet (building a
    Core statement, e.g. an upsert's ``excluded`` columns, costs more than running it)."""
    if not rows:
        return
    keys = list(rows[0].keys())
    text = _TEXTS.get((cache, tuple(keys))) if cache is not None else None
    if text is None:
        text, _ = compiled(stmt if isinstance(stmt, ClauseElement) else stmt(), keys)
        if cache is not None:
            _TEXTS[(cache, tuple(keys))] = text
    with conn.cursor() as cur:
        cur.executemany(text, [{k: _adapt(r[k]) for k in keys} for r in rows])  # type: ignore[arg-type]


Connection = psycopg.Connection[Any]
