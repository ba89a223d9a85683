"""The in-process cache of each table's tip: what this process knows of the table after its last
append here (or as it last read the head, on a cache miss: ``services.store.state.tip_from_head``). Only ever
a guess; every use is checked by the database (docs/operations.md)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from projections.derive import FactCtx


@dataclass(frozen=True, slots=True)
class Tip:
    """What the process knows of a table after its last append here (or its last read of the head):
    the head as committed."""

    version: int
    state: Any
    last_hash: bytes
    snapshot_version: int
    ctx: FactCtx | None = None  # what fact-finding needs beyond the state (None: not known)


Key = tuple[str, str]
"""A table: (tenant, table_id). Each tenant has its own table ids."""


class StateCache:
    """The latest :class:`Tip` per table (:data:`Key`), bounded LRU. A tip is only a guess: every use
    is checked against the stored head version (under ``FOR UPDATE``, or by the fast path's
    conditional ``UPDATE … WHERE version = tip.version``)."""

    def __init__(self, capacity: int = 20_000) -> None:
        self._data: OrderedDict[Key, Tip] = OrderedDict()
        self._lock = threading.Lock()
        self._capacity = capacity
        self.hits = self.misses = 0

    def peek(self, key: Key) -> Tip | None:
        with self._lock:
            return self._data.get(key)

    def get(self, key: Key, version: int) -> Tip | None:
        with self._lock:
            tip = self._data.get(key)
            if tip is not None and tip.version == version:
                self._data.move_to_end(key)
                self.hits += 1
                return tip
            self.misses += 1
            return None

    def put(self, key: Key, tip: Tip) -> None:
        with self._lock:
            current = self._data.get(key)
            if current is not None and current.version > tip.version:
                return
            self._data[key] = tip
            self._data.move_to_end(key)
            while len(self._data) > self._capacity:
                self._data.popitem(last=False)

    def drop(self, key: Key) -> None:
        with self._lock:
            self._data.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
