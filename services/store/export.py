"""The NDJSON export of a table or of one hand, and its offline check (docs/verify.md).

An export is JSON lines. Line 1 is the head::

    {"kind":"head","format":"kwx-export-v1","chain":"kwx-chain-v1","scope":"table"|"hand",
     "table_id":…,"hand":N|null,"version":…,"head_hash":…,"first_version":…,"last_version":…,
     "previous":…,"last_hash":…,"preset":…,"rules":{…},"players":[…],"violations":…}

``version`` / ``head_hash``: the table's head when it was exported; ``first_version`` …
``last_version``: the events that follow (the whole table, or the hand's); ``previous``: the chain
hash just before ``first_version`` (the genesis for version 1); ``last_hash``: the chain hash of
``last_version`` (for a table export, the head hash). Each following line is one event::

    {"version":V,"previous":HEX,"hash":HEX,"event":{…canonical event…}}

``event`` is written byte for byte as the chain hashes it (``domain.events.canonical_bytes``:
keys sorted, no whitespace), so ``hash = SHA-256(bytes.fromhex(previous) + event bytes)``.
Nothing here carries the tenant or a time of the export: the same stored table exports to the
same bytes.

This module is pure (stdlib, msgspec, ``domain.events`` via ``chain``): ``kwx verify --file``
imports it without the database stack.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import msgspec

from services.store import chain

FORMAT = "kwx-export-v1"
CHAIN = "kwx-chain-v1"
MEDIA_TYPE = "application/x-ndjson"

_encoder = msgspec.json.Encoder()


class Head(msgspec.Struct, kw_only=True, forbid_unknown_fields=False):
    kind: str
    format: str
    chain: str
    scope: str
    table_id: str
    hand: int | None = None
    version: int
    head_hash: str
    first_version: int
    last_version: int
    previous: str
    last_hash: str
    preset: str | None = None
    rules: dict[str, Any] | None = None
    players: list[str] | None = None
    violations: str | None = None


class Line(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    version: int
    previous: str
    hash: str
    event: msgspec.Raw


_head_decoder = msgspec.json.Decoder(Head)
_line_decoder = msgspec.json.Decoder(Line)


def head_line(
    *,
    scope: str,
    table_id: str,
    hand: int | None,
    version: int,
    head_hash: bytes,
    first_version: int,
    last_version: int,
    previous: bytes,
    last_hash: bytes,
    opened: dict[str, Any] | None,
) -> bytes:
    """The head line (with its newline). ``opened``: the table's ``table_opened`` event (its rules
    summary), or None."""
    rules = opened.get("rules") if opened else None
    body = {
        "kind": "head",
        "format": FORMAT,
        "chain": CHAIN,
        "scope": scope,
        "table_id": table_id,
        "hand": hand,
        "version": version,
        "head_hash": head_hash.hex(),
        "first_version": first_version,
        "last_version": last_version,
        "previous": previous.hex(),
        "last_hash": last_hash.hex(),
        "preset": rules.get("preset", "default") if isinstance(rules, dict) else None,
        "rules": rules,
        "players": opened.get("players") if opened else None,
        "violations": opened.get("violations", "reject") if opened else None,
    }
    return _encoder.encode(body) + b"\n"


def event_line(version: int, previous: bytes, hash_: bytes, canonical: bytes) -> bytes:
    """One event line (with its newline): ``canonical`` is written as it is."""
    return (
        b'{"version":%d,"previous":"%s","hash":"%s","event":'
        % (version, previous.hex().encode(), hash_.hex().encode())
        + canonical
        + b"}\n"
    )


# ------------------------------------------------------------------------------ offline check
@dataclass(frozen=True)
class Checked:
    ok: bool
    scope: str | None
    table_id: str | None
    events: int
    last_hash: str | None
    head_hash: str | None
    line: int | None = None  # the first bad line (1 = the head line)
    version: int | None = None  # its version, when it has one
    reason: str = ""

    def message(self) -> str:
        if self.ok:
            return "ok"
        where = f"line {self.line}" if self.line is not None else "end of file"
        if self.version is not None:
            where += f" (version {self.version})"
        return f"{where}: {self.reason}"


def verify(lines: Iterable[bytes], head: str | None = None) -> Checked:
    """Check an export read as lines (each with or without its newline): every hash recomputed
    from the event's bytes, versions consecutive from ``first_version`` to ``last_version``, the
    chain from ``previous`` to ``last_hash`` (a table export: from the genesis to ``head_hash``),
    and ``head`` (hex) equal to the head line's ``head_hash``. The first problem found, else ok."""
    it: Iterator[bytes] = iter(lines)
    first = next(it, None)
    state: dict[str, Any] = {"scope": None, "table_id": None, "events": 0, "last": None, "head": None}

    def bad(line: int | None, reason: str, version: int | None = None) -> Checked:
        return Checked(False, state["scope"], state["table_id"], state["events"], state["last"],
                       state["head"], line, version, reason)  # fmt: skip

    if first is None or not first.strip():
        return bad(1, "empty file: not a kwx export (line 1 must be its head)")
    try:
        h = _head_decoder.decode(first)
    except msgspec.DecodeError as exc:
        return bad(1, f"not a kwx export head line: {exc}")
    if h.kind != "head" or h.format != FORMAT:
        return bad(
            1, f"not a kwx export head line (kind {h.kind!r}, format {h.format!r}; expected head, {FORMAT})"
        )
    if h.chain != CHAIN:
        return bad(1, f"unknown hash formula {h.chain!r} (this verifier knows {CHAIN})")
    state.update(scope=h.scope, table_id=h.table_id, head=h.head_hash)
    if h.scope not in ("table", "hand"):
        return bad(1, f"unknown scope {h.scope!r} (table or hand)")
    genesis = chain.genesis(h.table_id)
    if h.first_version < 1 or h.last_version < h.first_version - 1:
        return bad(1, f"bad version range {h.first_version}..{h.last_version}")
    if h.scope == "table":
        if h.first_version != 1:
            return bad(1, f"a table export starts at version 1, this head says {h.first_version}")
        if h.last_version != h.version or h.last_hash != h.head_hash:
            return bad(
                1, "a table export ends at the head: last_version / last_hash differ from version / head_hash"
            )
    if h.first_version == 1 and h.previous != genesis.hex():
        return bad(1, f"previous {h.previous} is not the genesis of table {h.table_id!r} ({genesis.hex()})")
    if head is not None and head.strip().lower() != h.head_hash.lower():
        return bad(1, f"wrong head: --head {head.strip()} but the export's head hash is {h.head_hash}")
    try:
        previous = bytes.fromhex(h.previous)
    except ValueError:
        return bad(1, "previous is not a hex hash")

    expected = h.first_version
    number = 1
    for raw_line in it:
        number += 1
        if not raw_line.strip():
            return bad(number, "empty line")
        try:
            line = _line_decoder.decode(raw_line)
        except msgspec.DecodeError as exc:
            return bad(number, f"not an event line (tampered or cut?): {exc}")
        v = line.version
        if v != expected:
            if v > expected:
                later = _find_version(it, expected, number)
                if later is not None:
                    return bad(number, f"reordered: version {expected} expected here, it comes later "
                                       f"(line {later})", v)  # fmt: skip
                gap = f"version {expected}" if v == expected + 1 else f"versions {expected}..{v - 1}"
                return bad(number, f"missing event: {gap} expected here, not in the file", v)
            return bad(number, f"reordered or repeated: version {v} after version {expected - 1}", v)
        if v > h.last_version:
            return bad(number, f"past the head line's last_version {h.last_version}", v)
        if line.previous != previous.hex():
            return bad(number, "previous differs from the chain hash of the line before "
                               "(an event was removed, inserted or reordered)", v)  # fmt: skip
        canonical = bytes(line.event)
        if chain.canonical_json(canonical) != canonical:
            return bad(number, "tampered event: its bytes are not canonical JSON (keys sorted, no "
                               "whitespace), so they are not the bytes that were hashed", v)  # fmt: skip
        computed = chain.link(previous, canonical)
        if computed.hex() != line.hash:
            return bad(number, f"tampered event: its bytes hash to {computed.hex()}, the line says "
                               f"{line.hash}", v)  # fmt: skip
        previous = computed
        state["events"] += 1
        state["last"] = computed.hex()
        expected += 1
    if expected != h.last_version + 1:
        gap = (
            f"version {expected}" if expected == h.last_version else f"versions {expected}..{h.last_version}"
        )
        return bad(
            None, f"missing event: the file ends before {gap} (head line: last_version {h.last_version})"
        )
    state["last"] = previous.hex()
    if previous.hex() != h.last_hash:
        what = "head hash" if h.scope == "table" else "last_hash"
        return bad(
            None, f"wrong head: the chain ends at {previous.hex()}, the head line's {what} is {h.last_hash}"
        )
    return Checked(True, h.scope, h.table_id, state["events"], previous.hex(), h.head_hash)


def _find_version(rest: Iterator[bytes], version: int, number: int) -> int | None:
    """The line number of ``version`` among the remaining lines (after line ``number``), or None."""
    for raw in rest:
        number += 1
        try:
            if _line_decoder.decode(raw).version == version:
                return number
        except msgspec.DecodeError:
            continue
    return None
