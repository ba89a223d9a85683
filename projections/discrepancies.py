"""Read model ``discrepancies``: hands whose ``settlement_reported`` differs from the computed §2
settlement, line by line.

Comparison: both sides are reduced to the net flow of coins between each pair of parties (seats
and the house), because platforms report payouts at different granularity (one line per reason
or one per pair). A line is listed for every pair whose net flow differs; the per-seat nets are
stored alongside. Hands whose report matches produce no row.

A reported line from a party to itself (a self-transfer) moves no coins but is a real, if odd,
report: it never matches the computed settlement (which has none), so it is listed as a line of its
own, ``{"from": p, "to": p, "computed": 0, "reported": amount, "difference": amount}``, after the
pair lines, each as reported. Every line as the platform sent it is in ``reported`` (the feed shows
it). Each ``settlement_reported`` is compared on its own: five reports for one hand are five
comparisons, five rows when each differs (docs/settlement.md, Reported settlements).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from projections.memo import last_fact
from projections.model import Fact, SettlementCompared
from projections.schema import discrepancies
from projections.sql import Connection, MultiRowInsert, last_number

NAME = "discrepancies"

Party = int | str


def _order(p: Party) -> tuple[int, str]:
    return (0, f"{p}") if isinstance(p, int) else (1, str(p))


def pair_flows(lines: Iterable[tuple[Party, Party, int]]) -> dict[tuple[Party, Party], int]:
    """Net flow per unordered pair, keyed (a, b) with a before b: positive means a pays b."""
    flows: dict[tuple[Party, Party], int] = {}
    for payer, payee, amount in lines:
        if payer == payee:
            continue
        a, b = sorted((payer, payee), key=_order)
        sign = 1 if a == payer else -1
        flows[(a, b)] = flows.get((a, b), 0) + sign * amount
    return flows


def nets(lines: Iterable[tuple[Party, Party, int]]) -> dict[str, int]:
    out = {"0": 0, "1": 0, "2": 0, "house": 0}
    for payer, payee, amount in lines:
        out[str(payer)] = out.get(str(payer), 0) - amount
        out[str(payee)] = out.get(str(payee), 0) + amount
    return out


def compare(
    computed: Iterable[tuple[Party, Party, int]], reported: Iterable[tuple[Party, Party, int]]
) -> list[dict[str, Any]]:
    """Pure: the differing lines; each says who pays whom, computed vs reported, and the difference."""
    reported = list(reported)
    c = pair_flows(computed)
    r = pair_flows(reported)
    selves = [(p, amount) for p, q, amount in reported if p == q]
    if c == r and not selves:  # the usual case: the report matches (no line can differ)
        return []
    out: list[dict[str, Any]] = []
    for a, b in sorted(set(c) | set(r), key=lambda k: (_order(k[0]), _order(k[1]))):
        cv, rv = c.get((a, b), 0), r.get((a, b), 0)
        if cv == rv:
            continue
        # orient the line the way the computed coins flow (or the reported ones when none computed)
        flip = cv < 0 or (cv == 0 and rv < 0)
        payer, payee = (b, a) if flip else (a, b)
        sign = -1 if flip else 1
        out.append(
            {"from": payer, "to": payee, "computed": sign * cv, "reported": sign * rv,
             "difference": sign * (rv - cv)}
        )  # fmt: skip
    for party, amount in selves:
        out.append({"from": party, "to": party, "computed": 0, "reported": amount, "difference": amount})
    return out


@last_fact  # the discovery and feed models ask again for the same fact
def rows(fact: Fact) -> list[dict[str, Any]]:
    """A report that differs from its hand's settlement (or meets none): its row; else none."""
    if not isinstance(fact, SettlementCompared):
        return []
    return _rows(fact)


def _rows(fact: SettlementCompared) -> list[dict[str, Any]]:
    computed_lines = (
        [(t.from_, t.to, t.amount) for t in fact.computed.transfers] if fact.computed is not None else []
    )
    reported_lines = [(t.from_, t.to, t.amount) for t in fact.reported]
    lines = compare(computed_lines, reported_lines)
    if not lines and fact.computed is not None:
        return []
    return [
        {
            "table_id": fact.info.table_id,
            "reported_event": fact.reported_event,
            "hand": fact.hand,
            "tenant": fact.info.tenant,
            "position": fact.at.position,
            "lines": lines,
            "net_computed": nets(computed_lines),
            "net_reported": nets(reported_lines),
            "reported": [msgspec.to_builtins(t) for t in fact.reported],
            "computed": (
                [msgspec.to_builtins(t) for t in fact.computed.transfers]
                if fact.computed is not None
                else None
            ),
        }
    ]


def write(conn: Connection, batch: list[dict[str, Any]]) -> None:
    if not batch:
        return
    tenants = dict.fromkeys(r["tenant"] for r in batch)
    tops = {t: last_number(conn, discrepancies.name, "feed_seq", t) for t in tenants}
    numbered = []
    for row in batch:
        tops[row["tenant"]] += 1
        numbered.append({**row, "feed_seq": tops[row["tenant"]]})
    _INSERT.execute(conn, numbered)


# feed_seq: 1, 2, … per tenant in the order the projector applies them (its batches run one at a
# time, under its lock): the tenant's last one plus the row's place among the tenant's in the batch.
# Numbered here, not by a subquery of the INSERT: a distributed table (a Citus cluster,
# docs/SCALING.md) takes no correlated subquery beside json_to_recordset.
_INSERT = MultiRowInsert(
    discrepancies,
    [c.name for c in discrepancies.columns],
    "ON CONFLICT (tenant, table_id, reported_event) DO NOTHING",
)
