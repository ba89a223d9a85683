"""The read side (issue 12): each checkpointed read model's queries live in projections/queries,
one log-order condition is written once (projections/log.py), and a query answers one tenant only
— called on a connection, as the routes call it through ``services.db.reading``."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

import projections.queries
from domain import engine
from projections import registry
from projections.log import after, checkpoint_of, log_order
from projections.projector import Projector
from projections.queries.discrepancies import FeedPage, pending
from projections.queries.freshness import Freshness, Status
from projections.queries.ledger import LedgerPage
from projections.queries.player_stats import Leaderboard, PlayerStats
from tests.service.test_tenants import _event, _misreported

ROOT = Path(__file__).resolve().parents[2]


def _queries() -> list[type]:
    found = []
    for info in pkgutil.iter_modules(projections.queries.__path__):
        module = importlib.import_module(f"projections.queries.{info.name}")
        found += [v for v in vars(module).values() if dataclasses.is_dataclass(v) and hasattr(v, "models")]
    return found


def test_every_query_names_the_checkpointed_models_it_reads() -> None:
    queries = _queries()
    assert {q.__name__ for q in queries} >= {"PlayerStats", "Leaderboard", "LedgerPage", "FeedPage",
                                             "Freshness", "Status"}  # fmt: skip
    for q in queries:
        assert q.models and set(q.models) <= set(registry.NAMES), q  # type: ignore[attr-defined]
        assert callable(q) and dataclasses.fields(q) is not None


def test_the_log_order_condition_is_written_once() -> None:
    """No module but projections/log.py spells the (epoch, tx_id, position) comparison or order."""
    pattern = re.compile(
        r"\(\s*(\w+\.)?epoch,\s*(\w+\.)?tx_id,\s*(\w+\.)?position\s*\)\s*[<>]|ORDER BY \w*\.?epoch"
    )
    spelled = []
    for folder in ("services", "projections"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path != ROOT / "projections" / "log.py" and pattern.search(path.read_text()):
                spelled.append(str(path.relative_to(ROOT)))
    assert spelled == []
    assert after("e") == "(e.epoch, e.tx_id, e.position) > (%s, (%s)::text::xid8, %s)"
    assert log_order("e") == "e.epoch, e.tx_id, e.position"


def test_a_checkpoint_is_named_by_a_read_models_name_only() -> None:
    assert "c.name = 'discrepancies'" in checkpoint_of("discrepancies")[0]
    with pytest.raises(ValueError, match="not a read model name"):
        checkpoint_of("x'; DROP TABLE events; --")


@pytest.mark.db
def test_each_query_answers_its_own_tenant_only(private_db: tuple[Any, str]) -> None:
    store, _url = private_db
    run = uuid.uuid4().hex[:8]
    x, y = f"x-{run}", f"y-{run}"
    events = _misreported(7)
    players = events[0]["players"]
    for tenant in (x, y):
        store.append(tenant, "t-7", 0, [_event(e) for e in events])
    store.append(x, "t-8", 0, [_event(e) for e in _misreported(300)])
    with store.pool.connection() as conn:
        assert pending(conn, x) and pending(conn, y)
        assert not Freshness()(conn)["caught_up"]
        assert all(s["behind"] >= 2 for s in Status()(conn))
    Projector(store.pool, store, engine).catch_up()
    with store.pool.connection() as conn:
        assert not pending(conn, x) and not pending(conn, y)
        assert Freshness()(conn)["caught_up"]
        assert [s["behind"] for s in Status()(conn)] == [0] * len(registry.NAMES)
        fx, fy = FeedPage(x, 0, 100)(conn), FeedPage(y, 0, 100)(conn)
        assert [d["table_id"] for d in fy["discrepancies"]] == ["t-7"] and fy["caught_up"]
        assert sorted(d["table_id"] for d in fx["discrepancies"]) == ["t-7", "t-8"]
        assert [d["seq"] for d in fx["discrepancies"]] == [1, 2]  # the tenant's own numbering
        mine = PlayerStats(y, players[0])(conn)
        assert mine is not None and mine["overall"]["hands_played"] >= 1
        assert PlayerStats(f"z-{run}", players[0])(conn) is None  # another tenant: nothing
        assert LedgerPage(f"z-{run}", "player", players[0], 0, 10)(conn) is None
        house = LedgerPage(f"z-{run}", "house", "house", 0, 10)(conn)
        assert house is not None and (house["balance"], house["entries"]) == (0, [])
        page = LedgerPage(y, "player", players[0], 0, 1000)(conn)
        assert page is not None and {e["table_id"] for e in page["entries"]} == {"t-7"}
        board = Leaderboard(y, by="hands_played")(conn)
        assert {p["player_id"] for p in board["players"]} == set(players)
        assert board["next_offset"] is None
