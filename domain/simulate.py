"""Simulated tables: legal, varied event streams for tests, benchmarks and the discrepancy feed.

``simulate_table(rng, hands, rules_spec, table_id)`` plays ``hands`` hands of one table and returns
its events as wire dicts (CONTRACT.md §1). The only randomness is the ``random.Random`` passed in,
so a seed gives the same stream every time. Every event is offered to the reducer
(``domain.engine.step``) and must be accepted; the simulator asserts it.

The players follow a simple policy (see :class:`Policy`): discard the tile that keeps the hand
ready with the most waits, else the least connected tile; declare 亮倒 when ready with some
probability; take most wins but pass some (漏胡); 碰 / 杠 with some probability. Around the play:
the wall is sent in ``hand_started`` most of the time, sometimes only its SHA-256 with a
``wall_revealed`` after the hand; some hands are aborted; most hands get a ``settlement_reported``
(a few deliberately wrong); the table ends with ``table_closed``.

Two options leave the stream of play exactly as without them (they draw nothing from ``rng``):
``start`` gives every event an ``at`` (RFC 3339, UTC, whole seconds): the table opens at
``start`` and each event follows the one before by a few seconds (a new hand by a minute or two),
the gaps drawn from a ``random.Random`` of their own, seeded by the table id and ``start``, so
the same arguments give the same times; ``players`` names the table's three players (a pool the
caller draws from: a player then has a history across tables).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from domain import engine
from domain.actions import Action
from domain.events import convert
from domain.rules import Rules, resolve
from domain.shape import waits
from domain.state import HandState, TableState
from domain.tiles import N_KINDS, TILE_NAMES, is_dragon
from domain.walls import remaining

Wire = dict[str, Any]


class Policy(msgspec.Struct, frozen=True, kw_only=True):
    """Probabilities of the simulated players' choices."""

    take_self_draw: float = 0.96
    take_discard_win: float = 0.85  # the rest are passed: 漏胡
    take_rob: float = 0.9
    declare_liang_dao: float = 0.35  # when a discard leaves the hand ready
    peng: float = 0.45
    exposed_kong: float = 0.7
    concealed_kong: float = 0.75
    added_kong: float = 0.8
    random_discard: float = 0.04
    stack_chain: float = 0.06  # deal the dealer a four and a three whose fourth is the first kong draw
    abort_hand: float = 0.03
    wall_in_start: float = 0.8  # else only wall_sha256, revealed after the hand
    dice: float = 0.5
    report: float = 0.75
    report_wrong: float = 0.12


class SimulationError(AssertionError):
    """The reducer refused an event the simulator produced (a bug in one of them)."""


def _tiles(counts: Sequence[int]) -> list[str]:
    return [TILE_NAMES[k] for k in range(N_KINDS) for _ in range(counts[k])]


def _usefulness(c: Sequence[int], k: int) -> float:
    """How much tile ``k`` helps the hand ``c``: copies, then neighbours in its suit."""
    score = 2.0 * (c[k] - 1)
    if not is_dragon(k):
        pos = k % 9
        for d, w in ((1, 1.5), (2, 0.75)):
            if pos - d >= 0 and c[k - d]:
                score += w
            if pos + d <= 8 and c[k + d]:
                score += w
    return score


def discard_order(c: Sequence[int], rng: random.Random, p_random: float) -> list[tuple[int, int]]:
    """Candidate discards, best first, as ``(kind, number of waits after it)``."""
    kinds = [k for k in range(N_KINDS) if c[k]]
    rng.shuffle(kinds)  # ties broken by the rng
    rated: list[tuple[float, int, int]] = []
    for k in kinds:
        rest = list(c)
        rest[k] -= 1
        w = len(waits(rest))
        rated.append((-(100.0 + w) if w else _usefulness(c, k), k, w))
    rated.sort(key=lambda r: r[0])
    order = [(k, w) for _, k, w in rated]
    if rng.random() < p_random:
        rng.shuffle(order)
    return order


def deal(rng: random.Random, dealer: int, *, stacked: bool = False) -> tuple[list[list[int]], list[int]]:
    """Shuffle the 84 tiles: the hands (dealer 14, others 13) and the 44-tile wall in draw order.

    ``stacked``: the dealer gets four of one kind and three of another whose fourth copy is the
    last tile of the wall — the first kong replacement draw — so that 杠上杠 chains happen."""
    deck = [k for k in range(N_KINDS) for _ in range(4)]
    rng.shuffle(deck)
    hands: list[list[int]] = [[], [], []]
    if stacked:
        a, b = rng.sample(range(N_KINDS), 2)
        deck = [k for k in deck if k not in (a, b)]
        hands[dealer] = [a] * 4 + [b] * 3 + deck[:7]
        rest = deck[7:]
        hands[(dealer + 1) % 3] = rest[:13]
        hands[(dealer + 2) % 3] = rest[13:26]
        return hands, [*rest[26:], b]
    pos = 0
    for i in range(3):
        seat = (dealer + i) % 3
        n = 14 if i == 0 else 13
        hands[seat] = deck[pos : pos + n]
        pos += n
    return hands, deck[pos:]


class _Table:
    def __init__(
        self,
        rng: random.Random,
        rules_spec: dict[str, Any],
        table_id: str,
        policy: Policy,
        start: datetime | None = None,
        players: Sequence[str] | None = None,
    ) -> None:
        self.rng = rng
        self.table_id = table_id
        self.policy = policy
        self.rules_spec = dict(rules_spec)
        self.rules: Rules = resolve(rules_spec)
        self.state: TableState = engine.initial()
        self.out: list[Wire] = []
        self.wall: list[int] = []
        self.players = list(players) if players is not None else [f"{table_id}-p{i}" for i in range(3)]
        self.clock = start.astimezone(UTC).replace(microsecond=0) if start is not None else None
        self.time_rng = random.Random(f"{table_id}|{start.isoformat()}") if start is not None else None

    # --- plumbing -------------------------------------------------------------------------
    def _with_id(self, ev: Wire) -> Wire:
        wire: Wire = {"id": f"{self.table_id}-{len(self.out) + 1}"}
        if self.clock is not None and self.time_rng is not None:
            if self.out:  # the first event is at ``start``
                low, high = (45, 150) if ev["type"] == "hand_started" else (2, 12)
                self.clock += timedelta(seconds=self.time_rng.randint(low, high))
            wire["at"] = self.clock.strftime("%Y-%m-%dT%H:%M:%SZ")
        return {**wire, **ev}

    def emit(self, ev: Wire) -> None:
        wire = self._with_id(ev)
        state, ruling, accepted = engine.step(self.state, convert(wire))
        if not accepted or ruling is not None:
            raise SimulationError(f"{self.table_id}: event {len(self.out)} {wire} refused: {ruling}")
        self.state = state
        self.out.append(wire)

    @property
    def hs(self) -> HandState:
        assert self.state.hand is not None
        return self.state.hand

    # --- a table ----------------------------------------------------------------------------
    def play(self, hands: int) -> list[Wire]:
        self.emit(
            {
                "type": "table_opened",
                "players": self.players,
                "rules": self.rules_spec,
                "base": self.rng.choice((1, 1, 2, 5, 10)),
            }
        )
        for n in range(1, hands + 1):
            self.play_hand(n)
        self.emit({"type": "table_closed"})
        return self.out

    def play_hand(self, n: int) -> None:
        rng, p = self.rng, self.policy
        dealer = self.state.next_dealer if self.state.next_dealer is not None else rng.randrange(3)
        hands, self.wall = deal(rng, dealer, stacked=rng.random() < p.stack_chain)
        wall_names = [TILE_NAMES[k] for k in self.wall]
        start: Wire = {
            "type": "hand_started",
            "hand": n,
            "dealer": dealer,
            "hands": [[TILE_NAMES[k] for k in h] for h in hands],
        }
        hidden_wall = rng.random() >= p.wall_in_start
        if hidden_wall:
            start["wall_sha256"] = hashlib.sha256("".join(wall_names).encode("ascii")).hexdigest()
        else:
            start["wall"] = wall_names
        if rng.random() < p.dice:
            start["dice"] = [rng.randint(1, 6), rng.randint(1, 6)]
        if self.rules.piao:
            start["piao"] = [rng.choice((0, 0, 1, 2)) for _ in range(3)]
        self.emit(start)
        abort_at = rng.randrange(2, 60) if rng.random() < p.abort_hand else -1
        moves = 0
        while self.state.hand is not None and self.hs.phase != "over":
            if moves == abort_at:
                self.emit({"type": "hand_aborted", "reason": "simulated: the platform voided the hand"})
                break
            self.move()
            moves += 1
        if self.rules.maima and self._last_win_self_draw() and remaining(self.hs) > 0:
            self.emit({"type": "ma_drawn", "tile": TILE_NAMES[self.wall[43 - self.hs.back]]})
        if hidden_wall:
            self.emit({"type": "wall_revealed", "wall": wall_names})
        self.report(n)

    def _last_win_self_draw(self) -> bool:
        rec = self.hs.record
        return rec.end == "hu" and bool(rec.wins) and rec.wins[0].source is None

    def report(self, n: int) -> None:
        rng, p = self.rng, self.policy
        if rng.random() >= p.report:
            return
        settled = [s for s in self.state.settlements if s.hand == n]
        if not settled:
            return
        lines: dict[tuple[Any, Any], int] = {}
        for t in settled[-1].transfers:
            lines[(t.from_, t.to)] = lines.get((t.from_, t.to), 0) + t.amount
        transfers = [{"from": a, "to": b, "amount": amount} for (a, b), amount in lines.items()]
        if rng.random() < p.report_wrong:
            if transfers:
                line = transfers[rng.randrange(len(transfers))]
                wrong = line["amount"] + rng.choice((-1, 1, 2, 5))
                line["amount"] = wrong if wrong >= 1 else line["amount"] + 1  # amounts are ≥ 1 (admission)
            else:
                transfers.append({"from": 0, "to": 1, "amount": 1})
        self.emit({"type": "settlement_reported", "hand": n, "transfers": transfers})

    # --- one move: chosen among engine.legal_actions(state) ----------------------------------
    def take(self, a: Action) -> None:
        if a.type == "tile_drawn" and a.tile is None:  # the engine does not know the wall yet
            hs = self.hs
            back = hs.phase in ("replacement", "rob")
            a = msgspec.structs.replace(a, tile=self.wall[43 - hs.back] if back else self.wall[hs.front])
        wire: Wire = msgspec.to_builtins(engine.to_event(a, "x"))
        del wire["id"]
        if wire.get("at", 0) is None:
            del wire["at"]
        if wire.get("hidden") == []:
            del wire["hidden"]
        self.emit(wire)

    def move(self) -> None:
        acts = engine.legal_actions(self.state)
        if not acts:
            raise SimulationError(f"{self.table_id}: no legal action in phase {self.hs.phase}")
        if self.hs.phase == "discard":
            self.act_turn(acts)
        else:
            self.act_claim(acts)

    def act_turn(self, acts: list[Action]) -> None:
        rng, p, hs = self.rng, self.policy, self.hs
        seat = hs.turn
        for a in acts:
            if a.type == "hu" and rng.random() < p.take_self_draw:
                return self.take(a)
        for a in acts:
            if a.type == "kong":
                chance = p.concealed_kong if a.kind == "concealed" else p.added_kong
                if rng.random() < chance:
                    return self.take(a)
        discards = {a.tile: a for a in acts if a.type == "tile_discarded"}
        declares: dict[int | None, Action] = {}
        for a in acts:
            if a.type == "liang_dao" and (a.tile not in declares or rng.random() < 0.5):
                declares[a.tile] = a
        if hs.liang_dao[seat] is not None and hs.drawn in discards:
            return self.take(discards[hs.drawn])
        for k, w in discard_order(hs.concealed[seat], rng, p.random_discard):
            if w and k in declares and rng.random() < p.declare_liang_dao:
                return self.take(declares[k])
            if k in discards:
                return self.take(discards[k])
        raise SimulationError(f"{self.table_id}: seat {seat} has no legal discard")

    def act_claim(self, acts: list[Action]) -> None:
        rng, p, hs = self.rng, self.policy, self.hs
        take = p.take_rob if hs.phase == "rob" else p.take_discard_win
        wins = {a.winners: a for a in acts if a.type == "hu"}
        singles = sorted(w[0] for w in wins if len(w) == 1)
        chosen = tuple(s for s in singles if rng.random() < take)
        if chosen in wins:
            return self.take(wins[chosen])
        if chosen:
            return self.take(wins[chosen[:1]])
        for a in acts:
            if a.type == "kong" and rng.random() < p.exposed_kong:
                return self.take(a)
        for a in acts:
            if a.type == "peng" and rng.random() < p.peng:
                return self.take(a)
        for a in acts:
            if a.type in ("tile_drawn", "hand_exhausted"):
                return self.take(a)
        raise SimulationError(f"{self.table_id}: nothing to do in phase {hs.phase}")


def simulate_table(
    rng: random.Random,
    hands: int,
    rules_spec: dict[str, Any] | None = None,
    table_id: str = "sim",
    policy: Policy | None = None,
    *,
    start: datetime | None = None,
    players: Sequence[str] | None = None,
) -> list[Wire]:
    """The events (wire dicts) of one simulated table of ``hands`` hands, ending in table_closed;
    with ``start`` every event has an ``at``, with ``players`` those three play (module docstring)."""
    if players is not None and (len(players) != 3 or len(set(players)) != 3):
        raise ValueError(f"a table needs three different players, not {list(players)!r}")
    table = _Table(rng, rules_spec or {"preset": "default"}, table_id, policy or Policy(), start, players)
    return table.play(hands)
