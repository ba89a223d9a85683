"""Issue 11 §1 and §5 at the HTTP edge: rule options outside their ranges are 422 bad_rules naming
the option, nothing stored; a stored table with rules from before the ranges still folds and reads;
`at` is a real RFC 3339 time; settlement_reported amounts are refused where they can only be a
mistake; error messages list the valid values; `field` is one name per parameter."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from domain import money, rule_options, rules
from domain.events import MAX_BASE, convert
from tests.service.streams import legal_table

pytestmark = pytest.mark.db

HUGE = 10**30


def _post(client: Any, headers: dict[str, str], table_id: str, events: list[dict[str, Any]]) -> Any:
    return client.post(f"/v1/tables/{table_id}/events", json={"events": events}, headers=headers)


def _kong_table(spec: dict[str, Any], table_id: str) -> list[dict[str, Any]]:
    """A simulated table with a concealed kong (seed 0 of the simulator has one in hand 1)."""
    from domain.simulate import simulate_table

    events = simulate_table(random.Random(0), 3, spec, table_id)
    assert any(e["type"] == "kong" and e["kind"] == "concealed" for e in events)
    return events


def test_kong_points_of_10_30_are_422_bad_rules_naming_the_option_and_nothing_is_stored(
    client: Any, platform: dict[str, str], table_id: str
) -> None:
    spec = {"preset": "default", "kong_points": {"concealed": HUGE, "added": 1, "exposed": 2}}
    events = _kong_table({"preset": "default"}, table_id)
    events[0] = dict(events[0], rules=spec)
    answer = _post(client, platform, table_id, events)
    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert (body["error"], body["field"], body["index"], body["event_id"]) == (
        "bad_rules", "rules.kong_points.concealed", 0, events[0]["id"],
    )  # fmt: skip
    assert body["allowed"] == {"min": 0, "max": rule_options.MAX_KONG_POINTS}
    assert "0…100" in body["message"] and "超出范围" in body["message_zh"]
    assert client.get(f"/v1/tables/{table_id}/events", headers=platform).status_code == 404


@pytest.mark.parametrize(
    ("change", "field", "allowed"),
    [({"rules": {"kong_points": {"added": -1}}}, "rules.kong_points.added", {"min": 0, "max": 100}),
     ({"rules": {"cap_exempt": {"qi_dui": HUGE}}}, "rules.cap_exempt.qi_dui", {"min": 1, "max": 2**20}),
     ({"rules": {"cap_exempt": {"made_up": 16}}}, "rules.cap_exempt.made_up", None),
     ({"rules": {"capp": 16}}, "rules.capp", None),
     ({"rules": {"preset": "nowhere"}}, "rules.preset", list(rules.PRESETS)),
     ({"rules": {"lou_hu": "sometimes"}}, "rules.lou_hu", ["until_own_draw", "unless_bigger", "off"]),
     ({"rules": {"piao": "yes"}}, "rules.piao", [True, False]),
     ({"rules": 5}, "rules", None),
     ({"base": 0}, "base", {"min": 1, "max": MAX_BASE}),
     ({"base": MAX_BASE + 1}, "base", {"min": 1, "max": MAX_BASE})],
)  # fmt: skip
def test_every_bad_rule_is_bad_rules_with_its_field(
    client: Any, platform: dict[str, str], table_id: str, change: dict[str, Any], field: str, allowed: Any
) -> None:
    events = legal_table(41, 1)
    events[0] = dict(events[0], **change)
    body = _post(client, platform, table_id, events).json()
    assert (body["error"], body["field"], body["index"], body["event_id"]) == (
        "bad_rules", field, 0, events[0]["id"],
    ), body  # fmt: skip
    if allowed is not None:
        assert body["allowed"] == allowed
    elif field.startswith("rules.") and field != "rules.preset":
        assert isinstance(body["allowed"], list) and len(body["allowed"]) > 3  # the known names
    assert body["message_zh"].startswith("开桌规则有误")
    assert client.get(f"/v1/tables/{table_id}/events", headers=platform).status_code == 404


def test_the_largest_values_of_every_range_are_accepted(
    client: Any, platform: dict[str, str], table_id: str
) -> None:
    spec = {**largest_rules(), "liang_dao_min_wall": 44}
    opened = dict(legal_table(42, 1)[0], base=MAX_BASE, rules=spec)
    answer = _post(client, platform, table_id, [opened])
    assert answer.status_code == 201, answer.text


def largest_rules() -> dict[str, Any]:
    """Every numeric option at the top of its range, every money option on (the minimums at 1, so
    hands can be won at all)."""
    from domain.patterns import PATTERN_ORDER

    top = rule_options.MAX_CAP
    return {
        "preset": "default", "cap": top, "cap_exempt": dict.fromkeys(PATTERN_ORDER, top),
        "shou_zhua_yi_fan": 64, "kong_points": dict.fromkeys(rules.KONG_KINDS, rule_options.MAX_KONG_POINTS),
        "kong_chain_cap": top, "service_fee": 1000, "min_multiplier_discard": 1,
        "min_multiplier_self_draw": 1, "piao": True, "maima": True, "shu_kan": True, "shang_lou": True,
        "pin_dao": "full", "kong_chain_kai_hua": "doubling",
    }  # fmt: skip


# ------------------------------------------------------------------ a table stored before the ranges
@pytest.fixture(scope="module")
def before(private_db: tuple[Any, str]) -> Iterator[Any]:
    """A service on a database of its own (no projector: it must never see the old table)."""
    from services.bootstrap import bootstrap
    from services.settings import Settings

    _store, url = private_db
    built = bootstrap(Settings(database_url=url, pool_size=2), url=url, migrate=False)
    built.projector_background = False
    yield built
    built.close()


def test_a_table_stored_before_the_ranges_folds_and_reads(before: Any) -> None:
    from fastapi.testclient import TestClient

    from domain import engine
    from services.api.app import create_app

    table_id = "old-" + uuid.uuid4().hex[:10]
    spec = {"preset": "default", "kong_points": {"concealed": HUGE, "added": 1, "exposed": 2}}
    events = _kong_table(spec, table_id)
    before.store.append("oldco", table_id, 0, [convert(e) for e in events])  # as stored back then
    expected = engine.fold([convert(e) for e in events])
    hand = next(s for s in expected.settlements if any(t.amount >= HUGE for t in s.transfers))
    support = {"Authorization": "Bearer " + before.keys.create("oldco", "support")}
    with TestClient(create_app(container=before)) as client:
        state = client.get(f"/v1/tables/{table_id}/state", headers=support)
        assert state.status_code == 200, state.text
        assert state.json()["at"] == len(events)
        answer = client.get(f"/v1/tables/{table_id}/hands/{hand.hand}/settlement", headers=support)
        assert answer.status_code == 200, answer.text
        got = answer.json()["settlement"]
        assert got["net"] == list(hand.net) and max(t["amount"] for t in got["transfers"]) >= HUGE
        assert client.get(f"/v1/tables/{table_id}/audit", headers=support).status_code == 200
        # the same batch sent again is held to today's ranges
        platform = {"Authorization": "Bearer " + before.keys.create("oldco", "platform")}
        again = client.post(f"/v1/tables/{table_id}/events", json={"events": events}, headers=platform)
        assert again.status_code == 422 and again.json()["error"] == "bad_rules"


# ----------------------------------------------------------------------------------------- dates
@pytest.mark.parametrize("at", ["2026-02-31T00:00:00Z", "2026-04-31T10:00:00+08:00", "2026-12-30T23:59:60Z",
                                "31/01/2026", "2026-02-01T12:00:00"])  # fmt: skip
def test_a_bad_at_is_malformed_with_the_expected_format(
    client: Any, platform: dict[str, str], table_id: str, at: str
) -> None:
    events = legal_table(43, 1)[:5]
    events[3] = dict(events[3], at=at)
    answer = _post(client, platform, table_id, events)
    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert (body["error"], body["field"]) == ("malformed", "$.events[3].at")
    assert "expected an RFC 3339 time such as 2026-02-01T12:00:00Z" in body["message"]
    assert "[0-9]" not in body["message"]
    assert client.get(f"/v1/tables/{table_id}/events", headers=platform).status_code == 404


def test_valid_times_are_stored_exactly_as_sent(client: Any, platform: dict[str, str], table_id: str) -> None:
    times = ["2026-02-01T12:00:00Z", "2026-02-01t12:00:00.5z", "2026-02-01 20:00:00+08:00",
             "2026-12-31T23:59:60Z", "2024-02-29T00:00:00-05:30"]  # fmt: skip
    events = legal_table(44, 1)[: len(times)]
    events = [dict(e, at=at) for e, at in zip(events, times, strict=True)]
    assert _post(client, platform, table_id, events).status_code == 201
    page = client.get(f"/v1/tables/{table_id}/events", headers=platform).json()
    assert [e["event"]["at"] for e in page["events"]] == times


# ---------------------------------------------------------------------------- settlement_reported
def _settled(seed: int) -> tuple[list[dict[str, Any]], int, dict[str, Any]]:
    """A legal table cut right after its first settlement_reported: (events, its index, it)."""
    events = legal_table(seed, 2)
    i = next(i for i, e in enumerate(events) if e["type"] == "settlement_reported")
    return events[: i + 1], i, events[i]


@pytest.mark.parametrize(
    ("line", "field"),
    [({"from": 0, "to": 1, "amount": 2**64}, "amount"), ({"from": 0, "to": 1, "amount": -5}, "amount"),
     ({"from": 0, "to": 1, "amount": 0}, "amount"), ({"from": 3, "to": 1, "amount": 5}, "from"),
     ({"from": 0, "to": "bank", "amount": 5}, "to")],
)  # fmt: skip
def test_a_report_line_that_can_only_be_a_mistake_is_422(
    client: Any, platform: dict[str, str], table_id: str, line: dict[str, Any], field: str
) -> None:
    events, i, report = _settled(45)
    events[i] = dict(report, transfers=[*report["transfers"], line])
    body = _post(client, platform, table_id, events).json()
    n = len(report["transfers"])
    assert (body["error"], body["field"]) == ("malformed", f"$.events[{i}].transfers[{n}].{field}"), body
    if field == "amount":
        assert body["allowed"] == {"min": 1, "max": money.MAX_REPORTED_AMOUNT}
        assert body["event_id"] == report["id"]
    else:
        assert "0, 1, 2" in body["message"] or "<= 2" in body["message"]
    assert client.get(f"/v1/tables/{table_id}/events", headers=platform).status_code == 404


def test_a_report_for_a_hand_not_played_yet_is_refused(
    client: Any, platform: dict[str, str], table_id: str
) -> None:
    events, i, report = _settled(46)
    events[i] = dict(report, hand=report["hand"] + 5)
    body = _post(client, platform, table_id, events).json()
    assert (body["error"], body["rule"], body["index"]) == ("illegal_event", "sequence", i)


# ------------------------------------------------------------------------------- messages, fields
@pytest.mark.parametrize(
    ("change", "listed"),
    [({"tile": "0p"}, "1p, 2p, 3p, 4p, 5p, 6p, 7p, 8p, 9p, 1s"),
     ({"type": "tile_thrown"}, "tile_discarded, peng")],
)  # fmt: skip
def test_an_unknown_enum_value_lists_the_valid_ones(
    client: Any, platform: dict[str, str], table_id: str, change: dict[str, Any], listed: str
) -> None:
    events = legal_table(47, 1)
    j = next(i for i, e in enumerate(events) if e["type"] == "tile_discarded")
    events[j] = dict(events[j], **change)
    body = _post(client, platform, table_id, events[: j + 1]).json()
    assert body["error"] == "malformed" and body["field"].startswith(f"$.events[{j}].")
    assert listed in body["message"]


def test_fields_name_the_parameter_the_same_way_everywhere(client: Any, platform: dict[str, str]) -> None:
    table_id = "fld-" + uuid.uuid4().hex[:10]
    assert _post(client, platform, table_id, legal_table(48, 1)).status_code == 201
    for url, field in [
        (f"/v1/tables/{table_id}/state?at=999999", "query.at"),
        (f"/v1/tables/{table_id}/state?at=0", "query.at"),
        (f"/v1/tables/{table_id}/hands/0/settlement", "path.hand"),
        (f"/v1/tables/{table_id}/hands/1/settlement?cap=0", "query.cap"),
        (f"/v1/tables/{table_id}/hands/1/settlement?rules=nowhere", "query.rules"),
        ("/v1/tables/bad%20id/state", "path.table_id"),
        ("/v1/leaderboard?by=nothing", "query.by"),
        ("/v1/leaderboard?preset=nowhere", "query.preset"),
        ("/v1/players/" + "a" * 65 + "/stats", "path.player_id"),
    ]:
        answer = client.get(url, headers=platform)
        assert answer.status_code == 422 and answer.json()["field"] == field, (url, answer.text)


def test_the_settlement_what_if_checks_its_options_like_a_new_table(
    client: Any, platform: dict[str, str], table_id: str
) -> None:
    assert _post(client, platform, table_id, legal_table(49, 1)).status_code == 201
    url = f"/v1/tables/{table_id}/hands/1/settlement"
    body = client.get(url + f"?kong_points={msgspec.json.encode({'concealed': HUGE}).decode()}",
                      headers=platform).json()  # fmt: skip
    assert (body["error"], body["field"]) == ("bad_rules", "query.kong_points.concealed")
    assert body["allowed"] == {"min": 0, "max": rule_options.MAX_KONG_POINTS} and body["message_zh"]
    assert client.get(url + "?cap=16&pin_dao=full", headers=platform).status_code == 200
