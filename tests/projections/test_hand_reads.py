"""A hand's reads from the hand's snapshot (projections/hand_reads.py) against a real PostgreSQL:
given a table (conformance and golden streams, simulated multi-hand tables, a report made hands
later, a recorded violation) → when every hand's settlement and audit is read after the projector
wrote the snapshots → then the settlement is byte for byte the whole-table fold's (the answer
with the table's snapshot rows set aside), the hand's audit is the table's audit restricted to that hand, and
the fold really started at the hand's snapshot and stopped before the next hand."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest

from domain import engine
from domain.events import decode
from projections.projector import Projector
from tests.projections.helpers import append, reading_as_judge, simulated
from tests.service.streams import expectation, load, stream_files

pytestmark = pytest.mark.db

_PER_HAND = ("rulings", "lou_hu", "kong_chains", "settlements", "walls")


@pytest.fixture()
def support(make_key: Any, tenant: str) -> dict[str, str]:
    return make_key(tenant, "support")  # type: ignore[no-any-return]


@pytest.fixture()
def projector(container: Any) -> Projector:
    return Projector(container.pool, container.store, engine)


def _hands(events: list[dict[str, Any]]) -> list[int]:
    return [e["hand"] for e in events if e["type"] == "hand_started"]


def _restricted(audit: dict[str, Any], hand: int) -> dict[str, Any]:
    """The table's audit restricted to one hand (what the hand's audit must be, chain aside)."""
    out = {k: v for k, v in audit.items() if k != "hash_chain"}
    for key in _PER_HAND:
        out[key] = [x for x in audit[key] if x["hand"] == hand]
    return {"hand": hand, **out}


@contextmanager
def _without_snapshots(projector: Projector, container: Any, table_id: str) -> Iterator[None]:
    """The table's snapshots set aside and put back afterwards: its rows in ``proj_table_snapshots``
    (the app's background projector may write them at any time: first every one of them is
    written, so none comes later) and the states in its ``hand_started`` events' stored facts,
    which readers take only from events of their own judge (:func:`reading_as_judge`: no
    event has judge −1)."""
    projector.catch_up()
    with container.pool.connection() as conn:
        rows = conn.execute(
            "SELECT tenant, table_id, version, hand, state FROM proj_table_snapshots WHERE table_id = %s",
            (table_id,),
        ).fetchall()
        conn.execute("DELETE FROM proj_table_snapshots WHERE table_id = %s", (table_id,))
    try:
        with reading_as_judge():
            yield
    finally:
        with container.pool.connection() as conn:
            conn.cursor().executemany(
                "INSERT INTO proj_table_snapshots (tenant, table_id, version, hand, state) "
                "VALUES (%s, %s, %s, %s, %s)",
                rows,
            )


def _check_table(
    client: Any, headers: dict[str, str], support: dict[str, str], projector: Projector, container: Any,
    events: list[dict[str, Any]], langs: tuple[str, ...] = ("en",),
) -> int:  # fmt: skip
    """Every hand's settlement and audit without and with the snapshots; the hands checked."""
    table_id = "hr-" + uuid.uuid4().hex[:12]
    append(client, headers, table_id, events)
    hands = _hands(events)
    url = f"/v1/tables/{table_id}"
    with _without_snapshots(projector, container, table_id):  # every read folds from event 1
        whole = {n: client.get(f"{url}/hands/{n}/settlement", headers=support) for n in hands}
        audits = {lang: client.get(f"{url}/audit", headers={**support, "Accept-Language": lang}).json()
                  for lang in langs}  # fmt: skip
        for n in hands:  # the hand's audit too (to the table's end), and it is the same
            slow = client.get(f"{url}/hands/{n}/audit", headers={**support, "Accept-Language": langs[0]})
            body = slow.json()
            body.pop("hash_chain")
            assert body == _restricted(audits[langs[0]], n), n
    for n in hands:  # the snapshots back: the reads start from them
        fast = client.get(f"{url}/hands/{n}/settlement", headers=support)
        assert (fast.status_code, fast.content) == (whole[n].status_code, whole[n].content), n
        for lang in langs:
            got = client.get(f"{url}/hands/{n}/audit", headers={**support, "Accept-Language": lang})
            assert got.status_code == 200, got.text
            body = got.json()
            chain = body.pop("hash_chain")
            assert body == _restricted(audits[lang], n), (n, lang)
            assert chain["ok"] is True and chain["first_broken"] is None and chain["events_checked"] >= 1
    return len(hands)


def _stored_streams_with_hands() -> list[Path]:
    """The conformance and golden streams the store accepts (no expected error) that play a hand."""
    return [p for p in stream_files() if "error" not in expectation(p) and _hands(load(p))]


@pytest.mark.parametrize("path", _stored_streams_with_hands(), ids=lambda p: Path(p).stem)
def test_conformance_and_golden_streams_every_hand(
    client: Any,
    platform: dict[str, str],
    support: dict[str, str],
    projector: Projector,
    container: Any,
    path: Path,
) -> None:
    events = load(path)
    assert _check_table(client, platform, support, projector, container, events, langs=("en", "zh")) >= 1


@pytest.mark.parametrize("seed", [11, 12, 13, 14])
def test_simulated_multi_hand_tables_every_hand(
    client: Any,
    platform: dict[str, str],
    support: dict[str, str],
    projector: Projector,
    container: Any,
    seed: int,
) -> None:
    assert _check_table(client, platform, support, projector, container, simulated(seed, 6)) == 6


def test_a_report_made_hands_later_is_in_its_hands_audit(
    client: Any, platform: dict[str, str], support: dict[str, str], projector: Projector
) -> None:
    for seed in range(300, 500):
        events = simulated(seed, 4)
        reports = [i for i, e in enumerate(events) if e["type"] == "settlement_reported" and e["hand"] == 1]
        if reports:
            break
    report = events.pop(reports[0])
    third = next(i for i, e in enumerate(events) if e["type"] == "hand_started" and e["hand"] == 3)
    events.insert(third + 3, report)  # reported for hand 1 during hand 3
    table_id = "hr-" + uuid.uuid4().hex[:12]
    append(client, platform, table_id, events)
    projector.catch_up()
    audit = client.get(f"/v1/tables/{table_id}/audit", headers=support).json()
    one = client.get(f"/v1/tables/{table_id}/hands/1/audit", headers=support).json()
    assert [s["reported_event"] for s in one["settlements"]] == [third + 4]
    one.pop("hash_chain")
    assert one == _restricted(audit, 1)


def test_the_fold_starts_at_the_hands_snapshot_and_stops_before_the_next(
    client: Any, container: Any, platform: dict[str, str], projector: Projector, tenant: str
) -> None:
    from services.api.hand_reads import hand_events

    events = simulated(21, 8)
    table_id = "hr-" + uuid.uuid4().hex[:12]
    append(client, platform, table_id, events)
    starts = [i for i, e in enumerate(events, start=1) if e["type"] == "hand_started"]
    with _without_snapshots(projector, container, table_id):  # from event 1, to the hand's end
        before = hand_events(container, tenant, table_id, 4, len(events))
        got = (before.start, before.events[0][0], before.first, before.last)
        assert got == (0, 1, starts[3], starts[4] - 1)
        assert before.events[-1][0] == starts[4] - 1  # hand 5's hand_started is not read into it
    stored = [decode(r.body) for r in container.store.read_table(tenant, table_id, 0, len(events))]
    for n, first in enumerate(starts, start=1):
        got = hand_events(container, tenant, table_id, n, len(events))
        last = starts[n] - 1 if n < len(starts) else len(events)
        assert (got.start, got.first, got.events[0][0], got.last) == (first, first, first, last)
        fold = container.engine
        whole = fold.initial()
        for e in stored[:last]:  # the stored events (table_opened with its rules pinned) from event 1
            whole = fold.replay(whole, e)
        assert fold.encode_state(got.final(fold)) == fold.encode_state(whole)
    assert hand_events(container, tenant, table_id, len(starts) + 1, len(events)).first is None


def test_a_hand_that_never_started_and_the_roles(
    client: Any, platform: dict[str, str], support: dict[str, str], make_key: Any
) -> None:
    table_id = "hr-" + uuid.uuid4().hex[:12]
    append(client, platform, table_id, simulated(3, 2))
    url = f"/v1/tables/{table_id}/hands"
    missing = client.get(f"{url}/3/audit", headers=support)
    assert missing.status_code == 404 and "hand 3" in missing.json()["message"]
    assert client.get(f"{url}/1/audit", headers=platform).status_code == 403  # support only
    stranger = make_key("other-" + uuid.uuid4().hex[:6], "support")
    other = client.get(f"{url}/1/audit", headers=stranger)
    nowhere = client.get(f"/v1/tables/hr-none-{uuid.uuid4().hex[:6]}/hands/1/audit", headers=stranger)
    assert other.status_code == nowhere.status_code == 404
    assert other.json()["error"] == nowhere.json()["error"]
    for bad in ("0", "x", "1.5"):
        for read in ("audit", "settlement"):
            r = client.get(f"{url}/{bad}/{read}", headers=support)
            assert r.status_code == 422 and r.json()["field"] == "path.hand", (bad, read)
    for far in (str(2**31 - 1), str(2**40), "9" * 30):  # no such hand: 404, as for any other
        for read in ("audit", "settlement"):
            assert client.get(f"{url}/{far}/{read}", headers=support).status_code == 404, (far, read)


@pytest.mark.parametrize("seed", [1, 2])
def test_recorded_violations_every_hand(
    client: Any,
    platform: dict[str, str],
    support: dict[str, str],
    projector: Projector,
    container: Any,
    seed: int,
) -> None:
    from tests.projections.helpers import violating

    events, codes = violating(seed, 4)
    assert codes  # the table does record violations
    assert _check_table(client, platform, support, projector, container, events, langs=("en", "zh")) >= 2


def test_a_changed_event_breaks_its_hands_chain_only(
    client: Any, platform: dict[str, str], support: dict[str, str], projector: Projector, database_url: str
) -> None:
    import psycopg

    events = simulated(31, 3)
    table_id = "hr-" + uuid.uuid4().hex[:12]
    append(client, platform, table_id, events)
    projector.catch_up()
    starts = [i for i, e in enumerate(events, start=1) if e["type"] == "hand_started"]
    changed = starts[1] + 3  # an event of hand 2
    with psycopg.connect(database_url) as owner:
        owner.execute("ALTER TABLE events DISABLE TRIGGER events_immutable")
        owner.execute(
            "UPDATE events SET body = jsonb_set(body, '{at}', '\"2020-01-01T00:00:00Z\"') "
            "WHERE table_id = %s AND version = %s",
            (table_id, changed),
        )
        owner.execute("ALTER TABLE events ENABLE TRIGGER events_immutable")
    url = f"/v1/tables/{table_id}"
    chains = [client.get(f"{url}/hands/{n}/audit", headers=support).json()["hash_chain"] for n in (1, 2, 3)]
    assert [c["ok"] for c in chains] == [True, False, True]
    assert (
        chains[1]["first_broken"]["version"] == changed
        and "hash mismatch" in chains[1]["first_broken"]["reason"]
    )
    assert chains[1]["events_checked"] == changed - starts[1] + 1  # up to the changed one, as kwx verify
    assert chains[0]["events_checked"] == starts[1] - starts[0]
    whole = client.get(f"{url}/audit", headers=support).json()["hash_chain"]
    assert whole["ok"] is False and whole["first_broken"]["version"] == changed


def _with_an_aborted_hand() -> tuple[list[dict[str, Any]], int]:
    """A simulated table with a hand voided by ``hand_aborted`` that is not its last hand, and the
    number of that hand."""
    for seed in range(200):
        events = simulated(seed, 5)
        aborted = [i for i, e in enumerate(events) if e["type"] == "hand_aborted"]
        if not aborted:
            continue
        hand = max(e["hand"] for e in events[: aborted[0]] if e["type"] == "hand_started")
        if hand < len(_hands(events)):
            return events, hand
    raise AssertionError("no simulated table with an aborted hand")


def test_the_re_deal_after_hand_aborted_the_timeline_settlement_and_audit_hold_the_same_events(
    client: Any, container: Any, platform: dict[str, str], support: dict[str, str], projector: Projector,
    tenant: str,
) -> None:  # fmt: skip
    """Given a table whose hand n is voided (``hand_aborted``) and dealt again by the same dealer →
    when hand n's and hand n+1's timeline, settlement, audit, export and report are read, with the
    snapshots and without them (from event 1) → then every one of them holds the same events: hand n
    from its hand_started to the event before hand n+1's, hand n+1 from there on; and a re-deal
    under the same number n is refused (hand numbers are consecutive)."""
    from services.api.hand_reads import hand_events

    events, n = _with_an_aborted_hand()
    table_id = "hr-" + uuid.uuid4().hex[:12]
    append(client, platform, table_id, events)
    starts = [i for i, e in enumerate(events, start=1) if e["type"] == "hand_started"]
    aborted_at = next(i for i, e in enumerate(events, start=1) if e["type"] == "hand_aborted")
    spans = {n: (starts[n - 1], starts[n] - 1), n + 1: (starts[n], starts[n + 1] - 1 if n + 1 < len(starts)
                                                       else len(events))}  # fmt: skip
    assert spans[n][0] < aborted_at <= spans[n][1]
    assert events[starts[n] - 1]["dealer"] == events[starts[n - 1] - 1]["dealer"]  # the same dealer again
    url = f"/v1/tables/{table_id}/hands"

    def read_all() -> dict[int, dict[str, Any]]:
        out: dict[int, dict[str, Any]] = {}
        for h, (first, last) in spans.items():
            got = hand_events(container, tenant, table_id, h, len(events))
            timeline = client.get(f"{url}/{h}/timeline?lang=en", headers=support).json()
            settlement = client.get(f"{url}/{h}/settlement", headers=support).json()["settlement"]
            audit = client.get(f"{url}/{h}/audit", headers=support).json()
            export = client.get(f"{url}/{h}/export", headers=support).content.splitlines()
            report = client.get(f"{url}/{h}/report", headers=support).json()
            head = json.loads(export[0])
            assert (got.first, got.last) == (first, last), h
            assert (timeline["first_event"], timeline["last_event"]) == (first, last), h
            assert audit["hash_chain"]["events_checked"] == last - first + 1, h
            assert [w["start_event"] for w in audit["walls"]] == [first], h
            assert (head["first_version"], head["last_version"]) == (first, last), h
            assert [e["version"] for e in report["events"]] == list(range(first, last + 1)), h
            moved = [t["event"] for t in settlement["transfers"]] + [w["event"] for w in settlement["wins"]]
            assert all(first <= v <= last for v in moved), h
            out[h] = {"timeline": timeline, "settlement": settlement, "audit": audit, "report": report,
                      "start": got.start}  # fmt: skip
        return out

    with _without_snapshots(projector, container, table_id):
        cold = read_all()
    warm = read_all()
    for h in spans:
        assert (cold[h]["start"], warm[h]["start"]) == (0, spans[h][0])  # from event 1 / its snapshot
        assert warm[h]["timeline"]["folded_from"] == spans[h][0] and cold[h]["timeline"]["folded_from"] == 0
        for read in ("settlement", "audit", "report"):
            assert warm[h][read] == cold[h][read], (h, read)
    voided, again = warm[n], warm[n + 1]
    assert voided["timeline"]["end"] == voided["settlement"]["end"] == "aborted"
    assert voided["settlement"]["transfers"] == [] and voided["settlement"]["net"] == [0, 0, 0]
    assert "hand_aborted" in [x["kind"] for x in voided["timeline"]["lines"]]
    assert again["timeline"]["lines"][0]["seat"] == voided["timeline"]["lines"][0]["seat"]  # the dealer

    redeal = "hr-" + uuid.uuid4().hex[:12]
    append(client, platform, redeal, events[: starts[n] - 1])
    same_number = dict(events[starts[n] - 1], hand=n)
    r = client.post(f"/v1/tables/{redeal}/events", headers=platform,
                    json={"expected_version": starts[n] - 1, "events": [same_number]})  # fmt: skip
    assert r.status_code == 422 and r.json()["rule"] == "sequence", r.text


def _report_tables() -> list[tuple[str, list[dict[str, Any]]]]:
    """Tables for the dispute report: simulated multi-hand ones (an aborted hand among them), a
    violation-recording one, and one with a report made two hands after its hand."""
    from tests.projections.helpers import violating

    tables = [("simulated-21", simulated(21, 6)), ("aborted", _with_an_aborted_hand()[0]),
              ("violations", violating(2, 4)[0])]  # fmt: skip
    for seed in range(300, 500):
        events = simulated(seed, 4)
        reports = [i for i, e in enumerate(events) if e["type"] == "settlement_reported" and e["hand"] == 1]
        if reports:
            report = events.pop(reports[0])
            third = next(i for i, e in enumerate(events) if e["type"] == "hand_started" and e["hand"] == 3)
            events.insert(third + 3, report)  # reported for hand 1 during hand 3
            tables.append(("late-report", events))
            break
    return tables


@pytest.mark.parametrize("name", [n for n, _ in _report_tables()])
def test_the_dispute_report_from_the_hands_snapshot_is_byte_for_byte_the_fold_from_event_one(
    client: Any, platform: dict[str, str], support: dict[str, str], projector: Projector, container: Any,
    name: str,
) -> None:  # fmt: skip
    """Given a table → when every hand's ``…/report`` (en and zh) is read with the table's snapshot
    rows set aside (the fold from event 1) and then with them (from the hand's snapshot) → then
    the answers are byte for byte the same, and its audit sections are the table's ``/audit``
    (the whole-table fold, projections/audit.py) restricted to the hand."""
    events = dict(_report_tables())[name]
    table_id = "hr-" + uuid.uuid4().hex[:12]
    append(client, platform, table_id, events)
    hands = _hands(events)
    url = f"/v1/tables/{table_id}"
    langs = ("en", "zh")

    def reports() -> dict[tuple[int, str], Any]:
        return {(n, lang): client.get(f"{url}/hands/{n}/report?lang={lang}", headers=support)
                for n in hands for lang in langs}  # fmt: skip

    with _without_snapshots(projector, container, table_id):
        cold = reports()
    warm = reports()
    audits = {lang: client.get(f"{url}/audit?lang={lang}", headers=support).json() for lang in langs}
    late = 0
    for (n, lang), got in warm.items():
        assert got.status_code == 200, got.text
        assert (got.status_code, got.content) == (cold[n, lang].status_code, cold[n, lang].content), (n, lang)
        body, whole = got.json(), _restricted(audits[lang], n)
        for key in ("rulings", "lou_hu", "kong_chains"):
            assert body[key] == whole[key], (n, lang, key)
        assert body["wall"] == (whole["walls"][0] if whole["walls"] else None), (n, lang)
        checks = [{k: v for k, v in r.items() if k != "difference"} for r in body["reported"]]
        assert checks == whole["settlements"], (n, lang)
        late += sum(r["reported_event"] > body["chain"]["last_version"] for r in body["reported"])
    assert late or name != "late-report"  # the report made hands later is in its hand's report


def test_a_number_stored_twice_is_read_as_its_later_deal_from_event_one_as_from_its_snapshot() -> None:
    """Given stored events in which hand 2 is dealt twice (the engine refuses that now; an older one
    might not have) → when hand 2 is loaded from event 1 and from the later deal's snapshot → then
    both read the later deal as hand 2 and stop before hand 3."""
    import msgspec

    from domain.events import canonical_bytes, convert
    from projections.hand_reads import HandSpan, load

    events = simulated(1, 4)
    starts = [i for i, e in enumerate(events) if e["type"] == "hand_started"]
    twice = [*events[: starts[2]], dict(events[starts[1]], id="again"), *events[starts[1] + 1 : starts[2]],
             *events[starts[2]:]]  # fmt: skip
    rows = [msgspec.structs.replace(_Row(), version=v, body=canonical_bytes(convert(e)))
            for v, e in enumerate(twice, start=1)]  # fmt: skip
    again = starts[2] + 1  # the version of the second deal of hand 2
    next_hand = again + (starts[2] - starts[1])

    class Source:
        def read_table(self, tenant: str, table_id: str, after: int, limit: int) -> list[Any]:
            return [r for r in rows if r.version > after][:limit]

    whole = load(HandSpan(hand=2), Source(), engine, "t", "x", len(rows))
    state = engine.initial()
    for row in rows[:again]:
        state = engine.replay(state, decode(row.body))
    snap = HandSpan(hand=2, start=again, state=bytes(engine.encode_state(state)), end=next_hand - 1)
    warm = load(snap, Source(), engine, "t", "x", len(rows))
    assert (whole.start, warm.start) == (0, again)
    assert whole.first == warm.first == again
    assert whole.last == warm.last == next_hand - 1


class _Row(msgspec.Struct):
    version: int = 0
    body: bytes = b""
    ruling: bytes | None = None
