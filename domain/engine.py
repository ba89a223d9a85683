"""The rules engine of kwx: the public API the service and the CLI call.

A table is a fold of its events: ``fold(events)`` = ``evolve(… evolve(initial(), e1) …)``, each
event first checked by ``check(state, event)``. Everything is pure (no I/O, clock, logging).

- :func:`check` — the legality of an event as the next one: a :class:`Ruling` or None.
- :func:`evolve` — apply an accepted event (legal, or a rule violation stored on a
  ``violations: "record"`` table, together with its ruling).
- :func:`step` — check + evolve: ``(new state, ruling, accepted)``.
- :func:`fold` — a whole stream; raises :class:`IllegalEvent` at the first rejected event.
- :func:`encode_state` / :func:`decode_state` — msgspec JSON, byte-identical for equal states.
- :func:`legal_actions` — the legal next events (domain/actions.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from domain.actions import Action, legal_actions, to_event
from domain.events import Event, TableOpened
from domain.legality import check
from domain.reducer import evolve
from domain.rules import resolve, to_dict
from domain.state import HandState, Ruling, TableState
from domain.views import public_view

__all__ = [
    "Action",
    "DomainError",
    "HandState",
    "IllegalEvent",
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


def step(state: TableState, event: Event) -> tuple[TableState, Ruling | None, bool]:
    """Check and apply one event: ``(new state, ruling or None, True)``, or
    ``(state unchanged, ruling, False)`` when the event is rejected."""
    ruling = check(state, event)
    if ruling is not None and rejects(state, ruling):
        return state, ruling, False
    return evolve(state, event, ruling), ruling, True


def _override(event: TableOpened, override: dict[str, Any]) -> TableOpened:
    """The table's rules replaced for a what-if fold: ``{"preset": …}`` replaces them wholesale;
    option overrides alone are laid over the table's own rules dict."""
    spec = dict(override) if "preset" in override else {**event.rules, **override}
    return msgspec.structs.replace(event, rules=spec, violations="record")


def fold(events: Iterable[Event], *, rules_override: dict[str, Any] | None = None) -> TableState:
    """Fold a stream from the start. Raises :class:`IllegalEvent` on a rejected event. With
    ``rules_override`` the table's pinned rules are replaced and rule violations are recorded."""
    state = initial()
    for i, ev in enumerate(events):
        if rules_override is not None and type(ev) is TableOpened:
            ev = _override(ev, rules_override)
            state = msgspec.structs.replace(state, override=True)
        ruling = check(state, ev)
        if ruling is not None and rejects(state, ruling):
            raise IllegalEvent(ruling, i)
        state = evolve(state, ev, ruling)
    return state


def fold_from(state: TableState, events: Iterable[Event], *, start_index: int = 0) -> TableState:
    """Continue folding from ``state`` (e.g. a snapshot)."""
    for i, ev in enumerate(events, start_index):
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
