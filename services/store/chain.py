"""The hash chain of a table (docs/operations.md, "Hash chain").

    h_0 = SHA-256("kwx-chain-v1:" + table_id)           (UTF-8)
    h_n = SHA-256(h_{n-1} || canonical_bytes(event_n))   (h as 32 raw bytes)

``canonical_bytes`` is ``domain.events.canonical_bytes``: the event as JSON with keys sorted, no
whitespace, every field present (``"at": null`` included). ``events.hash`` of version n holds h_n
and ``table_heads.last_hash`` the latest. Seeding with the table id binds every chain to its table:
a row copied from another table does not verify.

The stored ``body`` is exactly that canonical JSON (as jsonb). Verification re-encodes the stored
JSON value canonically (:func:`canonical_json`: keys sorted, no whitespace) rather than decoding it
through today's event types, so adding a field with a default to an event type later never breaks
the chains of events stored before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import msgspec

from domain.events import Event, canonical_bytes


def genesis(table_id: str) -> bytes:
    return hashlib.sha256(b"kwx-chain-v1:" + table_id.encode()).digest()


def link(previous: bytes, canonical: bytes) -> bytes:
    return hashlib.sha256(previous + canonical).digest()


def links(previous: bytes, canonicals: Iterable[bytes]) -> list[bytes]:
    """The chain's next hashes, one per canonical event (each :func:`link` of the one before)."""
    out: list[bytes] = []
    for canonical in canonicals:
        previous = link(previous, canonical)
        out.append(previous)
    return out


def link_event(previous: bytes, event: Event) -> bytes:
    return link(previous, canonical_bytes(event))


def canonical_json(text: str | bytes) -> bytes:
    """A stored JSON value in canonical form: equal to ``canonical_bytes`` of the event it was."""
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return b""
    return _encoder.encode(value)


_encoder = msgspec.json.Encoder(order="sorted")  # dict keys sorted at every level, no whitespace
