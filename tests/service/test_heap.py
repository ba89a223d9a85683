"""services.heap.settle: the start-up objects frozen, the young generation collected less often,
cycles still collected."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from services import heap


@pytest.fixture()
def restored_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def test_settle_freezes_what_is_alive_and_raises_the_young_threshold(restored_gc: None) -> None:
    kept = [object() for _ in range(10)]
    middle, old = gc.get_threshold()[1:]
    heap.settle()
    assert gc.get_freeze_count() >= len(gc.get_referents(kept))  # kept and more: frozen
    assert gc.get_threshold() == (max(700, heap.YOUNG_THRESHOLD), middle, old)
    assert not any(o is kept for o in gc.get_objects())  # frozen objects are not traversed


def test_cycles_made_after_settle_are_still_collected(restored_gc: None) -> None:
    heap.settle()
    a, b = Node(), Node()
    a.other, b.other = b, a
    probe = weakref.ref(a)
    del a, b
    assert probe() is not None  # a cycle: reference counting alone never frees it
    gc.collect()
    assert probe() is None
