"""The one place the service meets the rules engine (``domain.engine``): swap the engine here.

The store calls :meth:`Engine.pin` on every event before it is canonicalised, hashed and stored
(a ``table_opened`` is stored with its rules fully resolved), then :meth:`Engine.step_batch` for
the batch it is asked to append, from the table's state after its last stored event, and stores the
new state as the table's snapshot (:meth:`Engine.step`, one event, when it refolds stored events).
``Verdict`` is what the store needs from a step: the next state, whether the event may be stored,
and the ruling as JSON (stored in ``events.ruling`` for recorded violations, answered in the 422 for
refused ones); ``Stepped`` the same for a batch, up to its first refused event.

Reading is :meth:`Engine.replay`: a stored event applied as it was accepted (``domain.engine.replay``,
the one fold of every read, the projector and the store's refold). :meth:`Engine.fold_under` is the
settlement's what-if under other rules. Nothing outside this module touches ``domain.engine``'s
stepping directly: callers hold an :class:`Engine` (``Container.engine``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec

from domain.events import Event, TableOpened


@dataclass(frozen=True, slots=True)
class Verdict:
    state: Any
    accepted: bool
    ruling: dict[str, Any] | None  # {"rule", "kind", "message", "message_zh", "event", "detail"}


@dataclass(frozen=True, slots=True)
class Stepped:
    """A batch stepped event by event until the first one refused (if any)."""

    state: Any  # after the last accepted event
    rulings: list[tuple[int, dict[str, Any]]]  # (index, ruling) of the accepted events that carry one
    refused: int | None = None  # the index of the first refused event
    refusal: dict[str, Any] | None = None  # its ruling
    # with ``keep_states``: the state before each accepted event and after the last one
    states: list[Any] | None = None


class Engine(Protocol):
    name: str

    def initial(self) -> Any: ...

    def replay(self, state: Any, event: Event) -> Any:
        """The state after a stored event, applied as it was accepted (a refusal now is applied
        anyway, with its ruling): the one fold of the reads, the projector and the store."""
        ...

    def evolve(self, state: Any, ev: Event, ruling: Any = None) -> Any:
        """Apply an event with the ruling stored with it (the projector's path: no check)."""
        ...

    def fold_under(self, events: Sequence[Event], rules_override: dict[str, Any]) -> Any:
        """The table folded from the start under other rules, violations recorded (the what-if);
        raises ``domain.engine.IllegalEvent`` at a structure break these rules see."""
        ...

    def pin(self, event: Event) -> Event: ...

    def step(self, state: Any, event: Event) -> Verdict: ...

    def step_batch(self, state: Any, events: Sequence[Event], keep_states: bool = False) -> Stepped: ...

    def encode_state(self, state: Any) -> bytes: ...

    def decode_state(self, data: bytes) -> Any: ...

    def version_of(self, state: Any) -> int: ...


def ruling_json(ruling: Any) -> dict[str, Any]:
    """A domain Ruling as the JSON the API and the ``ruling`` column carry (``rule`` = its code)."""
    raw = msgspec.to_builtins(ruling)
    out: dict[str, Any] = {"rule": raw.pop("code")}
    out.update(raw)
    return out


class DomainEngine:
    """The rules engine of ``domain.engine`` (structure and RULES.md)."""

    name = "domain"

    def __init__(self) -> None:
        from domain import engine

        self._engine = engine

    def initial(self) -> Any:
        return self._engine.initial()

    def replay(self, state: Any, event: Event) -> Any:
        return self._engine.replay(state, event)

    def evolve(self, state: Any, ev: Event, ruling: Any = None) -> Any:
        return self._engine.evolve(state, ev, ruling)

    def fold_under(self, events: Sequence[Event], rules_override: dict[str, Any]) -> Any:
        return self._engine.fold(events, rules_override=rules_override)

    def pin(self, event: Event) -> Event:
        """The event as it is stored: a ``table_opened`` with its rules pinned (every resolved
        option, the preset name kept; RULES.md), so a replay gives the same rulings forever even if
        a preset's definition changes. Rules that do not resolve are left as sent: the step refuses
        the event (``bad_rules``, naming the field)."""
        if type(event) is not TableOpened:
            return event
        from domain.rules import RulesError

        try:
            pinned: Event = self._engine.pin_rules(event)
        except RulesError:
            return event
        return pinned

    def step(self, state: Any, event: Event) -> Verdict:
        new_state, ruling, accepted = self._engine.step(state, event)
        return Verdict(new_state, bool(accepted), ruling_json(ruling) if ruling is not None else None)

    def step_batch(self, state: Any, events: Sequence[Event], keep_states: bool = False) -> Stepped:
        """:meth:`step` over a batch, stopping at the first refused event; no per-event ``Verdict``
        (the append path's hot loop: 100 events a request). ``keep_states``: also every state on
        the way (``Stepped.states``: n + 1 of them), for the facts (``services.store.batch``)."""
        step = self._engine.step
        rulings: list[tuple[int, dict[str, Any]]] = []
        states: list[Any] | None = [state] if keep_states else None
        for i, event in enumerate(events):
            new_state, ruling, accepted = step(state, event)
            if not accepted:
                return Stepped(state, rulings, i, ruling_json(ruling) if ruling is not None else None)
            if ruling is not None:
                rulings.append((i, ruling_json(ruling)))
            state = new_state
            if states is not None:
                states.append(state)
        return Stepped(state, rulings, states=states)

    def encode_state(self, state: Any) -> bytes:
        return bytes(self._engine.encode_state(state))

    def decode_state(self, data: bytes) -> Any:
        return self._engine.decode_state(data)

    def version_of(self, state: Any) -> int:
        return int(state.version)


def load_engine() -> Engine:
    return DomainEngine()
