"""Player statistics by day, and recorded illegal hu apart from wins (issue 13, stats for dashboards).

* ``proj_player_stats.day``, part of the key ``(tenant, player_id, preset, day)``: ``0001-01-01``
  is a totals row (every hand: what the table was before this revision, so existing rows are the
  totals as they stand), any other day a row of that UTC day's hands (the day of the events'
  ``at``; docs/projections.md, player_stats), which the leaderboard sums for a period
  (``since`` / ``until``). ``kwx projections rebuild player_stats`` adds the day rows of hands
  projected before.
* ``proj_player_stats.hu_violations``: ``hu`` recorded with a rule violation on a
  ``violations: "record"`` table, which no longer count as wins (a rebuild moves old ones).
* an index for the leaderboard's period sums: ``(tenant, day)``.

Down: drops the day rows (the totals rows are what 0007 had) and both columns.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE proj_player_stats ADD COLUMN day date NOT NULL DEFAULT date '0001-01-01'")
    op.execute("ALTER TABLE proj_player_stats ADD COLUMN hu_violations bigint NOT NULL DEFAULT 0")
    op.execute("ALTER TABLE proj_player_stats DROP CONSTRAINT proj_player_stats_pkey")
    op.execute(
        "ALTER TABLE proj_player_stats ADD CONSTRAINT proj_player_stats_pkey "
        "PRIMARY KEY (tenant, player_id, preset, day)"
    )
    op.execute("CREATE INDEX proj_player_stats_day ON proj_player_stats (tenant, day)")


def downgrade() -> None:
    op.execute("DROP INDEX proj_player_stats_day")
    op.execute("DELETE FROM proj_player_stats WHERE day <> date '0001-01-01'")
    op.execute("ALTER TABLE proj_player_stats DROP CONSTRAINT proj_player_stats_pkey")
    op.execute("ALTER TABLE proj_player_stats DROP COLUMN day")
    op.execute("ALTER TABLE proj_player_stats DROP COLUMN hu_violations")
    op.execute(
        "ALTER TABLE proj_player_stats ADD CONSTRAINT proj_player_stats_pkey "
        "PRIMARY KEY (tenant, player_id, preset)"
    )
