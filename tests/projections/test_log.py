"""The projector's lean log read (``projections.log.read_page``) walks the log exactly like the
store's gap-free ``EventStore.read_all``: same events, same (tx_id, position) order — also where the
xids cross a power of ten — and it holds back events behind a transaction still running."""

from __future__ import annotations

import itertools
import re
import uuid
from typing import Any

import psycopg
import pytest

from projections.log import READ_FACTS_PAGE, WALK_INDEX, read_facts_page, read_page
from projections.stored_facts import JUDGE
from services.store.events import EventStore

pytestmark = pytest.mark.db

RULING = '{"rule": "not_a_winning_hand", "kind": "rule", "event": 2, "message": "m", "detail": {"seat": 1}}'
RULING_TEXT = (
    '{"kind": "rule", "rule": "not_a_winning_hand", "event": 2, "detail": {"seat": 1}, "message": "m"}'
)


def _insert(
    conn: psycopg.Connection[Any],
    table: str,
    version: int,
    tx_id: int | None = None,
    ruling: str | None = None,
) -> int:
    cols = "tenant, table_id, version, event_id, type, body, hash, ruling" + (
        ", tx_id" if tx_id is not None else ""
    )
    vals = (
        "'acme', %s, %s, %s, 'table_closed', '{\"type\": \"table_closed\"}', "
        "decode(repeat('00', 32), 'hex'), %s"
    )
    params: tuple[Any, ...] = (table, version, f"e{version}", ruling)
    if tx_id is not None:
        vals += ", %s::text::xid8"
        params += (str(tx_id),)
    row = conn.execute(f"INSERT INTO events ({cols}) VALUES ({vals}) RETURNING position", params).fetchone()
    assert row is not None
    return int(row[0])


Row = tuple[str, int, int, int, str, str | None, str, int]


def _walk_store(store: EventStore, size: int) -> list[Row]:
    out, after = [], (0, 0, 0)
    while page := store.read_all(after, size):
        out += [
            (e.table_id, e.version, e.position, e.tx_id, e.body, e.ruling, e.tenant, e.epoch) for e in page
        ]
        after = (page[-1].epoch, page[-1].tx_id, page[-1].position)
    return out


def _walk_lean(conn: psycopg.Connection[Any], size: int) -> list[Row]:
    out: list[Row] = []
    after = (0, 0, 0)
    while page := read_page(conn, after, size):
        out += page  # (table_id, version, position, tx_id, body, ruling, tenant, epoch)
        after = (page[-1][7], page[-1][3], page[-1][2])
    return out


def test_read_page_walks_the_log_like_read_all_across_xid_digit_boundaries(
    private_db: tuple[EventStore, str],
) -> None:
    store, url = private_db
    table = "lean-" + uuid.uuid4().hex[:8]
    with psycopg.connect(url, autocommit=True) as conn:
        (current,) = conn.execute("SELECT pg_current_xact_id()::text").fetchone()  # type: ignore[misc]
        assert int(current) > 100, "the explicit xids below must be older than every running one"
        # written in this order, so positions do not follow the xids: (tx_id, position) must sort
        # the xids as numbers (9 < 10 < 99 < 100), not as text
        for version, tx in enumerate((100, 99, 10, 9, 100, 10, 99), start=1):
            _insert(conn, table, version, tx, RULING if version in (2, 5) else None)
        for version in range(8, 12):  # and some with the real xid of their transaction
            _insert(conn, table, version)
        for size in (1, 2, 3, 1000):
            lean = _walk_lean(conn, size)
            assert lean == _walk_store(store, size)
        mine = [row for row in lean if row[0] == table]
        assert [row[3] for row in mine][:7] == [9, 10, 10, 99, 99, 100, 100]
        assert len(mine) == 11
        # the stored ruling comes as the store's text (jsonb output), None where there is none
        assert {row[1] for row in mine if row[5] is not None} == {2, 5}
        assert (
            {row[5] for row in mine if row[1] == 2}
            == {store.read_table("acme", table, 1, 1)[0].ruling}
            == {RULING_TEXT}
        )


def test_read_page_holds_back_events_behind_a_running_transaction(private_db: tuple[EventStore, str]) -> None:
    _, url = private_db
    a_table, b_table = "hold-a-" + uuid.uuid4().hex[:8], "hold-b-" + uuid.uuid4().hex[:8]
    with (
        psycopg.connect(url, autocommit=True) as reader,
        psycopg.connect(url) as a,
        psycopg.connect(url) as b,
    ):
        start = (0, 0, 0)
        while page := read_page(reader, start, 1000):
            start = (page[-1][7], page[-1][3], page[-1][2])
        _insert(a, a_table, 1)  # A: the older xid, still running
        _insert(b, b_table, 1)
        b.commit()
        assert read_page(reader, start, 1000) == []  # B waits until nothing older can commit
        with reader.transaction():  # inside a transaction that has an xid of its own, too
            reader.execute("SELECT pg_current_xact_id()")
            assert read_page(reader, start, 1000) == []
        a.commit()
        assert [r[0] for r in read_page(reader, start, 1000)] == [a_table, b_table]


def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [plan, *(n for child in plan.get("Plans", []) for n in _nodes(child))]


def _page_scans(
    conn: psycopg.Connection[Any], params: dict[str, Any], analyze: bool, generic: bool = False
) -> list[dict[str, Any]]:
    """The plan nodes that scan ``events`` in the facts page's plan (run with ``ANALYZE``: with the
    rows each read), planned as ``read_facts_page`` plans it: index walks on, the settings put back.
    ``generic``: the plan for any values — the one a long-lived projector's connection runs: psycopg
    prepares the page after its fifth run, the server plans it for its values five times more and
    then keeps the generic plan (``plan_cache_mode = auto``; docs/projections.md §6, "Plans kept") —
    the statement prepared with ``$n`` parameters and explained as ``EXECUTE``, since an ``EXPLAIN``
    given values plans for those values."""
    options = "ANALYZE, FORMAT JSON" if analyze else "FORMAT JSON"
    with conn.transaction():
        for statement in WALK_INDEX[:2]:
            conn.execute(statement)
        if generic:
            names = list(dict.fromkeys(re.findall(r"%\((\w+)\)s", READ_FACTS_PAGE)))
            text = re.sub(r"%\((\w+)\)s", lambda m: f"${names.index(m.group(1)) + 1}", READ_FACTS_PAGE)
            conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            conn.execute("DEALLOCATE ALL")
            conn.execute(f"PREPARE kwx_page AS {text}")
            values = ", ".join(_literal(params[n]) for n in names)
            row = conn.execute(f"EXPLAIN ({options}) EXECUTE kwx_page({values})").fetchone()
            conn.execute("DEALLOCATE kwx_page")
        else:
            row = conn.execute(f"EXPLAIN ({options}) " + READ_FACTS_PAGE, params).fetchone()
        conn.execute(WALK_INDEX[2])
    assert row is not None
    return [n for n in _nodes(row[0][0]["Plan"]) if n.get("Relation Name") == "events"]


def _literal(value: Any) -> str:
    return str(value) if isinstance(value, int) else "'" + str(value).replace("'", "''") + "'"


def test_the_facts_page_walks_the_log_order_index_and_puts_the_planner_back(
    private_db: tuple[EventStore, str],
) -> None:
    """The projector's page from position 0 of a log of 400 events, on a connection that never
    prepares (every statement a custom plan, as on a fresh pool): every scan of ``events`` walks
    ``events_log_order``, none is a bitmap or sequential scan of the rest of the log; after the read
    the session's own settings are back."""
    _, url = private_db
    table = "walk-" + uuid.uuid4().hex[:8]
    with psycopg.connect(url, prepare_threshold=None) as conn:
        for version in range(1, 401):
            _insert(conn, table, version)
        conn.commit()
        conn.execute("ANALYZE events")
        conn.commit()
        params = {"judge": JUDGE, "epoch": 0, "tx_id": "0", "position": 0, "limit": 400}
        scans = {(n["Node Type"], n.get("Index Name")) for n in _page_scans(conn, params, analyze=False)}
        # the count, the bound and the page: each a walk of the index, none a scan of the rest of the log
        assert scans <= {("Index Scan", "events_log_order"), ("Index Only Scan", "events_log_order")}, scans
        assert ("Index Scan", "events_log_order") in scans

        conn.execute("SET enable_seqscan = off")  # this session's own choice: it must survive
        conn.commit()
        with conn.transaction():
            page = read_facts_page(conn, (0, 0, 0), 100, JUDGE)
            settings = conn.execute(
                "SELECT current_setting('enable_seqscan'), current_setting('enable_bitmapscan')"
            ).fetchone()
        assert settings == ("off", "on")
        assert page[-1][10] == 100  # the page passed over 100 events
        walked = _walk_lean(conn, 100)[:100]
        assert (page[-1][2], page[-1][3]) == (walked[-1][2], walked[-1][3])  # and ends where read_page's does


def test_the_facts_page_passes_over_exactly_the_events_read_page_walks(
    private_db: tuple[EventStore, str],
) -> None:
    """Pages of every size, whole or bounded by ``upto``: each returns the events with this judge's
    facts, every event of another judge and its own last event, in log order; ``n`` is the events it
    passed over, and the last event is the one the lean walk reaches after as many."""
    from domain.events import convert
    from tests.projections.helpers import simulated

    store, url = private_db
    for t in range(3):  # three tables in appends of 40, interleaved in the log
        events = [convert(e) for e in simulated(900 + t, hands=1, table_id=f"page-{t}")]
        for start in range(0, len(events), 40):
            store.append("acme", f"page-{t}", start, events[start : start + 40])
    with psycopg.connect(url, autocommit=True) as conn:
        walked = _walk_lean(conn, 1000)
        places = [(row[7], row[3], row[2]) for row in walked]
        for judge in (JUDGE, JUDGE + 1):  # this build's facts, and another judge's (every event folded)
            interesting = {
                int(p)
                for (p,) in conn.execute(
                    "SELECT position FROM events WHERE facts IS NOT NULL OR judge IS DISTINCT FROM %s",
                    (judge,),
                ).fetchall()
            }
            assert 0 < len(interesting) < len(walked) if judge == JUDGE else len(interesting) == len(walked)
            for limit, upto_index in itertools.product((1, 2, 5, 17, 60, 1000), (None, len(walked) // 3)):
                upto = places[upto_index] if upto_index is not None else None
                end = len(walked) if upto_index is None else upto_index + 1
                after, done = (0, 0, 0), 0
                while page := read_facts_page(conn, after, limit, judge, upto):
                    n = page[-1][10]
                    assert {row[10] for row in page} == {n} and 1 <= n <= limit
                    assert n == limit or done + n == end  # only the last page is short
                    span = walked[done : done + n]
                    expected = [row[2] for row in span if row[2] in interesting or row is span[-1]]
                    assert [row[2] for row in page] == expected
                    assert all((row[4] is None) == row[8] for row in page)  # a body only to fold
                    done += n
                    after = places[done - 1]
                assert done == end


def test_each_walk_of_the_facts_page_stops_at_the_page(private_db: tuple[EventStore, str]) -> None:
    """With the table analyzed (as autovacuum leaves it), a page of 100 from the start of a log of
    5,000 events (this judge's, one in 20 with facts) and from its middle reads at most 100 index
    entries in each of its walks: the last walk's index condition has the page's bound as its upper
    end — in the plan for the page's values and in the generic plan for any page alike. (Joined to
    the bound, that walk read every event up to the fence — the whole rest of the log for each
    page, quadratic in a rebuild.) Last in this module: the other tests walk the whole
    log of the module's database, which this one makes 5,000 events longer."""
    _, url = private_db
    table = "bound-" + uuid.uuid4().hex[:8]
    with psycopg.connect(url, prepare_threshold=None) as conn:
        conn.execute(
            "INSERT INTO events (tenant, table_id, version, event_id, type, body, hash, facts, judge) "
            "SELECT 'acme', %s, v, 'e' || v, 'table_closed', '{\"type\": \"table_closed\"}', "
            "decode(repeat('00', 32), 'hex'), CASE WHEN v %% 20 = 0 THEN '\\x90'::bytea END, %s "
            "FROM generate_series(1, 5000) v",
            (table, JUDGE),
        )
        conn.commit()
        conn.execute("ANALYZE events")
        conn.commit()
        for start in (0, 2500):
            last = _walk_lean(conn, 1000)[start - 1] if start else None  # the checkpoint: before it
            epoch, tx_id, position = (last[7], last[3], last[2]) if last else (0, 0, 0)
            params = {"judge": JUDGE, "epoch": epoch, "tx_id": str(tx_id), "position": position, "limit": 100}
            for generic in (False, True):  # a connection's first pages, and its plan for every page after
                walks = _page_scans(conn, params, analyze=True, generic=generic)
                assert all(n.get("Index Name") == "events_log_order" for n in walks), walks
                read = [
                    n["Actual Rows"] + n.get("Rows Removed by Filter", 0) for n in walks if n["Actual Loops"]
                ]
                assert read and max(read) <= 100, (generic, read)
