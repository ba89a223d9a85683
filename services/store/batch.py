"""The pure half of an append: a batch as it is stored, stepped through the engine from a given
state — no database, no cache, no clock.

* :func:`prepare`: the batch as stored (a ``table_opened`` carries its rules pinned: every resolved
  option), its canonical bytes (the stored bodies; the hash and the idempotency check are over
  them, so re-sending the original unpinned batch is recognised as a replay), and a repeated event
  id refused (``malformed``);
* :func:`step`: every event stepped from ``(version, last hash, state)``; the first illegal one
  refused (``IllegalEvent``), the recorded violations numbered, the hash links computed
  (``services.store.chain``): a :class:`Batch`, whose :meth:`Batch.rows` are what is stored.

Both write paths (``fast``, ``locked``) store exactly what this module prepares.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from domain.events import Event, canonical_bytes
from projections import stored_facts
from projections.derive import FactCtx, FactsFailed, observe_batch
from services import tracing
from services.engine_adapter import Engine
from services.errors import IllegalEvent, Malformed
from services.logs import get_logger
from services.store import chain

_json = msgspec.json.Encoder()
log = get_logger("kwx.store")


@dataclass(frozen=True, slots=True)
class AppendResult:
    table_id: str
    version: int  # the table's version after the batch (the last event's version)
    first_version: int
    count: int
    rulings: list[dict[str, Any]] = field(default_factory=list)  # recorded violations, with index
    replayed: bool = False  # True when every event was already stored (idempotent re-send)

    def body(self) -> dict[str, Any]:
        return {"table_id": self.table_id, "version": self.version, "first_version": self.first_version,
                "count": self.count, "rulings": self.rulings}  # fmt: skip


def tag(event: Event) -> str:
    """The event's type as stored (its wire tag)."""
    return str(type(event).__struct_config__.tag)


@dataclass(slots=True)
class Batch:
    """A batch stepped through the engine: what to store and where the table ends up."""

    events: Sequence[Event]  # as stored (pinned)
    canon: list[bytes]  # their canonical bytes (the stored bodies)
    hashes: list[bytes]  # their chain hashes
    ruling_texts: list[str | None] | None  # each event's ruling as JSON; None: no event has one
    rulings: list[dict[str, Any]]  # the recorded violations, with index and version (the answer)
    state: Any
    version: int  # the last event's
    last_hash: bytes
    # the facts each event gave, as stored (None: none; the list None: no event gave any) and the
    # fact context after the batch; ctx None: the batch was judged without one (facts not known)
    facts: list[bytes | None] | None = None
    ctx: FactCtx | None = None
    unknown: list[int] | None = None  # 1-based indexes of rows whose facts are not stored (judge NULL)

    @property
    def judge(self) -> int | None:
        """``events.judge`` of the batch's rows: this build's when facts were found, else NULL
        (the rows of ``unknown`` have NULL too)."""
        return stored_facts.JUDGE if self.ctx is not None or self.unknown else None

    def judges(self) -> list[int | None]:
        judge, unknown = self.judge, set(self.unknown or ())
        return [None if i in unknown else judge for i in range(1, len(self.events) + 1)]

    def rows(self, tenant: str, table_id: str) -> list[tuple[Any, ...]]:
        """The rows as stored, in the columns of ``services.store.locked.COPY``."""
        first = self.version - len(self.events) + 1
        texts = self.ruling_texts or [None] * len(self.events)
        facts = self.facts or [None] * len(self.events)
        judges = self.judges()
        return [
            (tenant, table_id, first + i, e.id, tag(e), c.decode(), texts[i], h, facts[i], judges[i])
            for i, (e, c, h) in enumerate(zip(self.events, self.canon, self.hashes, strict=True))
        ]


def prepare(engine: Engine, events: Sequence[Event]) -> tuple[list[Event], list[bytes]]:
    """The batch as it is stored (pinned) and its canonical bytes; a repeated id is malformed."""
    pin = engine.pin
    pinned = [pin(e) for e in events]
    canon = [canonical_bytes(e) for e in pinned]
    seen: dict[str, int] = {}
    for i, e in enumerate(pinned):
        if e.id in seen:
            message = f"event id {e.id!r} appears twice in the batch (indexes {seen[e.id]} and {i})"
            raise Malformed(message, field=f"$.events[{i}].id", index=i)
        seen[e.id] = i
    return pinned, canon


def step(
    engine: Engine,
    version: int,
    previous: bytes,
    state: Any,
    events: Sequence[Event],
    canon: list[bytes],
    ctx: FactCtx | None = None,
) -> Batch:
    """``events`` stepped from ``state`` (the table at ``version``, its last hash ``previous``);
    ``IllegalEvent`` for the first event the engine refuses. With the table's fact context ``ctx``
    (left as it was: a copy moves on), each event's facts are found as it is judged
    (``projections.derive.observe``, the projector's own fact-finder) and stored with it."""
    with tracing.span("kwx.engine", **{"kwx.events": len(events)}):
        stepped = engine.step_batch(state, events, ctx is not None)
    if stepped.refused is not None:
        i = stepped.refused
        ruling = dict(stepped.refusal or {"rule": "sequence", "message": "refused"})
        message = str(ruling.pop("message", "illegal event"))
        raise IllegalEvent(message, index=i, event_id=events[i].id, **ruling)
    hashes = chain.links(previous, canon)
    rulings: list[dict[str, Any]] = []
    texts: list[str | None] | None = None
    if stepped.rulings:
        texts = [None] * len(events)
        for i, ruling in stepped.rulings:
            rulings.append({"index": i, "version": version + 1 + i, **ruling})
            texts[i] = _json.encode(ruling).decode()
    last = hashes[-1] if hashes else previous
    batch = Batch(events, canon, hashes, texts, rulings, stepped.state, version + len(events), last)
    if ctx is not None and stepped.states is not None:
        _find_facts(engine, batch, ctx, stepped.states, version + 1)
    return batch


def _find_facts(engine: Engine, batch: Batch, ctx: FactCtx, states: list[Any], first: int) -> None:
    """Each event's facts as stored (``projections.derive.observe_batch``) and the context after
    the batch, into ``batch``; the cached ``ctx`` stays as it was. Finding facts never fails an
    append: an event whose facts can't be stored (a number msgpack can't hold) is stored without
    them and with no judge, so the projector folds it; if the fact-finder itself fails, the whole
    batch is, and the context is lost (the next append refolds it from the head's snapshot)."""
    n = len(batch.events)
    after = stored_facts.copy_ctx(ctx)
    texts = batch.ruling_texts
    rulings = {i: t for i, t in enumerate(texts) if t is not None} if texts else {}
    unknown: list[int] = []
    try:
        found = observe_batch(engine, after, batch.events, states, rulings, first)
        batch.ctx = after
    except FactsFailed as failed:
        log.error("facts_not_found", version=first + failed.index, error=repr(failed.__cause__)[:300])
        found, unknown = [], list(range(1, n + 1))  # the whole batch: its facts so far are lost too
    if found:
        facts: list[bytes | None] = [None] * n
        for i, event_facts in found:
            try:
                facts[i] = stored_facts.encode(event_facts)
            except (OverflowError, msgspec.EncodeError):
                unknown.append(i + 1)
        batch.facts = facts
    batch.unknown = sorted(unknown) or None


def decoded_snapshot(engine: Engine, snapshot: bytes) -> Any:
    """A stored state snapshot, or None when this engine cannot read it (an older format)."""
    try:
        return engine.decode_state(bytes(snapshot))
    except (msgspec.MsgspecError, ValueError, TypeError, KeyError):
        return None
