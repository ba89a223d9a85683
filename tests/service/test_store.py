"""The event store against a real PostgreSQL: atomic appends, optimistic concurrency, idempotency,
immutability (trigger and role), the hash chain, and the gap-free global read."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import psycopg
import pytest

from domain.events import canonical_bytes, convert
from domain.events import decode as decode_event
from services.errors import IdConflict, IllegalEvent, VersionConflict
from services.store.events import EventStore
from tests.service.streams import legal_table, relabel

pytestmark = pytest.mark.db


def events_of(wire: list[dict[str, Any]]) -> list[Any]:
    return [convert(e) for e in wire]


def new_table() -> str:
    return "st-" + uuid.uuid4().hex[:12]


@pytest.fixture()
def store(container: Any) -> EventStore:
    return container.store  # type: ignore[no-any-return]


def test_append_then_read_back_the_same_canonical_events(store: EventStore) -> None:
    table, wire = new_table(), legal_table(1)
    result = store.append("acme", table, 0, events_of(wire))
    assert (result.version, result.first_version, result.count) == (len(wire), 1, len(wire))
    stored = store.read_table("acme", table, 0, 10_000)
    assert [s.version for s in stored] == list(range(1, len(wire) + 1))
    assert [canonical_bytes(decode_event(s.body)) for s in stored] == [  # table_opened: rules pinned
        canonical_bytes(store.engine.pin(e)) for e in events_of(wire)
    ]
    positions = [s.position for s in stored]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)


def test_a_batch_continues_from_the_current_version(store: EventStore) -> None:
    table, wire = new_table(), legal_table(2)
    cut = len(wire) // 2
    store.append("acme", table, 0, events_of(wire[:cut]))
    store.cache.clear()  # the second batch must find the state without the cache (snapshot/refold)
    result = store.append("acme", table, cut, events_of(wire[cut:]))
    assert (result.first_version, result.version) == (cut + 1, len(wire))


def test_resending_the_same_batch_answers_the_same_and_stores_once(store: EventStore) -> None:
    table, wire = new_table(), legal_table(3)
    first = store.append("acme", table, 0, events_of(wire))
    again = store.append("acme", table, 0, events_of(wire))
    without_check = store.append("acme", table, None, events_of(wire))
    assert again.body() == first.body() == without_check.body()
    assert again.replayed and not first.replayed
    assert len(store.read_table("acme", table, 0, 10_000)) == len(wire)


def test_an_id_reused_with_other_content_is_an_id_conflict(store: EventStore) -> None:
    table, wire = new_table(), legal_table(4)
    store.append("acme", table, 0, events_of(wire[:3]))
    changed = dict(wire[2], at="2026-01-01T00:00:00Z")
    with pytest.raises(IdConflict) as info:
        store.append("acme", table, 2, events_of([changed]))
    assert info.value.extra["event_id"] == wire[2]["id"]
    assert store.head("acme", table).version == 3  # type: ignore[union-attr]


def test_a_wrong_expected_version_is_a_version_conflict_with_the_current_version(store: EventStore) -> None:
    table, wire = new_table(), legal_table(5)
    store.append("acme", table, 0, events_of(wire[:4]))
    with pytest.raises(VersionConflict) as info:
        store.append("acme", table, 2, events_of(wire[4:6]))
    assert info.value.extra["current_version"] == 4


def test_a_batch_whose_last_event_is_illegal_stores_nothing(store: EventStore) -> None:
    table, wire = new_table(), legal_table(6)
    illegal = dict(wire[0], id="again")  # a second table_opened: never legal after event 1
    with pytest.raises(IllegalEvent) as info:
        store.append("acme", table, 0, events_of([*wire[:5], illegal]))
    assert info.value.extra["index"] == 5 and info.value.extra["rule"]
    assert store.head("acme", table) is None and store.read_table("acme", table) == []
    store.append("acme", table, 0, events_of(wire[:5]))
    with pytest.raises(IllegalEvent):
        store.append("acme", table, 5, events_of([*wire[5:8], illegal]))
    assert store.head("acme", table).version == 5  # type: ignore[union-attr]
    assert len(store.read_table("acme", table)) == 5


def test_another_tenant_appending_to_the_same_id_makes_its_own_table(store: EventStore) -> None:
    """Issue 11 §4: a table is (tenant, table_id). Another tenant's append to an id in use is a new
    table of its own: its own versions, chain, head and cache; neither sees the other's events."""
    table, ours, theirs = new_table(), legal_table(7), legal_table(70)
    store.append("acme", table, 0, events_of(ours[:2]))
    with pytest.raises(VersionConflict) as info:  # their table of that id is empty: at 0, not at 2
        store.append("other", table, 2, events_of(theirs[:2]))
    assert info.value.extra["current_version"] == 0
    created = store.append("other", table, 0, events_of(theirs[:5]))
    assert (created.first_version, created.version, created.replayed) == (1, 5, False)
    store.append("acme", table, 2, events_of(ours[2:4]))
    assert [e.event_id for e in store.read_table("acme", table, 0, 100)] == [e["id"] for e in ours[:4]]
    assert [e.event_id for e in store.read_table("other", table, 0, 100)] == [e["id"] for e in theirs[:5]]
    assert {e.tenant for e in store.read_table("other", table, 0, 100)} == {"other"}
    assert store.head("acme", table).version == 4  # type: ignore[union-attr]
    assert store.head("other", table).version == 5  # type: ignore[union-attr]
    assert store.head("nobody", table) is None
    assert store.cache.peek(("acme", table)).version == 4  # type: ignore[union-attr]
    assert store.cache.peek(("other", table)).version == 5  # type: ignore[union-attr]
    # the same batch sent by the other tenant is its own first append there, not a re-send
    same = store.append("third", table, 0, events_of(ours[:2]))
    assert not same.replayed and same.version == 2
    tables, checked, broken = store.verify(table)
    assert (tables, checked, broken) == (3, 11, [])
    assert store.verify(table, tenant="other")[:2] == (1, 5)


def test_two_writers_racing_one_table_win_each_version_exactly_once(store: EventStore) -> None:
    table, wire = new_table(), legal_table(8, hands=2)
    outcomes: dict[str, dict[str, int]] = {w: {"won": 0, "conflicts": 0} for w in ("a", "b")}
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []
    # Two stores with their own caches, as two service processes would have.
    stores = {"a": store, "b": EventStore(store.pool, store.engine)}

    def writer(name: str) -> None:
        try:
            mine = events_of(relabel(wire, name))
            barrier.wait()
            while True:
                head = store.head("acme", table)
                version = head.version if head else 0
                if version >= len(wire):
                    return
                try:
                    stores[name].append("acme", table, version, [mine[version]])
                    outcomes[name]["won"] += 1
                except VersionConflict:
                    outcomes[name]["conflicts"] += 1
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    stored = store.read_table("acme", table, 0, 10_000)
    assert [s.version for s in stored] == list(range(1, len(wire) + 1))
    assert outcomes["a"]["won"] + outcomes["b"]["won"] == len(wire)
    assert outcomes["a"]["conflicts"] + outcomes["b"]["conflicts"] > 0  # they did race
    for s, original in zip(stored, wire, strict=True):
        writer_name, _, original_id = s.event_id.partition("-")
        assert writer_name in ("a", "b") and original_id == original["id"]
        assert canonical_bytes(store.engine.pin(convert(dict(original, id=s.event_id)))) == canonical_bytes(
            decode_event(s.body)
        )
    tables, checked, broken = store.verify(table)
    assert (tables, checked, broken) == (1, len(wire), [])


def test_the_trigger_refuses_update_delete_and_truncate_even_for_the_owner(
    store: EventStore, database_url: str
) -> None:
    table, wire = new_table(), legal_table(9)
    store.append("acme", table, 0, events_of(wire[:2]))
    statements = [
        "UPDATE events SET body = '{}' WHERE table_id = %(t)s",
        "DELETE FROM events WHERE table_id = %(t)s",
        "TRUNCATE events",
    ]
    with psycopg.connect(database_url) as owner:
        for statement in statements:
            with pytest.raises(psycopg.Error, match="immutable"):
                owner.execute(statement, {"t": table})
            owner.rollback()


def test_the_service_role_may_only_insert_and_select_events(store: EventStore, database_url: str) -> None:
    table, wire = new_table(), legal_table(10)
    store.append("acme", table, 0, events_of(wire[:2]))
    with store.pool.connection() as conn:  # the service's own connections
        assert conn.execute("SELECT current_user").fetchone() == ("kwx_app",)
        for statement in (
            "UPDATE events SET body = '{}' WHERE table_id = %(t)s",
            "DELETE FROM events WHERE table_id = %(t)s",
            "TRUNCATE events",
            "ALTER TABLE events DISABLE TRIGGER events_immutable",
            "DELETE FROM table_heads WHERE table_id = %(t)s",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement, {"t": table})
            conn.rollback()
        assert conn.execute("SELECT count(*) FROM events WHERE table_id = %s", (table,)).fetchone() == (2,)


def test_verify_finds_the_row_changed_behind_the_service_back(private_db: tuple[EventStore, str]) -> None:
    store, database_url = private_db
    table, wire = new_table(), legal_table(11)
    store.append("acme", table, 0, events_of(wire[:6]))
    assert store.verify(table)[2] == []
    with psycopg.connect(database_url) as owner:
        owner.execute("SET citus.enable_unsafe_triggers = on")  # on Citus (make test-citus): else refused
        owner.execute("ALTER TABLE events DISABLE TRIGGER events_immutable")
        owner.execute(
            "UPDATE events SET body = jsonb_set(body, '{at}', '\"2020-01-01T00:00:00Z\"') "
            "WHERE table_id = %s AND version = 4",
            (table,),
        )
        owner.execute("ALTER TABLE events ENABLE TRIGGER events_immutable")
    _, _, broken = store.verify(table)
    assert [(b.table_id, b.version) for b in broken] == [(table, 4)]


def test_a_deleted_row_is_a_missing_version(private_db: tuple[EventStore, str]) -> None:
    store, database_url = private_db
    table, wire = new_table(), legal_table(12)
    store.append("acme", table, 0, events_of(wire[:5]))
    with psycopg.connect(database_url) as owner:
        owner.execute("SET citus.enable_unsafe_triggers = on")  # on Citus (make test-citus): else refused
        owner.execute("ALTER TABLE events DISABLE TRIGGER events_immutable")
        owner.execute("DELETE FROM events WHERE table_id = %s AND version = 3", (table,))
        owner.execute("ALTER TABLE events ENABLE TRIGGER events_immutable")
    _, _, broken = store.verify(table)
    assert [(b.table_id, b.version) for b in broken] == [(table, 3)]


def test_a_stale_cache_is_never_trusted(store: EventStore) -> None:
    """Process A caches the table, process B appends, A appends again: A must see B's events."""
    other = EventStore(store.pool, store.engine)
    table, wire = new_table(), legal_table(13)
    store.append("acme", table, 0, events_of(wire[:4]))
    other.append("acme", table, 4, events_of(wire[4:8]))
    with pytest.raises(VersionConflict):
        store.append(
            "acme", table, 4, events_of(relabel(wire[4:8], "a"))
        )  # A's cache says 4; the table is at 8
    result = store.append("acme", table, None, events_of(wire[8:12]))
    assert (result.first_version, result.version) == (9, 12)
    assert store.verify(table)[2] == []


def test_fast_path_is_taken_for_consecutive_batches(store: EventStore) -> None:
    table, wire = new_table(), legal_table(14)
    before = store.fast_appends
    for start in range(0, 12, 3):
        store.append("acme", table, start, events_of(wire[start : start + 3]))
    assert store.fast_appends - before == 4
    assert store.verify(table)[2] == []


def test_verify_finds_events_whose_head_row_was_deleted(private_db: tuple[EventStore, str]) -> None:
    store, database_url = private_db
    table, wire = new_table(), legal_table(15)
    store.append("acme", table, 0, events_of(wire[:3]))
    with psycopg.connect(database_url) as owner:
        owner.execute("DELETE FROM table_heads WHERE table_id = %s", (table,))
    _, _, broken = store.verify(table)
    assert [(b.table_id, b.version) for b in broken] == [(table, 1)]


def test_an_unreadable_snapshot_means_a_refold_not_an_error(private_db: tuple[EventStore, str]) -> None:
    store, database_url = private_db
    table, wire = new_table(), legal_table(16)
    store.append("acme", table, 0, events_of(wire[:60]))  # ≥ 50 events: a snapshot is written
    with psycopg.connect(database_url) as owner:
        row = owner.execute(
            "SELECT snapshot_version FROM table_heads WHERE table_id = %s", (table,)
        ).fetchone()
        assert row == (60,)
        owner.execute("UPDATE table_heads SET snapshot = '\\x00ff' WHERE table_id = %s", (table,))
    store.cache.clear()
    result = store.append("acme", table, 60, events_of(wire[60:64]))
    assert result.version == 64


def _folded(store: EventStore, wire: list[dict[str, Any]]) -> bytes:
    state = store.engine.initial()
    for e in events_of(wire):
        state = store.engine.step(state, store.engine.pin(e)).state
    return store.engine.encode_state(state)  # type: ignore[no-any-return]


def test_a_cache_miss_with_the_expected_version_starts_from_the_heads_snapshot(store: EventStore) -> None:
    """Another process (a second worker) appended: with the expected version, this one reads the
    head's snapshot and the events after it, and stores through the conditional fast path — no
    lock, no refold — with exactly the state a fold gives."""
    table, wire = new_table(), legal_table(16, hands=8)
    assert len(wire) >= 200
    other = EventStore(store.pool, store.engine, snapshot_every=50)
    other.append("acme", table, 0, events_of(wire[:100]))  # its snapshot: v100
    for start in range(100, 130, 10):  # small batches: the snapshot stays at v100
        other.append("acme", table, start, events_of(wire[start : start + 10]))
    fast, locked = store.fast_appends, store.locked_appends
    result = store.append("acme", table, 130, events_of(wire[130:160]))
    assert (result.first_version, result.version) == (131, 160)
    assert (store.fast_appends - fast, store.locked_appends - locked) == (1, 0)
    tip = store.cache.peek(("acme", table))
    assert tip is not None and tip.version == 160
    assert store.engine.encode_state(tip.state) == _folded(store, wire[:160])
    # the other process is now behind: it takes the same path, from this one's head
    other.append("acme", table, 160, events_of(wire[160:200]))
    assert other.locked_appends == 0
    assert store.verify(table)[2] == []


def test_a_batch_illegal_against_the_stored_head_is_refused_after_a_cache_miss(store: EventStore) -> None:
    table, wire = new_table(), legal_table(17)
    other = EventStore(store.pool, store.engine)
    other.append("acme", table, 0, events_of(wire[:6]))
    with pytest.raises(IllegalEvent) as info:  # the table's 6th event again, as event 7
        store.append("acme", table, 6, events_of(relabel(wire[5:6], "again")))
    assert info.value.extra["index"] == 0
    assert store.head("acme", table).version == 6  # type: ignore[union-attr]


def test_an_unreadable_snapshot_falls_back_to_a_refold_under_the_lock(store: EventStore) -> None:
    table, wire = new_table(), legal_table(18, hands=2)
    other = EventStore(store.pool, store.engine, snapshot_every=1)
    other.append("acme", table, 0, events_of(wire[:20]))
    with store.pool.connection() as conn:  # a snapshot no engine can read (an old format, say)
        conn.execute("UPDATE table_heads SET snapshot = '\\x00ff'::bytea WHERE table_id = %s", (table,))
    locked = store.locked_appends
    result = store.append("acme", table, 20, events_of(wire[20:40]))
    assert result.version == 40 and store.locked_appends == locked + 1
    tip = store.cache.peek(("acme", table))
    assert tip is not None and store.engine.encode_state(tip.state) == _folded(store, wire[:40])


def test_a_cache_miss_on_another_tenants_table_answers_as_for_a_missing_one(store: EventStore) -> None:
    table, wire = new_table(), legal_table(19)
    EventStore(store.pool, store.engine).append("acme", table, 0, events_of(wire[:4]))
    answers = []
    for tid in (table, new_table()):  # another tenant's id in use, and an id nobody uses
        with pytest.raises(VersionConflict) as info:
            store.append("other", tid, 4, events_of(wire[4:8]))
        answers.append((info.value.message, info.value.extra))
    assert answers[0] == answers[1] == (answers[0][0], {"current_version": 0})
    assert store.head("acme", table).version == 4  # type: ignore[union-attr]
    assert store.head("other", table) is None


def test_without_expected_version_a_stale_cache_retries_from_the_stored_head(store: EventStore) -> None:
    """No ``expected_version``: the stale guess fails, the head is read once (no lock), and the
    batch is stored through the fast path from there — also for a process that never saw the table."""
    table, wire = new_table(), legal_table(20, hands=4)
    other = EventStore(store.pool, store.engine)
    store.append("acme", table, None, events_of(wire[:30]))  # this store's cache: v30
    other.append("acme", table, None, events_of(wire[30:60]))  # new to `other`: the table exists
    assert (other.fast_appends, other.locked_appends) == (1, 0)
    fast, locked = store.fast_appends, store.locked_appends
    result = store.append("acme", table, None, events_of(wire[60:90]))  # this cache is behind
    assert (result.first_version, result.version) == (61, 90)
    assert (store.fast_appends - fast, store.locked_appends - locked) == (1, 0)
    tip = store.cache.peek(("acme", table))
    assert tip is not None and store.engine.encode_state(tip.state) == _folded(store, wire[:90])
    # a re-send (no expected version) is still recognised as a replay, by the locking path
    again = store.append("acme", table, None, events_of(wire[60:90]))
    assert again.replayed and (again.first_version, again.version) == (61, 90)
    assert store.verify(table)[2] == []


def test_recorded_violations_are_stored_alike_by_the_fast_and_the_locking_path(store: EventStore) -> None:
    """violations: "record": the same stream stored in one fast-path batch and, on another table,
    with its violation in a batch the locking path stores (COPY): the same rulings in the answers
    and in the ``ruling`` column, and both hash chains verify."""
    from tests.service.streams import GOLDEN, expectation, load

    path = GOLDEN / "lou-hu-rejected.jsonl"
    wire = load(path)
    index, rule = expectation(path)["error"]["index"], expectation(path)["error"]["rule"]
    recorded = events_of([dict(wire[0], violations="record"), *wire[1:]])
    fast_table, locked_table = new_table(), new_table()

    fast_locked = store.locked_appends
    fast = store.append("acme", fast_table, 0, recorded)
    assert store.locked_appends == fast_locked  # stored by the fast path
    assert [(r["index"], r["version"], r["rule"]) for r in fast.rulings] == [(index, index + 1, rule)]

    cut = index - 1  # the violation is in the second batch
    other = EventStore(store.pool, store.engine, snapshot_every=1)
    other.append("acme", locked_table, 0, recorded[:cut])
    with store.pool.connection() as conn:  # an unreadable snapshot sends the next batch to the lock
        unreadable = "UPDATE table_heads SET snapshot = '\\x00ff'::bytea WHERE table_id = %s"
        conn.execute(unreadable, (locked_table,))
    locked = store.locked_appends
    rest = store.append("acme", locked_table, cut, recorded[cut:])
    assert store.locked_appends == locked + 1
    assert [(r["index"], r["version"], r["rule"]) for r in rest.rulings] == [(index - cut, index + 1, rule)]

    fast_rows = store.read_table("acme", fast_table, 0, 10_000)
    locked_rows = store.read_table("acme", locked_table, 0, 10_000)
    assert [(r.body, r.ruling) for r in fast_rows] == [(r.body, r.ruling) for r in locked_rows]
    assert [r.version for r in fast_rows if r.ruling is not None] == [index + 1]
    assert store.verify(fast_table)[2] == [] and store.verify(locked_table)[2] == []


def test_the_heads_snapshot_is_stored_uncompressed_and_starts_a_cold_store(
    store: EventStore, database_url: str
) -> None:
    """Migration 0005: ``table_heads.snapshot`` is ``STORAGE EXTERNAL`` — the snapshot the fast
    path writes is stored without pglz compression (docs/operations.md, Speed), reads back as the
    very bytes of the state the store holds, and a store with an empty cache continues from it."""
    table, wire = new_table(), legal_table(2)
    cut = len(wire) - 10
    store.append("acme", table, 0, events_of(wire[:cut]))  # ≥ 50 events: the head gets a snapshot
    with psycopg.connect(database_url) as conn:
        storage = conn.execute(
            "SELECT attstorage FROM pg_attribute"
            " WHERE attrelid = 'table_heads'::regclass AND attname = 'snapshot'"
        ).fetchone()
        version, compression, snapshot = conn.execute(
            "SELECT snapshot_version, pg_column_compression(snapshot), snapshot FROM table_heads"
            " WHERE table_id = %s",
            (table,),
        ).fetchone()
    assert storage == ("e",)
    assert version == cut and compression is None
    tip = store.cache.peek(("acme", table))
    assert tip is not None and bytes(snapshot) == store.engine.encode_state(tip.state)
    cold = EventStore(store.pool, store.engine)
    fast = cold.fast_appends
    result = cold.append("acme", table, cut, events_of(wire[cut:]))
    assert (result.first_version, result.version, cold.fast_appends) == (cut + 1, len(wire), fast + 1)
    assert store.verify(table)[2] == []
