"""The discovery read model's queries (projections/discovery.py): a tenant's tables newest first,
a player's tables, a table's hands. Each runs on one index (EXPLAIN in tests/service/test_discovery.py):

* tables: ``proj_discovery_tables_seq`` (tenant, seq), read backwards from the cursor;
* a player's tables: ``proj_discovery_players_pkey`` (tenant, player_id, seq) backwards, each row
  joined to its table by ``proj_discovery_tables_pkey``;
* hands: ``proj_discovery_hands_pkey`` (tenant, table_id, hand).

The other filters (preset, flags, times) are checked on the rows the index yields.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from projections.discovery import flag_names
from projections.sql import Connection

_COLS = "t.seq, t.table_id, t.players, t.preset, t.hands, t.first_at, t.last_at, t.flags"


def _iso(t: datetime | None) -> str | None:
    return t.isoformat().replace("+00:00", "Z") if t is not None else None


def tables_sql(
    player: str | None, preset: str | None, since: datetime | None, until: datetime | None, mask: int
) -> str:
    where = ["{src}.tenant = %(tenant)s", "{src}.seq < %(before)s"]
    if player is not None:
        where.append("p.player_id = %(player)s")
    if preset is not None:
        where.append("t.preset = %(preset)s")
    if mask:
        where.append("t.flags & %(mask)s = %(mask)s")
    if since is not None:
        where.append("t.last_at >= %(since)s")
    if until is not None:
        where.append("t.first_at <= %(until)s")
    if player is not None:
        src = "p"
        source = ("proj_discovery_players p JOIN proj_discovery_tables t "
                  "ON t.tenant = p.tenant AND t.table_id = p.table_id")  # fmt: skip
    else:
        src, source = "t", "proj_discovery_tables t"
    cond = " AND ".join(w.format(src=src) for w in where)
    return f"SELECT {_COLS} FROM {source} WHERE {cond} ORDER BY {src}.seq DESC LIMIT %(limit)s"


def tables(
    conn: Connection,
    tenant: str,
    *,
    player: str | None = None,
    preset: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    mask: int = 0,
    before: int = 2**63 - 1,
    limit: int = 50,
) -> tuple[list[dict[str, Any]], int | None]:
    """A page of the tenant's tables, newest first, with ``seq < before``; and the seq to continue
    before (None: the last page)."""
    params = {"tenant": tenant, "before": before, "player": player, "preset": preset, "mask": mask,
              "since": since, "until": until, "limit": limit + 1}  # fmt: skip
    rows = conn.execute(tables_sql(player, preset, since, until, mask), params).fetchall()  # type: ignore[arg-type]
    more = len(rows) > limit
    rows = rows[:limit]
    out = [
        {"table_id": r[1], "players": r[2], "preset": r[3], "hands": r[4], "first_at": _iso(r[5]),
         "last_at": _iso(r[6]), "flags": flag_names(r[7])}
        for r in rows
    ]  # fmt: skip
    return out, (int(rows[-1][0]) if more else None)


_HANDS_SQL = (
    "SELECT hand, ordinal, start_event, end_event, dealer, end_kind, winners, net, flags, at "
    "FROM proj_discovery_hands WHERE tenant = %s AND table_id = %s AND hand > %s ORDER BY hand LIMIT %s"
)
_TABLE_SQL = f"SELECT {_COLS} FROM proj_discovery_tables t WHERE t.tenant = %s AND t.table_id = %s"


def hands(
    conn: Connection, tenant: str, table_id: str, after: int = 0, limit: int = 500
) -> tuple[dict[str, Any] | None, list[dict[str, Any]], int | None]:
    """The table (None: unknown to the model) and a page of its hands in order (``hand > after``)."""
    found = conn.execute(_TABLE_SQL, (tenant, table_id)).fetchall()
    if not found:
        return None, [], None
    r = found[0]
    table = {"table_id": r[1], "players": r[2], "preset": r[3], "hands": r[4], "first_at": _iso(r[5]),
             "last_at": _iso(r[6]), "flags": flag_names(r[7])}  # fmt: skip
    rows = conn.execute(_HANDS_SQL, (tenant, table_id, after, limit + 1)).fetchall()
    more = len(rows) > limit
    rows = rows[:limit]
    out = [
        {"hand": h[0], "ordinal": h[1], "first_event": h[2], "last_event": h[3], "dealer": h[4],
         "end": h[5], "winners": h[6] or [], "net": h[7], "flags": flag_names(h[8]), "at": _iso(h[9])}
        for h in rows
    ]  # fmt: skip
    return table, out, (out[-1]["hand"] if more else None)
