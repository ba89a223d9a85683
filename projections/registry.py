"""Every read model the projector maintains, by name (the name of its checkpoint)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from sqlalchemy import Connection

from projections import discovery, discrepancies, feed, hand_settlements, ledger, player_stats, snapshots
from projections.model import Fact

MODULES: tuple[ModuleType, ...] = (
    hand_settlements, ledger, player_stats, discrepancies, snapshots, discovery, feed,
)  # fmt: skip
NAMES: tuple[str, ...] = tuple(m.NAME for m in MODULES)
BY_NAME: dict[str, ModuleType] = {m.NAME: m for m in MODULES}

RowsFn = Callable[[Fact], list[Any]]
WriteFn = Callable[[Connection, list[Any]], None]
