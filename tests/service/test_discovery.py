"""Discovery (issue 13, find it) against a real PostgreSQL: tables appended through the API → the
projector catches up → ``GET /v1/tables`` (filters, flags, paging), ``/v1/players/{id}/tables`` and
``/v1/tables/{id}/hands`` answer from the ``discovery`` read model; tenants never see each other;
a rebuild equals the incremental build; hostile parameters are 422s naming their field."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from domain import engine
from domain.events import convert
from projections.projector import Projector
from tests.paths import GOLDEN
from tests.projections.helpers import append, simulated, violating
from tests.service.streams import CONFORMANCE, load

pytestmark = pytest.mark.db


@pytest.fixture()
def projector(container: Any) -> Projector:
    return Projector(container.pool, container.store, engine)


def _new_id() -> str:
    return "dv-" + uuid.uuid4().hex[:12]


def _all(client: Any, headers: dict[str, str], url: str, limit: int = 3) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cursor = None
    for _ in range(1000):  # bounded
        sep = "&" if "?" in url else "?"
        r = client.get(f"{url}{sep}limit={limit}" + (f"&cursor={cursor}" if cursor else ""), headers=headers)
        assert r.status_code == 200, r.text
        out += r.json()["tables"]
        cursor = r.json()["next_cursor"]
        if cursor is None:
            return out
    raise AssertionError("paging did not end")


def test_tables_newest_first_with_player_and_preset_filters(
    client: Any, platform: dict[str, str], projector: Projector
) -> None:
    made = []
    for seed in range(6):
        table_id = _new_id()
        events = simulated(300 + seed, 2)
        append(client, platform, table_id, events)
        made.append((table_id, events[0]["players"], events[0]["rules"]["preset"]))
    projector.catch_up()
    listed = _all(client, platform, "/v1/tables")
    assert [t["table_id"] for t in listed] == [m[0] for m in reversed(made)]
    assert all(t["hands"] >= 1 for t in listed)
    player = made[0][1][0]
    mine = [m[0] for m in reversed(made) if player in m[1]]
    assert [t["table_id"] for t in _all(client, platform, f"/v1/tables?player={player}")] == mine
    assert [t["table_id"] for t in _all(client, platform, f"/v1/players/{player}/tables")] == mine
    preset = made[1][2]
    assert [t["table_id"] for t in _all(client, platform, f"/v1/tables?preset={preset}")] == [
        m[0] for m in reversed(made) if m[2] == preset
    ]


def test_since_until_filter_by_the_hands_times(
    client: Any, platform: dict[str, str], projector: Projector
) -> None:
    early, late = _new_id(), _new_id()
    for table_id, day in ((early, "2026-01-05"), (late, "2026-03-05")):
        events = [dict(e, at=f"{day}T10:00:00Z") for e in simulated(11, 1)]
        append(client, platform, table_id, events)
    projector.catch_up()

    def ids(q: str) -> list[str]:
        r = client.get(f"/v1/tables?{q}", headers=platform)
        assert r.status_code == 200, r.text
        return [t["table_id"] for t in r.json()["tables"] if t["table_id"] in (early, late)]

    assert ids("since=2026-02-01") == [late]
    assert ids("until=2026-02-01T00:00:00%2B08:00") == [early]
    assert ids("since=2026-01-01&until=2026-12-31") == [late, early]
    # a day is the whole UTC day, for until as for since (as the leaderboard's days): until the day a
    # table was played finds it; it used to mean that day's 00:00 and left the day out
    assert ids("until=2026-01-05") == [early]
    assert ids("since=2026-03-05&until=2026-03-05") == [late]
    assert ids("until=2026-01-04") == []
    assert ids("until=2026-01-05T09:59:59Z") == []  # a time is that instant
    assert ids("since=2027-01-01") == []
    first = client.get("/v1/tables?since=2026-03-01", headers=platform).json()["tables"]
    assert [t["first_at"] for t in first if t["table_id"] == late] == ["2026-03-05T10:00:00Z"]


def _flags_of(client: Any, headers: dict[str, str], table_id: str) -> tuple[set[str], list[dict[str, Any]]]:
    r = client.get(f"/v1/tables/{table_id}/hands", headers=headers)
    assert r.status_code == 200, r.text
    return set(r.json()["table"]["flags"]), r.json()["hands"]


@pytest.mark.parametrize(
    ("path", "flag"),
    [
        (CONFORMANCE / "double-win.jsonl", "multi_win"),
        (CONFORMANCE / "bao-hu-default.jsonl", "bao_hu"),
        (GOLDEN / "kong-chain.jsonl", "kong_chain"),
        (GOLDEN / "lou-hu-then-self-draw.jsonl", "lou_hu"),
        (GOLDEN / "self-draw-liang-dao-3d.jsonl", "liang_dao"),
    ],
    ids=lambda v: getattr(v, "stem", v),
)
def test_each_flag_on_a_stream_that_has_it(
    client: Any, platform: dict[str, str], projector: Projector, path: Any, flag: str
) -> None:
    table_id = _new_id()
    append(client, platform, table_id, load(path))
    projector.catch_up()
    flags, hands = _flags_of(client, platform, table_id)
    assert flag in flags
    assert any(flag in h["flags"] for h in hands)
    found = client.get(f"/v1/tables?has={flag}&limit=200", headers=platform).json()["tables"]
    assert table_id in [t["table_id"] for t in found]
    assert all(flag in t["flags"] for t in found)


def test_hands_list_what_the_engine_settled(
    client: Any, platform: dict[str, str], projector: Projector
) -> None:
    table_id = _new_id()
    events = simulated(7, 4)
    append(client, platform, table_id, events)
    projector.catch_up()
    state = engine.fold([convert(e) for e in events])
    r = client.get(f"/v1/tables/{table_id}/hands", headers=platform)
    assert r.status_code == 200, r.text
    hands = r.json()["hands"]
    assert [h["hand"] for h in hands] == [s.hand for s in state.settlements]
    for h, s in zip(hands, state.settlements, strict=True):
        assert (h["end"], h["dealer"], h["net"]) == (s.end, s.dealer, list(s.net))
        assert [(w["seat"], w["multiplier"], [p["id"] for p in w["patterns"]]) for w in h["winners"]] == [
            (w.seat, w.multiplier, [p.id for p in w.patterns]) for w in s.wins
        ]
        assert events[h["first_event"] - 1]["type"] == "hand_started"
        assert h["first_event"] < h["last_event"]
    page = client.get(f"/v1/tables/{table_id}/hands?limit=1&after=1", headers=platform).json()
    assert [h["hand"] for h in page["hands"]] == [2] and page["next_after"] == 2


def test_discrepancy_and_violation_flags(client: Any, platform: dict[str, str], projector: Projector) -> None:
    reported = None
    for seed in range(40):  # the simulator reports some wrong settlements
        events = simulated(2000 + seed, 2)
        if any(e["type"] == "settlement_reported" for e in events):
            reported = events
            break
    assert reported is not None
    wrong = []
    for e in reported:
        if e["type"] == "settlement_reported":
            e = dict(e, transfers=[{"from": 0, "to": 1, "amount": 12345}])
        wrong.append(e)
    t1 = _new_id()
    append(client, platform, t1, wrong)
    events, codes = violating(5, 2)
    t2 = _new_id()
    append(client, platform, t2, events)
    projector.catch_up()
    assert "discrepancy" in _flags_of(client, platform, t1)[0]
    assert "not_a_winning_hand" in codes
    flags, hands = _flags_of(client, platform, t2)
    assert "violation" in flags
    assert "not_a_winning_hand" in {w["violation"] for h in hands for w in h["winners"]}
    both = client.get("/v1/tables?has=discrepancy,lou_hu&limit=200", headers=platform).json()["tables"]
    assert all({"discrepancy", "lou_hu"} <= set(t["flags"]) for t in both)


def test_paging_loses_no_table_and_repeats_none_while_tables_arrive(
    client: Any, platform: dict[str, str], projector: Projector
) -> None:
    first = [_new_id() for _ in range(5)]
    for i, table_id in enumerate(first):
        append(client, platform, table_id, simulated(400 + i, 1))
    projector.catch_up()
    seen: list[str] = []
    r = client.get("/v1/tables?limit=2", headers=platform).json()
    seen += [t["table_id"] for t in r["tables"]]
    for i in range(20):  # bounded: 5 tables in pages of 2
        append(client, platform, _new_id(), simulated(500 + i, 1))  # a new table between pages
        projector.catch_up()
        if r["next_cursor"] is None:
            break
        r = client.get(f"/v1/tables?limit=2&cursor={r['next_cursor']}", headers=platform).json()
        seen += [t["table_id"] for t in r["tables"]]
    assert seen == list(reversed(first))


def test_another_tenant_sees_nothing(
    client: Any, platform: dict[str, str], make_key: Any, projector: Projector
) -> None:
    table_id = _new_id()
    events = simulated(21, 1)
    append(client, platform, table_id, events)
    other = make_key("o" + uuid.uuid4().hex[:10], "support")
    projector.catch_up()
    assert client.get("/v1/tables", headers=other).json() == {"tables": [], "next_cursor": None}
    player = events[0]["players"][0]
    assert client.get(f"/v1/players/{player}/tables", headers=other).json()["tables"] == []
    missing = client.get(f"/v1/tables/{table_id}/hands", headers=other)
    unknown = client.get(f"/v1/tables/{_new_id()}/hands", headers=other)
    assert missing.status_code == unknown.status_code == 404
    assert missing.json()["error"] == unknown.json()["error"]
    # a cursor of one tenant shows nothing of the other's
    r = client.get("/v1/tables?limit=1", headers=platform).json()
    assert (
        client.get(f"/v1/tables?cursor={r['next_cursor'] or 'ZDEuMQ'}", headers=other).json()["tables"] == []
    )
    dashboard = make_key("o" + uuid.uuid4().hex[:10], "dashboard")
    assert client.get("/v1/tables", headers=dashboard).status_code == 403


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("has=lou_hu,nope", "query.has"),
        ("cursor=xyz", "query.cursor"),
        ("cursor=ZDEuMA", "query.cursor"),  # d1.0
        ("cursor=ZDEuOTk5OTk5OTk5OTk5OTk5OTk5OQ", "query.cursor"),  # past bigint
        ("since=yesterday", "query.since"),
        ("until=2026-13-01", "query.until"),
        ("since=2026-02-01&until=2026-01-01", "query.since"),
        ("preset=nope", "query.preset"),
        ("limit=0", "query.limit"),
        ("player=" + "x" * 65, "query.player"),
        ("player=a%00b", "query.player"),
        ("player=", "query.player"),
    ],
)
def test_hostile_parameters_are_422_naming_the_field(
    client: Any, platform: dict[str, str], query: str, field: str
) -> None:
    r = client.get(f"/v1/tables?{query}", headers=platform)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field
    if field == "query.has":
        assert "kong_chain" in r.json()["message"]


def test_hands_hostile(client: Any, platform: dict[str, str]) -> None:
    assert client.get("/v1/tables/bad%20id/hands", headers=platform).status_code == 422
    assert client.get("/v1/tables/x/hands?after=-1", headers=platform).json()["field"] == "query.after"


def test_rebuild_equals_incremental(client: Any, container: Any, platform: dict[str, str], tenant: str,
                                    projector: Projector) -> None:  # fmt: skip
    for round_ in range(3):
        for i in range(4):
            append(client, platform, _new_id(), simulated(700 + 4 * round_ + i, 2))
        projector.catch_up()

    def dump() -> dict[str, list[Any]]:
        with container.pool.connection() as conn:
            q = "SELECT * FROM {} WHERE tenant = %s ORDER BY 1, 2, 3"
            return {
                name: conn.execute(q.format(name), (tenant,)).fetchall()  # type: ignore[arg-type]
                for name in ("proj_discovery_tables", "proj_discovery_players", "proj_discovery_hands")
            }

    before = dump()
    tables = before["proj_discovery_tables"]
    assert len(tables) == 12 and len(before["proj_discovery_players"]) == 36
    assert before["proj_discovery_hands"]
    assert sorted(r[2] for r in tables) == list(range(1, 13))  # seq: 1, 2, … without gaps
    Projector(container.pool, container.store, engine).rebuild(["discovery"])
    assert dump() == before


def test_queries_use_their_indexes(container: Any) -> None:
    from projections.discovery_queries import _HANDS_SQL, tables_sql

    with container.pool.connection() as conn:
        # SET LOCAL in the transaction, and on Citus passed on to the workers (each plans its own
        # shard in EXPLAIN's remote transaction): a plain SET stays on the coordinator, and a worker
        # whose shard held rows planned a sequential scan of proj_discovery_players (CI, 2 Dec).
        # On a single PostgreSQL the citus.* line only sets a placeholder.
        conn.execute("SET LOCAL citus.propagate_set_commands = 'local'")
        conn.execute("SET LOCAL enable_seqscan = off")
        params = {"tenant": "t", "before": 10, "player": "p", "preset": None, "mask": 0, "since": None,
                  "until": None, "limit": 5}  # fmt: skip
        plain = conn.execute("EXPLAIN " + tables_sql(None, None, None, None, 0), params).fetchall()
        by_player = conn.execute("EXPLAIN " + tables_sql("p", None, None, None, 0), params).fetchall()
        hands = conn.execute("EXPLAIN " + _HANDS_SQL, ("t", "x", 0, 5)).fetchall()
        conn.rollback()
    text = lambda rows: "\n".join(r[0] for r in rows)  # noqa: E731
    assert "proj_discovery_tables_seq" in text(plain)
    assert "proj_discovery_players_pkey" in text(by_player)
    assert "proj_discovery_hands_pkey" in text(hands)
