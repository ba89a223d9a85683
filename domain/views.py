"""What a seat (or a spectator) saw: ``public_view(state, seat)`` (CONTRACT.md §3 ``state``).

Other seats' concealed tiles are hidden — except what 亮倒 shows (the hand minus the concealed
triplets kept face down). The wall shows only its count. Support staff's full view is the state
itself (``encode_state``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from domain.actions import legal_actions
from domain.facts import HandRecord
from domain.rules import to_dict
from domain.state import HandState, LouHu, TableState
from domain.tiles import TILE_NAMES, format_counts
from domain.walls import remaining


def _t(k: int | None) -> str | None:
    return TILE_NAMES[k] if k is not None else None


def _b(x: Any) -> Any:
    return msgspec.to_builtins(x)


def _lou_hu(x: LouHu | None) -> dict[str, Any] | None:
    """A 漏胡 on the wire: its tile by name (tiles are names everywhere outside the engine)."""
    if x is None:
        return None
    d: dict[str, Any] = _b(x)
    d["tile"] = TILE_NAMES[x.tile]
    return d


def _record(rec: HandRecord) -> dict[str, Any]:
    """The hand's record on the wire: tiles by name; an event not (yet) there is ``null``, not 0."""
    d: dict[str, Any] = _b(rec)
    d["kongs"] = [{**_b(k), "tile": TILE_NAMES[k.tile]} for k in rec.kongs]
    d["wins"] = [{**_b(w), "tile": TILE_NAMES[w.tile]} for w in rec.wins]
    d["ma_tile"] = _t(rec.ma_tile)
    d["end_event"] = rec.end_event or None
    d["ma_event"] = rec.ma_event or None
    return d


def public_view(state: TableState, seat: int | None) -> dict[str, Any]:
    """The table as ``seat`` saw it (None: a spectator), as plain JSON-ready values."""
    hs = state.hand
    coins = list(state.coins)
    if hs is not None and hs.phase != "over":
        coins = [c + m for c, m in zip(coins, hs.kong_money, strict=True)]
    out: dict[str, Any] = {
        "version": state.version,
        "viewer": seat,
        "players": list(state.players),
        "base": state.base,
        "rules": to_dict(state.rules) if state.rules is not None else None,
        "violations": state.violations,
        "closed": state.closed,
        "hand_no": state.hand_no,
        "dealer": state.dealer,
        "next_dealer": state.next_dealer,
        "shang_lou": state.shang_lou,
        "coins": coins,
        "hand": _hand_view(hs, seat) if hs is not None else None,
        "settlements": _b(state.settlements),
        "recorded_rulings": _b(state.rulings),
        "legal_actions": [_action(a, seat, hs) for a in legal_actions(state)],
    }
    return out


def _action(a: Any, viewer: int | None, hs: HandState | None) -> dict[str, Any]:
    d: dict[str, Any] = _b(a)
    if a.type not in ("table_opened", "hand_started", "hand_exhausted"):
        d["tile"] = _t(a.tile)
        if a.type == "tile_drawn" and viewer != a.seat:
            d["tile"] = None  # the wall is hidden from everyone but the drawer
    if "hidden" in d:
        d["hidden"] = [TILE_NAMES[k] for k in a.hidden]
    return d


def _hand_view(hs: HandState, viewer: int | None) -> dict[str, Any]:
    seats = []
    for s in (0, 1, 2):
        conc = hs.concealed[s]
        info = hs.liang_dao[s]
        own = viewer == s
        shown: str | None = None
        if info is not None:
            c = list(conc)
            for k in info.hidden:
                if c[k] >= 3:  # still face down (a hidden triplet konged later is a meld now)
                    c[k] -= 3
            shown = format_counts(c)
        seat_view: dict[str, Any] = {
            "seat": s,
            "concealed": format_counts(conc) if own else shown,
            "concealed_count": sum(conc),
            "melds": [
                {"kind": m.kind, "tile": TILE_NAMES[m.tile], "source": m.source, "event": m.event}
                for m in hs.melds[s]
            ],
            "discards": [
                {"tile": TILE_NAMES[d.tile], "event": d.event, "claimed": d.claimed} for d in hs.discards[s]
            ],
            "liang_dao": None
            if info is None
            else {
                "event": info.event,
                "discard": TILE_NAMES[info.discard],
                "waits": [TILE_NAMES[k] for k in info.waits],
                "hidden": [TILE_NAMES[k] for k in info.hidden] if own else len(info.hidden),
            },
            "waits": [TILE_NAMES[k] for k in hs.waits[s]] if own else None,
            "lou_hu": _lou_hu(hs.lou_hu[s]),
        }
        seats.append(seat_view)
    chain = hs.chain
    return {
        "hand": hs.hand,
        "dealer": hs.dealer,
        "base": hs.base,
        "phase": hs.phase,
        "turn": hs.turn,
        "wall_remaining": remaining(hs),
        "wall_known": hs.wall is not None,
        "last_tile": _t(hs.last_tile),
        "drawn": _t(hs.drawn) if viewer == hs.turn else None,
        "seats": seats,
        "kong_chain": None
        if chain is None
        else {"seat": chain.seat, "length": chain.length, "factor": chain.factor, "stage": chain.stage},
        "kong_money": list(hs.kong_money),
        "lou_hu_log": [_lou_hu(x) for x in hs.lou_hu_log],
        "record": _record(hs.record),
    }
