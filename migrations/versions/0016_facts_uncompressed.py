"""The events' stored facts are kept without compression (issue 16: the ingest path pays for them).

A ``hand_started``'s facts (0012) hold the table's engine state (≈ 3.8 KB of msgpack, more for a
table with a long history), so its row passes PostgreSQL's TOAST threshold (≈ 2 KB) and, with the
default, pglz compressed the value inside the append's statement, once per hand — as it did the
head's snapshot before 0005. ``toast_tuple_target = 8160`` (the most a heap page allows) tells
PostgreSQL to shrink only rows longer than that: such a row is stored as it is, inline, and a read
of its state (the projector's page, a replay from the hand start) needs no decompression either. A
row over 8160 bytes is compressed and moved out of line as before. Measured (docs/projections.md
§6, "The ingest path, judged once"): the append's PostgreSQL CPU −1.8 to −2.4 µs per event, ≈ +7 %
of the events table's size. (``ALTER COLUMN … SET STORAGE``, 0005's way, is refused on a Citus
distributed table; a storage parameter is propagated to its shards.)

Only rows written from now on are affected; catalog-only, no rewrite. Down resets the parameter.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def _sequential_on_citus() -> None:
    """On a Citus cluster, DDL on the distributed ``events`` one connection per node (as 0014, 0015)."""
    found = op.get_bind().exec_driver_sql("SELECT 1 FROM pg_extension WHERE extname = 'citus'").first()
    if found is not None:
        op.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")


def upgrade() -> None:
    _sequential_on_citus()
    op.execute("ALTER TABLE events SET (toast_tuple_target = 8160)")


def downgrade() -> None:
    _sequential_on_citus()
    op.execute("ALTER TABLE events RESET (toast_tuple_target)")
