"""The read models' settlement documents are stored as ``json``, not ``jsonb`` (issue 16).

``proj_hand_settlements.settlement`` (the CONTRACT.md §2 object, ≈ 1 KB), its ``players`` and
``net``, and ``proj_feed.body`` (a settlement entry holds the same object) are written once and
read back whole; no statement looks inside them. ``jsonb`` input parses the text and builds its
binary form, and every read turns it back into text; ``json`` input only checks the text, which is
stored as it came and read back as it is. Measured (docs/projections.md §6, "Documents as json"):
PostgreSQL's CPU per inserted row −32 µs for a settlement row and −29 µs for a feed entry of one
(of 70 and 87), about −1.2 µs per projected event.

What changes for a reader: the stored text keeps the projector's key order (msgspec's compact
encoding, the order the document is written in) instead of ``jsonb``'s (shorter keys first); the
values are the same. ``json`` has no equality operator: compare such a column as text, or cast it
to ``jsonb``.

A rewrite of both tables (their rows are converted in place: each document as ``jsonb`` prints it);
a rebuild writes them as the projector does. Down converts back.

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

COLUMNS = {
    "proj_hand_settlements": ("players", "net", "settlement"),
    "proj_feed": ("body",),
}


def _sequential_on_citus() -> None:
    """On a Citus cluster, DDL on the distributed ``proj_hand_settlements`` one connection per node
    (as 0014–0016)."""
    found = op.get_bind().exec_driver_sql("SELECT 1 FROM pg_extension WHERE extname = 'citus'").first()
    if found is not None:
        op.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")


def _retype(to: str) -> None:
    _sequential_on_citus()
    for table, columns in COLUMNS.items():
        changes = ", ".join(f"ALTER COLUMN {c} TYPE {to} USING {c}::{to}" for c in columns)
        op.execute(f"ALTER TABLE {table} {changes}")


def upgrade() -> None:
    _retype("json")


def downgrade() -> None:
    _retype("jsonb")
