"""Facts judged once (issue 16; docs/projections.md §1): the append finds each event's facts with
the same fact-finder as the projector's fold (:func:`projections.derive.observe`) while it judges
the event, and stores them with it — ``events.facts`` (msgpack, NULL for an event that gave none)
and ``events.judge`` (:data:`JUDGE`, on every event it stores). The projector then reads the facts
instead of folding the table again.

Facts are a cache of the engine's verdict, never a second source of truth: :data:`JUDGE` is a
fingerprint of everything that decides them — the engine's sources (``domain/*.py``), the
fact-finder and the facts' shapes (``projections/derive.py``, ``projections/model.py``) and
:data:`FORMAT`. An event stored by another judge (an older or newer kwx, or before migration 0012:
NULL) is folded from its events as before, so a rebuild after an engine change gives the new
engine's answers.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec

from projections.derive import FactCtx
from projections.model import EventRef, Fact, ReportedLine, SnapshotTaken, TableInfo

FORMAT = 1
"""The stored form's version: part of :data:`JUDGE`."""


def fingerprint(paths: list[Path], extra: bytes = b"") -> int:
    """A 31-bit fingerprint (a PostgreSQL ``integer``) of the files' names and bytes."""
    digest = hashlib.sha256(extra)
    for path in paths:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return int.from_bytes(digest.digest()[:4], "big") & 0x7FFF_FFFF


def _sources() -> list[Path]:
    root = Path(__file__).resolve().parent.parent
    here = Path(__file__).resolve().parent
    return [*sorted((root / "domain").glob("*.py")), here / "derive.py", here / "model.py"]


JUDGE: int = fingerprint(_sources(), f"kwx-facts-{FORMAT}".encode())
"""This build's judge: what ``events.judge`` says of the facts it stores."""

_encode = msgspec.msgpack.Encoder().encode
_facts = msgspec.msgpack.Decoder(list[Fact])


def encode(facts: list[Fact]) -> bytes:
    """An event's facts as stored (their ``at`` carries the version; position and tx_id are the
    row's own, filled in when read)."""
    return _encode(facts)


def decode(data: bytes, position: int, tx_id: int, *, states: bool = True) -> list[Fact]:
    """The stored facts of the event at log ``position`` / ``tx_id``, as the fold would give them.
    ``states=False`` (the projector): a ``SnapshotTaken``'s state is left out (``b""``) — it stays
    in the event's row, where readers find it (:mod:`projections.snapshots`)."""
    out: list[Fact] = []
    for fact in _facts.decode(data):
        ref = EventRef(version=fact.at.version, position=position, tx_id=tx_id)
        if not states and type(fact) is SnapshotTaken:
            out.append(msgspec.structs.replace(fact, at=ref, state=b""))
        else:
            out.append(msgspec.structs.replace(fact, at=ref))
    return out


def snapshot_state(data: bytes) -> bytes | None:
    """The engine state in an event's stored facts (a ``hand_started``'s ``SnapshotTaken``), or
    None when they hold none."""
    for fact in _facts.decode(data):
        if type(fact) is SnapshotTaken:
            return fact.state
    return None


class _StoredCtx(msgspec.Struct, array_like=True):
    info: TableInfo | None
    pending_reports: dict[int, tuple[int, tuple[ReportedLine, ...]]]
    pending_ordinal: int
    last_at: str | None


_ctx = msgspec.msgpack.Decoder(_StoredCtx)


def encode_ctx(ctx: FactCtx) -> bytes:
    """The fact context as the head's snapshot keeps it (``table_heads.fact_ctx``)."""
    return _encode(_StoredCtx(ctx.info, ctx.pending_reports, ctx.pending_ordinal, ctx.last_at))


def decode_ctx(data: bytes, tenant: str, table_id: str) -> FactCtx:
    s = _ctx.decode(data)
    return FactCtx(
        table_id=table_id, tenant=tenant, info=s.info, pending_reports=s.pending_reports,
        pending_ordinal=s.pending_ordinal, last_at=s.last_at,
    )  # fmt: skip


def copy_ctx(ctx: FactCtx) -> FactCtx:
    """A copy to move on while a batch is judged (the cached one stays as it was until the batch
    is stored)."""
    return msgspec.structs.replace(ctx, pending_reports=dict(ctx.pending_reports))
