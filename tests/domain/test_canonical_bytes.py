"""canonical_bytes (the bytes the hash chain and the idempotency check are over) is msgspec's
sorted-order encoder; it must stay byte-identical to its reference definition (to_builtins, keys
sorted recursively) on every kind of event, or stored chains would stop verifying."""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

import pytest

from domain.engine import pin_rules
from domain.events import EVENT_TYPES, TableOpened, canonical_bytes, canonical_bytes_reference, convert
from domain.rules import PRESETS, RulesError
from domain.simulate import simulate_table
from tests.paths import SHARED

HAND_MADE: list[dict[str, Any]] = [
    {"type": "table_opened", "id": "o", "players": ["甲", "乙", "丙"], "at": "2026-01-02T03:04:05.678+08:00",
     "rules": {"preset": "xiangyang", "cap": None,
               "cap_exempt": {"b": 2, "a": 3, "B": 1, "é": 4, "中": 5, "\U0001f600": 6, "ab": 7, "a b": 8}},
     "base": 5, "violations": "record"},
    {"type": "kong", "id": "k1", "seat": 0, "tile": "5p", "kind": "concealed"},
    {"type": "kong", "id": "k2", "seat": 1, "tile": "C", "kind": "added"},
    {"type": "liang_dao", "id": "l", "seat": 2, "discard": "9s", "hidden": ["1p", "1p", "1p"]},
    {"type": "hu", "id": "h", "winners": [0, 2], "tile": "3s", "from": 1},
    {"type": "hu", "id": "h2", "winners": [1], "tile": "3s", "from": None},
    {"type": "hand_aborted", "id": "a", "reason": "断线 \"quoted\" \\ \n\t"},
    {"type": "ma_drawn", "id": "m", "tile": "F"},
    {"type": "settlement_reported", "id": "s", "hand": 2,
     "transfers": [{"from": 0, "to": "house", "amount": -3}, {"from": "house", "to": 2, "amount": 10**15}]},
    {"type": "hand_exhausted", "id": "x"},
    {"type": "table_closed", "id": "c"},
]  # fmt: skip


def _pinned(event: TableOpened) -> TableOpened:
    try:
        return pin_rules(event)
    except RulesError:
        return event


def _simulated() -> list[Any]:
    events = []
    for seed, preset in enumerate(sorted(PRESETS)):
        for wire in simulate_table(random.Random(7000 + seed), 3, {"preset": preset}, f"cb{seed}"):
            events.append(convert(wire))
    return events


def _conformance() -> list[Any]:
    folder = SHARED / "conformance" / "streams"
    return [convert(json.loads(line)) for p in sorted(folder.glob("*.jsonl"))
            for line in p.read_text().splitlines() if line.strip()]  # fmt: skip


def test_canonical_bytes_equal_the_reference_on_every_kind_of_event() -> None:
    # given simulated tables of every preset, the conformance streams and hand-made events
    events = _simulated() + _conformance() + [convert(e) for e in HAND_MADE]
    events += [_pinned(e) for e in events if isinstance(e, TableOpened)]  # as the store keeps them
    assert {type(e).__struct_config__.tag for e in events} >= set(EVENT_TYPES) - {"wall_revealed"}
    # when encoded both ways, then the bytes are identical
    mismatched = [e for e in events if canonical_bytes(e) != canonical_bytes_reference(e)]
    assert not mismatched, mismatched[:1]
    assert len(events) > 1000


@pytest.mark.parametrize("wire", HAND_MADE, ids=[e["id"] for e in HAND_MADE])
def test_canonical_bytes_sort_keys_at_every_level(wire: dict[str, Any]) -> None:
    data = canonical_bytes(convert(wire))
    assert (
        data
        == json.dumps(json.loads(data), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    )


def test_the_hash_chain_over_known_events_is_unchanged() -> None:
    # digest of the hand-made events with the chain's definition, recorded with the reference encoder
    h = hashlib.sha256(b"kwx-chain-v1:t").digest()
    for wire in HAND_MADE:
        h = hashlib.sha256(h + canonical_bytes(convert(wire))).digest()
    assert h.hex() == DIGEST


DIGEST = "d83f7831462af3d11f4a976b56dd7df81c6d2a4cf4305a90c79e299a7c316c50"
