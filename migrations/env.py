"""Alembic environment: online migrations only, serialised by an advisory lock so that two
processes starting at once (two `kwx serve`, a test session and a CI job) never race."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool, text

from services.db import sqlalchemy_url

MIGRATION_LOCK = 0x6B7778  # "kwx"

config = context.config
url = config.attributes.get("url") or context.get_x_argument(as_dictionary=True).get("url")
if not url:
    url = config.get_main_option("sqlalchemy.url")
if not url:
    raise SystemExit("no database URL: pass -x url=postgresql://… or use `kwx migrate`")

engine = create_engine(sqlalchemy_url(url), poolclass=pool.NullPool)
with engine.connect() as connection:
    connection.execute(text("SELECT pg_advisory_lock(:k)"), {"k": MIGRATION_LOCK})
    connection.commit()
    try:
        context.configure(connection=connection, transactional_ddl=True)
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()
    finally:
        connection.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": MIGRATION_LOCK})
        connection.commit()
engine.dispose()
