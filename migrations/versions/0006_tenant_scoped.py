"""Table ids are per tenant (issue 11 §4): a table is (tenant, table_id).

Every per-table table gets ``tenant`` and ``table_id`` at the front of its primary and unique keys,
so two tenants can each have ``squat-1`` and so that the cluster issue (issue 14) can later
distribute all of them on ``table_id`` and co-locate them (a unique key must hold the
distribution column there):

* ``table_heads``: primary key ``(tenant, table_id)`` (was ``table_id``; its index
  ``table_heads_tenant`` on the same columns goes);
* ``events``: a ``tenant`` column, copied from the table's head; primary key
  ``(tenant, table_id, version)``, unique ``(tenant, table_id, event_id)`` (same constraint name,
  ``events_table_event_id``). ``position`` stays the identity of the global log with
  ``(tx_id, position)`` its index, but is no longer a key of its own (a key without the
  distribution column cannot be distributed; the identity never repeats a value);
* ``proj_hand_settlements``: ``(tenant, table_id, ordinal)``; ``proj_discrepancies``:
  ``(tenant, table_id, reported_event)`` plus ``feed_seq`` (1, 2, … per tenant in the order the feed
  learned them: the feed's cursor, which counts nothing of another tenant); ``proj_table_snapshots``:
  a ``tenant`` column and ``(tenant, table_id, version)``; the ledger's table index
  ``(tenant, table_id, ordinal)``.

The ledger's accounts and entries and the player statistics are per account, not per table; they
were already keyed by tenant and are not changed. The hash chain is unchanged: its genesis is the
table id alone, so every stored chain still verifies.

Events of a table with no head row (deleted behind kwx's back; ``kwx verify`` reports them) get the
tenant ``''``, which no key can have: they stay visible to ``kwx verify`` and to nobody else.

Downgrade: refused, saying which ids, once two tenants use the same table id (before this revision a
table id was global: such tables cannot be told apart again). Otherwise it restores the old keys.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005_snapshot_external"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # --- table_heads
    op.execute("ALTER TABLE table_heads DROP CONSTRAINT table_heads_pkey")
    op.execute("DROP INDEX table_heads_tenant")
    op.execute("ALTER TABLE table_heads ADD CONSTRAINT table_heads_pkey PRIMARY KEY (tenant, table_id)")
    # --- events: the tenant of each event is its table's (the immutability trigger is set aside
    # for this one backfill; the tx_id column keeps its values, so the global log order is as it was)
    op.execute("ALTER TABLE events ADD COLUMN tenant text")
    op.execute("ALTER TABLE events DISABLE TRIGGER events_immutable")
    op.execute("UPDATE events e SET tenant = h.tenant FROM table_heads h WHERE h.table_id = e.table_id")
    op.execute("UPDATE events SET tenant = '' WHERE tenant IS NULL")  # no head row: kwx verify says so
    op.execute("ALTER TABLE events ENABLE TRIGGER events_immutable")
    op.execute("ALTER TABLE events ALTER COLUMN tenant SET NOT NULL")
    op.execute("ALTER TABLE events DROP CONSTRAINT events_pkey")
    op.execute("ALTER TABLE events DROP CONSTRAINT events_table_version")
    op.execute("ALTER TABLE events DROP CONSTRAINT events_table_event_id")
    op.execute("ALTER TABLE events ADD CONSTRAINT events_pkey PRIMARY KEY (tenant, table_id, version)")
    op.execute(
        "ALTER TABLE events ADD CONSTRAINT events_table_event_id UNIQUE (tenant, table_id, event_id)"
    )
    # --- per-table read models
    op.execute("ALTER TABLE proj_hand_settlements DROP CONSTRAINT proj_hand_settlements_pkey")
    op.execute(
        "ALTER TABLE proj_hand_settlements ADD CONSTRAINT proj_hand_settlements_pkey "
        "PRIMARY KEY (tenant, table_id, ordinal)"
    )
    op.execute("DROP INDEX proj_hand_settlements_hand")
    op.execute(
        "CREATE INDEX proj_hand_settlements_hand ON proj_hand_settlements (tenant, table_id, hand)"
    )
    op.execute("DROP INDEX proj_ledger_entries_table")
    op.execute("CREATE INDEX proj_ledger_entries_table ON proj_ledger_entries (tenant, table_id, ordinal)")
    op.execute("ALTER TABLE proj_discrepancies DROP CONSTRAINT proj_discrepancies_pkey")
    op.execute(
        "ALTER TABLE proj_discrepancies ADD CONSTRAINT proj_discrepancies_pkey "
        "PRIMARY KEY (tenant, table_id, reported_event)"
    )
    op.execute("ALTER TABLE proj_discrepancies ADD COLUMN feed_seq bigint")
    op.execute("""
        UPDATE proj_discrepancies d SET feed_seq = n.seq
          FROM (SELECT tenant, table_id, reported_event,
                       row_number() OVER (PARTITION BY tenant
                                          ORDER BY position, table_id COLLATE "C", reported_event) AS seq
                  FROM proj_discrepancies) n
         WHERE (d.tenant, d.table_id, d.reported_event) = (n.tenant, n.table_id, n.reported_event)
    """)
    op.execute("ALTER TABLE proj_discrepancies ALTER COLUMN feed_seq SET NOT NULL")
    op.execute("DROP INDEX proj_discrepancies_feed")
    # not UNIQUE: a unique index must hold the distribution column (issue 14); the projector numbers
    # them one batch at a time, under its lock
    op.execute("CREATE INDEX proj_discrepancies_feed ON proj_discrepancies (tenant, feed_seq)")
    op.execute("ALTER TABLE proj_table_snapshots ADD COLUMN tenant text")
    op.execute(
        "UPDATE proj_table_snapshots s SET tenant = h.tenant FROM table_heads h WHERE h.table_id = s.table_id"
    )
    op.execute("DELETE FROM proj_table_snapshots WHERE tenant IS NULL")  # a cache: no head, no reader
    op.execute("ALTER TABLE proj_table_snapshots ALTER COLUMN tenant SET NOT NULL")
    op.execute("ALTER TABLE proj_table_snapshots DROP CONSTRAINT proj_table_snapshots_pkey")
    op.execute(
        "ALTER TABLE proj_table_snapshots ADD CONSTRAINT proj_table_snapshots_pkey "
        "PRIMARY KEY (tenant, table_id, version)"
    )


SHARED_IDS = """
    SELECT table_id, string_agg(tenant, ', ' ORDER BY tenant COLLATE "C")
      FROM (SELECT DISTINCT tenant, table_id FROM table_heads
            UNION SELECT DISTINCT tenant, table_id FROM events) t
     GROUP BY table_id HAVING count(*) > 1
     ORDER BY table_id COLLATE "C" LIMIT 5
"""


def downgrade() -> None:
    shared = op.get_bind().exec_driver_sql(SHARED_IDS).fetchall()
    if shared:
        listed = "; ".join(f"{tid!r}: {tenants}" for tid, tenants in shared)
        raise RuntimeError(
            "kwx: revision 0006 cannot be undone: some table ids are used by more than one tenant "
            f"({listed}{' …' if len(shared) == 5 else ''}), and before 0006 a table id was global. "
            "Keep 0006, or move those tables to other ids first."
        )
    op.execute("ALTER TABLE proj_table_snapshots DROP CONSTRAINT proj_table_snapshots_pkey")
    op.execute("ALTER TABLE proj_table_snapshots DROP COLUMN tenant")
    op.execute(
        "ALTER TABLE proj_table_snapshots ADD CONSTRAINT proj_table_snapshots_pkey "
        "PRIMARY KEY (table_id, version)"
    )
    op.execute("DROP INDEX proj_discrepancies_feed")
    op.execute("ALTER TABLE proj_discrepancies DROP COLUMN feed_seq")
    op.execute("CREATE INDEX proj_discrepancies_feed ON proj_discrepancies (tenant, position)")
    op.execute("ALTER TABLE proj_discrepancies DROP CONSTRAINT proj_discrepancies_pkey")
    op.execute(
        "ALTER TABLE proj_discrepancies ADD CONSTRAINT proj_discrepancies_pkey "
        "PRIMARY KEY (table_id, reported_event)"
    )
    op.execute("DROP INDEX proj_ledger_entries_table")
    op.execute("CREATE INDEX proj_ledger_entries_table ON proj_ledger_entries (table_id, ordinal)")
    op.execute("DROP INDEX proj_hand_settlements_hand")
    op.execute("CREATE INDEX proj_hand_settlements_hand ON proj_hand_settlements (table_id, hand)")
    op.execute("ALTER TABLE proj_hand_settlements DROP CONSTRAINT proj_hand_settlements_pkey")
    op.execute(
        "ALTER TABLE proj_hand_settlements ADD CONSTRAINT proj_hand_settlements_pkey "
        "PRIMARY KEY (table_id, ordinal)"
    )
    op.execute("ALTER TABLE events DROP CONSTRAINT events_table_event_id")
    op.execute("ALTER TABLE events DROP CONSTRAINT events_pkey")
    op.execute("ALTER TABLE events DROP COLUMN tenant")
    op.execute("ALTER TABLE events ADD CONSTRAINT events_pkey PRIMARY KEY (position)")
    op.execute("ALTER TABLE events ADD CONSTRAINT events_table_version UNIQUE (table_id, version)")
    op.execute("ALTER TABLE events ADD CONSTRAINT events_table_event_id UNIQUE (table_id, event_id)")
    op.execute("ALTER TABLE table_heads DROP CONSTRAINT table_heads_pkey")
    op.execute("ALTER TABLE table_heads ADD CONSTRAINT table_heads_pkey PRIMARY KEY (table_id)")
    op.execute("CREATE INDEX table_heads_tenant ON table_heads (tenant, table_id)")
