"""The global log read (``EventStore.read_all``) never skips an event committed late.

First the exact interleaving that breaks a reader ordered by position alone (a transaction with the
lower xid takes the higher positions and commits first), then concurrent writer threads with a
reader tailing them.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import psycopg
import pytest

from domain.events import convert
from services.store.events import EventStore
from tests.service.streams import legal_table, relabel

pytestmark = pytest.mark.db


def drain(store: EventStore, after: tuple[int, int, int]) -> tuple[list[Any], tuple[int, int, int]]:
    seen: list[Any] = []
    while True:
        batch = store.read_all(after, 500)
        if not batch:
            return seen, after
        seen.extend(batch)
        after = (batch[-1].epoch, batch[-1].tx_id, batch[-1].position)


def drain_until(
    store: EventStore, after: tuple[int, int, int], n: int
) -> tuple[list[Any], tuple[int, int, int]]:
    """Like drain, waiting (up to 60 s) for ``n`` events: on a shared server another session's
    transaction may hold the snapshot's xmin back for a moment."""
    seen: list[Any] = []
    deadline = time.monotonic() + 60
    while len(seen) < n and time.monotonic() < deadline:
        batch, after = drain(store, after)
        seen.extend(batch)
        if len(seen) < n:
            time.sleep(0.05)
    return seen, after


def _raw_insert(conn: psycopg.Connection[Any], table: str, version: int) -> int:
    row = conn.execute(
        "INSERT INTO events (tenant, table_id, version, event_id, type, body, hash) "
        "VALUES ('acme', %s, %s, %s, 'table_closed', '{}', decode(repeat('00', 32), 'hex'))"
        " RETURNING position",
        (table, version, f"e{version}"),
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_lower_xid_with_higher_positions_committing_first_is_not_skipped(
    private_db: tuple[EventStore, str],
) -> None:
    store, database_url = private_db
    _, checkpoint = drain(store, (0, 0, 0))
    a_table, b_table = "gap-a-" + uuid.uuid4().hex[:8], "gap-b-" + uuid.uuid4().hex[:8]
    with psycopg.connect(database_url) as a, psycopg.connect(database_url) as b:
        a_xid = int(a.execute("SELECT pg_current_xact_id()::text").fetchone()[0])  # type: ignore[index]
        b_xid = int(b.execute("SELECT pg_current_xact_id()::text").fetchone()[0])  # type: ignore[index]
        assert a_xid < b_xid
        b_position = _raw_insert(b, b_table, 1)  # B takes the lower position...
        a_position = _raw_insert(a, a_table, 1)  # ...A (older xid) the higher one
        assert b_position < a_position
        a.commit()  # A commits first; B is still running
        seen, checkpoint = drain_until(store, checkpoint, 1)
        assert [(e.table_id, e.position) for e in seen] == [(a_table, a_position)]
        # A reader ordered by position alone would now hold checkpoint a_position > b_position
        b.commit()
        seen, checkpoint = drain_until(store, checkpoint, 1)
        assert [(e.table_id, e.position) for e in seen] == [(b_table, b_position)]


def test_an_event_of_a_running_transaction_holds_back_later_commits(
    private_db: tuple[EventStore, str],
) -> None:
    store, database_url = private_db
    _, checkpoint = drain(store, (0, 0, 0))
    a_table, b_table = "hold-a-" + uuid.uuid4().hex[:8], "hold-b-" + uuid.uuid4().hex[:8]
    with psycopg.connect(database_url) as a, psycopg.connect(database_url) as b:
        _raw_insert(a, a_table, 1)  # A: older xid, still running
        _raw_insert(b, b_table, 1)
        b.commit()
        seen, checkpoint = drain(store, checkpoint)
        assert seen == []  # B's event waits until nothing older can still commit
        a.commit()
        seen, checkpoint = drain_until(store, checkpoint, 2)
        assert [e.table_id for e in seen] == [a_table, b_table]


def test_concurrent_writers_and_a_tailing_reader_see_every_event_once_in_order(container: Any) -> None:
    run = uuid.uuid4().hex[:8]
    writers, per_writer = 4, 3
    groups = [[f"tail-{run}-{w}-{t}" for t in range(per_writer)] for w in range(writers)]
    writers_and_a_tailing_reader(container.store, legal_table(31), groups, f"tail-{run}-")


def writers_and_a_tailing_reader(
    store: EventStore, wire: list[Any], groups: list[list[str]], prefix: str
) -> None:
    """One writer thread per group of tables appends ``wire`` to each of its tables in many small
    transactions, interleaved across threads, while a reader tails the log (``drain``): then the
    reader saw every event of the tables (their ids start with ``prefix``) exactly once, in log
    order and in each table's order."""
    _, checkpoint = drain(store, (0, 0, 0))
    tables = [table for group in groups for table in group]
    expected = {(table, v) for table in tables for v in range(1, len(wire) + 1)}
    done = threading.Event()
    errors: list[BaseException] = []

    def write(mine: list[str]) -> None:
        try:
            for start in range(0, len(wire), 5):
                for table in mine:
                    batch = [convert(e) for e in relabel(wire[start : start + 5], table)]
                    store.append("acme", table, start, batch)
        except BaseException as exc:
            errors.append(exc)

    seen: list[Any] = []

    def tail() -> None:
        nonlocal checkpoint
        try:
            while True:
                finished = done.is_set()
                batch, checkpoint = drain(store, checkpoint)
                seen.extend(e for e in batch if e.table_id.startswith(prefix))
                if finished and not batch:
                    return
                time.sleep(0.002)
        except BaseException as exc:
            errors.append(exc)

    reader = threading.Thread(target=tail)
    reader.start()
    threads = [threading.Thread(target=write, args=(group,)) for group in groups]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    done.set()
    reader.join(60)
    assert not errors, errors
    keys = [(e.table_id, e.version) for e in seen]
    assert len(keys) == len(set(keys)), "an event was delivered twice"
    assert set(keys) == expected, "an event was skipped"
    order = [(e.epoch, e.tx_id, e.position) for e in seen]
    assert order == sorted(order)
    for table in tables:
        versions = [e.version for e in seen if e.table_id == table]
        assert versions == sorted(versions)
