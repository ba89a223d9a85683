"""Player statistics by day, and recorded illegal hu apart from wins (issue 13, stats for dashboards).

* ``proj_player_stats.day``: the UTC date of the hand's time (the ``at`` of the events; docs/
  projections.md, player_stats), part of the key ``(tenant, player_id, preset, day)``, so the
  leaderboard can sum a period (``since`` / ``until``). Rows written before this revision get
  ``0001-01-01`` (no time known): ``kwx projections rebuild player_stats`` files them by day.
* ``proj_player_stats.hu_violations``: ``hu`` recorded with a rule violation on a
  ``violations: "record"`` table, which no longer count as wins (a rebuild moves old ones).
* an index for the leaderboard's period sums: ``(tenant, day)``.

Down: sums each player's days back into one row per (tenant, player_id, preset) (counters added,
``max_multiplier`` the greatest) and drops both columns.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

COUNTERS = (
    "hands_played", "hands_aborted", "hands_exhausted", "hands_dealt", "wins", "wins_self_draw",
    "wins_discard", "wins_robbed_kong", "wins_double", "deal_ins", "deal_ins_double", "robbed_kongs",
    "bao_hu_paid", "bao_hu_coins", "liang_dao_declared", "liang_dao_won", "lou_hu_incurred",
    "kongs_concealed", "kongs_added", "kongs_exposed", "kongs_in_chain", "sum_multiplier",
    "sum_payable", "coins_won", "coins_lost", "net_coins",
)  # fmt: skip  (the counters of 0003; hu_violations is this revision's)


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
    sums = ", ".join(f"sum({c})::bigint AS {c}" for c in COUNTERS)
    cols = ", ".join(COUNTERS)
    op.execute(
        "CREATE TEMPORARY TABLE kwx_stats_0008 AS "
        f"SELECT tenant, player_id, preset, {sums}, max(max_multiplier) AS max_multiplier "
        "FROM proj_player_stats GROUP BY tenant, player_id, preset"
    )
    op.execute("DELETE FROM proj_player_stats")
    op.execute("ALTER TABLE proj_player_stats DROP CONSTRAINT proj_player_stats_pkey")
    op.execute("ALTER TABLE proj_player_stats DROP COLUMN day")
    op.execute("ALTER TABLE proj_player_stats DROP COLUMN hu_violations")
    op.execute(
        f"INSERT INTO proj_player_stats (tenant, player_id, preset, {cols}, max_multiplier) "
        f"SELECT tenant, player_id, preset, {cols}, max_multiplier FROM kwx_stats_0008"
    )
    op.execute(
        "ALTER TABLE proj_player_stats ADD CONSTRAINT proj_player_stats_pkey "
        "PRIMARY KEY (tenant, player_id, preset)"
    )
    op.execute("DROP TABLE kwx_stats_0008")
