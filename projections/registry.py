"""Every read model the projector maintains, by name (the name of its checkpoint)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from sqlalchemy import Connection

from projections import discovery, discrepancies, feed, ledger, player_stats, snapshots
from projections.model import Fact

# (``hand_settlements`` until migration 0020: its table is now a view of the feed's settlement entries)
MODULES: tuple[ModuleType, ...] = (ledger, player_stats, discrepancies, snapshots, discovery, feed)
NAMES: tuple[str, ...] = tuple(m.NAME for m in MODULES)
BY_NAME: dict[str, ModuleType] = {m.NAME: m for m in MODULES}

RowsFn = Callable[[Fact], list[Any]]
WriteFn = Callable[[Connection, list[Any]], None]
