"""The read models' multi-row write path (projections.sql.MultiRowInsert) against PostgreSQL:
given 0, 1 or many rows → when written in one statement → then the table holds exactly those
rows, in order, with JSONB, bytea and NULLs intact; the upserts accumulate as row-by-row did."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb
from sqlalchemy import BigInteger, Column, Integer, LargeBinary, MetaData, Numeric, String, Table, Text
from sqlalchemy.dialects.postgresql import JSON, JSONB

from projections import ledger, player_stats
from projections.player_stats import StatDelta
from projections.schema import STAT_COUNTERS
from projections.sql import MultiRowInsert

pytestmark = pytest.mark.db

SCRATCH = Table(
    "scratch_multirow",
    MetaData(),
    Column("id", BigInteger, primary_key=True, autoincrement=True),
    Column("k", String(16), nullable=False),
    Column("n", Integer, nullable=True),
    Column("big", BigInteger, nullable=False),
    Column("note", Text, nullable=False),
    Column("doc", JSONB, nullable=True),
    Column("blob", LargeBinary, nullable=True),
    Column("exact", Numeric(20, 0), nullable=True),
)
KEYS = ["k", "n", "big", "note", "doc", "blob", "exact"]


@pytest.fixture()
def conn(container: Any) -> Iterator[psycopg.Connection[Any]]:
    """A connection inside a transaction that is rolled back, with the scratch table."""
    with container.pool.connection() as c:
        tx = c.transaction(force_rollback=True)
        with tx:
            c.execute(
                f"CREATE TEMP TABLE {SCRATCH.name} (id bigserial PRIMARY KEY, k varchar(16) NOT NULL "
                "UNIQUE, n integer, big bigint NOT NULL, note text NOT NULL, doc jsonb, blob bytea, "
                "exact numeric(20, 0)) ON COMMIT DROP"
            )
            yield c


def _row(i: int, **over: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "k": f"k{i}",
        "n": i,
        "big": 2**40 + i,
        "note": f'quote " backslash \\ newline \n 漏胡 {i}',
        "doc": {"i": i, "list": [1, "two", None], "nested": {"z": True, "a": "é"}},
        "blob": bytes([i % 256, 0, 255, 10]),
        "exact": 2**63 + i,
    }
    row.update(over)
    return row


def _stored(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    return conn.execute(f"SELECT {', '.join(KEYS)} FROM {SCRATCH.name} ORDER BY id").fetchall()


def _expected(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [tuple(r[k] for k in KEYS) for r in rows]


def test_no_rows_runs_no_statement(conn: psycopg.Connection[Any]) -> None:
    class Refuses:
        def execute(self, *args: Any) -> None:
            raise AssertionError("no statement expected")

    MultiRowInsert(SCRATCH, KEYS).execute(Refuses(), [])  # type: ignore[arg-type]
    assert _stored(conn) == []


def test_one_row_round_trips(conn: psycopg.Connection[Any]) -> None:
    rows = [_row(1)]
    MultiRowInsert(SCRATCH, KEYS).execute(conn, rows)
    assert _stored(conn) == _expected(rows)


def test_many_rows_in_order_with_nulls(conn: psycopg.Connection[Any]) -> None:
    rows = [_row(i) for i in range(300)]
    rows[7] = _row(7, n=None, doc=None, blob=None, exact=None)
    rows[8] = _row(8, doc=[], blob=b"")
    MultiRowInsert(SCRATCH, KEYS).execute(conn, rows)
    assert _stored(conn) == _expected(rows)  # ids (serial) follow the order given
    # a JSONB None is SQL NULL, as psycopg's adaptation of None was (not JSON null)
    assert conn.execute(f"SELECT doc IS NULL FROM {SCRATCH.name} WHERE k = 'k7'").fetchone() == (True,)


def test_json_is_the_same_jsonb_as_psycopgs_adaptation(conn: psycopg.Connection[Any]) -> None:
    doc = _row(3)["doc"]
    MultiRowInsert(SCRATCH, KEYS).execute(conn, [_row(3)])
    same = conn.execute(f"SELECT doc = %s FROM {SCRATCH.name}", (Jsonb(doc),)).fetchone()
    assert same == (True,)


def test_documents_travel_apart_and_stay_in_step_with_their_rows(conn: psycopg.Connection[Any]) -> None:
    """Each jsonb column goes as its own text array, zipped with the record set: two of them, with
    NULLs, JSON scalars and a computed column of the rows' places, stay on their rows."""
    table = Table(
        "scratch_docs", MetaData(), Column("k", Text), Column("a", JSONB), Column("v", Integer),
        Column("b", JSONB), Column("place", Integer),
    )  # fmt: skip
    conn.execute("CREATE TEMP TABLE scratch_docs (k text, a jsonb, v integer, b jsonb, place integer) "
                 "ON COMMIT DROP")  # fmt: skip
    rows = [
        {"k": f"k{i}", "a": {"i": i, "s": f'"{i}" \\ 漏胡'} if i % 3 else None, "v": i,
         "b": [i, "x"] if i % 4 else ("text" if i % 8 else 7)}
        for i in range(50)
    ]  # fmt: skip
    stmt = MultiRowInsert(table, ["k", "a", "v", "b"], computed={"place": "r.n * 10"})
    assert stmt.docs == ("a", "b")
    stmt.execute(conn, rows)
    got = conn.execute("SELECT k, a, v, b, place FROM scratch_docs ORDER BY place").fetchall()
    assert got == [(r["k"], r["a"], r["v"], r["b"], (i + 1) * 10) for i, r in enumerate(rows)]
    # a None is SQL NULL, a JSON scalar its jsonb
    assert conn.execute("SELECT count(*) FROM scratch_docs WHERE a IS NULL").fetchone() == (17,)
    assert conn.execute("SELECT b FROM scratch_docs WHERE k = 'k0'").fetchone() == (7,)
    assert conn.execute("SELECT jsonb_typeof(b) FROM scratch_docs WHERE k = 'k4'").fetchone() == ("string",)
    # a key a row lacks is NULL, a document's as a scalar's
    stmt.execute(conn, [{"k": "bare"}])
    assert conn.execute("SELECT a, v, b FROM scratch_docs WHERE k = 'bare'").fetchone() == (None, None, None)


def test_a_json_column_keeps_the_text_as_written(conn: psycopg.Connection[Any]) -> None:
    """A ``json`` column (the settlement documents, migration 0017) travels as a ``jsonb`` one does,
    and is stored as msgspec wrote it: compact, keys in the document's own order — where ``jsonb``
    would have put shorter keys first."""
    table = Table("scratch_json", MetaData(), Column("k", Text), Column("doc", JSON))
    conn.execute("CREATE TEMP TABLE scratch_json (k text, doc json) ON COMMIT DROP")
    stmt = MultiRowInsert(table, ["k", "doc"])
    assert stmt.docs == ("doc",) and '"doc"::json' in stmt.text and "::jsonb" not in stmt.text
    docs = [{"settlement": {"zz": 1, "a": [1, None, "卡五星"]}, "end": "hu"}, None, [3, {"b": 2, "a": 1}]]
    stmt.execute(conn, [{"k": f"k{i}", "doc": d} for i, d in enumerate(docs)])
    got = conn.execute("SELECT doc::text, doc FROM scratch_json ORDER BY k").fetchall()
    assert [g[0] for g in got] == [
        '{"settlement":{"zz":1,"a":[1,null,"卡五星"]},"end":"hu"}',
        None,
        '[3,{"b":2,"a":1}]',
    ]
    assert [g[1] for g in got] == docs


def test_prior_values_are_computed_before_any_row_goes_in(conn: psycopg.Connection[Any]) -> None:
    """A ``prior`` subquery reading the table being written (the feed's last ``seq`` per tenant) runs
    before the first row is inserted: it never meets the statement's own new rows, which in the
    row's projection it did — each probe fetched every row inserted before it from the heap to find
    it invisible (quadratic: 60 rows, 1,770 heap fetches)."""
    table = Table(
        "scratch_seq", MetaData(), Column("tenant", Text), Column("body", JSON), Column("seq", BigInteger)
    )
    conn.execute(
        "CREATE TEMP TABLE scratch_seq (tenant text, body json, seq bigint, PRIMARY KEY (tenant, seq)) "
        "ON COMMIT DROP"
    )
    last = "coalesce((SELECT max(f.seq) FROM scratch_seq f WHERE f.tenant = r.tenant), 0)"
    numbered = 'r."last" + row_number() OVER (PARTITION BY r.tenant ORDER BY r.n)'
    stmt = MultiRowInsert(table, ["tenant", "body"], computed={"seq": numbered}, prior={"last": last})
    rows = [{"tenant": "t" if i % 4 else "u", "body": {"i": i}} for i in range(60)]
    stmt.execute(conn, rows[:5])  # the tenants' last numbers are 4 (t) and 1 (u)

    def heap_fetches(plan: Any) -> int:
        return int(plan.get("Heap Fetches", 0)) + sum(heap_fetches(p) for p in plan.get("Plans", ()))

    explained = conn.execute(
        "EXPLAIN (ANALYZE, FORMAT JSON) " + stmt.text,
        _params(stmt, rows[5:]),
    ).fetchone()
    assert explained is not None
    assert heap_fetches(explained[0][0]["Plan"]) <= 2 * len(rows)  # one probe per row, nothing more
    got = conn.execute("SELECT tenant, seq, body ->> 'i' FROM scratch_seq ORDER BY tenant, seq").fetchall()
    for tenant in ("t", "u"):
        mine = [r for r in got if r[0] == tenant]
        assert [r[1] for r in mine] == list(range(1, len(mine) + 1))  # dense, in the rows' order
        assert [int(r[2]) for r in mine] == [i for i in range(60) if (i % 4 != 0) == (tenant == "t")]


def _params(stmt: MultiRowInsert, rows: list[dict[str, Any]]) -> list[Any]:
    """The parameters ``stmt.execute`` sends for ``rows`` (to run its text under EXPLAIN)."""
    sent: list[Any] = []

    class Recorder:
        def execute(self, text: str, params: list[Any]) -> None:
            sent.extend(params)

    stmt.execute(Recorder(), rows)  # type: ignore[arg-type]
    return sent


def test_extra_keys_are_ignored(conn: psycopg.Connection[Any]) -> None:
    MultiRowInsert(SCRATCH, KEYS).execute(conn, [dict(_row(1), unrelated="x")])
    assert _stored(conn) == _expected([_row(1)])


def test_on_conflict_do_nothing_keeps_the_first(conn: psycopg.Connection[Any]) -> None:
    stmt = MultiRowInsert(SCRATCH, KEYS, "ON CONFLICT (k) DO NOTHING")
    stmt.execute(conn, [_row(1, note="first"), _row(2), _row(1, note="same call")])
    stmt.execute(conn, [_row(2, note="later call"), _row(3)])
    assert [(r[0], r[3]) for r in _stored(conn)] == [
        ("k1", "first"),
        ("k2", _row(2)["note"]),
        ("k3", _row(3)["note"]),
    ]


def test_integer_columns_left_out_are_zero(conn: psycopg.Connection[Any]) -> None:
    """``zeros``: a row may leave out such a column (or send null) and it is stored as 0, beside
    rows that send it; only an integer column may be one."""
    stmt = MultiRowInsert(SCRATCH, KEYS, zeros=("n", "big"))
    rows = [_row(1), {k: v for k, v in _row(2).items() if k not in ("n", "big")}, _row(3, n=None, big=-7)]
    stmt.execute(conn, rows)
    assert [(r[0], r[1], r[2]) for r in _stored(conn)] == [("k1", 1, 2**40 + 1), ("k2", 0, 0), ("k3", 0, -7)]
    with pytest.raises(TypeError, match="note"):
        MultiRowInsert(SCRATCH, KEYS, zeros=("note",))


def test_player_stats_rows_send_only_what_is_not_zero() -> None:
    """A key's upsert row names its key and the counters (and maximum) the batch moved, nothing
    else: the statement takes the others as 0."""
    key = ("t", "ann", "default", player_stats.TOTAL)
    values = [0] * (len(STAT_COUNTERS) + 1)
    values[STAT_COUNTERS.index("wins")] = 2
    values[STAT_COUNTERS.index("net_coins")] = -15
    values[-1] = 4
    assert player_stats._row(key, values) == {
        "tenant": "t", "player_id": "ann", "preset": "default", "day": player_stats.TOTAL,
        "wins": 2, "net_coins": -15, "max_multiplier": 4,
    }  # fmt: skip


def test_player_stats_upsert_accumulates_across_batches(container: Any) -> None:
    tenant = "t-" + uuid.uuid4().hex[:10]

    def delta(player: str, preset: str, mult: int, **counters: int) -> StatDelta:
        d = StatDelta(tenant=tenant, player_id=player, preset=preset, max_multiplier=mult)
        for name, n in counters.items():
            d.add(name, n)
        d.patterns = {"ping_hu": counters.get("wins", 0)} if counters.get("wins") else {}
        return d

    batches = [
        [delta("ann", "default", 4, wins=1, net_coins=5), delta("bo", "default", 0, net_coins=-5)],
        [delta("ann", "default", 2, wins=2, net_coins=-3), delta("ann", "xiaogan", 8, wins=1)],
        [delta("bo", "default", 16, wins=1, net_coins=7), delta("ann", "default", 0, lou_hu_incurred=1)],
    ]
    with container.pool.connection() as conn, conn.transaction(force_rollback=True):
        for batch in batches:
            player_stats.write(conn, batch)
        got = {
            (p, preset): row
            for p, preset, *row in conn.execute(
                f"SELECT player_id, preset, {', '.join(STAT_COUNTERS)}, max_multiplier "
                "FROM proj_player_stats WHERE tenant = %s",
                (tenant,),
            ).fetchall()
        }
        patterns = conn.execute(
            "SELECT player_id, preset, pattern, wins FROM proj_player_patterns WHERE tenant = %s "
            "ORDER BY 1, 2, 3",
            (tenant,),
        ).fetchall()
    merged = player_stats.merge([d for b in batches for d in b])
    assert got == {
        (d.player_id, d.preset): [d.counters.get(c, 0) for c in STAT_COUNTERS] + [d.max_multiplier]
        for d in merged.values()
    }
    assert got[("ann", "default")][STAT_COUNTERS.index("wins")] == 3
    assert got[("ann", "default")][-1] == 4  # the maximum, not the last
    assert patterns == [
        ("ann", "default", "ping_hu", 3),
        ("ann", "xiaogan", "ping_hu", 1),
        ("bo", "default", "ping_hu", 1),
    ]


def test_ledger_accounts_carry_the_closing_balance_across_batches(container: Any) -> None:
    """The next batch opens each account at its last entry (migration 0019: no accounts table),
    and ``proj_ledger_accounts`` (a view) shows each account's closing balance and count."""
    tenant = "t-" + uuid.uuid4().hex[:10]

    def entry(account: str, amount: int, line: int) -> ledger.Entry:
        return ledger.Entry(
            tenant=tenant, account_kind="player", account=account, amount=amount,
            counterparty_kind="player", counterparty="x", table_id="t", hand=1, ordinal=1,
            line=line, event=3, reason="hu", seat=0, detail="", detail_zh="", position=line,
        )  # fmt: skip

    with container.pool.connection() as conn, conn.transaction(force_rollback=True):
        ledger.write(conn, [entry("ann", 5, 0), entry("bo", -5, 0), entry("ann", 2, 1)])
        ledger.write(conn, [entry("ann", -4, 2)])
        accounts = conn.execute(
            "SELECT account, balance, entries FROM proj_ledger_accounts WHERE tenant = %s ORDER BY 1",
            (tenant,),
        ).fetchall()
        entries = conn.execute(
            "SELECT account, seq, amount, balance, seat FROM proj_ledger_entries WHERE tenant = %s "
            "ORDER BY position, account, seq",
            (tenant,),
        ).fetchall()
    assert accounts == [("ann", 3, 3), ("bo", -5, 1)]
    assert entries == [("ann", 1, 5, 5, 0), ("bo", 1, -5, -5, 0), ("ann", 2, 2, 7, 0), ("ann", 3, -4, 3, 0)]
