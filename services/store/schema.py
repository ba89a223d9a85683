"""The tables as SQLAlchemy Core metadata, for queries (the DDL itself is in migrations/).

A table is ``(tenant, table_id)``: each tenant has its own table ids (migration 0006), and every
per-table key starts with both."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import BYTEA, JSONB

metadata = sa.MetaData()

table_heads = sa.Table(
    "table_heads",
    metadata,
    sa.Column("tenant", sa.Text, primary_key=True),
    sa.Column("table_id", sa.Text, primary_key=True),
    sa.Column("version", sa.BigInteger, nullable=False),
    sa.Column("last_hash", BYTEA, nullable=False),
    sa.Column("snapshot", BYTEA),
    sa.Column("snapshot_version", sa.BigInteger, nullable=False),
    sa.Column("fact_ctx", BYTEA),  # the fact context at the snapshot (projections.stored_facts)
    sa.Column("created_at", sa.DateTime(timezone=True)),
    sa.Column("updated_at", sa.DateTime(timezone=True)),
)

events = sa.Table(
    "events",
    metadata,
    sa.Column("tenant", sa.Text, primary_key=True),
    sa.Column("table_id", sa.Text, primary_key=True),
    sa.Column("version", sa.BigInteger, primary_key=True),
    sa.Column("position", sa.BigInteger, nullable=False),  # the global log's identity (not a key)
    sa.Column("event_id", sa.Text, nullable=False),
    sa.Column("type", sa.Text, nullable=False),
    sa.Column("body", JSONB, nullable=False),
    sa.Column("recorded_at", sa.DateTime(timezone=True)),
    sa.Column("tx_id", sa.Text),  # xid8; read as text (::text) and turned into an int
    sa.Column("ruling", JSONB),
    sa.Column("hash", BYTEA, nullable=False),
    sa.Column("facts", BYTEA),  # the facts the append found (projections.stored_facts), NULL: none
    sa.Column("judge", sa.Integer),  # who found them (stored_facts.JUDGE); NULL: stored before 0012
)

api_keys = sa.Table(
    "api_keys",
    metadata,
    sa.Column("key_id", sa.Text, primary_key=True),
    sa.Column("key_hash", BYTEA, nullable=False),
    sa.Column("tenant", sa.Text, nullable=False),
    sa.Column("role", sa.Text, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True)),
    sa.Column("revoked_at", sa.DateTime(timezone=True)),
)
