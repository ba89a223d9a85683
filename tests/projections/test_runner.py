"""The background runner: a burst of appends (NOTIFYs) → one batch after the linger, not one per
append; and without lingering it still wakes on every notification."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
import pytest

from projections.projector import CHANNEL, ProjectorRunner

pytestmark = pytest.mark.db


class CountingProjector:
    def __init__(self) -> None:
        self.calls = 0
        self.called = threading.Event()

    def catch_up(
        self, names: Any = None, max_seconds: float | None = None, *, full_pages: bool = False
    ) -> int:
        self.calls += 1
        self.called.set()
        return 0


def _calls_after_burst(database_url: str, linger: float, notifies: int) -> tuple[int, int]:
    projector = CountingProjector()
    runner = ProjectorRunner(projector, database_url, poll_seconds=60, linger_seconds=linger)  # type: ignore[arg-type]
    runner.start()
    try:
        assert projector.called.wait(60), "the runner catches up once when it starts (LISTEN is set up first)"
        first = projector.calls
        # The burst commits at once (one transaction, distinct payloads, so PostgreSQL folds none of
        # them): however busy the machine, every notification is there within the linger.
        with psycopg.connect(database_url) as conn, conn.transaction():
            for i in range(notifies):
                conn.execute(f"NOTIFY {CHANNEL}, '{i}'")
        deadline = time.monotonic() + 60
        while projector.calls == first and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(max(0.5, 2 * linger))  # any further (stale) wake-up would show here
        return first, projector.calls
    finally:
        runner.stop()


def test_a_burst_of_appends_is_one_batch_after_the_linger(database_url: str) -> None:
    first, calls = _calls_after_burst(database_url, linger=0.5, notifies=5)
    assert calls == first + 1


def test_without_linger_the_runner_still_wakes_on_a_notification(database_url: str) -> None:
    first, calls = _calls_after_burst(database_url, linger=0.0, notifies=1)
    assert calls == first + 1
