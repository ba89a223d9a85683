"""A hand's reads from the hand's snapshot (projections/hand_reads.py) against a real PostgreSQL:
given a table (conformance and golden streams, simulated multi-hand tables, a report made hands
later, a recorded violation) → when every hand's settlement and audit is read after the projector
wrote the snapshots → then the settlement is byte for byte the whole-table fold's (the answer
with the table's snapshot rows set aside), the hand's audit is the table's audit restricted to that hand, and
the fold really started at the hand's snapshot and stopped before the next hand."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from domain import engine
from domain.events import decode
from projections.projector import Projector
from tests.projections.helpers import append, simulated
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
    """The table's snapshot rows set aside (the app's background projector may write them at any
    time: first every one of them is written, so none comes later) and put back afterwards."""
    projector.catch_up()
    with container.pool.connection() as conn:
        rows = conn.execute(
            "SELECT tenant, table_id, version, hand, state FROM proj_table_snapshots WHERE table_id = %s",
            (table_id,),
        ).fetchall()
        conn.execute("DELETE FROM proj_table_snapshots WHERE table_id = %s", (table_id,))
    try:
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
    with _without_snapshots(projector, container, table_id):
        before = hand_events(container, tenant, table_id, 4, len(events))
        assert (before.start, before.events[0][0], before.last) == (0, 1, len(events))
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
