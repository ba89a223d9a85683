"""The rules engine of kwx: the public API the service and the CLI call.

A table is a fold of its events: ``fold(events)`` = ``evolve(… evolve(initial(), e1) …)``, each
event first checked by ``check(state, event)``. Everything is pure (no I/O, clock, logging).

- :func:`check` — the legality of an event as the next one: a :class:`Ruling` or None.
- :func:`evolve` — apply an accepted event (legal, or a rule violation stored on a
  ``violations: "record"`` table, together with its ruling).
- :func:`step` — check + evolve: ``(new state, ruling, accepted)``.
- :func:`fold` — a whole stream; raises :class:`IllegalEvent` at the first rejected event.
- :func:`replay` / :func:`replay_from` — the stored events as they were accepted: the one fold of
  every read, the projector and the store (an event a later engine refuses is applied anyway).
- :func:`encode_state` / :func:`decode_state` — msgspec JSON, byte-identical for equal states.
- :func:`legal_actions` — the legal next events (domain/actions.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

import msgspec

from domain.actions import Action, legal_actions, to_event
from domain.events import Event, HandStarted, MaDrawn, TableOpened, TileDiscarded, TileDrawn
from domain.legality import check, discard_ruling, draw_ruling
from domain.reducer import discard, draw, evolve
from domain.rules import Rules, resolve, to_dict
from domain.state import HandState, Ruling, TableState
from domain.tiles import TILE_INDEX
from domain.views import public_view

__all__ = [
    "Action",
    "DomainError",
    "HandState",
    "IllegalEvent",
    "Replayer",
    "Ruling",
    "TableState",
    "check",
    "decode_state",
    "encode_state",
    "evolve",
    "fold",
    "initial",
    "legal_actions",
    "pin_rules",
    "public_view",
    "rejects",
    "replay",
    "replay_from",
    "step",
    "to_event",
]


class DomainError(Exception):
    """Base of the errors the domain raises."""


class IllegalEvent(DomainError):
    """``fold`` met an event that is rejected: ``ruling`` says why, ``index`` is its 0-based place."""

    def __init__(self, ruling: Ruling, index: int) -> None:
        super().__init__(f"event {index}: {ruling.code}: {ruling.message}")
        self.ruling = ruling
        self.index = index


def pin_rules(event: TableOpened) -> TableOpened:
    """``table_opened`` with its ``rules`` expanded to every resolved option (preset name kept), so
    that the stored event gives the same rules forever, even if a preset's definition changes.
    Raises ``domain.rules.RulesError`` for a rules dict that does not resolve (check it first)."""
    return msgspec.structs.replace(event, rules=to_dict(resolve(event.rules)))


def initial() -> TableState:
    return TableState()


def rejects(state: TableState, ruling: Ruling) -> bool:
    """Whether ``ruling`` rejects the event on this table: structure always; a rule unless the
    table records violations (or its rules are overridden)."""
    if ruling.kind == "structure":
        return True
    return state.violations != "record" and not state.override


_replace = msgspec.structs.replace

# The usual events, a draw or a discard of a hand in progress: (legality ruling, reducer) of a
# seat and a tile kind, so that step and fold read the event and dispatch on its type once
# instead of in check and again in evolve.
_Ruling = Callable[[TableState, HandState, Rules, int, int, int], "Ruling | None"]
_Apply = Callable[[TableState, HandState, int, int, int], HandState]
_USUAL: dict[type, tuple[_Ruling, _Apply]] = {
    TileDrawn: (draw_ruling, draw),
    TileDiscarded: (discard_ruling, discard),
}


def _usual(state: TableState, event: Event) -> TableState | None:
    """``evolve(state, event)`` when ``event`` is a draw or discard of the hand in progress that
    ``check`` accepts without a ruling (what check + evolve would do); None for anything else,
    which check + evolve then decide (a ruling is computed again: the rare case)."""
    pair = _USUAL.get(type(event))
    hs = state.hand
    if pair is None or hs is None or hs.phase == "over" or state.closed:
        return None
    rules = state.rules
    assert rules is not None
    ev: Any = event  # a TileDrawn or TileDiscarded (the keys of _USUAL)
    seat, k, v = ev.seat, TILE_INDEX[ev.tile], state.version + 1
    if pair[0](state, hs, rules, seat, k, v) is not None:
        return None
    return _replace(state, hand=pair[1](state, hs, seat, k, v), version=v)


def step(state: TableState, event: Event) -> tuple[TableState, Ruling | None, bool]:
    """Check and apply one event: ``(new state, ruling or None, True)``, or
    ``(state unchanged, ruling, False)`` when the event is rejected."""
    new = _usual(state, event)
    if new is not None:
        return new, None, True
    ruling = check(state, event)
    if ruling is not None and rejects(state, ruling):
        return state, ruling, False
    return evolve(state, event, ruling), ruling, True


def replay(state: TableState, event: Event) -> TableState:
    """A stored event applied as it was accepted: what ``step`` makes of it, and when this engine
    refuses it now (the engine changed since the append), applied all the same with the ruling it
    gives now, as a recorded violation is, so that the fold goes on and the version stays aligned.

    The one "fold the stored events" step: every read (``/state``, a settlement, ``/audit``), the
    projector and the store's refold go through it (services/engine_adapter.py ``Engine.replay``),
    so they cannot answer differently after an engine change."""
    new = _usual(state, event)
    if new is not None:
        return new
    return evolve(state, event, check(state, event))


def replay_from(state: TableState, events: Iterable[Event]) -> TableState:
    """:func:`replay` over ``events`` from ``state`` (the initial state, or a snapshot's)."""
    for ev in events:
        state = replay(state, ev)
    return state


class Replayer(Protocol):
    """What a fold of stored events needs from an engine: this module, or the service's
    ``services.engine_adapter.Engine`` (projections take either; they cannot import services)."""

    def initial(self) -> TableState: ...

    def replay(self, state: TableState, event: Event) -> TableState: ...

    def evolve(self, state: TableState, ev: Event, ruling: Ruling | None = None) -> TableState: ...

    def encode_state(self, state: TableState) -> bytes: ...

    def decode_state(self, data: bytes) -> TableState: ...


def _override(event: TableOpened, override: dict[str, Any]) -> TableOpened:
    """The table's rules replaced for a what-if fold: ``{"preset": …}`` replaces them wholesale;
    option overrides alone are laid over the table's own rules dict."""
    spec = dict(override) if "preset" in override else {**event.rules, **override}
    return msgspec.structs.replace(event, rules=spec, violations="record")


def fold(events: Iterable[Event], *, rules_override: dict[str, Any] | None = None) -> TableState:
    """Fold a stream from the start. Raises :class:`IllegalEvent` on a rejected event. With
    ``rules_override`` the table's pinned rules are replaced and rule violations are recorded."""
    state = initial()
    if rules_override is None:
        return fold_from(state, events)
    for i, ev in enumerate(events):
        if type(ev) is TableOpened:
            ev = _override(ev, rules_override)
            state = msgspec.structs.replace(state, override=True)
        ruling = check(state, ev)
        if ruling is not None and rejects(state, ruling):
            kept = _as_recorded(state, ev, ruling)
            if kept is None:
                raise IllegalEvent(ruling, i)
            state = kept
            continue
        state = evolve(state, ev, ruling)
    return state


def _as_recorded(state: TableState, ev: Event, ruling: Ruling) -> TableState | None:
    """A what-if's answer to the two structure breaks that only say the other rules would have
    run the table differently, not that the recording is impossible (docs/rulings.md 29): a hand
    dealt by another seat than these rules' rotation names (the recorded dealer dealt those
    tiles, so the hand is folded as dealt) and a 买码 draw under rules without 买码 (it draws
    nothing: the event only takes its place in the version count). Either is kept in the
    state's rulings; None for every other break, which still stops the fold."""
    if type(ev) is HandStarted and state.next_dealer is not None and ev.dealer != state.next_dealer:
        as_dealt = _replace(state, next_dealer=ev.dealer, rulings=(*state.rulings, ruling))
        again = check(as_dealt, ev)
        if again is not None and rejects(as_dealt, again):
            return None
        return evolve(as_dealt, ev, again)
    if type(ev) is MaDrawn and state.rules is not None and not state.rules.maima:
        return _replace(state, version=state.version + 1, rulings=(*state.rulings, ruling))
    return None


def fold_from(state: TableState, events: Iterable[Event], *, start_index: int = 0) -> TableState:
    """Continue folding from ``state`` (e.g. a snapshot)."""
    for i, ev in enumerate(events, start_index):
        new = _usual(state, ev)
        if new is not None:
            state = new
            continue
        ruling = check(state, ev)
        if ruling is not None and rejects(state, ruling):
            raise IllegalEvent(ruling, i)
        state = evolve(state, ev, ruling)
    return state


_encoder = msgspec.json.Encoder(order="deterministic")
_decoder = msgspec.json.Decoder(TableState)


def encode_state(state: TableState) -> bytes:
    return _encoder.encode(state)


def decode_state(data: bytes) -> TableState:
    return _decoder.decode(data)
