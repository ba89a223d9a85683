"""``GET /v1/feed`` (issue 15, a live feed for integrators): the read model ``feed``
(projections/feed.py) and its route (services/api/feed.py).

Given a tenant's tables appended (settled hands, a reported payout that differs, recorded rule
violations) → when the projector has applied them → then the tenant's feed lists them with a dense
cursor 1, 2, …; resuming after any cursor gives the rest once, in order, over NDJSON and over SSE
(a real ``kwx serve`` with its projector child: a client that disconnects mid-stream and resumes
with ``Last-Event-ID``); another tenant sees none; a dashboard key sees the settlements only; bad
cursors and waits are 422s naming the field; a rebuild gives the same rows."""

from __future__ import annotations

import contextlib
import json
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from domain import engine
from projections.projector import Projector
from tests.projections.helpers import append, simulated, violating

pytestmark = pytest.mark.db
Headers = dict[str, str]


@pytest.fixture()
def projector(container: Any) -> Projector:
    return Projector(container.pool, container.store, engine)


def _id() -> str:
    return "fd-" + uuid.uuid4().hex[:12]


def _wrong_report() -> list[dict[str, Any]]:
    for seed in range(40):  # the simulator reports some settlements: make one wrong
        events = simulated(3000 + seed, 2)
        if any(e["type"] == "settlement_reported" for e in events):
            return [
                dict(e, transfers=[{"from": 0, "to": 1, "amount": 12345}])
                if e["type"] == "settlement_reported"
                else e
                for e in events
            ]
    raise AssertionError("no simulated table reports a settlement")


def _fill(client: Any, headers: Headers) -> None:
    append(client, headers, _id(), simulated(11, 2))
    append(client, headers, _id(), _wrong_report())
    events, codes = violating(5, 2)
    assert codes
    append(client, headers, _id(), events)


def _ndjson(client: Any, headers: Headers, query: str = "") -> list[dict[str, Any]]:
    r = client.get(f"/v1/feed?format=ndjson&limit=1000{query}", headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in r.text.splitlines() if line]


def _all(client: Any, headers: Headers) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    while True:
        page = _ndjson(client, headers, f"&after={out[-1]['seq'] if out else 0}")
        if not page:
            return out
        out += page


def test_the_feed_lists_a_tenants_entries_with_a_dense_cursor(
    client: Any, make_key: Any, projector: Projector
) -> None:
    tenant = "feed" + uuid.uuid4().hex[:8]
    platform = make_key(tenant, "platform")
    _fill(client, platform)
    projector.catch_up()
    entries = _all(client, platform)
    assert [e["seq"] for e in entries] == list(range(1, len(entries) + 1))
    kinds = {e["kind"] for e in entries}
    assert {"settlement", "ruling", "discrepancy"} <= kinds
    settled = [e for e in entries if e["kind"] == "settlement"]
    assert all({"hand", "net", "settlement", "end_kind"} <= e["data"].keys() for e in settled)
    ruling = next(e for e in entries if e["kind"] == "ruling")
    assert ruling["data"]["rule"] and ruling["data"]["kind"] == "rule"
    discrepancy = next(e for e in entries if e["kind"] == "discrepancy")
    assert discrepancy["data"]["lines"]
    assert not any("position" in e or "position" in e["data"] for e in entries)  # no global log place
    # resuming after any cursor gives the rest, once, in order
    middle = entries[len(entries) // 2]["seq"]
    assert _ndjson(client, platform, f"&after={middle}") == entries[middle:]
    assert _ndjson(client, platform, "&limit=3") == entries[:3]
    # the same through Accept, and support sees the same
    r = client.get("/v1/feed?limit=2", headers={**platform, "Accept": "application/x-ndjson"})
    assert [json.loads(x) for x in r.text.splitlines()] == entries[:2]
    assert _all(client, make_key(tenant, "support")) == entries
    # dashboard: the settlements only, with their own seq
    assert _all(client, make_key(tenant, "dashboard")) == settled
    # another tenant: nothing, not even at a cursor of this one
    other = make_key("other" + uuid.uuid4().hex[:8], "platform")
    assert _ndjson(client, other) == [] and _ndjson(client, other, "&after=1") == []
    # a long-poll with nothing new waits, then ends empty
    assert _ndjson(client, platform, f"&after={entries[-1]['seq']}&wait=0.3") == []


@pytest.mark.parametrize(
    ("query", "headers", "field"),
    [
        ("after=-1", {}, "after"),
        ("after=x", {}, "after"),
        ("after=99999999999999999999", {}, "after"),
        ("format=ndjson&wait=-1", {}, "wait"),
        ("format=ndjson&wait=61", {}, "wait"),
        ("format=ndjson&wait=soon", {}, "wait"),
        ("format=xml", {}, "format"),
        ("format=ndjson&limit=0", {}, "limit"),
        ("", {"Last-Event-ID": "abc"}, "last-event-id"),
        ("", {"Last-Event-ID": "-3"}, "last-event-id"),
        ("", {"Last-Event-ID": "99999999999999999999"}, "last-event-id"),
    ],
)
def test_a_bad_cursor_or_wait_is_a_422_naming_it(
    client: Any, platform: Headers, query: str, headers: Headers, field: str
) -> None:
    r = client.get(f"/v1/feed?{query}", headers={**platform, **headers})
    assert r.status_code == 422, r.text
    assert field in r.json().get("field", "").lower(), r.json()


def test_the_feed_needs_a_key(client: Any) -> None:
    assert client.get("/v1/feed?format=ndjson").status_code == 401


def test_a_rebuild_gives_the_same_feed_rows(
    client: Any, make_key: Any, projector: Projector, container: Any
) -> None:
    platform = make_key("feedrb" + uuid.uuid4().hex[:8], "platform")
    _fill(client, platform)
    projector.catch_up()
    before = _all(client, platform)
    assert before
    projector.rebuild(["feed"])
    assert _all(client, platform) == before


def test_parked_events_become_parked_entries() -> None:
    """Given the projector parks an event of some model → the feed's entry says which model and
    why, for the event's own tenant and table, and never for the feed's own parks."""
    from projections import feed
    from projections.parked import Park

    parks = [
        Park("ledger", (1, 2, 3), "acme", "t-1", 7, None, ValueError("bad amount")),
        Park("ledger", (1, 2, 4), "acme", "t-1", 8, 3, None),
        Park("feed", (1, 2, 5), "acme", "t-2", 1, None, ValueError("x")),
    ]
    rows = feed.parked_rows(parks)
    assert [(r["tenant"], r["kind"], r["table_id"], r["version"]) for r in rows] == [
        ("acme", "parked", "t-1", 7),
        ("acme", "parked", "t-1", 8),
    ]
    assert rows[0]["body"] == {"model": "ledger", "error_class": "ValueError", "error": "bad amount"}
    assert rows[1]["body"]["error_class"] == "parked_behind"
    assert all("position" not in r["body"] for r in rows)


def test_a_parked_event_is_announced_in_its_tenants_feed_and_the_batch_notifies(
    private_db: tuple[Any, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given the ledger cannot store one hand's entries (amounts no bigint holds) → when the
    projector runs → then the tenant's feed has a ``parked`` entry for that event (model, error),
    next to the settlements every other model applied, the seq still dense; and the projector's
    transaction told the tenant on ``kwx_feed`` (its name the payload, no other tenant's)."""
    import msgspec

    from domain.events import convert
    from projections import ledger
    from projections.model import HandSettled

    store, url = private_db
    projector = Projector(store.pool, store, engine)
    projector.catch_up()
    tenant, poison = "feedpark" + uuid.uuid4().hex[:6], _id()
    original = ledger.rows

    def rows(fact: Any) -> list[Any]:
        out = original(fact)
        if isinstance(fact, HandSettled) and fact.info.table_id == poison and fact.ordinal == 1:
            return [msgspec.structs.replace(e, amount=e.amount * 10**30) for e in out]
        return out

    monkeypatch.setattr(ledger, "rows", rows)
    events = [convert(e) for e in simulated(9101, 2)]
    with psycopg.connect(url, autocommit=True) as listener:
        listener.execute("LISTEN kwx_feed")
        store.append(tenant, poison, 0, events)
        projector.catch_up()
        told = {n.payload for n in listener.notifies(timeout=2, stop_after=1)}
    assert told == {tenant}
    with psycopg.connect(url) as conn:
        feed_rows = conn.execute(
            "SELECT seq, kind, table_id, version, body FROM proj_feed WHERE tenant = %s ORDER BY seq",
            (tenant,),
        ).fetchall()
        (parked_version,) = conn.execute(
            "SELECT min(version) FROM projection_parked WHERE tenant = %s AND model = 'ledger'", (tenant,)
        ).fetchone() or (None,)
    assert parked_version is not None
    assert [r[0] for r in feed_rows] == list(range(1, len(feed_rows) + 1))
    parked = [r for r in feed_rows if r[1] == "parked"]
    assert parked and parked[0][2] == poison and parked[0][3] == parked_version
    assert parked[0][4]["model"] == "ledger" and parked[0][4]["error_class"] == "NumericValueOutOfRange"
    assert any(r[1] == "settlement" for r in feed_rows)


def test_one_listener_wakes_a_tenants_feeds_and_only_theirs(database_url: str) -> None:
    """The process's :class:`Hub`: one LISTEN connection; a NOTIFY for a tenant wakes that tenant's
    subscribers, not another tenant's."""
    import asyncio

    from services.feed_hub import Hub
    from tests.service.serving import wait_for

    hub = Hub(database_url, 4)
    hub.acquire()
    try:
        wait_for(lambda: hub.listening, 20, "the feed's listener did not LISTEN")

        async def scenario() -> tuple[bool, bool]:
            mine, theirs = hub.subscribe("feed-a"), hub.subscribe("feed-b")
            with psycopg.connect(database_url, autocommit=True) as conn:
                conn.execute("SELECT pg_notify('kwx_feed', 'feed-a')")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(mine[1].wait(), 10)
            await asyncio.sleep(0.2)
            hub.unsubscribe("feed-a", mine)
            hub.unsubscribe("feed-b", theirs)
            return mine[1].is_set(), theirs[1].is_set()

        assert asyncio.run(scenario()) == (True, False)
    finally:
        hub.release()
        hub.stop()


def test_beyond_the_bound_of_open_feeds_a_feed_is_a_503(client: Any, platform: Headers, app: Any) -> None:
    from services.feed_hub import Hub

    hub = getattr(app.state, "feed_hub", None)
    if hub is None:
        assert client.get("/v1/feed?format=ndjson", headers=platform).status_code == 200
        hub = app.state.feed_hub
    assert isinstance(hub, Hub) and hub.open == 0  # every earlier feed gave its place back
    hub.open = hub.limit
    try:
        r = client.get("/v1/feed", headers=platform)
        assert r.status_code == 503 and r.json()["error"] == "unavailable"
        assert "KWX_FEED_MAX" in r.json()["message"]
    finally:
        hub.open = 0
    assert client.get("/v1/feed?format=ndjson", headers=platform).status_code == 200
    assert hub.open == 0


# ---------------------------------------------------------------------------------------- real HTTP
def _sse_events(response: Any, want: int) -> list[dict[str, Any]]:
    """Read ``want`` events off an open SSE response: [{id, event, data}, …] (comments skipped)."""
    out: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    for line in response.iter_lines():
        if line == "":
            if "data" in current:
                out.append(current)
                if len(out) == want:
                    return out
            current = {}
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            current[name] = value[1:] if value.startswith(" ") else value
    return out


def _open_feeds(http: Any) -> float:
    lines = [x for x in http.get("/metrics").text.splitlines() if x.startswith("kwx_feeds_open ")]
    assert len(lines) == 1, lines
    return float(lines[0].split()[-1])


@pytest.mark.skipif(not Path("/proc").exists(), reason="kwx serve subprocess helpers read /proc")
def test_sse_and_long_poll_over_real_http_resume_with_nothing_skipped_or_repeated(
    private_db: tuple[Any, str],
) -> None:
    import httpx

    from services.store.keys import KeyStore
    from tests.service.serving import serving

    store, url = private_db
    keys = KeyStore(store.pool)
    mine = {"Authorization": f"Bearer {keys.create('feedlive', 'platform')}"}
    theirs = {"Authorization": f"Bearer {keys.create('feedother', 'platform')}"}
    folder = Path(tempfile.mkdtemp(prefix="kwx-feed-"))
    with (
        serving(
            url,
            folder / "serve.out",
            workers=1,
            KWX_PROJECTOR="on",
            KWX_FEED_HEARTBEAT="1",
            KWX_READ_CONCURRENCY="1",
        ) as (_, base, _),
        httpx.Client(base_url=base, timeout=30) as http,
    ):

        def put(headers: Headers, events: list[dict[str, Any]]) -> None:
            r = http.post(f"/v1/tables/{_id()}/events", json={"expected_version": 0, "events": events},
                          headers=headers)  # fmt: skip
            assert r.status_code == 201, r.text

        # a stream opened before anything is there; entries come as they are projected
        with http.stream("GET", "/v1/feed", headers=mine, timeout=60) as sse:
            assert sse.status_code == 200 and sse.headers["content-type"].startswith("text/event-stream")
            assert "content-encoding" not in sse.headers  # (httpx takes gzip: a stream is never zipped)
            assert _open_feeds(http) == 1  # counted while open (kwx_feeds_open, the gauge)
            # one read at a time in this process (KWX_READ_CONCURRENCY=1): the open stream holds no
            # turn, so other reads answer (a held turn: 503 after KWX_READ_WAIT, 2 s)
            assert http.get("/v1/tables", headers=mine).status_code == 200
            put(mine, simulated(21, 2))
            put(theirs, simulated(22, 2))
            first = _sse_events(sse, 1)  # (closing its line iterator hangs up: a disconnect)
        # ... the client left after one; more come meanwhile
        put(mine, _wrong_report())
        events, _ = violating(6, 2)
        put(mine, events)

        def everything() -> list[dict[str, Any]]:
            r = http.get("/v1/feed?format=ndjson&limit=1000", headers=mine)
            return [json.loads(x) for x in r.text.splitlines()]

        from tests.service.serving import projector_behind, wait_for

        wait_for(lambda: projector_behind(url) == 0, 60, "the projector child did not project the appends")
        total = everything()
        assert {"settlement", "ruling", "discrepancy"} <= {e["kind"] for e in total}
        assert [e["seq"] for e in total] == list(range(1, len(total) + 1))
        # resume with Last-Event-ID: the rest, once, in order
        with http.stream("GET", "/v1/feed", headers={**mine, "Last-Event-ID": first[0]["id"]},
                         timeout=60) as sse:  # fmt: skip
            rest = _sse_events(sse, len(total) - 1)
        got = first + rest
        assert [int(e["id"]) for e in got] == [e["seq"] for e in total]
        assert [json.loads(e["data"]) for e in got] == total
        assert [e["event"] for e in got] == [e["kind"] for e in total]
        # heartbeats: a comment while idle (KWX_FEED_HEARTBEAT=1 here)
        with http.stream("GET", "/v1/feed", headers={**mine, "Last-Event-ID": str(total[-1]["seq"])},
                         timeout=30) as sse:  # fmt: skip
            assert next(line for line in sse.iter_lines() if line).startswith(":")
        # the other tenant's feed holds its own table only, numbered from 1
        other = [json.loads(x) for x in http.get("/v1/feed?format=ndjson", headers=theirs).text.splitlines()]
        assert other and [e["seq"] for e in other] == list(range(1, len(other) + 1))
        assert not {e["table_id"] for e in other} & {e["table_id"] for e in total}

        # NDJSON long-poll: waits for the next entry, then answers it
        answer: dict[str, Any] = {}

        def poll() -> None:
            answer["r"] = http.get(f"/v1/feed?format=ndjson&after={total[-1]['seq']}&wait=45", headers=mine)

        waiter = threading.Thread(target=poll)
        waiter.start()
        put(mine, simulated(23, 1))
        waiter.join(60)
        lines = [json.loads(x) for x in answer["r"].text.splitlines()]
        assert lines and lines[0]["seq"] == total[-1]["seq"] + 1
        assert [e["seq"] for e in lines] == list(
            range(total[-1]["seq"] + 1, total[-1]["seq"] + 1 + len(lines))
        )

        # every stream and poll gave its place back (the open-feeds gauge, summed over processes)
        wait_for(lambda: _open_feeds(http) == 0, 30, "kwx_feeds_open did not come back to 0")
    with psycopg.connect(url) as conn:  # the rows are the tenant's own: none of the other's
        row = conn.execute("SELECT count(*) FROM proj_feed WHERE tenant = 'feedlive'").fetchone()
        assert row is not None and row[0] >= len(total)
