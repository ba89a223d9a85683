"""The read-model tables (SQLAlchemy Core), one group per projection, plus the checkpoints.

The DDL itself is written by hand in ``migrations/versions/0003_projections.py`` (keys:
``0006_tenant_scoped.py``); these Table objects describe the same tables for the writers and the
read endpoints (a test checks that the migrated database has every column named here). A table is
(tenant, table_id): every per-table model's key starts with both.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Date,
    DateTime,
    Integer,
    LargeBinary,
    MetaData,
    Numeric,
    String,
    Table,
    Text,
)
from sqlalchemy.dialects.postgresql import JSON, JSONB

metadata = MetaData()

# One row per projection: the (epoch, tx_id, position) of the last event it has applied. Written
# in the same transaction as the projection's rows, so a crash never applies an event twice.
checkpoints = Table(
    "projection_checkpoints",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("tx_id", Numeric(20, 0), nullable=False),  # xid8 as an exact number
    Column("position", BigInteger, nullable=False),
    Column("events", BigInteger, nullable=False),  # events applied since the last rebuild
    Column("epoch", Integer, nullable=False),  # the log epoch (migration 0007)
    Column("parked", BigInteger, nullable=False),  # the model's events in projection_parked
)

# Events a read model could not apply (projections/parked.py, migration 0007).
parked_events = Table(
    "projection_parked",
    metadata,
    Column("model", String(64), primary_key=True),
    Column("epoch", Integer, nullable=False),
    Column("tx_id", Numeric(20, 0), nullable=False),
    Column("position", BigInteger, primary_key=True),
    Column("tenant", Text, nullable=False),
    Column("table_id", Text, nullable=False),
    Column("version", BigInteger, nullable=False),
    Column("event_id", Text, nullable=False),
    Column("behind", BigInteger, nullable=True),  # position of the first parked event of its table
    Column("error_class", Text, nullable=False),
    Column("error", Text, nullable=False),
    Column("parked_at", DateTime(timezone=True), nullable=False),
    Column("retried_at", DateTime(timezone=True), nullable=True),
    Column("tries", Integer, nullable=False),
)

# The log's epochs: one per cluster the log has run on (docs/operations.md, the gap-free read).
log_epochs = Table(
    "log_epochs",
    metadata,
    Column("epoch", Integer, primary_key=True),
    Column("system_identifier", BigInteger, nullable=False),
    Column("opened_at", DateTime(timezone=True), nullable=False),
    Column("next_xid", Text, nullable=False),  # xid8
    Column("last_position", BigInteger, nullable=False),
)

# A view since migration 0020: the feed's settlement entries (projections/feed.py), one row per
# settled hand, the columns the table had but ``position``. Read with SQL only; nothing writes it.
hand_settlements = Table(
    "proj_hand_settlements",
    metadata,
    Column("tenant", Text),
    Column("table_id", Text),
    Column("ordinal", Integer),  # 1, 2, … settlements of the table in order
    Column("hand", Integer),
    Column("preset", Text),
    Column("end_kind", String(16)),  # hu / exhausted / aborted
    Column("dealer", Integer),
    Column("next_dealer", Integer),
    Column("players", JSON),
    Column("net", JSON),
    Column("house", BigInteger),
    Column("settled_event", Integer),  # the feed entry's version: the event that made it final
    Column("settlement", JSON),  # the CONTRACT.md §2 object
)

# Keyed (tenant, account_kind, account, seq) since migration 0019 (no serial entry_id).
ledger_entries = Table(
    "proj_ledger_entries",
    metadata,
    Column("tenant", Text, primary_key=True),
    Column("account", Text, primary_key=True),  # a player id, or "house"
    Column("account_kind", String(8), primary_key=True),  # player / house
    Column("seq", BigInteger, primary_key=True),  # 1, 2, … per account, no gaps
    Column("amount", BigInteger, nullable=False),  # + credit, − debit
    Column("balance", BigInteger, nullable=False),  # running balance after this entry
    Column("counterparty", Text, nullable=False),
    Column("counterparty_kind", String(8), nullable=False),
    Column("table_id", String(64), nullable=False),
    Column("hand", Integer, nullable=False),
    Column("ordinal", Integer, nullable=False),  # the settlement's ordinal on its table
    Column("line", Integer, nullable=False),  # index of the transfer in the settlement
    Column("event", Integer, nullable=False),  # version of the event that caused the transfer
    Column("reason", String(16), nullable=False),
    Column("seat", Integer, nullable=True),  # the account's seat at that table (null for house)
    Column("detail", Text, nullable=False),
    Column("position", BigInteger, nullable=False),
    # the same derivation in Chinese, the engine's text (migration 0021: null on entries booked before)
    Column("detail_zh", Text, nullable=True),
)

# proj_ledger_accounts is a view since migration 0019 (each account's last entry: its balance, and
# its seq as ``entries``), for SQL readers; kwx reads an account's last entry itself (projections.ledger).

STAT_COUNTERS: tuple[str, ...] = (
    "hands_played",
    "hands_aborted",
    "hands_exhausted",
    "hands_dealt",
    "wins",
    "wins_self_draw",
    "wins_discard",
    "wins_robbed_kong",
    "wins_double",
    "deal_ins",
    "deal_ins_double",
    "robbed_kongs",
    "bao_hu_paid",
    "bao_hu_coins",
    "liang_dao_declared",
    "liang_dao_won",
    "lou_hu_incurred",
    "hu_violations",  # hu recorded with a rule violation (violations: "record"): not counted as wins
    "kongs_concealed",
    "kongs_added",
    "kongs_exposed",
    "kongs_in_chain",
    "sum_multiplier",
    "sum_payable",
    "coins_won",
    "coins_lost",
    "net_coins",
)

player_stats = Table(
    "proj_player_stats",
    metadata,
    Column("tenant", Text, primary_key=True),
    Column("player_id", Text, primary_key=True),
    Column("preset", Text, primary_key=True),
    # 0001-01-01: the totals row; else the UTC date of the hands' time (their events' ``at``) (0008)
    Column("day", Date, primary_key=True, server_default="0001-01-01"),
    *[Column(name, BigInteger, nullable=False, server_default="0") for name in STAT_COUNTERS],
    Column("max_multiplier", BigInteger, nullable=False, server_default="0"),
)

player_patterns = Table(
    "proj_player_patterns",
    metadata,
    Column("tenant", Text, primary_key=True),
    Column("player_id", Text, primary_key=True),
    Column("preset", Text, primary_key=True),
    Column("pattern", String(64), primary_key=True),
    Column("wins", BigInteger, nullable=False),
)

discrepancies = Table(
    "proj_discrepancies",
    metadata,
    Column("tenant", Text, primary_key=True),
    Column("table_id", String(64), primary_key=True),
    Column("reported_event", Integer, primary_key=True),  # version of the settlement_reported
    Column("hand", Integer, nullable=False),
    Column("position", BigInteger, nullable=False),  # global: internal, never on the wire
    Column("lines", JSONB, nullable=False),  # [{from, to, computed, reported, difference}]
    Column("net_computed", JSONB, nullable=False),
    Column("net_reported", JSONB, nullable=False),
    Column("reported", JSONB, nullable=False),
    Column("computed", JSONB, nullable=True),  # the §2 transfers, or null when not settled
    # 1, 2, … per tenant, in the order the feed learned them: the feed's cursor (no global count)
    Column("feed_seq", BigInteger, nullable=False),
)

snapshots = Table(
    "proj_table_snapshots",
    metadata,
    Column("tenant", Text, primary_key=True),
    Column("table_id", String(64), primary_key=True),
    Column("version", Integer, primary_key=True),  # the state after this event
    Column("hand", Integer, nullable=False),
    Column("state", LargeBinary, nullable=False),  # engine.encode_state
)

# Read model ``discovery`` (projections/discovery.py, migration 0009): find a table without its id.
discovery_tables = Table(
    "proj_discovery_tables",
    metadata,
    Column("tenant", Text, primary_key=True),
    Column("table_id", String(64), primary_key=True),
    # 1, 2, … per tenant in the order the model learned the tables (no gaps): newest first, the
    # lists' cursor (no global count, no log position)
    Column("seq", BigInteger, nullable=False),
    Column("players", JSONB, nullable=False),
    Column("preset", Text, nullable=False),
    Column("hands", Integer, nullable=False),  # settled hands
    Column("first_at", DateTime(timezone=True), nullable=True),  # earliest / latest hand time
    Column("last_at", DateTime(timezone=True), nullable=True),
    Column("flags", Integer, nullable=False),  # bits of projections.discovery.FLAGS, any hand's
)

discovery_players = Table(
    "proj_discovery_players",
    metadata,
    Column("tenant", Text, primary_key=True),
    Column("player_id", Text, primary_key=True),
    Column("seq", BigInteger, primary_key=True),  # the table's seq
    Column("table_id", String(64), nullable=False),
)

discovery_hands = Table(
    "proj_discovery_hands",
    metadata,
    Column("tenant", Text, primary_key=True),
    Column("table_id", String(64), primary_key=True),
    Column("hand", Integer, primary_key=True),
    Column("ordinal", Integer, nullable=True),  # null until settled
    Column("start_event", Integer, nullable=True),
    Column("end_event", Integer, nullable=True),
    Column("dealer", Integer, nullable=True),
    Column("end_kind", String(16), nullable=True),
    Column("winners", JSONB, nullable=True),
    Column("net", JSONB, nullable=True),
    Column("flags", Integer, nullable=False),
    Column("at", DateTime(timezone=True), nullable=True),
)

# Read model ``feed`` (projections/feed.py, migration 0011): the tenant's live feed.
feed = Table(
    "proj_feed",
    metadata,
    Column("tenant", Text, primary_key=True),
    # 1, 2, … per tenant in the order the projector applied the entries (no gaps): the cursor
    Column("seq", BigInteger, primary_key=True),
    Column("kind", String(16), nullable=False),  # settlement | ruling | discrepancy | parked
    Column("table_id", String(64), nullable=False),
    Column("version", Integer, nullable=False),  # the table's event that gave the entry
    Column("body", JSON, nullable=False),  # json, not jsonb (migration 0017)
)

# projection name -> the tables it owns (emptied by a rebuild)
OWNED: dict[str, tuple[Table, ...]] = {
    "ledger": (ledger_entries,),  # proj_ledger_accounts: a view of the entries (0019)
    "player_stats": (player_stats, player_patterns),
    "discrepancies": (discrepancies,),
    "snapshots": (snapshots,),
    "discovery": (discovery_tables, discovery_players, discovery_hands),
    "feed": (feed,),
}
