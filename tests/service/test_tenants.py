"""Issue 11 §4: each tenant has its own table ids, and nothing a tenant reads reveals another.

Given two tenants that append different streams to the same table id, when every read route of
each is read, then each shows exactly what a third tenant shows for the same stream alone under
another id: no cross-talk in events, state, settlements, audit, stats, ledgers or the discrepancy
feed. Another tenant's table is the 404 of an id nobody uses, and another tenant's activity changes
not one byte of what a tenant reads.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from domain import engine
from projections.projector import Projector
from tests.projections.helpers import append, simulated

pytestmark = pytest.mark.db

Headers = dict[str, str]


def _misreported(seed: int) -> list[dict[str, Any]]:
    """A simulated table whose first ``settlement_reported`` pays one coin more than kwx computes:
    one discrepancy (and different per seed)."""
    for s in range(seed, seed + 50):  # bounded: nearly every simulated table reports its hands
        events = simulated(s, 2)
        for i, e in enumerate(events):
            if e["type"] == "settlement_reported" and e["transfers"]:
                first = dict(e["transfers"][0], amount=e["transfers"][0]["amount"] + 1)
                events[i] = dict(e, transfers=[first, *e["transfers"][1:]])
                return events
    raise AssertionError("no simulated table with a settlement_reported")


def _strip(value: Any, *names: str) -> Any:
    """``value`` without the keys ``names`` at any depth (e.g. recorded_at: the time of the append)."""
    if isinstance(value, dict):
        return {k: _strip(v, *names) for k, v in value.items() if k not in names}
    if isinstance(value, list):
        return [_strip(v, *names) for v in value]
    return value


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


class Tenant:
    def __init__(self, client: Any, make_key: Callable[..., Headers], name: str) -> None:
        self.client, self.name = client, name
        self.platform, self.support = make_key(name, "platform"), make_key(name, "support")
        self.dashboard = make_key(name, "dashboard")

    def reads(self, table_id: str, players: list[str]) -> dict[str, Any]:
        """Every read route's answer (JSON, NDJSON lines as a list), by route."""
        get = self.client.get
        base = f"/v1/tables/{table_id}"
        out: dict[str, Any] = {}
        routes = {
            "events": (f"{base}/events?limit=1000", self.platform),
            "state": (f"{base}/state", self.support),
            "state at 7": (f"{base}/state?at=7", self.support),
            "public state": (f"{base}/state", self.platform),
            "settlement": (f"{base}/hands/1/settlement", self.platform),
            "what-if": (f"{base}/hands/1/settlement?rules=xiangyang", self.support),
            "audit": (f"{base}/audit", self.support),
            "hand audit": (f"{base}/hands/1/audit", self.support),
            "discrepancies": ("/v1/discrepancies", self.support),
            "house ledger": ("/v1/house/ledger", self.platform),
            "leaderboard": ("/v1/leaderboard", self.platform),
        }
        for p in players:
            routes[f"stats {p}"] = (f"/v1/players/{p}/stats", self.platform)
            routes[f"ledger {p}"] = (f"/v1/players/{p}/ledger", self.support)
        for name, (url, headers) in routes.items():
            answer = get(url, headers=headers)
            assert answer.status_code < 500, (self.name, name, answer.text[:300])
            if name in ("events", "state", "audit", "discrepancies", "settlement"):
                assert answer.status_code == 200, (self.name, name, answer.text[:300])
            out[name] = answer.json() if answer.status_code == 200 else (answer.status_code, answer.json())
        export = get(f"{base}/events", headers={**self.platform, "Accept": "application/x-ndjson"})
        assert export.status_code == 200
        out["export"] = [json.loads(line) for line in export.text.splitlines()]
        return out


def _as(reads: dict[str, Any], table_id: str) -> Any:
    """The answers with the table id replaced by a placeholder and the append times dropped."""
    text = json.dumps(_strip(reads, "recorded_at")).replace(table_id, "TABLE")
    return json.loads(text)


def test_two_tenants_with_the_same_table_id_each_read_only_their_own(
    client: Any, container: Any, make_key: Callable[..., Headers]
) -> None:
    run = uuid.uuid4().hex[:8]
    a, b, a_alone, b_alone = (Tenant(client, make_key, f"{x}-{run}") for x in ("a", "b", "ca", "cb"))
    squat = f"squat-{run}"
    ours, theirs = _misreported(11), _misreported(300)
    assert [e["id"] for e in ours] != [e["id"] for e in theirs] or ours != theirs
    # both append to the same id, interleaved, each from version 0: two tables
    half = len(ours) // 2
    append(client, a.platform, squat, ours[:half])
    append(client, b.platform, squat, theirs)
    answer = client.post(f"/v1/tables/{squat}/events", headers=a.platform,
                         json={"events": ours[half:], "expected_version": half})  # fmt: skip
    assert answer.status_code == 201, answer.text
    # the references: the same streams, each alone in a tenant of its own, under other ids
    append(client, a_alone.platform, f"alone-a-{run}", ours)
    append(client, b_alone.platform, f"alone-b-{run}", theirs)
    Projector(container.pool, container.store, engine).catch_up()

    players = sorted({p for e in (ours[0], theirs[0]) for p in e["players"]})
    got = {t: t.reads(squat, players) for t in (a, b)}
    cases = ((a, a_alone, f"alone-a-{run}", ours), (b, b_alone, f"alone-b-{run}", theirs))
    for t, alone, tid, stream in cases:
        mine = got[t]
        assert [e["id"] for e in mine["events"]["events"]] == [e["id"] for e in stream]
        assert [e["id"] for e in mine["export"]] == [e["id"] for e in stream]
        chain = {"ok": True, "events_checked": len(stream), "first_broken": None}
        assert mine["audit"]["hash_chain"] == chain
        seqs = [d["seq"] for d in mine["discrepancies"]["discrepancies"]]
        assert seqs and seqs == list(range(1, len(seqs) + 1))
        assert mine["discrepancies"]["caught_up"] is True
        reference = alone.reads(tid, players)
        # every stats / ledger answer, also for a player only the other stream has (404 in both)
        assert _as(mine, squat) == _as(reference, tid), t.name
    assert got[a]["state"] != got[b]["state"]
    assert got[a]["leaderboard"] != got[b]["leaderboard"]
    # in the store: two heads, two chains, the read models' rows by (tenant, table_id)
    with container.pool.connection() as conn:
        heads = conn.execute(
            "SELECT tenant, version FROM table_heads WHERE table_id = %s ORDER BY tenant", (squat,)
        ).fetchall()
        settled = conn.execute(
            "SELECT tenant, count(*) FROM proj_hand_settlements WHERE table_id = %s GROUP BY tenant "
            "ORDER BY tenant", (squat,)
        ).fetchall()  # fmt: skip
    assert heads == [(a.name, len(ours)), (b.name, len(theirs))]
    assert [n for _, n in settled] == [
        len(engine.fold([_event(e) for e in s]).settlements) for s in (ours, theirs)
    ]
    tables, checked, broken = container.store.verify(squat)
    assert (tables, checked, broken) == (2, len(ours) + len(theirs), [])


def _event(wire: dict[str, Any]) -> Any:
    from domain.events import convert

    return convert(wire)


def test_another_tenants_table_is_the_404_of_an_id_nobody_uses(
    client: Any, make_key: Callable[..., Headers]
) -> None:
    run = uuid.uuid4().hex[:8]
    owner, stranger = Tenant(client, make_key, f"own-{run}"), Tenant(client, make_key, f"str-{run}")
    table = f"taken-{run}"
    append(client, owner.platform, table, simulated(5, 1))
    nobody = f"taken-{uuid.uuid4().hex[:8]}"  # same length: the messages differ only in the id
    routes = ("events", "state", "state?at=1", "hands/1/settlement", "hands/1/settlement?cap=2", "audit",
              "hands/1/audit")  # fmt: skip
    for route in routes:
        for headers in (stranger.platform, stranger.support, stranger.dashboard,
                        {**stranger.platform, "Accept": "application/x-ndjson"}):  # fmt: skip
            theirs = client.get(f"/v1/tables/{table}/{route}", headers=headers)
            missing = client.get(f"/v1/tables/{nobody}/{route}", headers=headers)
            assert theirs.status_code == missing.status_code, route
            assert dict(theirs.headers) | {"x-request-id": "", "content-length": ""} == dict(
                missing.headers
            ) | {"x-request-id": "", "content-length": ""}, route
            assert theirs.text.replace(table, "ID") == missing.text.replace(nobody, "ID"), route
            if theirs.status_code == 404:
                assert theirs.json() == {
                    "error": "not_found",
                    "message": f"no table {table!r}",
                    "message_zh": f"没有这张牌桌：{table}",
                }
            else:  # a role that may not read the route: its 403, whatever the table
                assert theirs.status_code == 403
                assert route.endswith("audit") or headers is stranger.dashboard, route


def test_another_tenants_activity_changes_nothing_a_tenant_reads(
    client: Any, container: Any, make_key: Callable[..., Headers]
) -> None:
    """No global position, counter or checkpoint on the wire: B's every answer is byte-identical
    before and after A stores (and the projector applies) 20 more tables with discrepancies."""
    run = uuid.uuid4().hex[:8]
    a, b = Tenant(client, make_key, f"busy-{run}"), Tenant(client, make_key, f"calm-{run}")
    mine = _misreported(41)
    append(client, b.platform, f"calm-{run}", mine)
    projector = Projector(container.pool, container.store, engine)
    projector.catch_up()
    players = list(mine[0]["players"])
    before = b.reads(f"calm-{run}", players)
    assert "position" not in _keys(before) and "projections" not in before["discrepancies"]
    for i in range(20):
        append(client, a.platform, f"busy-{run}-{i}", _misreported(100 + 7 * i))
    projector.catch_up()
    after = b.reads(f"calm-{run}", players)
    assert msgspec.json.encode(after) == msgspec.json.encode(before)
    busy = [d["seq"] for d in a.reads(f"busy-{run}-19", [])["discrepancies"]["discrepancies"]]
    assert busy == list(range(1, len(busy) + 1)) and len(busy) >= 20  # A's own count, from 1


def test_the_discrepancy_feed_pages_by_the_tenants_own_seq_and_says_when_it_is_behind(
    private_db: tuple[Any, str],
) -> None:
    from projections.queries.discrepancies import pending as feed_pending

    store, _url = private_db
    run = uuid.uuid4().hex[:8]

    def pending(tenant: str) -> bool:
        with store.pool.connection() as conn:
            return feed_pending(conn, tenant)

    for tenant, seeds in ((f"x-{run}", (1, 60, 90)), (f"y-{run}", (200,))):
        for seed in seeds:
            store.append(tenant, f"t-{seed}", 0, [_event(e) for e in _misreported(seed)])
    assert pending(f"x-{run}") and pending(f"y-{run}") and not pending(f"z-{run}")
    Projector(store.pool, store, engine).catch_up()
    assert not pending(f"x-{run}") and not pending(f"y-{run}")
    store.append(f"y-{run}", "t-later", 0, [_event(e) for e in _misreported(250)])
    assert pending(f"y-{run}") and not pending(f"x-{run}")  # y's new events: only y is behind
    Projector(store.pool, store, engine).catch_up()
    with store.pool.connection() as conn:
        rows = conn.execute(
            "SELECT tenant, feed_seq, table_id FROM proj_discrepancies ORDER BY tenant, feed_seq"
        ).fetchall()
    assert [(t, s) for t, s, _ in rows] == [(f"x-{run}", 1), (f"x-{run}", 2), (f"x-{run}", 3),
                                            (f"y-{run}", 1), (f"y-{run}", 2)]  # fmt: skip
    assert [tid for t, _, tid in rows if t == f"y-{run}"] == ["t-200", "t-later"]


def test_two_tenants_racing_on_one_id_each_store_exactly_their_own(container: Any) -> None:
    """Two processes' stores (cold caches) and two tenants appending to the same id at once, with
    and without expected versions: each tenant's table ends with exactly its events, each once, in
    order, and both chains verify — the two tables never share a lock, a head or a cache entry."""
    import threading

    from services.errors import VersionConflict
    from services.store.events import EventStore

    run = uuid.uuid4().hex[:8]
    table = f"race-{run}"
    streams = {f"r1-{run}": simulated(71, 2), f"r2-{run}": simulated(72, 2)}
    stores = [EventStore(container.pool, container.engine) for _ in range(2)]
    barrier, errors = threading.Barrier(4), []

    def write(tenant: str, store: EventStore, with_version: bool) -> None:
        wire = streams[tenant]
        try:
            barrier.wait(30)
            done = 0
            while done < len(wire):  # bounded: each turn stores a batch or learns the version
                batch = [_event(e) for e in wire[done : done + 10]]
                try:
                    done = store.append(tenant, table, done if with_version else None, batch).version
                except VersionConflict as exc:  # the other store of this tenant moved first
                    done = int(exc.extra["current_version"])
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(t, s, v))
               for t in streams for s, v in ((stores[0], True), (stores[1], False))]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and not any(t.is_alive() for t in threads), errors
    for tenant, wire in streams.items():
        stored = container.store.read_table(tenant, table, 0, 10_000)
        assert [(e.version, e.event_id, e.tenant) for e in stored] == [
            (v, e["id"], tenant) for v, e in enumerate(wire, 1)
        ]
    assert container.store.verify(table) == (2, sum(len(w) for w in streams.values()), [])
