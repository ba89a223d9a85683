"""Read model ``discovery``: find a table without its id, and list its hands (issue 13).

Three tables, every key starting (tenant, table_id) or (tenant, …) (docs/projections.md):

* ``proj_discovery_tables``: one row per table — players, preset, settled hands, the earliest and
  latest hand time (the events' ``at``), the flags of all its hands, and ``seq``: 1, 2, … per
  tenant in the order this model learned the table (its first fact, normally its first
  ``hand_started``; a rebuild gives the same numbers). Lists are newest first by ``seq``; a
  cursor is a ``seq`` of the same tenant, so it says nothing of any other tenant nor of the log.
* ``proj_discovery_players``: (tenant, player, seq) → table, so a player's tables are an index
  range, newest first.
* ``proj_discovery_hands``: one row per hand — first event (its ``hand_started``), last event
  (the event that settled it), dealer, end, winners with patterns and multiplier, net, flags.

Fed by the facts the projector already derives (projections/derive.py): ``SnapshotTaken`` (a hand
starts), ``HandSettled``, ``LouHuIncurred``, ``SettlementCompared``. ``rows`` is pure; ``write``
merges a batch per key (flags OR, counts add, times widen) and upserts, so the order of facts
within a batch does not matter and a rebuild from position 0 equals the incremental build.

Flags (a hand's, and a table's = any of its hands'): ``lou_hu`` (a seat passed a win, 漏胡),
``kong_chain`` (a kong that is the 2nd or later of a 杠上杠 chain), ``liang_dao`` (亮倒 declared),
``bao_hu`` (a win paid under 包胡), ``multi_win`` (两家/一炮多响: more than one winner),
``discrepancy`` (a ``settlement_reported`` differs from the computed settlement),
``violation`` (a ``hu`` stored under ``violations: "record"`` with a rule violation).

A table appears with its first fact: a table opened with no hand started yet is not listed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from projections.arrays import texts
from projections.discrepancies import rows as discrepancy_rows
from projections.model import Fact, HandSettled, LouHuIncurred, SettlementCompared, SnapshotTaken
from projections.schema import discovery_hands, discovery_players, discovery_tables
from projections.sql import Connection, MultiRowInsert, last_number

NAME = "discovery"

FLAGS: dict[str, int] = {
    "lou_hu": 1,
    "kong_chain": 2,
    "liang_dao": 4,
    "bao_hu": 8,
    "multi_win": 16,
    "discrepancy": 32,
    "violation": 64,
}


def flag_names(bits: int) -> list[str]:
    return [name for name, bit in FLAGS.items() if bits & bit]


def instant(at: str | None) -> datetime | None:
    """An RFC 3339 time as sent → an aware UTC datetime; None for none, or one outside Python's
    years (admitted by the append, e.g. year 0000): such a hand has no time here."""
    if at is None:
        return None
    text = at.upper().replace(" ", "T").replace("Z", "+00:00")
    if text[17:19] == "60":  # a leap second: its second 59
        text = text[:17] + "59" + text[19:]
    try:
        t = datetime.fromisoformat(text)
        if t.tzinfo is None:
            t = t.replace(tzinfo=UTC)
        return t.astimezone(UTC)
    except (ValueError, OverflowError):
        return None


def _table(fact: Any, hands: int = 0, flags: int = 0, at: datetime | None = None) -> dict[str, Any]:
    info = fact.info
    return {"kind": "table", "tenant": info.tenant, "table_id": info.table_id, "players": list(info.players),
            "preset": info.preset, "hands": hands, "flags": flags, "first_at": at, "last_at": at}  # fmt: skip


def _hand(fact: Any, hand: int, flags: int = 0, **fields: Any) -> dict[str, Any]:
    return {"kind": "hand", "tenant": fact.info.tenant, "table_id": fact.info.table_id, "hand": hand,
            "flags": flags, **fields}  # fmt: skip


def _settled(fact: HandSettled) -> list[dict[str, Any]]:
    s, record, players = fact.settlement, fact.record, fact.info.players
    flags = 0
    violated: dict[tuple[int, int], str] = {}
    if record is not None:
        if any(k.chain > 1 for k in record.kongs):
            flags |= FLAGS["kong_chain"]
        if record.declarations:
            flags |= FLAGS["liang_dao"]
        violated = {(w.event, w.seat): w.violation for w in record.wins if w.violation is not None}
    if violated:
        flags |= FLAGS["violation"]
    if any(w.bao_hu is not None for w in s.wins):
        flags |= FLAGS["bao_hu"]
    if len(s.wins) > 1:
        flags |= FLAGS["multi_win"]
    winners = [
        {"seat": w.seat, "player": players[w.seat], "from": w.from_, "tile": w.tile,
         "patterns": [{"id": p.id, "x": p.x} for p in w.patterns], "multiplier": w.multiplier,
         "payable": w.payable, "event": w.event, "violation": violated.get((w.event, w.seat))}
        for w in s.wins
    ]  # fmt: skip
    at = instant(fact.hand_at)
    start = record.start_event if record is not None else None
    hand = _hand(
        fact, s.hand, flags, ordinal=fact.ordinal, end_event=fact.at.version, dealer=s.dealer,
        end_kind=s.end, winners=winners, net=list(s.net), at=at,
        **({"start_event": start} if start else {}),
    )  # fmt: skip
    return [_table(fact, 1, flags, at), hand]


def rows(fact: Fact) -> list[dict[str, Any]]:
    """The pure part: a fact → partial rows of a table and of a hand (merged by :func:`write`)."""
    if isinstance(fact, SnapshotTaken):
        return [_table(fact), _hand(fact, fact.hand, start_event=fact.at.version)]
    if isinstance(fact, HandSettled):
        return _settled(fact)
    if isinstance(fact, LouHuIncurred):
        bit = FLAGS["lou_hu"]
        return [_table(fact, flags=bit), _hand(fact, fact.hand, bit)]
    if isinstance(fact, SettlementCompared):
        if not discrepancy_rows(fact):  # the report matches its hand's settlement
            return []
        bit = FLAGS["discrepancy"]
        return [_table(fact, flags=bit), _hand(fact, fact.hand, bit)]
    return []


_HAND_FIELDS = ("ordinal", "start_event", "end_event", "dealer", "end_kind", "winners", "net", "at")


def _earliest(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None else a if b is None else min(a, b)


def _latest(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None else a if b is None else max(a, b)


def merge(batch: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Pure: the batch's table rows and hand rows, one per key, in the order first met."""
    tables: dict[tuple[str, str], dict[str, Any]] = {}
    hands: dict[tuple[str, str, int], dict[str, Any]] = {}
    for row in batch:
        if row["kind"] == "table":
            t = tables.get((row["tenant"], row["table_id"]))
            if t is None:
                tables[(row["tenant"], row["table_id"])] = dict(row)
                continue
            t["hands"] += row["hands"]
            t["flags"] |= row["flags"]
            t["first_at"] = _earliest(t["first_at"], row["first_at"])
            t["last_at"] = _latest(t["last_at"], row["last_at"])
        else:
            key = (row["tenant"], row["table_id"], row["hand"])
            h = hands.get(key)
            if h is None:
                h = hands[key] = {"tenant": key[0], "table_id": key[1], "hand": key[2], "flags": 0}
                h.update({f: None for f in _HAND_FIELDS})
            h["flags"] |= row["flags"]
            for f in _HAND_FIELDS:
                if row.get(f) is not None:
                    h[f] = row[f]
    return list(tables.values()), list(hands.values())


def write(conn: Connection, batch: list[dict[str, Any]]) -> None:
    if not batch:
        return
    tables, hands = merge(batch)
    if tables:
        players = number(tables, _known(conn, tables))
        _TABLES_UPSERT.execute(conn, tables)
        _PLAYERS_INSERT.execute(conn, players)
    _HANDS_UPSERT.execute(conn, hands)


Known = tuple[dict[tuple[str, str], int], dict[str, int]]  # (seq of a known table, tenant's greatest)


def _known(conn: Connection, tables: list[dict[str, Any]]) -> Known:
    """The seqs of the batch's tables this model already has, and the greatest of each tenant with a
    table new to it (most batches have none: a table is new once)."""
    tenants = list(dict.fromkeys(t["tenant"] for t in tables))
    ids = list(dict.fromkeys(t["table_id"] for t in tables))
    seqs = {(t, i): int(n) for t, i, n in conn.execute(_KNOWN, (texts(tenants), texts(ids))).fetchall()}
    new = dict.fromkeys(t["tenant"] for t in tables if (t["tenant"], t["table_id"]) not in seqs)
    return seqs, {t: last_number(conn, "proj_discovery_tables", "seq", t) for t in new}


def number(tables: list[dict[str, Any]], known: Known) -> list[dict[str, Any]]:
    """Pure: give each table row its ``seq`` — a known table keeps its own, a new one gets its
    tenant's greatest plus its place among the batch's new tables of that tenant, so seq is 1, 2, …
    without gaps in the order of the tables' first facts in the log, and a rebuild gives every table
    the seq it had. Returns the new tables' player rows (a seat taken twice by one player: one row)."""
    seqs, tops = known
    players: list[dict[str, Any]] = []
    for t in tables:
        key = (t["tenant"], t["table_id"])
        seq = seqs.get(key)
        if seq is None:
            seq = tops[t["tenant"]] = tops[t["tenant"]] + 1
            players += [{"tenant": key[0], "player_id": p, "seq": seq, "table_id": key[1]}
                        for p in dict.fromkeys(t["players"])]  # fmt: skip
        t["seq"] = seq
    return players


# Numbered by :func:`number`, not by subqueries of the INSERT (the projector's batches run one at a
# time, under its lock, as the discrepancy feed's feed_seq): a distributed table (a Citus cluster,
# docs/SCALING.md) takes no correlated subquery beside json_to_recordset.
_KNOWN = (
    "SELECT tenant, table_id, seq FROM proj_discovery_tables WHERE tenant = ANY(%b::text[]) "
    "AND table_id = ANY(%b::text[])"
)

# The documents (a table's players, a hand's winners and net) travel apart from the record set, as
# MultiRowInsert sends them: each parsed once by the server, not three times inside the JSON.
_TABLES_UPSERT = MultiRowInsert(
    discovery_tables,
    ["tenant", "table_id", "seq", "players", "preset", "hands", "first_at", "last_at", "flags"],
    "ON CONFLICT (tenant, table_id) DO UPDATE SET "
    "hands = proj_discovery_tables.hands + excluded.hands, "
    "flags = proj_discovery_tables.flags | excluded.flags, "
    "first_at = least(proj_discovery_tables.first_at, excluded.first_at), "
    "last_at = greatest(proj_discovery_tables.last_at, excluded.last_at)",
)

_PLAYERS_INSERT = MultiRowInsert(
    discovery_players, ["tenant", "player_id", "seq", "table_id"], "ON CONFLICT DO NOTHING"
)

_HANDS_UPSERT = MultiRowInsert(
    discovery_hands,
    ["tenant", "table_id", "hand", *_HAND_FIELDS, "flags"],
    "ON CONFLICT (tenant, table_id, hand) DO UPDATE SET "
    + ", ".join(
        f"{f} = coalesce(excluded.{f}, proj_discovery_hands.{f})" for f in _HAND_FIELDS if f != "flags"
    )
    + ", flags = proj_discovery_hands.flags | excluded.flags",
)
