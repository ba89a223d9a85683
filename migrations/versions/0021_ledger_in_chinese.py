"""A ledger entry says its derivation in Chinese too: ``proj_ledger_entries.detail_zh``.

Every §2 transfer carries the engine's derivation in English (``detail``) and in Chinese
(``detail_zh``, docs/settlement.md); the ledger booked the English one only. The projector now
books both (the engine's text, in wire notation, as ``detail`` is); the ledger routes serve it made
whole (``5筒``, ``甲``), as the settlement route does.

The column is nullable and has no default: adding it rewrites nothing. Entries booked before this
revision have none (the routes answer ``null``) until ``kwx projections rebuild ledger`` books them
again. Like the entries' other payload columns (0018) it collects no statistics: no statement
filters, joins or sorts on it. On a Citus cluster the ledger is a coordinator table, changed the same
way.

Down drops the column.

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE proj_ledger_entries ADD COLUMN detail_zh text")
    op.execute("ALTER TABLE proj_ledger_entries ALTER COLUMN detail_zh SET STATISTICS 0")


def downgrade() -> None:
    op.execute("ALTER TABLE proj_ledger_entries DROP COLUMN detail_zh")
