"""Simulated tables for the projection tests, appended through the HTTP API."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

PRESETS = ("default", "platform_3d", "xiangyang", "shiyan", "xiaogan", "yunmeng", "uncapped")
PLAYERS = ("ann", "bo", "cy", "di", "ed")


def simulated(
    seed: int, hands: int = 2, preset: str | None = None, table_id: str | None = None
) -> list[dict[str, Any]]:
    """A legal simulated table; players drawn from a small pool so statistics add up across tables."""
    from domain.simulate import simulate_table

    rng = random.Random(seed)
    preset = preset or PRESETS[seed % len(PRESETS)]
    events = simulate_table(rng, hands, {"preset": preset}, table_id or f"s{seed}")
    players = rng.sample(PLAYERS, 3)
    events[0] = dict(events[0], players=players)
    return events


def append(
    client: Any, headers: dict[str, str], table_id: str, events: list[dict[str, Any]], size: int = 400
) -> int:
    version = 0
    for start in range(0, len(events), size):
        batch = events[start : start + size]
        r = client.post(f"/v1/tables/{table_id}/events", json={"expected_version": version, "events": batch},
                        headers=headers)  # fmt: skip
        assert r.status_code == 201, r.text
        version = r.json()["version"]
    return version


def violating(seed: int, hands: int = 2, preset: str | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """A ``violations: "record"`` table with recorded rule violations: a random game over known
    walls (``tests.domain.test_engine_actions``), where now and then a random 亮倒 / hu / discard /
    peng / kong that the engine accepts *with* a rule ruling is played instead (a false hu ends the
    hand). The wire events, and the codes of the violations in order."""
    import msgspec

    from domain import engine
    from domain.actions import legal_actions, to_event
    from domain.events import Event, Hu, Kong, LiangDao, Peng, TableOpened, TileDiscarded
    from domain.tiles import TILE_NAMES
    from tests.domain.test_engine_actions import deal, pick

    rng = random.Random(seed)
    preset = preset or PRESETS[seed % len(PRESETS)]
    players = rng.sample(PLAYERS, 3)
    events: list[Event] = [
        TableOpened(id="open", players=players, rules={"preset": preset}, violations="record")
    ]
    state = engine.fold(events)
    codes: list[str] = []
    n = 0
    while state.hand_no < hands or (state.hand is not None and state.hand.phase != "over"):
        n += 1
        hs = state.hand
        if hs is not None and hs.phase != "over" and rng.random() < 0.06:
            for j in range(30):
                seat = rng.randrange(3)
                held = [TILE_NAMES[k] for k, c in enumerate(hs.concealed[seat]) if c]
                near = held + [TILE_NAMES[k] for k in (hs.last_tile, hs.drawn) if k is not None]
                tile = rng.choice(near) if near and rng.random() < 0.8 else rng.choice(TILE_NAMES)
                eid, pick_kind = f"v{n}-{j}", rng.randrange(6)
                candidate: Event
                if pick_kind == 0:
                    candidate = Hu(id=eid, winners=[seat], tile=tile, from_=None)  # type: ignore[arg-type]
                elif pick_kind == 1:
                    winners = sorted(rng.sample([0, 1, 2], rng.choice([1, 1, 2])))
                    candidate = Hu(id=eid, winners=winners, tile=tile, from_=hs.turn)  # type: ignore[arg-type]
                elif pick_kind == 2:
                    candidate = TileDiscarded(id=eid, seat=seat, tile=tile)  # type: ignore[arg-type]
                elif pick_kind == 3:
                    candidate = Peng(id=eid, seat=seat, tile=tile)  # type: ignore[arg-type]
                elif pick_kind == 4:
                    kind = rng.choice(["concealed", "added", "exposed"])
                    candidate = Kong(id=eid, seat=seat, tile=tile, kind=kind)  # type: ignore[arg-type]
                else:
                    hidden = [rng.choice(held)] if held and rng.random() < 0.3 else []
                    candidate = LiangDao(id=eid, seat=seat, discard=tile, hidden=hidden)  # type: ignore[arg-type]
                after, ruling, accepted = engine.step(state, candidate)
                if accepted and ruling is not None:
                    state = after
                    events.append(candidate)
                    codes.append(ruling.code)
                    break
            continue
        action = pick(rng, legal_actions(state))
        event = (
            deal(rng, state.hand_no + 1, action.seat or 0)
            if action.type == "hand_started"
            else to_event(action, f"e{n}")
        )
        state, ruling, accepted = engine.step(state, event)
        assert accepted and ruling is None, (action, ruling)
        events.append(event)
    wire = [msgspec.to_builtins(event) for event in events]
    return [{k: v for k, v in e.items() if not (k == "at" and v is None)} for e in wire], codes


@contextmanager
def reading_as_judge(judge: int = -1) -> Iterator[None]:
    """Readers take a hand start's stored state only from events of their own judge
    (``projections.stored_facts.JUDGE``, read at call time): inside, they are of ``judge`` — by
    default −1, which no event has, so every stored state is hidden (the fold starts from a
    ``proj_table_snapshots`` row or from event 1)."""
    from projections import stored_facts

    mine = stored_facts.JUDGE
    stored_facts.JUDGE = judge
    try:
        yield
    finally:
        stored_facts.JUDGE = mine


def reader_snapshots(conn: Any, table_ids: list[str] | None = None) -> list[tuple[Any, ...]]:
    """The snapshot a reader finds at each ``hand_started`` (``projections.snapshots.latest``: its
    event's stored facts or ``proj_table_snapshots``), as (tenant, table_id, version, md5 of the
    state), in order; of the tables ``table_ids`` (None: every table). Where a snapshot lives is the
    projector's business (docs/projections.md §1): what a reader gets is what must agree."""
    import hashlib

    from projections import snapshots

    starts = conn.execute(
        "SELECT tenant, table_id, version FROM events WHERE type = 'hand_started' "
        "AND (%s::text[] IS NULL OR table_id = ANY(%s::text[])) ORDER BY 1, 2, 3",
        (table_ids, table_ids),
    ).fetchall()
    out = []
    for tenant, table_id, version in starts:
        found = snapshots.latest(conn, tenant, table_id, version)
        if found is not None and found[0] == version:
            out.append((tenant, table_id, version, hashlib.md5(found[1]).hexdigest()))
    return out


def dump_read_models(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every read model's rows on the database ``url`` in a stable order (snapshots as a reader
    finds them, as md5): to compare incremental and rebuilt."""
    import psycopg

    entry_cols = (
        "tenant, account, account_kind, seq, amount, balance, counterparty, counterparty_kind, table_id, "
        "hand, ordinal, line, event, reason, seat, detail, position, detail_zh"
    )
    queries = {
        "settlements": "SELECT * FROM proj_hand_settlements ORDER BY table_id, ordinal",
        "entries": f"SELECT {entry_cols} FROM proj_ledger_entries ORDER BY 1, 3, 2, 4",
        "accounts": "SELECT * FROM proj_ledger_accounts ORDER BY 1, 2, 3",
        "stats": "SELECT * FROM proj_player_stats ORDER BY 1, 2, 3, 4",
        "patterns": "SELECT * FROM proj_player_patterns ORDER BY 1, 2, 3, 4",
        "discrepancies": "SELECT * FROM proj_discrepancies ORDER BY table_id, reported_event",
    }
    with psycopg.connect(url) as conn:
        out = {name: conn.execute(sql).fetchall() for name, sql in queries.items()}
        out["snapshots"] = reader_snapshots(conn)
        return out
