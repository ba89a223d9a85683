"""Helpers of the rules audit (tests/domain/test_audit_*.py): stream in → ruling / settlement out.

Built on tests/domain/engine_dsl.py (compact tile notation). Each audit test derives its expected
result by hand, in a comment, from RULES.md and the seed sentence it quotes.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from domain import engine
from domain.events import Event
from domain.facts import Settlement
from domain.state import TableState
from tests.domain.engine_dsl import given, opened, started, when


def table(h0: str, h1: str, h2: str, rules: dict[str, Any] | None = None, **kw: Any) -> TableState:
    """A table opened with ``rules`` (default preset) and hand 1 dealt (dealer 0 unless said)."""
    spec = {"preset": "default", **(rules or {})}
    base = kw.pop("base", 1)
    return given(opened(spec, base=base), started(h0, h1, h2, **kw))


def play(state: TableState, *events: Event) -> TableState:
    """Apply events that must all be accepted without a ruling."""
    for ev in events:
        new, ruling, ok = engine.step(state, ev)
        assert ok and ruling is None, ruling
        state = new
    return state


def code(state: TableState, ev: Event) -> str | None:
    """The ruling code of ``ev`` as the next event (None = legal)."""
    r = when(state, ev)
    return r.code if r is not None else None


def last(state: TableState) -> Settlement:
    assert state.settlements, "no hand settled"
    return state.settlements[-1]


def money(s: Settlement) -> Counter[tuple[Any, Any, int, str]]:
    """The transfers as a multiset of (from, to, amount, reason)."""
    return Counter((t.from_, t.to, t.amount, t.reason) for t in s.transfers)


def pats(s: Settlement, i: int = 0) -> dict[str, int]:
    """Pattern id → x of win ``i`` (an id met twice multiplies in)."""
    out: dict[str, int] = {}
    for p in s.wins[i].patterns:
        out[p.id] = out.get(p.id, 1) * p.x
    return out
