"""Facts judged once (issue 16; docs/projections.md §1, ``projections/stored_facts.py``).

* ``events.facts`` (bytea, NULL when the event gave none): the facts the append found while it
  judged the event — settlements, 漏胡, snapshots, reports met, recorded rulings — as msgpack; the
  projector reads them instead of folding the table again.
* ``events.judge`` (integer): the fingerprint of the engine and fact-finder that found them
  (``stored_facts.JUDGE``) on every event the append stores; NULL on events stored before this
  revision. An event whose judge is not the projector's own is folded from its events, as before.
* ``table_heads.fact_ctx`` (bytea): what fact-finding needs beyond the engine state (pending
  reports, a settlement a 买码 tile may revise, the latest ``at``), kept with the head's snapshot,
  so an append that starts from the snapshot finds the same facts as one that had the table cached.

All three are nullable without a default: catalog changes, no table rewrite. Down drops them.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE events ADD COLUMN facts bytea, ADD COLUMN judge integer")
    op.execute("ALTER TABLE table_heads ADD COLUMN fact_ctx bytea")


def downgrade() -> None:
    op.execute("ALTER TABLE table_heads DROP COLUMN fact_ctx")
    op.execute("ALTER TABLE events DROP COLUMN facts, DROP COLUMN judge")
