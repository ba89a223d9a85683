"""The head's state snapshot is stored without compression (``STORAGE EXTERNAL``).

On most 100-event batches the fast path's one statement also writes the table's state snapshot
(≈ 3.5–11 KB of msgpack, ``KWX_SNAPSHOT_EVERY``) into its head row. With the default storage
(``EXTENDED``) PostgreSQL compressed it with pglz on every such write — ≈ 7.5 % of the backend's
instructions per batch (callgrind), more than its TOAST insert itself; uncompressed it takes
≈ 2 more TOAST chunks (≈ +3 KB of WAL per batch, ≈ +5 %) and ≈ 2.5 × the space per head
(docs/operations.md, Speed). Only new values are affected: a snapshot already stored stays as it
is (compressed) until the head is next snapshotted. Catalog-only: no table rewrite.

Revision ID: 0005_snapshot_external
Revises: 0004_api_keys_revoke
"""

from __future__ import annotations

from alembic import op

revision = "0005_snapshot_external"
down_revision = "0004_api_keys_revoke"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE table_heads ALTER COLUMN snapshot SET STORAGE EXTERNAL")


def downgrade() -> None:
    op.execute("ALTER TABLE table_heads ALTER COLUMN snapshot SET STORAGE EXTENDED")
