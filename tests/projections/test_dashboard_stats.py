"""Stats for dashboards on a real PostgreSQL: simulated tables with event times (``at``) and a pool
of players, appended through the API → when projected → then the leaderboard sorts by every
statistic it shows in either order, pages, filters by period (UTC days of the events' ``at``),
preset and minimum hands; bad values are a 422 naming the parameter; ledger entries carry the
time of the event that caused them."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

import pytest

from domain import engine
from domain.events import convert
from domain.simulate import simulate_table
from projections.projector import Projector
from projections.queries.player_stats import RATIOS, SORTABLE
from tests.projections.helpers import append

pytestmark = pytest.mark.db

POOL = ("ann", "Bo", "cy", "di", "ed")
DAY0 = datetime(2026, 11, 1, 8, 0, tzinfo=UTC)


@pytest.fixture()
def dashboard(make_key: Any, tenant: str) -> dict[str, str]:
    return make_key(tenant, "dashboard")  # type: ignore[no-any-return]


@pytest.fixture()
def tables(client: Any, platform: dict[str, str], container: Any) -> list[dict[str, Any]]:
    """Eight tables, table i on day i (2026-11-01 + i; each lasts well under a day), alternating
    two presets, three players of the pool each."""
    out = []
    for i in range(8):
        rng = random.Random(4400 + i)
        preset = ("default", "xiangyang")[i % 2]
        players = random.Random(i).sample(POOL, 3)
        table_id = f"dash-{uuid.uuid4().hex[:10]}"
        events = simulate_table(rng, 3, {"preset": preset}, table_id, start=DAY0 + timedelta(days=i),
                                players=players)  # fmt: skip
        assert all(e["at"].startswith(f"2026-11-{1 + i:02d}") for e in events)
        append(client, platform, table_id, events)
        state = engine.fold([convert(e) for e in events])
        out.append({"id": table_id, "day": i, "preset": preset, "players": players, "events": events,
                    "settlements": [s for s in state.settlements if s.end != "aborted"]})  # fmt: skip
    Projector(container.pool, container.store, engine).catch_up()
    return out


def _expected(
    tables: list[dict[str, Any]], days: range, preset: str | None = None
) -> dict[str, tuple[int, int, int]]:
    """(hands_played, wins, net_coins) per player, from the engine's settlements of those days."""
    out: dict[str, list[int]] = {}
    for t in tables:
        if t["day"] not in days or (preset is not None and t["preset"] != preset):
            continue
        for s in t["settlements"]:
            for seat, player in enumerate(t["players"]):
                acc = out.setdefault(player, [0, 0, 0])
                acc[0] += 1
                acc[1] += sum(1 for w in s.wins if w.seat == seat)
                acc[2] += s.net[seat]
    return {p: (a[0], a[1], a[2]) for p, a in out.items()}


def _board(client: Any, headers: dict[str, str], **params: Any) -> dict[str, Any]:
    r = client.get("/v1/leaderboard", params={"limit": 500, **params}, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def _in_order(values: list[Any], ids: list[str], order: str) -> bool:
    """Sorted by value in ``order``, players without a value last, ties by player id bytes."""
    keyed = list(zip(values, ids, strict=True))
    present = [(v, p) for v, p in keyed if v is not None]
    absent = [(v, p) for v, p in keyed if v is None]
    if keyed != present + absent:
        return False
    if [p for _, p in absent] != sorted((p for _, p in absent), key=str.encode):
        return False
    sign = -1 if order == "desc" else 1
    return present == sorted(present, key=lambda vp: (sign * vp[0], vp[1].encode()))


def _exact(row: dict[str, Any], by: str) -> Any:
    if by not in RATIOS:
        return row[by]
    num, den = RATIOS[by]
    return Fraction(row[num], row[den]) if row[den] else None


def test_the_leaderboard_sorts_by_every_statistic_it_shows_in_either_order(
    client: Any, dashboard: dict[str, str], tables: list[dict[str, Any]]
) -> None:
    whole = everything = _expected(tables, range(8))
    shown = _board(client, dashboard)["players"][0]
    counters = {k for k in shown if isinstance(shown[k], int) and k not in ("rank", "value")}
    assert set(SORTABLE) == counters | set(shown["ratios"])
    distinct_orders = set()
    for by in SORTABLE:
        for order in ("desc", "asc"):
            body = _board(client, dashboard, by=by, order=order)
            rows = body["players"]
            assert (body["by"], body["order"], body["next_offset"]) == (by, order, None)
            assert {r["player_id"]: (r["hands_played"], r["wins"], r["net_coins"]) for r in rows} == whole
            shown_values = [r["ratios"][by] if by in RATIOS else r[by] for r in rows]
            assert shown_values == [r["value"] for r in rows]
            # a ratio is ranked by its exact value (the answer rounds it to 4 decimals)
            values = [_exact(r, by) for r in rows]
            assert _in_order(values, [r["player_id"] for r in rows], order), (by, order, values)
            assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
            distinct_orders.add(tuple(r["player_id"] for r in rows))
    assert len(distinct_orders) > 2  # the statistics do rank the players differently
    net = _board(client, dashboard, by="net_coins", order="asc")["players"]
    assert [r["net_coins"] for r in net] == sorted(v[2] for v in everything.values())
    rate = _board(client, dashboard, by="win_rate")["players"]
    assert [r["win_rate"] for r in rate] == sorted((r["win_rate"] for r in rate), reverse=True)


def test_the_leaderboard_pages_and_filters_by_period_preset_and_minimum_hands(
    client: Any, dashboard: dict[str, str], tables: list[dict[str, Any]]
) -> None:
    whole = _board(client, dashboard, by="wins")["players"]
    paged: list[dict[str, Any]] = []
    offset: int | None = 0
    for _ in range(20):  # bounded: 5 players, 2 a page
        assert offset is not None
        body = _board(client, dashboard, by="wins", limit=2, offset=offset)
        paged += body["players"]
        offset = body["next_offset"]
        if offset is None:
            break
    assert paged == whole and len(whole) == len(POOL)

    def summary(rows: list[dict[str, Any]]) -> dict[str, tuple[int, int, int]]:
        return {r["player_id"]: (r["hands_played"], r["wins"], r["net_coins"]) for r in rows}

    period = _board(client, dashboard, since="2026-11-03", until="2026-11-05")
    assert summary(period["players"]) == _expected(tables, range(2, 5))
    assert summary(_board(client, dashboard, since="2026-11-07")["players"]) == _expected(tables, range(6, 8))
    assert summary(_board(client, dashboard, until="2026-11-01")["players"]) == _expected(tables, range(0, 1))
    assert _board(client, dashboard, since="2026-12-01")["players"] == []
    by_preset = _board(client, dashboard, preset="xiangyang", since="2026-11-02", until="2026-11-06")
    assert summary(by_preset["players"]) == _expected(tables, range(1, 6), "xiangyang")
    counts = sorted(v[0] for v in _expected(tables, range(8)).values())
    cut = counts[len(counts) // 2]
    kept = _board(client, dashboard, min_hands=cut)["players"]
    assert sorted(r["hands_played"] for r in kept) == [c for c in counts if c >= cut]
    assert 0 < len(kept) < len(POOL)


@pytest.mark.parametrize(
    ("query", "field", "names"),
    [
        ("by=garbage", "query.by", ["win_rate", "net_coins", "max_multiplier"]),
        ("by=player_id", "query.by", ["win_rate"]),
        ("order=up", "query.order", ["asc", "desc"]),
        ("since=2026-13-01", "query.since", ["YYYY-MM-DD"]),
        ("until=yesterday", "query.until", ["YYYY-MM-DD"]),
        ("since=2026-11-01T00:00:00Z", "query.since", ["YYYY-MM-DD"]),
        ("since=2026-11-05&until=2026-11-01", "query.since", ["after"]),
        ("min_hands=-1", "query.min_hands", []),
        ("offset=-1", "query.offset", []),
        ("offset=x", "query.offset", []),
        ("preset=nowhere", "query.preset", ["xiangyang"]),
    ],
)
def test_bad_leaderboard_values_are_a_422_naming_the_parameter(
    client: Any, dashboard: dict[str, str], query: str, field: str, names: list[str]
) -> None:
    r = client.get(f"/v1/leaderboard?{query}", headers=dashboard)
    assert r.status_code == 422, r.text
    body = r.json()
    assert (body["error"], body["field"]) == ("malformed", field)
    assert all(n in body["message"] for n in names), body["message"]


def test_ledger_entries_carry_the_time_of_their_event_and_an_empty_house_ledger(
    client: Any, dashboard: dict[str, str], tables: list[dict[str, Any]]
) -> None:
    at = {(t["id"], v): e["at"] for t in tables for v, e in enumerate(t["events"], start=1)}
    seen = 0
    for player in POOL:
        page = client.get(f"/v1/players/{player}/ledger", params={"limit": 1000}, headers=dashboard)
        body = page.json()
        for entry in body["entries"]:
            assert entry["at"] == at[(entry["table_id"], entry["event"])]
            assert datetime.fromisoformat(entry["recorded_at"]).tzinfo is not None
            seen += 1
    assert seen > 20
    house = client.get("/v1/house/ledger", headers=dashboard)  # neither preset charges a fee
    assert house.status_code == 200
    assert {k: house.json()[k] for k in ("kind", "balance", "entries_total", "entries", "next_after")} == {
        "kind": "house", "balance": 0, "entries_total": 0, "entries": [], "next_after": None}  # fmt: skip


def test_a_table_without_times_counts_in_the_totals_and_in_no_period(
    client: Any, platform: dict[str, str], dashboard: dict[str, str], container: Any,
    tables: list[dict[str, Any]],
) -> None:  # fmt: skip
    def hands(**params: Any) -> dict[str, int]:
        return {r["player_id"]: r["hands_played"] for r in _board(client, dashboard, **params)["players"]}

    before, period = hands(), hands(since="2026-11-01", until="2026-11-30")
    assert before == period  # every hand so far has a time in November
    trio = ["ann", "Bo", "cy"]
    events = simulate_table(random.Random(99), 2, {"preset": "default"}, "untimed", players=trio)
    assert all("at" not in e for e in events)
    append(client, platform, f"dash-untimed-{uuid.uuid4().hex[:8]}", events)
    Projector(container.pool, container.store, engine).catch_up()
    played = len([s for s in engine.fold([convert(e) for e in events]).settlements if s.end != "aborted"])
    after = hands()
    assert {p: after[p] - before.get(p, 0) for p in after} == {p: (played if p in trio else 0) for p in after}
    assert hands(since="2026-11-01", until="2026-11-30") == period
    stats = client.get("/v1/players/ann/stats", headers=dashboard).json()["overall"]
    assert stats["hands_played"] == after["ann"]
