"""The events of a table, exactly as on the wire (CONTRACT.md §1).

Every event is a frozen msgspec Struct tagged by ``type``. Unknown types and unknown fields are
rejected; a bad value is reported with the JSON path of the field (``$.hands[1][3]``). Decoding is
done by decoders built once, here.
"""

from __future__ import annotations

import re
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

import msgspec
from msgspec import Meta

from domain.tiles import TileStr

Seat = Annotated[int, Meta(ge=0, le=2)]
EventId = Annotated[str, Meta(min_length=1, max_length=64)]
# RFC 3339: date, 'T' (or 't' / space), time, optional fraction, 'Z' or an offset. ASCII digits
# only (``\d`` would take any Unicode digit) and fields in range (month 01–12, day 01–31, hour
# 00–23, minute 00–59, second 00–60 for a leap second).
Rfc3339 = Annotated[
    str,
    Meta(
        pattern=r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt ]([01][0-9]|2[0-3]):[0-5][0-9]:"
        r"([0-5][0-9]|60)(\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$",
        max_length=64,
    ),
]
PlayerId = Annotated[str, Meta(min_length=1, max_length=64)]
Sha256Hex = Annotated[str, Meta(pattern=r"^[0-9a-fA-F]{64}$")]
TableId = Annotated[str, Meta(pattern=r"^[A-Za-z0-9_-]{1,64}$")]

WALL_SIZE = 44
MAX_BASE = 1_000_000  # table_opened.base: the coins of one unit (docs/rules-options.md)


class _Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", forbid_unknown_fields=True):
    id: EventId
    at: Rfc3339 | None = None


class TableOpened(_Event, tag="table_opened", frozen=True):
    players: Annotated[list[PlayerId], Meta(min_length=3, max_length=3)]
    rules: dict[str, Any] = msgspec.field(default_factory=lambda: {"preset": "default"})
    base: Annotated[int, Meta(ge=1, le=MAX_BASE)] = 1
    violations: Literal["reject", "record"] = "reject"


class HandStarted(_Event, tag="hand_started", frozen=True):
    hand: Annotated[int, Meta(ge=1)]
    dealer: Seat
    hands: Annotated[
        list[Annotated[list[TileStr], Meta(min_length=13, max_length=14)]], Meta(min_length=3, max_length=3)
    ]
    wall: Annotated[list[TileStr], Meta(min_length=WALL_SIZE, max_length=WALL_SIZE)] | None = None
    wall_sha256: Sha256Hex | None = None
    dice: Annotated[list[Annotated[int, Meta(ge=1, le=6)]], Meta(min_length=2, max_length=2)] | None = None
    piao: Annotated[list[Annotated[int, Meta(ge=0, le=1000)]], Meta(min_length=3, max_length=3)] | None = None


class TileDrawn(_Event, tag="tile_drawn", frozen=True):
    seat: Seat
    tile: TileStr


class TileDiscarded(_Event, tag="tile_discarded", frozen=True):
    seat: Seat
    tile: TileStr


class Peng(_Event, tag="peng", frozen=True):
    seat: Seat
    tile: TileStr


class Kong(_Event, tag="kong", frozen=True):
    seat: Seat
    tile: TileStr
    kind: Literal["concealed", "added", "exposed"]


class LiangDao(_Event, tag="liang_dao", frozen=True):
    seat: Seat
    discard: TileStr
    hidden: Annotated[list[TileStr], Meta(max_length=4)] = msgspec.field(default_factory=list)


class Hu(_Event, tag="hu", frozen=True):
    winners: Annotated[list[Seat], Meta(min_length=1, max_length=2)]
    tile: TileStr
    from_: Seat | None = msgspec.field(name="from")


class HandExhausted(_Event, tag="hand_exhausted", frozen=True):
    pass


class HandAborted(_Event, tag="hand_aborted", frozen=True):
    reason: Annotated[str, Meta(min_length=1, max_length=500)]


class MaDrawn(_Event, tag="ma_drawn", frozen=True):
    tile: TileStr


class WallRevealed(_Event, tag="wall_revealed", frozen=True):
    wall: Annotated[list[TileStr], Meta(min_length=WALL_SIZE, max_length=WALL_SIZE)]


class ReportedTransfer(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    from_: Seat | Literal["house"] = msgspec.field(name="from")
    to: Seat | Literal["house"]
    amount: int


class SettlementReported(_Event, tag="settlement_reported", frozen=True):
    hand: Annotated[int, Meta(ge=1)]
    transfers: list[ReportedTransfer]


class TableClosed(_Event, tag="table_closed", frozen=True):
    pass


Event = (
    TableOpened
    | HandStarted
    | TileDrawn
    | TileDiscarded
    | Peng
    | Kong
    | LiangDao
    | Hu
    | HandExhausted
    | HandAborted
    | MaDrawn
    | WallRevealed
    | SettlementReported
    | TableClosed
)

EVENT_TYPES: tuple[str, ...] = (
    "table_opened", "hand_started", "tile_drawn", "tile_discarded", "peng", "kong", "liang_dao",
    "hu", "hand_exhausted", "hand_aborted", "ma_drawn", "wall_revealed", "settlement_reported",
    "table_closed",
)  # fmt: skip

_json_decoder = msgspec.json.Decoder(Event)
_json_list_decoder = msgspec.json.Decoder(list[Event])
_encoder = msgspec.json.Encoder()


class EventDecodeError(ValueError):
    """Malformed event: not JSON, unknown type, unknown or missing field, bad value.

    ``field`` is the JSON path msgspec reports (``$.hands[0][3]``) when there is one.
    """

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


def _field_of(message: str) -> str | None:
    marker = " - at `"
    if marker in message:
        return message.split(marker, 1)[1].rstrip("`")
    return None


def _values_of(hint: Any) -> list[Any]:
    """The values a field may take when they can be listed: its literals, and the ints of a small
    range (a seat: 0, 1, 2), through Annotated, unions and lists."""
    origin = get_origin(hint)
    if origin is Annotated:
        base, *meta = get_args(hint)
        if base is int:
            for m in meta:
                low, high = getattr(m, "ge", None), getattr(m, "le", None)
                if isinstance(low, int) and isinstance(high, int) and high - low <= 10:
                    return list(range(low, high + 1))
            return []
        return _values_of(base)
    if origin is Literal:
        return list(get_args(hint))
    if origin in (list, Union, UnionType):
        out: list[Any] = []
        for arg in get_args(hint):
            out.extend(v for v in _values_of(arg) if v not in out)
        return out
    return []


def _choices() -> dict[str, list[Any]]:
    """Field name (as on the wire) → the values it may take, over every event type."""
    out: dict[str, list[Any]] = {}
    for cls in (*get_args(Event), ReportedTransfer):
        hints = get_type_hints(cls, include_extras=True)
        for name in cls.__struct_fields__:
            values = _values_of(hints[name])
            if values:
                wire = cls.__struct_encode_fields__[cls.__struct_fields__.index(name)]
                known = out.setdefault(wire, [])
                known.extend(v for v in values if v not in known)
    return out


_CHOICES = _choices()
_PATTERNS = {
    "at": "expected an RFC 3339 time such as 2026-02-01T12:00:00Z",
    "wall_sha256": "expected 64 hexadecimal digits (the SHA-256 of the wall's tiles)",
}
_LAST_KEY = re.compile(r"\.([A-Za-z_]+)(?:\[[0-9]+\])*$")


def explain(message: str) -> str:
    """msgspec's message made actionable, its `` - at `PATH``` kept at the end: an unknown enum
    value lists the valid ones (a tile, a kong kind, an event type …), a bad ``at`` gives the
    expected format instead of the raw regex."""
    path = _field_of(message)
    if path is None:
        return message
    head = message[: -len(path) - 8]
    m = _LAST_KEY.search(path)
    key = m[1] if m else ""
    if head.startswith("Invalid value ") and key == "type":
        return f"{head}: an event type is one of {', '.join(EVENT_TYPES)} - at `{path}`"
    if head.startswith("Invalid enum value ") and key in _CHOICES:
        return f"{head}: expected one of {', '.join(map(str, _CHOICES[key]))} - at `{path}`"
    if head.startswith("Expected `str` matching regex"):
        expected = _PATTERNS.get(key, "expected another format")
        return f"Invalid {key or 'value'}: {expected} - at `{path}`"
    return message


def decode(data: bytes | str) -> Event:
    """Decode one event from JSON bytes."""
    try:
        return _json_decoder.decode(data)
    except msgspec.ValidationError as exc:
        raise EventDecodeError(explain(str(exc)), _field_of(str(exc))) from None
    except msgspec.DecodeError as exc:
        raise EventDecodeError(f"not valid JSON: {exc}") from None


def decode_list(data: bytes | str) -> list[Event]:
    try:
        return _json_list_decoder.decode(data)
    except msgspec.ValidationError as exc:
        raise EventDecodeError(explain(str(exc)), _field_of(str(exc))) from None
    except msgspec.DecodeError as exc:
        raise EventDecodeError(f"not valid JSON: {exc}") from None


def convert(obj: Any) -> Event:
    """Build an event from an already-parsed JSON value (a dict)."""
    try:
        event: Event = msgspec.convert(obj, Event)
        return event
    except msgspec.ValidationError as exc:
        raise EventDecodeError(explain(str(exc)), _field_of(str(exc))) from None


def to_builtins(event: Event) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(event)
    return out


_canonical_encoder = msgspec.json.Encoder(order="sorted")


def canonical_bytes(event: Event) -> bytes:
    """The canonical JSON of an event: keys sorted, no whitespace, defaults omitted only where
    the wire omits them. The hash chain and the idempotency check are over these bytes.

    msgspec's ``order="sorted"`` sorts struct fields (by their wire names) and dict keys at every
    level, which is byte-identical to sorting ``to_builtins(event)`` recursively
    (:func:`canonical_bytes_reference`; tests/domain/test_canonical_bytes.py), ≈ 7× faster."""
    return _canonical_encoder.encode(event)


def canonical_bytes_reference(event: Event) -> bytes:
    """The original definition of :func:`canonical_bytes` (kept as its reference)."""
    return _encoder.encode(_sorted(msgspec.to_builtins(event)))


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value
