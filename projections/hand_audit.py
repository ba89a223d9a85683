"""The audit of one hand (``GET /v1/tables/{id}/hands/{n}/audit``): the table's audit
(projections/audit.py) restricted to hand n, built from the hand's events only
(:mod:`projections.hand_reads`), not from the whole table.

Same document as the table's audit, with ``hand`` beside ``table_id``; every list holds hand n's
items only: ``rulings`` on the events of hand n (its ``hand_started`` up to the next one),
``lou_hu``, ``kong_chains``, ``settlements`` (the reports *for* hand n, wherever they were made:
a ``settlement_reported`` may come a few hands later, so the route passes those in as
``late_reports``) and ``walls``. ``version`` stays the table's latest, as in the table's audit.
``hash_chain`` is the chain over hand n's events (each hash recomputed from the one before it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from domain.engine import Replayer, TableState
from domain.events import HandStarted, SettlementReported
from projections.audit import _kong_chains, _lou_hu, _records, _settlement_checks, _wall_checks, ruling_items
from projections.hand_reads import HandEvents


class Reported(msgspec.Struct, frozen=True):
    """A ``settlement_reported`` as the engine's state keeps it (``state.reported``)."""

    hand: int
    event: int
    transfers: tuple[tuple[Any, Any, int], ...]  # (from, to, amount); from/to a seat or "house"


def reported_of(version: int, event: SettlementReported) -> Reported:
    return Reported(event.hand, version, tuple((t.from_, t.to, t.amount) for t in event.transfers))


def build_hand(
    engine: Replayer,
    table_id: str,
    got: HandEvents,
    late_reports: Sequence[Reported],
    hash_chain: dict[str, Any],
    latest: int,
    lang: str = "en",
) -> dict[str, Any]:
    """The audit of hand ``got.hand``; ``late_reports``: reports for it after ``got.last``;
    ``latest``: the table's last version."""
    return fold_hand(engine, table_id, got, late_reports, hash_chain, latest, lang)[1]


def fold_hand(
    engine: Replayer,
    table_id: str,
    got: HandEvents,
    late_reports: Sequence[Reported],
    hash_chain: dict[str, Any],
    latest: int,
    lang: str = "en",
) -> tuple[TableState, dict[str, Any]]:
    """(the table's state after the hand's last event, :func:`build_hand`'s audit): the dispute
    report (services/api/export.py) reads the hand's settlement from the same fold."""
    n = got.hand
    timed = [(v, e) for v, e, _ in got.events]
    state, records, walls, draws = _records(engine, timed, got.initial, got.start)
    players = list(state.players)
    hand_of: dict[int, int] = {}
    hand = 0
    for version, ev in timed:
        if isinstance(ev, HandStarted):
            hand = ev.hand
        hand_of[version] = hand
    by_version = dict(timed)
    rulings = ruling_items(
        by_version.get, hand_of, [(v, r) for v, _, r in got.events if hand_of[v] == n], lang, players
    )
    reported = [r for r in state.reported if r.hand == n] + [r for r in late_reports if r.hand == n]
    rules = msgspec.to_builtins(state.rules) if state.rules is not None else None
    return state, {
        "table_id": table_id,
        "hand": n,
        "version": latest,
        "lang": lang,
        "players": players,
        "rules": rules,
        "violations": state.violations,
        "hash_chain": hash_chain,
        "rulings": rulings,
        "lou_hu": [x for x in _lou_hu(state, players, draws, lang) if x["hand"] == n],
        "kong_chains": _kong_chains(state, [r for r in records if r.hand == n], lang),
        "settlements": _settlement_checks(state, lang, reported),
        "walls": _wall_checks(state, {n: walls[n]} if n in walls else {}, rulings, lang),
    }
