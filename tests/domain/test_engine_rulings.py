"""Every ruling code: given events → when the next event → then that ruling (docs/rulings.md).

Each case names the rule it derives from (RULES.md §, CONTRACT.md §1, or a seed text line).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from domain import engine
from domain.events import Event
from domain.rulings import ALL_CODES, RULE, STRUCTURE
from domain.state import TableState
from domain.tiles import TILE_INDEX
from domain.walls import sha256_of
from tests.domain.engine_dsl import (
    burn,
    closed,
    discard,
    draw,
    full_wall,
    given,
    hu,
    kong,
    liang,
    ma,
    opened,
    peng,
    revealed,
    started,
    then_ok,
    when,
)

# The 包胡 conformance deal: seat 1 draws 7s and declares 亮倒 on F, waiting 2s 5s 8s.
BAO = ("123456789p 2345s C", "23456788p 3456s F", "399p 11122289s CC")
# The 抢杠胡 conformance deal: seat 1 pengs 7s, draws the fourth and adds it; seat 2 waits on 7s.
ROB = ("123456789p 117s CF", "23456799p 3377s C", "34566p 23468s FFF")
# The 一炮双响 conformance deal: 5p from the dealer completes seats 1 and 2.
DOUBLE = ("1235789p 2345s CCF", "46p 23467899s PPP", "5588p 111666777s")
# 漏胡 deal: seat 2 holds the nine gates (九莲) and waits on every 筒.
LOU = ("236p FFF PPP 45678s", "135p 1123s 799s CCC", "1112345678999p")


def rob_prefix(rules: dict[str, Any] | None = None) -> list[Event]:
    return [
        opened(rules), started(*ROB),
        discard(0, "7s"), peng(1, "7s"), discard(1, "C"),
        draw(2, "1p"), discard(2, "1p"), draw(0, "2s"), discard(0, "2s"),
        draw(1, "7s"), kong(1, "7s", "added"),
    ]  # fmt: skip


def bao_prefix(rules: dict[str, Any] | None = None) -> list[Event]:
    return [opened(rules), started(*BAO), discard(0, "C"), draw(1, "7s"), liang(1, "F"), draw(2, "4s")]


def last_tile_prefix(kind: str) -> tuple[TableState, Event]:
    """Seat 2 holds 999s and draws the last wall tile, 9s (the 44th draw); seat 1 holds PPP and seat 2
    discards the last P after that draw."""
    h = ("123456789p 1234s C", "2345678p 345s PPP", "11p 22p 33p 999s FF C P")
    wall = full_wall(*h, back="9s")
    st = given(opened(), started(*h, wall=wall), discard(0, "C"))
    st = burn(st, 43)
    st = then_ok(st, draw(2, "9s"))
    if kind == "concealed":
        return st, kong(2, "9s", "concealed")
    st = then_ok(st, discard(2, "P"))
    return st, (peng(1, "P") if kind == "peng" else kong(1, "P", "exposed"))


Case = Callable[[], tuple[TableState, Event]]


def _g(*events: Event) -> TableState:
    return given(*events)


CASES: dict[str, tuple[str, Case]] = {
    # --- structure -----------------------------------------------------------------------------
    "sequence: table_opened not first (CONTRACT §1)": ("sequence", lambda: (engine.initial(), started(*BAO))),
    "sequence: a second table_opened": ("sequence", lambda: (_g(opened()), opened())),
    "sequence: hand numbers start at 1 and are consecutive": (
        "sequence",
        lambda: (_g(opened()), started(*BAO, hand=2)),
    ),
    "sequence: hand 2 dealt by the wrong seat (RULES §2: winner deals)": (
        "sequence",
        lambda: (_g(*bao_prefix(), discard(2, "8s"), hu([1], "8s", 2)), started(*BAO, hand=2, dealer=0)),
    ),
    "sequence: the dealer gets 14 tiles (RULES §2)": (
        "sequence",
        lambda: (_g(opened()), started(BAO[1], BAO[1], BAO[2])),
    ),
    "sequence: a hand_started while a hand is in progress": (
        "sequence",
        lambda: (_g(opened(), started(*BAO)), started(*BAO, hand=2)),
    ),
    "sequence: an action after the hand is over": (
        "sequence",
        lambda: (_g(*bao_prefix(), discard(2, "8s"), hu([1], "8s", 2)), discard(2, "4s")),
    ),
    "sequence: ma_drawn with maima off": (
        "sequence",
        lambda: (_g(*bao_prefix(), discard(2, "8s"), hu([1], "8s", 2)), ma("3p")),
    ),
    "sequence: ma_drawn after a win on a discard (买码 only after 自摸)": (
        "sequence",
        lambda: (
            _g(*bao_prefix({"preset": "default", "maima": True}), discard(2, "8s"), hu([1], "8s", 2)),
            ma("3p"),
        ),
    ),
    "sequence: the dealer discards before anyone draws (RULES §2)": (
        "sequence",
        lambda: (_g(opened(), started(*BAO)), draw(0, "7s")),
    ),
    "sequence: hand_exhausted with tiles left in the wall": (
        "sequence",
        lambda: (_g(opened(), started(*BAO), discard(0, "C")), engine_exhausted()),
    ),
    "sequence: a concealed kong can never be robbed (RULES §3)": (
        "sequence",
        lambda: (
            _g(
                opened(),
                started("1111p 23456789p CF", "2345678p 3456s CC", "11s 22s 33s 999s FF PP"),
                kong(0, "1p", "concealed"),
            ),
            hu([1], "1p", 0),
        ),
    ),
    "not_your_turn: seat 1 discards at the dealer's turn": (
        "not_your_turn",
        lambda: (_g(opened(), started(*BAO)), discard(1, "F")),
    ),
    "not_your_turn: after seat 0's discard seat 1 draws, not seat 2 (RULES §2: 0 → 1 → 2)": (
        "not_your_turn",
        lambda: (_g(opened(), started(*BAO), discard(0, "C")), draw(2, "7s")),
    ),
    "tile_not_held: discarding a tile not in hand": (
        "tile_not_held",
        lambda: (_g(opened(), started(*BAO)), discard(0, "F")),
    ),
    "tile_not_held: 碰 with a single copy (RULES §3: two matching tiles)": (
        "tile_not_held",
        lambda: (_g(opened(), started(*BAO), discard(0, "C"), draw(1, "7s"), discard(1, "F")), peng(2, "F")),
    ),
    "tile_count: five C in the deal (84 tiles, four of each)": (
        "tile_count",
        lambda: (_g(opened()), started("123456789p 2345s C", "23456788p 3456s C", "399p 111222s CCCC")),
    ),
    "tile_count: a fifth C drawn from an unknown wall (CONTRACT §1)": (
        "tile_count",
        lambda: (
            _g(
                opened(),
                started("123456789p 2345s C", "23456788p 3456s C", "399p 11122289s CC"),
                discard(0, "C"),
            ),
            draw(1, "C"),
        ),
    ),
    "tile_count: a known wall + the hands must be exactly the 84-tile set": (
        "tile_count",
        lambda: (_g(opened()), started(*BAO, wall=["C"] * 44)),
    ),
    "wall_mismatch: a draw differs from the front of the known wall": (
        "wall_mismatch",
        lambda: (
            _g(opened(), started(*BAO, wall=full_wall(*BAO, front="7s")), discard(0, "C")),
            draw(1, "8s"),
        ),
    ),
    "wall_mismatch: a kong replacement draw comes from the back (RULES §3)": (
        "wall_mismatch",
        lambda: (
            _g(opened(), started(*ROB, wall=full_wall(*ROB, front="1p 2s 7s", back="9s")), *rob_prefix()[2:]),
            draw(1, "1s"),
        ),
    ),
    "wall_mismatch: hand_started's wall and wall_sha256 disagree": (
        "wall_mismatch",
        lambda: (_g(opened()), started(*BAO, wall=full_wall(*BAO), wall_sha256="0" * 64)),
    ),
    "wall_mismatch: the revealed wall does not hash to the commitment": (
        "wall_mismatch",
        lambda: (_g(opened(), started(*BAO, wall_sha256="a" * 64)), revealed(full_wall(*BAO))),
    ),
    "closed: nothing after table_closed": ("closed", lambda: (_g(opened(), closed()), started(*BAO))),
    "bad_rules: table_opened with an unknown preset names the field": (
        "bad_rules",
        lambda: (engine.initial(), opened({"preset": "nowhere"})),
    ),
    # kwx decision (docs/rulings.md): statistics and ledgers are per player, so one player in two
    # seats would merge two seats' coins; RULES §2 "Three players in seats 0, 1, 2".
    "duplicate_player: table_opened names one player in two seats": (
        "duplicate_player",
        lambda: (engine.initial(), msgspec.structs.replace(opened(), players=["alice", "bob", "alice"])),
    ),
    "wrong_win_tile: a self-draw names another tile than the one drawn": (
        "wrong_win_tile",
        lambda: (_g(opened(), started(*BAO), discard(0, "C"), draw(1, "7s")), hu([1], "8p")),
    ),
    # --- rules ---------------------------------------------------------------------------------
    "not_a_winning_hand: C does not complete seat 2 (RULES §4)": (
        "not_a_winning_hand",
        lambda: (_g(opened(), started(*BAO), discard(0, "C")), hu([2], "C", 0)),
    ),
    "below_min_multiplier: 屁胡 only by self-draw (RULES §6)": (
        "below_min_multiplier",
        lambda: (
            _g(
                opened(),
                started("12345678p 2348s CC", "2245667s 111p 999p", "44p 11s 3s FFF PPP CC"),
                discard(0, "8s"),
            ),
            hu([1], "8s", 0),
        ),
    ),
    "lou_hu: passed 2p (×4), may not win 3p before drawing (RULES §9)": (
        "lou_hu",
        lambda: (
            _g(opened(), started(*LOU), discard(0, "2p"), draw(1, "4s"), discard(1, "3p")),
            hu([2], "3p", 1),
        ),
    ),
    "claim_on_last_discard: no 碰 of the last discard (RULES §3)": (
        "claim_on_last_discard",
        lambda: last_tile_prefix("peng"),
    ),
    "kong_without_wall: no kong on the last discard (摸到最后一张牌…打出去的牌其他人也不能杠)": (
        "kong_without_wall",
        lambda: last_tile_prefix("exposed"),
    ),
    "kong_without_wall: no kong by the player who drew the last tile": (
        "kong_without_wall",
        lambda: last_tile_prefix("concealed"),
    ),
    "added_kong_not_immediate: 明杠必须当时就杠 (RULES §3)": (
        "added_kong_not_immediate",
        lambda: (
            _g(
                opened(),
                started(*ROB),
                discard(0, "7s"),
                peng(1, "7s"),
                discard(1, "C"),
                draw(2, "1p"),
                discard(2, "1p"),
                draw(0, "2s"),
                discard(0, "2s"),
                draw(1, "7s"),
                discard(1, "9p"),
                draw(2, "1p"),
                discard(2, "1p"),
                draw(0, "2s"),
                discard(0, "2s"),
                draw(1, "5s"),
            ),
            kong(1, "7s", "added"),
        ),
    ),
    "peng_with_concealed_triplet: 不能碰后再杠 (RULES §3)": (
        "peng_with_concealed_triplet",
        lambda: (_g(opened(), started(*BAO), discard(0, "2s")), peng(2, "2s")),
    ),
    "liang_dao_not_ready: the 13 tiles left are not 听牌 (RULES §8)": (
        "liang_dao_not_ready",
        lambda: (_g(opened(), started(*BAO)), liang(0, "9p")),
    ),
    "liang_dao_locked: after 亮倒 the drawn tile is discarded (RULES §8)": (
        "liang_dao_locked",
        lambda: (
            _g(*bao_prefix(), discard(2, "4s"), draw(0, "1s"), discard(0, "1s"), draw(1, "9p")),
            discard(1, "2p"),
        ),
    ),
    "liang_dao_locked: no 碰 after 亮倒 (RULES §8)": (
        "liang_dao_locked",
        lambda: (_g(*bao_prefix(), discard(2, "4s"), draw(0, "8p"), discard(0, "8p")), peng(1, "8p")),
    ),
    "liang_dao_kong_changes_waits: 23334567 may not kong 3 (RULES §8)": (
        "liang_dao_kong_changes_waits",
        lambda: (
            _g(
                opened(),
                started("123456789p 1p 5s CCF", "23334567s 11p 789p", "44p 66p 11s 99s FFF PP"),
                discard(0, "C"),
                draw(1, "P"),
                liang(1, "P"),
                draw(2, "C"),
                discard(2, "C"),
                draw(0, "2p"),
                discard(0, "2p"),
                draw(1, "3s"),
            ),
            kong(1, "3s", "concealed"),
        ),
    ),
    "liang_dao_min_wall: 少于N张不能亮 (RULES §8, 孝感)": (
        "liang_dao_min_wall",
        lambda: (_g(*bao_prefix({"preset": "default", "liang_dao_min_wall": 44})[:4]), liang(1, "F")),
    ),
    "liang_dao_hidden: only concealed triplets may be kept face down (三个的不亮)": (
        "liang_dao_hidden",
        lambda: (_g(*bao_prefix()[:4]), liang(1, "F", hidden="8p")),
    ),
    "feeding_declared_wait: 此牌为胡口牌，禁止出牌 (3D platform)": (
        "feeding_declared_wait",
        lambda: (_g(*bao_prefix({"preset": "platform_3d"})), discard(2, "8s")),
    ),
    "rob_kong_disabled: no 抢杠胡 under 云梦 rules (RULES §3, §10)": (
        "rob_kong_disabled",
        lambda: (_g(*rob_prefix({"preset": "yunmeng"})), hu([2], "7s", 1)),
    ),
    "multi_win_disabled: no 一炮双响 with multi_win off (RULES §3)": (
        "multi_win_disabled",
        lambda: (
            _g(opened({"preset": "default", "multi_win": False}), started(*DOUBLE), discard(0, "5p")),
            hu([1, 2], "5p", 0),
        ),
    ),
}


def engine_exhausted() -> Event:
    from tests.domain.engine_dsl import exhausted

    return exhausted()


@pytest.mark.parametrize("name", list(CASES))
def test_ruling(name: str) -> None:
    code, case = CASES[name]
    state, event = case()
    ruling = when(state, event)
    assert ruling is not None, f"{name}: expected {code}, the event was accepted"
    assert ruling.code == code, f"{name}: {ruling.code}: {ruling.message}"
    assert ruling.kind == ("structure" if code in STRUCTURE else "rule")
    assert ruling.event == state.version + 1
    assert ruling.message and ruling.message_zh
    # step rejects (reject table) and leaves the state unchanged
    new, r2, ok = engine.step(state, event)
    assert not ok and new is state and r2 == ruling


def test_every_code_has_a_case() -> None:
    covered = {code for code, _ in CASES.values()}
    assert covered == set(ALL_CODES), sorted(set(ALL_CODES) - covered)


def test_rule_codes_are_the_contract_list_plus_documented_additions() -> None:
    contract = {
        "sequence", "not_your_turn", "tile_not_held", "tile_count", "wall_mismatch", "not_a_winning_hand",
        "below_min_multiplier", "lou_hu", "claim_on_last_discard", "kong_without_wall",
        "added_kong_not_immediate", "peng_with_concealed_triplet", "liang_dao_not_ready",
        "liang_dao_locked", "liang_dao_kong_changes_waits", "liang_dao_min_wall", "feeding_declared_wait",
        "rob_kong_disabled", "multi_win_disabled", "closed",
    }  # fmt: skip
    assert contract <= ALL_CODES
    assert ALL_CODES - contract == {"bad_rules", "duplicate_player", "wrong_win_tile", "liang_dao_hidden"}
    assert "liang_dao_hidden" in RULE


def test_bad_rules_names_the_field() -> None:
    r = when(engine.initial(), opened({"preset": "default", "cap": "high"}))
    assert r is not None and r.code == "bad_rules" and r.detail["field"] == "rules.cap"


def test_lou_hu_ruling_names_the_passed_discard_and_what_it_would_have_paid() -> None:
    st = _g(opened(), started(*LOU), discard(0, "2p"), draw(1, "4s"), discard(1, "3p"))
    r = when(st, hu([2], "3p", 1))
    assert r is not None and r.code == "lou_hu"
    assert r.detail["passed_event"] == 3 and r.detail["passed_tile"] == "2p" and r.detail["would_pay"] == 4
    assert "2p" in r.message and "×4" in r.message


def test_sha256_is_of_the_tiles_concatenated() -> None:
    wall = full_wall(*BAO)
    import hashlib

    assert sha256_of([TILE_INDEX[x] for x in wall]) == hashlib.sha256("".join(wall).encode()).hexdigest()
