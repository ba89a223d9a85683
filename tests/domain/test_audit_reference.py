"""Rules audit — an independent reference settlement, written straight from RULES.md §2 and §7,
compared with the engine on simulated tables of every preset.

The reference reads the wire events only (no engine state): it finds each kong's place in its
杠上杠 chain from the event order ("a kong followed — with nothing in between but its replacement
draw — by another kong of the same player, or by a 直杠 of the discard that player makes after
the replacement draw"), pays kong money (``kong_points × 2^(k−1)`` capped by ``kong_chain_cap``,
nothing for a robbed kong), the hand payment of each win (自摸两家出, 点炮者出一份, 包胡 by
``liang_dao_feed``), 漂, the service fee, 荒庄 by ``exhausted_liang_dao`` and the next dealer. The
multiplier of a win (``payable``) is taken from the engine: scoring is audited elsewhere.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from domain.engine import fold
from domain.events import convert
from domain.rules import resolve
from domain.simulate import simulate_table

Row = tuple[Any, Any, int, str]


def _others(seat: int) -> list[int]:
    return [s for s in (0, 1, 2) if s != seat]


def reference(events: list[dict[str, Any]], settlements: list[Any]) -> list[tuple[Counter[Row], int]]:
    """Per finished hand: (transfers as a multiset, next dealer), from the events alone."""
    rules = resolve(events[0].get("rules"))
    out: list[tuple[Counter[Row], int]] = []
    by_hand = {s.hand: s for s in settlements}
    hand: dict[str, Any] = {}
    prev: dict[str, Any] | None = None
    # chain: (seat, length, stage) — stage "kong" (replacement due), "draw", "discard"
    chain: tuple[int, int, str] | None = None
    rows: list[Row] = []
    declared: list[int] = []
    pending_added: tuple[int, int, int] | None = None  # (seat, units) of an added kong, robbable
    for ev in events:
        t = ev["type"]
        if t == "hand_started":
            hand = ev
            chain, rows, declared, pending_added, prev = None, [], [], None, ev
            base = by_hand[ev["hand"]].base
            hand["_base"] = base
            if rules.service_fee:
                rows += [(s, "house", rules.service_fee * base, "fee") for s in (0, 1, 2)]
            continue
        if not hand:
            continue
        base = hand["_base"]
        if pending_added is not None and not (t == "hu" and ev.get("from") == pending_added[0]):
            seat, units, _ = pending_added
            rows += [(p, seat, units, "kong") for p in _others(seat)]
            pending_added = None
        if t == "kong":
            seat, kind = ev["seat"], ev["kind"]
            length = 1
            if chain is not None:
                cseat, clen, stage = chain
                if kind == "exposed" and stage == "discard" and prev is not None:
                    if prev["type"] in ("tile_discarded", "liang_dao") and prev["seat"] == cseat:
                        length = clen + 1
                elif kind != "exposed" and stage == "draw" and cseat == seat:
                    length = clen + 1
            factor = 2 ** (length - 1)
            if rules.kong_chain_cap is not None:
                factor = min(factor, rules.kong_chain_cap)
            units = getattr(rules.kong_points, kind) * factor * base
            if kind == "exposed":
                rows.append((prev["seat"] if prev else -1, seat, units, "kong"))
            elif kind == "concealed":
                rows += [(p, seat, units, "kong") for p in _others(seat)]
            else:
                pending_added = (seat, units, ev["tile"])  # type: ignore[assignment]
            chain = (seat, length, "kong")
        elif t == "tile_drawn":
            if chain is not None and chain[2] == "kong" and chain[0] == ev["seat"]:
                chain = (chain[0], chain[1], "draw")
            else:
                chain = None
        elif t in ("tile_discarded", "liang_dao"):
            if t == "liang_dao":
                declared.append(ev["seat"])
            if chain is not None and chain[2] == "draw" and chain[0] == ev["seat"]:
                chain = (chain[0], chain[1], "discard")
            else:
                chain = None
        elif t == "peng":
            chain = None
        elif t in ("hu", "hand_exhausted", "hand_aborted"):
            s = by_hand[hand["hand"]]
            if t == "hand_aborted":
                out.append((Counter(), hand["dealer"]))
                hand = {}
                continue
            if t == "hu":
                src = ev.get("from")
                wins = {w.seat: w for w in s.wins}
                for seat in ev["winners"]:
                    m = wins[seat].payable
                    payers: list[tuple[int, int]]
                    if src is None:
                        payers = [(p, m) for p in _others(seat)]
                    elif seat in declared and src not in declared and rules.liang_dao_feed != "normal":
                        if rules.liang_dao_feed == "discarder_pays_double":
                            payers = [(src, 2 * m)]
                        else:
                            payers = [(p, m) for p in _others(seat)]
                    elif seat in declared and rules.liang_dao_feed == "both_pay":
                        payers = [(src, 2 * m)]  # decision R9: 放炮者需包赔，另一家无需赔付
                    else:
                        payers = [(src, m)]
                    rows += [(p, seat, u * base, "hu") for p, u in payers]
                    piao = hand.get("piao")
                    if rules.piao and piao:
                        rows += [(p, seat, (piao[p] + piao[seat]) * base, "piao") for p, _ in payers]
                winners = ev["winners"]
                nd = winners[0] if len(winners) == 1 else src
            else:
                mode = rules.exhausted_liang_dao
                if declared and mode == "first_declarer_pays_each":
                    rows += [(declared[0], p, base, "exhausted") for p in _others(declared[0])]
                elif declared and mode == "declarers_pay_undeclared":
                    for d in sorted(set(declared)):
                        rows += [(d, p, base, "exhausted") for p in (0, 1, 2) if p not in declared]
                nd = hand["dealer"]
                if rules.exhausted_dealer == "first_declarer" and declared:
                    nd = declared[0]
            out.append((Counter(r for r in rows if r[2]), nd))
            hand = {}
        prev = ev
    return out


def _engine_rows(s: Any) -> Counter[Row]:
    return Counter((t.from_, t.to, t.amount, t.reason) for t in s.transfers)


PRESETS = ["default", "xiangyang", "shiyan", "xiaogan", "yunmeng", "uncapped", "platform_3d"]
EXTRA: list[dict[str, Any]] = [
    {"kong_chain_cap": 2},
    {"liang_dao_feed": "normal", "exhausted_dealer": "first_declarer"},
    {"liang_dao_feed": "both_pay", "exhausted_liang_dao": "none"},
    {"service_fee": 1},
]


@pytest.mark.parametrize(
    "spec", [{"preset": p} for p in PRESETS] + EXTRA, ids=lambda s: "-".join(map(str, s.values()))
)
def test_reference_settlement_agrees_on_simulated_tables(spec: dict[str, Any]) -> None:
    for seed in range(8):
        wire = simulate_table(random.Random(seed), 6, dict(spec), f"t{seed}")
        wire = [e for e in wire if e["type"] not in ("settlement_reported", "table_closed", "wall_revealed")]
        state = fold([convert(e) for e in wire])
        ref = reference(wire, list(state.settlements))
        hands = list(state.settlements)
        assert len(ref) == len(hands), seed
        for (rows, nd), s in zip(ref, hands, strict=True):
            assert _engine_rows(s) == rows, (seed, s.hand)
            assert s.next_dealer == nd, (seed, s.hand)
