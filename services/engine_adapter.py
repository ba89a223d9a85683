"""The one place the service meets the rules engine (``domain.engine``).

The store calls :meth:`Engine.step` for every event it is asked to append, with the table's state
after the previous event, and stores the new state as the table's snapshot. ``Verdict`` is what
the store needs from a step: the next state, whether the event may be stored, and the ruling as
JSON (stored in ``events.ruling`` for recorded violations, answered in the 422 for refused ones).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import msgspec

from domain.events import Event


@dataclass(frozen=True, slots=True)
class Verdict:
    state: Any
    accepted: bool
    ruling: dict[str, Any] | None  # {"rule", "kind", "message", "message_zh", "event", "detail"}


class Engine(Protocol):
    name: str

    def initial(self) -> Any: ...

    def step(self, state: Any, event: Event) -> Verdict: ...

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

    def step(self, state: Any, event: Event) -> Verdict:
        new_state, ruling, accepted = self._engine.step(state, event)
        return Verdict(new_state, bool(accepted), ruling_json(ruling) if ruling is not None else None)

    def encode_state(self, state: Any) -> bytes:
        return bytes(self._engine.encode_state(state))

    def decode_state(self, data: bytes) -> Any:
        return self._engine.decode_state(data)

    def version_of(self, state: Any) -> int:
        return int(state.version)


class _Shape(msgspec.Struct, frozen=True):
    version: int = 0
    closed: bool = False


class StructuralEngine:
    """Order only: ``table_opened`` first and once, nothing after ``table_closed``. Used when
    ``domain.engine`` is not importable (never in a complete build; the tests say which ran)."""

    name = "structural"

    def initial(self) -> _Shape:
        return _Shape()

    def step(self, state: _Shape, event: Event) -> Verdict:
        version = state.version + 1
        kind = type(event).__struct_config__.tag
        code = None
        if state.closed:
            code, msg = "closed", "the table is closed: nothing may follow table_closed"
        elif (state.version == 0) != (kind == "table_opened"):
            code, msg = "sequence", "table_opened must be event 1, and only event 1"
        if code is not None:
            ruling = {"rule": code, "kind": "structure", "message": msg, "message_zh": msg,
                      "event": version, "detail": {}}  # fmt: skip
            return Verdict(state, False, ruling)
        return Verdict(_Shape(version, kind == "table_closed"), True, None)

    def encode_state(self, state: _Shape) -> bytes:
        return msgspec.msgpack.encode(state)

    def decode_state(self, data: bytes) -> _Shape:
        return msgspec.msgpack.decode(data, type=_Shape)

    def version_of(self, state: _Shape) -> int:
        return state.version


def load_engine() -> Engine:
    try:
        return DomainEngine()
    except ImportError:  # the engine has not landed in this build yet
        return StructuralEngine()
