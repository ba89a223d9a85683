"""A ``hu`` recorded with a rule violation (``violations: "record"``): given the table → when it is
settled, projected and read → then it is no win in the player's statistics and its settlement says
what the violation did to the hand (docs/rulings.md 28: a hu that is not a winning hand ends the
hand and pays nothing; a real win recorded with another rule broken is paid as scored)."""

from __future__ import annotations

import uuid
from typing import Any

import msgspec
import pytest

from domain import engine
from domain.events import Event
from projections import player_stats
from projections.model import EventRef, HandSettled, TableInfo
from projections.projector import Projector
from tests.domain.engine_dsl import discard, draw, given, hu, opened, started
from tests.projections.helpers import append

LD = ("123456789p 2345s F", "12378p 456s CCC 99s", "44p 55p 11s 22s FFF PP")  # test_engine_play.LD
LOU = ("236p FFF PPP 45678s", "135p 1123s 799s CCC", "1112345678999p")  # test_engine_play's 漏胡 hand


def _bad_hu() -> list[Event]:
    """Seat 1 (bob) declares hu on alice's F with a hand that is no winning shape."""
    return [opened(violations="record"), started(*LD), discard(0, "F"), hu([1], "F", 0)]


def _lou_hu_win() -> list[Event]:
    """Seat 2 (carol) passed alice's 2p and wins bob's 3p before her own next draw: 漏胡, recorded."""
    return [opened(violations="record"), started(*LOU), discard(0, "2p"), draw(1, "4s"), discard(1, "3p"),
            hu([2], "3p", 1)]  # fmt: skip


def _fact(events: list[Event]) -> HandSettled:
    state = given(*events)
    assert state.hand is not None
    info = TableInfo(table_id="t", tenant="acme", players=("alice", "bob", "carol"), preset="default", base=1)
    return HandSettled(info=info, at=EventRef(version=state.version, position=1), ordinal=1,
                       settlement=state.settlements[-1], record=state.hand.record)  # fmt: skip


def test_given_a_recorded_hu_that_is_no_winning_hand_then_it_pays_nothing_and_names_its_violation() -> None:
    state = given(*_bad_hu())
    s = state.settlements[-1]
    assert s.end == "hu" and s.transfers == () and s.net == (0, 0, 0)
    assert [(w.seat, w.multiplier, w.patterns) for w in s.wins] == [(1, 0, ())]
    assert state.hand is not None and state.hand.record.wins[0].violation == "not_a_winning_hand"
    assert [(r.code, r.event) for r in state.rulings] == [("not_a_winning_hand", 4)]


def test_a_recorded_illegal_hu_is_no_win_in_the_statistics() -> None:
    merged = player_stats.merge(player_stats.rows(_fact(_bad_hu())))
    bob = merged[("acme", "bob", "default", None)].counters
    assert bob.get("wins", 0) == 0 and bob.get("wins_discard", 0) == 0 and bob.get("sum_multiplier", 0) == 0
    assert bob["hu_violations"] == 1 and bob["hands_played"] == 1
    alice = merged[("acme", "alice", "default", None)].counters
    assert alice.get("deal_ins", 0) == 0  # nobody dealt in to a hand that is no win
    assert merged[("acme", "bob", "default", None)].patterns == {}
    # a real win recorded with lou_hu: paid as scored (the coins count), but not a win here
    merged = player_stats.merge(player_stats.rows(_fact(_lou_hu_win())))
    carol = merged[("acme", "carol", "default", None)].counters
    assert carol.get("wins", 0) == 0 and carol["hu_violations"] == 1 and carol["net_coins"] == 4
    assert merged[("acme", "bob", "default", None)].counters["net_coins"] == -4


@pytest.fixture()
def projector(container: Any) -> Projector:
    return Projector(container.pool, container.store, engine)


@pytest.mark.db
def test_recorded_illegal_hus_through_the_projection_and_the_api(
    client: Any, platform: dict[str, str], projector: Projector
) -> None:
    tables = {}
    for events in (_bad_hu(), _lou_hu_win()):
        table_id = "viol-" + uuid.uuid4().hex[:10]
        append(client, platform, table_id, [msgspec.to_builtins(e) for e in events])
        tables[table_id] = events
    projector.catch_up()
    bob = client.get("/v1/players/bob/stats", headers=platform).json()["overall"]
    carol = client.get("/v1/players/carol/stats", headers=platform).json()["overall"]
    assert (bob["wins"], bob["hu_violations"], bob["hands_played"], bob["net_coins"]) == (0, 1, 2, -4)
    assert (carol["wins"], carol["hu_violations"], carol["net_coins"]) == (0, 1, 4)
    assert bob["ratios"]["win_rate"] == 0 and bob["ratios"]["average_multiplier"] is None
    board = client.get("/v1/leaderboard?by=wins", headers=platform).json()["players"]
    assert {p["player_id"]: p["wins"] for p in board} == {"alice": 0, "bob": 0, "carol": 0}

    bad, lou = tables
    win = client.get(f"/v1/tables/{bad}/hands/1/settlement", headers=platform).json()["settlement"]["wins"][0]
    d = win["derivation"]
    assert win["multiplier"] == 0 and "屁胡" not in d["multiplier"] and "not a win" in d["multiplier"]
    assert "不付分" in d["multiplier_zh"] and "不付分" in d["cap_zh"] and d["patterns_zh"] == []
    assert d["violation"]["code"] == "not_a_winning_hand" and d["violation"]["counts_as_win"] is False
    assert "pays nothing" in d["violation"]["effect"] and "不付分" in d["violation"]["effect_zh"]
    win = client.get(f"/v1/tables/{lou}/hands/1/settlement", headers=platform).json()["settlement"]["wins"][0]
    d = win["derivation"]
    assert d["violation"]["code"] == "lou_hu" and d["violation"]["counts_as_win"] is True
    assert "paid as scored" in d["violation"]["effect"] and d["multiplier"].endswith(f"= {win['multiplier']}")
