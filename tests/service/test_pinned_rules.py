"""A table pins its fully resolved rules when it is opened (RULES.md): the store keeps, hashes and
returns the pinned ``table_opened``, so a replay years later gives the same rulings and
settlements even after a preset's definition changes."""

from __future__ import annotations

import uuid
from typing import Any

import msgspec
import pytest

from domain import engine, rules
from domain.events import TableOpened, canonical_bytes, convert
from domain.events import decode as decode_event
from services.store import chain
from services.store.events import EventStore
from tests.service.streams import legal_table

pytestmark = pytest.mark.db


def new_table() -> str:
    return "pin-" + uuid.uuid4().hex[:12]


def stored_events(store: EventStore, table: str) -> list[Any]:
    return [decode_event(s.body) for s in store.read_table("acme", table, 0, 10_000)]


@pytest.fixture()
def store(container: Any) -> EventStore:
    return container.store  # type: ignore[no-any-return]


def test_the_stored_table_opened_carries_every_resolved_option(store: EventStore) -> None:
    wire = legal_table(31, hands=2)
    assert wire[0]["rules"] == {"preset": "default"}  # the client sends a preset name only
    table = new_table()
    store.append("acme", table, 0, [convert(e) for e in wire])
    first = stored_events(store, table)[0]
    assert isinstance(first, TableOpened)
    assert set(first.rules) == {"preset", *rules.OPTION_NAMES}
    assert first.rules == rules.to_dict(rules.resolve({"preset": "default"}))
    assert first.rules["preset"] == "default"
    # the hash chain is over the pinned bytes: the stored head verifies from the pinned events
    h = chain.genesis(table)
    for event in stored_events(store, table):
        h = chain.link_event(h, event)
    head = store.head("acme", table)
    assert head is not None and head.last_hash == h


def test_resending_the_unpinned_batch_is_idempotent(store: EventStore) -> None:
    wire = legal_table(32, hands=2)
    table = new_table()
    first = store.append("acme", table, 0, [convert(e) for e in wire])
    again = store.append("acme", table, 0, [convert(e) for e in wire])
    store.cache.clear()  # through the locked path too
    unchecked = store.append("acme", table, None, [convert(e) for e in wire[:5]])
    assert again.replayed and again.body() == first.body()
    assert unchecked.replayed and (unchecked.first_version, unchecked.version) == (1, 5)
    assert len(store.read_table("acme", table, 0, 10_000)) == len(wire)


def test_a_fold_of_the_stored_events_equals_the_fold_of_the_original(store: EventStore) -> None:
    wire = legal_table(33, hands=3)
    table = new_table()
    store.append("acme", table, 0, [convert(e) for e in wire])
    original = engine.fold([convert(e) for e in wire])
    replayed = engine.fold(stored_events(store, table))
    assert replayed.settlements and replayed.settlements == original.settlements
    assert (replayed.rules, replayed.coins, replayed.version) == (
        original.rules,
        original.coins,
        original.version,
    )
    # only the rules as written differ: the stored event spells out what the preset meant
    assert msgspec.structs.replace(replayed, rules_spec={}) == msgspec.structs.replace(
        original, rules_spec={}
    )
    # stored bodies are the pinned events, byte for byte
    pinned = [engine.pin_rules(e) if isinstance(e, TableOpened) else e for e in (convert(w) for w in wire)]
    assert [canonical_bytes(e) for e in stored_events(store, table)] == [canonical_bytes(e) for e in pinned]


def test_a_replay_after_a_preset_changes_gives_the_same_settlement(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire = legal_table(34, hands=3)
    table = new_table()
    store.append("acme", table, 0, [convert(e) for e in wire])
    before = engine.fold(stored_events(store, table))
    assert before.settlements
    monkeypatch.setitem(rules.PRESETS, "default", {"service_fee": 3, "cap": None})
    after = engine.fold(stored_events(store, table))
    assert after.settlements == before.settlements and after.coins == before.coins
    assert after.house == before.house == 0
    # the point of pinning: the unpinned original now folds differently (a house fee every hand)
    changed = engine.fold([convert(e) for e in wire])
    assert changed.house > 0 and changed.coins != before.coins


def test_rules_that_do_not_resolve_are_a_422_naming_the_field(
    client: Any, platform: dict[str, str], table_id: str
) -> None:
    wire = legal_table(35, hands=1)
    wire[0] = dict(wire[0], rules={"preset": "default", "cap": "lots"})
    answer = client.post(f"/v1/tables/{table_id}/events", json={"events": wire[:3]}, headers=platform)
    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert (body["error"], body["field"], body["index"]) == ("bad_rules", "rules.cap", 0)
    assert body["event_id"] == wire[0]["id"] and body["allowed"] == {"min": 1, "max": 2**20, "null": True}


def test_get_events_returns_the_pinned_table_opened(
    client: Any, platform: dict[str, str], table_id: str
) -> None:
    wire = legal_table(36, hands=1)
    answer = client.post(f"/v1/tables/{table_id}/events", json={"events": wire}, headers=platform)
    assert answer.status_code == 201, answer.text
    page = client.get(f"/v1/tables/{table_id}/events?limit=3", headers=platform).json()
    opened = page["events"][0]["event"]
    assert opened["rules"] == rules.to_dict(rules.resolve({"preset": "default"}))
    assert {k: v for k, v in opened.items() if k != "rules"} == {
        k: v for k, v in msgspec.to_builtins(convert(wire[0])).items() if k != "rules"
    }


def test_xiangyang_now_pins_first_declarer_and_tables_opened_before_keep_the_dealer(
    store: EventStore,
) -> None:
    """Issue 15's rule update: ``xiangyang`` sets ``exhausted_dealer: first_declarer`` (亮倒荒庄，
    先亮者坐庄). A table opened with the preset now pins it, and its exhausted hand with a declarer
    passes the deal to the first declarer; a table opened before the change pinned ``stay``, and
    its stored events still keep the dealer."""
    from tests.paths import GOLDEN

    lines = (GOLDEN / "exhausted-first-declarer.jsonl").read_text(encoding="utf-8").splitlines()
    wire = [msgspec.json.decode(line) for line in lines if line.strip()]
    wire[0] = dict(wire[0], rules={"preset": "xiangyang"})  # the preset alone, as a platform sends it
    assert rules.resolve({"preset": "xiangyang"}).exhausted_dealer == "first_declarer"

    now = new_table()
    store.append("acme", now, 0, [convert(e) for e in wire])
    pinned = stored_events(store, now)
    assert pinned[0].rules["exhausted_dealer"] == "first_declarer"
    (hand,) = engine.fold(pinned).settlements
    assert (hand.end, hand.dealer, hand.next_dealer) == ("exhausted", 0, 1)  # seat 1 declared first

    # stored before the change: the pinned form of that day, exhausted_dealer "stay"
    before = dict(wire[0], rules={**pinned[0].rules, "exhausted_dealer": "stay"})
    earlier = new_table()
    store.append("acme", earlier, 0, [convert(e) for e in [before, *wire[1:]]])
    kept = stored_events(store, earlier)
    assert kept[0].rules["exhausted_dealer"] == "stay"
    (hand,) = engine.fold(kept).settlements
    assert (hand.end, hand.dealer, hand.next_dealer) == ("exhausted", 0, 0)
