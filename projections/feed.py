"""Read model ``feed``: a tenant's live feed for integrators (``GET /v1/feed``, issue 15) — one row
per thing an integrator reacts to, numbered 1, 2, … per tenant (``seq``: the feed's cursor).

Kinds (``kind``), each with the table and the table's event (``version``) that gave it:

* ``settlement``: a hand's end, its §2 settlement (:func:`settlement_body`). The only copy kwx keeps
  of a settled hand's §2 object: ``proj_hand_settlements`` is a view of these entries (migration
  0020);
* ``ruling``: an event stored with a recorded rule violation (``violations: record``): its rule,
  kind, messages and detail;
* ``discrepancy``: a ``settlement_reported`` that differs from the computed settlement (the
  ``discrepancies`` row's lines and nets);
* ``parked``: an event some read model could not apply (:mod:`projections.parked`): the model, the
  error's class and message, or the version of its table's event it is parked behind.

``seq`` is dense and ordered per tenant: the projector applies its batches one at a time under its
lock, each batch's rows in log order, and a row's ``seq`` is the tenant's last one plus its place
among the tenant's rows of the statement — the same computed column as ``discrepancies.feed_seq``.
The rows are written, and the tenants told (``NOTIFY kwx_feed``, payload the tenant), in the batch's
transaction with the checkpoint: a listener that wakes up finds the rows committed.

No log position is stored in a body or sent: positions count every tenant's events.

A rebuild (``kwx projections rebuild feed``) derives settlements, rulings and discrepancies again
from the log, in the same order and so with the same ``seq``; ``parked`` entries are written by the
projector when it parks an event (:func:`parked_rows`), not derived from the log, so a rebuild of
the feed alone does not issue them again (the parked events themselves are
``GET /v1/projections/parked``'s and ``kwx projections status``'s); a rebuild of every model parks
the poison again and so announces it again.
"""

from __future__ import annotations

from typing import Any

import msgspec

from projections.arrays import texts
from projections.model import Fact, HandSettled, RulingRecorded, SettlementCompared
from projections.schema import feed
from projections.sql import Connection, MultiRowInsert

NAME = "feed"
CHANNEL = "kwx_feed"
KINDS = ("settlement", "ruling", "discrepancy", "parked")


def _row(info: Any, version: int, kind: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"tenant": info.tenant, "kind": kind, "table_id": info.table_id, "version": version, "body": body}


def rows(fact: Fact) -> list[dict[str, Any]]:
    if isinstance(fact, HandSettled):
        return [_row(fact.info, fact.at.version, "settlement", settlement_body(fact))]
    if isinstance(fact, SettlementCompared):
        from projections.discrepancies import rows as discrepancy_rows

        out = []
        for r in discrepancy_rows(fact):
            body = {k: r[k] for k in ("reported_event", "hand", "lines", "net_computed", "net_reported",
                                      "reported", "computed")}  # fmt: skip
            out.append(_row(fact.info, fact.at.version, "discrepancy", body))
        return out
    if isinstance(fact, RulingRecorded):
        body = {"event_type": fact.event_type, "hand": fact.hand, "rule": fact.rule, "kind": fact.kind,
                "message": fact.message, "message_zh": fact.message_zh, "detail": fact.detail}  # fmt: skip
        return [_row(fact.info, fact.at.version, "ruling", body)]
    return []


def settlement_body(fact: HandSettled) -> dict[str, Any]:
    """A settled hand's entry: its ordinal on the table (1, 2, … settlements in order), hand, preset,
    end, dealer and next dealer, players by seat, net by seat, the house's coins and the CONTRACT.md
    §2 object (every pattern's and transfer's ``detail`` with it), in this order — the order of the
    stored text (``json``) and of ``proj_hand_settlements``' columns."""
    s, info = fact.settlement, fact.info
    return {
        "ordinal": fact.ordinal, "hand": s.hand, "preset": info.preset, "end_kind": s.end,
        "dealer": s.dealer, "next_dealer": s.next_dealer, "players": list(info.players), "net": list(s.net),
        "house": s.house, "settlement": msgspec.to_builtins(s),
    }  # fmt: skip


def parked_rows(parks: Any) -> list[dict[str, Any]]:
    """The feed's ``parked`` entries for the events the projector parks (Park objects) — every
    model but the feed's own (an entry that cannot be written cannot announce itself)."""
    from projections.parked import describe

    out = []
    for p in parks:
        if p.model == NAME:
            continue
        if p.error is not None:
            error_class, message = describe(p.error)
        else:
            error_class, message = "parked_behind", "waits for an earlier parked event of its table"
        body = {"model": p.model, "error_class": error_class, "error": message}
        out.append({"tenant": p.tenant, "kind": "parked", "table_id": p.table_id, "version": p.version,
                    "body": body})  # fmt: skip
    return out


def write(conn: Connection, batch: list[dict[str, Any]]) -> None:
    if not batch:
        return
    _INSERT.execute(conn, batch)
    tenants = sorted({r["tenant"] for r in batch})
    conn.execute(_NOTIFY, (texts(tenants),))


# seq: 1, 2, … per tenant in the order the projector applies them (its batches run one at a time,
# under its lock): the tenant's last one plus the row's place among the tenant's in the statement.
_INSERT = MultiRowInsert(
    feed,
    [c.name for c in feed.columns if c.name != "seq"],
    computed={"seq": 'r."last" + row_number() OVER (PARTITION BY r.tenant ORDER BY r.n)'},
    prior={"last": f"coalesce((SELECT max(f.seq) FROM {feed.name} f WHERE f.tenant = r.tenant), 0)"},
)
_NOTIFY = f"SELECT pg_notify('{CHANNEL}', t) FROM unnest(%b::text[]) AS t"


def page(
    conn: Connection, tenant: str, after: int, kinds: tuple[str, ...], limit: int
) -> list[dict[str, Any]]:
    """The tenant's entries after ``seq`` ``after`` of the kinds ``kinds``, in order."""
    cur = conn.execute(
        f"SELECT seq, kind, table_id, version, body::text FROM {feed.name} "
        "WHERE tenant = %s AND seq > %s AND kind = ANY(%s) ORDER BY seq LIMIT %s",
        (tenant, after, list(kinds), limit),
    )
    return [
        {"seq": int(seq), "kind": kind, "table_id": tid, "version": int(v), "data": _decode(body)}
        for seq, kind, tid, v, body in cur.fetchall()
    ]


def last_seq(conn: Connection, tenant: str) -> int:
    row = conn.execute(f"SELECT max(seq) FROM {feed.name} WHERE tenant = %s", (tenant,)).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


_decode = msgspec.json.Decoder(dict[str, Any]).decode
