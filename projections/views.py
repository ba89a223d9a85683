"""Who sees what of a table (``GET /v1/tables/{id}/state``), on top of ``domain.views.public_view``.

* ``seat_view(state, s)``: exactly what seat ``s`` saw. Its own concealed tiles, drawn tile and
  waits; of the others only what was shown (亮倒 minus the triplets kept face down, melds,
  discards, counts). Legal next actions: only the viewer's own — those with ``seat == s`` and the
  ``hu`` whose only winner is ``s`` (its discard win or self-draw; a joint 一炮双响 ``hu`` names
  another seat's win and is left out, as are the others' possible 碰 / 杠 / 胡, which would reveal
  their hands) — and a draw never names the wall's next tile. Other seats' 漏胡 and
  recorded violations are hidden (a passed win reveals the waits; a ruling may quote a hand).
* ``spectator_view(state)``: what anyone at the table saw (nobody's concealed tiles); legal
  actions reduced to those that reveal no hand (draws without the tile, table-level events).
* ``full_view(state)``: everything, for support staff: every hand, the wall, every legal action.

All three are pure; a test checks seat views against many simulated states by scrambling the
tiles the viewer could not see and asserting the view does not change.
"""

from __future__ import annotations

from typing import Any

import msgspec

from domain.tiles import TILE_NAMES, format_counts

_TABLE_LEVEL = frozenset(
    {
        "hand_started",
        "hand_exhausted",
        "hand_aborted",
        "wall_revealed",
        "settlement_reported",
        "table_closed",
        "ma_drawn",
    }
)


def _public_view(state: Any, seat: int | None) -> dict[str, Any]:
    from domain.views import public_view

    out: dict[str, Any] = public_view(state, seat)
    return out


def _hide_draw(action: dict[str, Any]) -> dict[str, Any]:
    if action.get("type") in ("tile_drawn", "ma_drawn"):
        return {**action, "tile": None}
    return action


def _strip_lou_hu(view: dict[str, Any], keep_seat: int | None) -> None:
    hand = view.get("hand")
    if not hand:
        return
    for s in hand["seats"]:
        if s["seat"] != keep_seat:
            s["lou_hu"] = None
    hand["lou_hu_log"] = [x for x in hand.get("lou_hu_log") or [] if x.get("seat") == keep_seat]


def _own_rulings(view: dict[str, Any], viewer: int | None) -> None:
    """Recorded violations can quote a hand ("seat 1's 1123p is not ready"): keep only the viewer's
    own and those about no seat."""
    view["recorded_rulings"] = [
        r for r in view.get("recorded_rulings") or [] if (r.get("detail") or {}).get("seat") in (viewer, None)
    ]


def seat_may_take(action: dict[str, Any], seat: int) -> bool:
    """Whether ``seat`` may take ``action`` by itself: its own (``seat``), its own win (a ``hu``
    has ``winners``, not ``seat``: only a win of this seat alone), or a table-level event."""
    if action.get("type") == "hu":
        return list(action.get("winners") or ()) == [seat]
    return action.get("seat") == seat or (action.get("seat") is None and action.get("type") in _TABLE_LEVEL)


def seat_view(state: Any, seat: int) -> dict[str, Any]:
    view = _public_view(state, seat)
    _own_rulings(view, seat)
    view["legal_actions"] = [_hide_draw(a) for a in view["legal_actions"] if seat_may_take(a, seat)]
    _strip_lou_hu(view, seat)
    view["view"] = "seat"
    return view


def spectator_view(state: Any) -> dict[str, Any]:
    view = _public_view(state, None)
    _own_rulings(view, None)
    public: list[dict[str, Any]] = []
    for a in view["legal_actions"]:
        if a.get("type") in _TABLE_LEVEL or a.get("type") in ("tile_drawn", "tile_discarded"):
            item = {"type": a["type"], **({"seat": a["seat"]} if a.get("seat") is not None else {})}
            if item not in public:
                public.append(item)
    view["legal_actions"] = public
    _strip_lou_hu(view, None)
    view["view"] = "public"
    return view


def full_view(state: Any) -> dict[str, Any]:
    from domain.engine import legal_actions
    from domain.views import _hand_view  # the hand as one seat saw it: public_view's "hand"

    view = _public_view(state, None)
    hs = getattr(state, "hand", None)
    if hs is not None and view.get("hand"):
        # each seat's own panel, from the hand alone: a whole public view per seat rebuilt the
        # table's every settlement and legal action three more times (≈ 3/4 of a long table's view)
        for s in (0, 1, 2):
            view["hand"]["seats"][s] = _hand_view(hs, s)["seats"][s]
        view["hand"]["drawn"] = TILE_NAMES[hs.drawn] if hs.drawn is not None else None
        if hs.wall is not None:
            wall = list(hs.wall)
            view["hand"]["wall"] = [TILE_NAMES[k] for k in wall[hs.front : len(wall) - hs.back]]
        view["hand"]["concealed_all"] = [format_counts(c) for c in hs.concealed]
    actions = []
    for a in legal_actions(state):
        d: dict[str, Any] = msgspec.to_builtins(a)
        if "tile" in d and d["tile"] is not None:
            d["tile"] = TILE_NAMES[d["tile"]]
        if "hidden" in d:
            d["hidden"] = [TILE_NAMES[k] for k in d["hidden"]]
        actions.append(d)
    view["legal_actions"] = actions
    view["view"] = "full"
    return view
