"""The one engine seam (issue 12): ``/state``, a settlement and ``/audit`` fold the stored events
the same way (``Engine.replay``), so they agree even when today's engine refuses an event that the
engine of the day accepted. Given a table appended under an engine that recorded bob's false hu
(as a ``violations: "record"`` table would) → when today's engine, which refuses it on this
``reject`` table, reads it → then all three answer the table after that hu."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from domain import engine as domain
from domain.events import Event
from services.bootstrap import Container
from services.engine_adapter import DomainEngine, Stepped, ruling_json
from services.store.events import EventStore
from tests.domain.engine_dsl import discard, hu, opened, started

pytestmark = pytest.mark.db

LD = ("123456789p 2345s F", "12378p 456s CCC 99s", "44p 55p 11s 22s FFF PP")  # test_engine_play.LD


class _ThenEngine(DomainEngine):
    """The engine a table was appended under: it recorded a rule it breaks instead of refusing it."""

    def step_batch(self, state: Any, events: Sequence[Event], keep_states: bool = False) -> Stepped:
        rulings: list[tuple[int, dict[str, Any]]] = []
        states = [state]
        for i, event in enumerate(events):
            ruling = domain.check(state, event)
            assert ruling is None or ruling.kind == "rule", ruling
            if ruling is not None:
                rulings.append((i, ruling_json(ruling)))
            state = domain.evolve(state, event, ruling)
            states.append(state)
        return Stepped(state, rulings, states=states if keep_states else None)


def test_state_settlement_and_audit_agree_when_todays_engine_refuses_a_stored_event(
    client: Any, container: Container, make_key: Callable[..., dict[str, str]], tenant: str, table_id: str
) -> None:
    events = [opened(), started(*LD), discard(0, "F"), hu([1], "F", 0)]
    state = domain.initial()
    for ev in events[:3]:
        state = domain.step(state, ev)[0]
    _, refusal, accepted = domain.step(state, events[3])
    assert not accepted and refusal is not None and refusal.code == "not_a_winning_hand"  # today: refused

    then = EventStore(container.pool, _ThenEngine())
    assert then.append(tenant, table_id, 0, events).version == 4
    support = make_key(tenant, "support")

    r = client.get(f"/v1/tables/{table_id}/state", headers=support)
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["at"], body["latest"], body["version"]) == (4, 4, 4)  # the refused hu is folded in

    r = client.get(f"/v1/tables/{table_id}/hands/1/settlement", headers=support)
    assert r.status_code == 200, r.text
    settlement = r.json()["settlement"]
    assert settlement["net"] == [0, 0, 0]
    assert settlement["wins"][0]["derivation"]["violation"]["code"] == "not_a_winning_hand"

    r = client.get(f"/v1/tables/{table_id}/audit", headers=support)
    assert r.status_code == 200, r.text
    audit = r.json()
    assert audit["version"] == body["version"] == 4
    assert [(x["event"], x["rule"]) for x in audit["rulings"]] == [(4, "not_a_winning_hand")]


def test_every_fold_of_stored_events_is_the_engines_replay() -> None:
    """Today's engine refuses the false hu; ``replay`` applies it with its ruling, as ``step`` does
    an accepted event, and leaves every accepted event as ``step`` leaves it."""
    events = [opened(), started(*LD), discard(0, "F"), hu([1], "F", 0)]
    stepped = replayed = domain.initial()
    for ev in events[:3]:
        stepped, replayed = domain.step(stepped, ev)[0], domain.replay(replayed, ev)
        assert domain.encode_state(replayed) == domain.encode_state(stepped)
    after = domain.replay(replayed, events[3])
    assert after.version == 4 and [(r.code, r.event) for r in after.rulings] == [("not_a_winning_hand", 4)]
    assert DomainEngine().replay(replayed, events[3]) == after
