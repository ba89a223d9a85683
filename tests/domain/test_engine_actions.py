"""legal_actions: given random legal games (known walls) → every listed action passes ``check`` and is
accepted by ``step``; the tiles are conserved; settlements are zero-sum; folding in two parts equals
folding at once."""

from __future__ import annotations

import random

from domain import engine
from domain.actions import Action, legal_actions, to_event
from domain.events import Event, HandStarted, TableOpened
from domain.state import TableState
from domain.tiles import TILE_NAMES
from domain.walls import remaining


def deal(rng: random.Random, hand: int, dealer: int) -> HandStarted:
    tiles = [k for k in range(21) for _ in range(4)]
    rng.shuffle(tiles)
    names = [TILE_NAMES[k] for k in tiles]
    hands = [names[0:14], names[14:27], names[27:40]]
    if dealer != 0:
        hands = [hands[(s - dealer) % 3] for s in range(3)]
    return HandStarted(id=f"h{hand}", hand=hand, dealer=dealer, hands=hands, wall=names[40:])  # type: ignore[arg-type]


def pick(rng: random.Random, actions: list[Action]) -> Action:
    """Prefer wins, then kongs / 亮倒 sometimes, else a random move — so games reach every phase."""
    wins = [a for a in actions if a.type == "hu"]
    if wins and rng.random() < 0.7:
        return rng.choice(wins)
    special = [a for a in actions if a.type in ("kong", "peng", "liang_dao")]
    if special and rng.random() < 0.3:
        return rng.choice(special)
    plain = [a for a in actions if a.type != "hu"] or actions
    return rng.choice(plain)


def conserved(st: TableState) -> bool:
    hs = st.hand
    if hs is None or hs.phase == "over":
        return True
    total = remaining(hs)
    for s in (0, 1, 2):
        total += sum(hs.concealed[s]) + sum(m.size for m in hs.melds[s])
        total += sum(1 for d in hs.discards[s] if not d.claimed)
    return total == 84


def play(seed: int, hands: int, rules: dict[str, object], check_all: bool) -> tuple[TableState, list[Event]]:
    rng = random.Random(seed)
    events: list[Event] = [TableOpened(id="t", players=["a", "b", "c"], rules=rules)]
    st = engine.fold(events)
    n = 0
    while st.hand_no < hands or (st.hand is not None and st.hand.phase != "over"):
        acts = legal_actions(st)
        assert acts, "no legal action"
        if check_all:
            for a in acts:
                if a.type == "hand_started":
                    continue
                r = engine.check(st, to_event(a, "x"))
                assert r is None, (a, r)
        a = pick(rng, acts)
        n += 1
        ev = deal(rng, st.hand_no + 1, a.seat or 0) if a.type == "hand_started" else to_event(a, f"e{n}")
        st, r, ok = engine.step(st, ev)
        assert ok and r is None, (a, r)
        assert conserved(st)
        events.append(ev)
    return st, events


def test_every_listed_action_is_legal_in_random_games() -> None:
    for seed, rules in enumerate(
        [{"preset": "default"}, {"preset": "platform_3d"}, {"preset": "yunmeng"}, {"preset": "xiaogan"},
         {"preset": "shiyan"}, {"preset": "default", "added_kong_immediate": False, "multi_win": False}]
    ):  # fmt: skip
        st, _ = play(seed, 6, rules, check_all=True)
        assert len(st.settlements) == 6
        for s in st.settlements:
            assert sum(s.net) + s.house == 0
        assert list(st.coins) == [sum(s.net[i] for s in st.settlements) for i in (0, 1, 2)]


def test_random_games_reach_wins_kongs_and_liang_dao() -> None:
    kinds: set[str] = set()
    ends: set[str] = set()
    for seed in range(6):
        st, events = play(100 + seed, 8, {"preset": "default"}, check_all=False)
        kinds |= {e.__struct_config__.tag for e in events}
        ends |= {s.end for s in st.settlements}
    assert {"kong", "peng", "liang_dao", "hu"} <= kinds
    assert {"hu", "exhausted"} <= ends


def test_fold_in_two_parts_equals_fold_at_once_and_state_roundtrips() -> None:
    st, events = play(42, 3, {"preset": "default"}, check_all=False)
    whole = engine.fold(events)
    assert engine.encode_state(whole) == engine.encode_state(st)
    for cut in (1, 2, len(events) // 3, len(events) // 2, len(events) - 1):
        head = engine.fold(events[:cut])
        data = engine.encode_state(head)
        again = engine.decode_state(data)
        assert engine.encode_state(again) == data
        assert again == head
        rest = engine.fold_from(again, events[cut:], start_index=cut)
        assert engine.encode_state(rest) == engine.encode_state(whole)
