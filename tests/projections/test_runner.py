"""The background runner: a burst of appends (NOTIFYs) → one batch after the linger, not one per
append; appends that keep coming are gathered into one batch, for at most ``gather_seconds``; and
without lingering it still wakes on every notification."""

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


def _notify_stream(database_url: str, seconds: float, spacing: float) -> int:
    """A notification every ``spacing`` seconds for ``seconds``, each its own transaction (an append
    each): how many were sent."""
    sent = 0
    with psycopg.connect(database_url, autocommit=True) as conn:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            conn.execute(f"NOTIFY {CHANNEL}, '{sent}'")
            sent += 1
            time.sleep(spacing)
    return sent


def _calls_during_stream(database_url: str, gather: float) -> tuple[int, int, int]:
    """A notification every 0.05 s for 5 s, each its own transaction (an append each), to a runner
    whose quiet gap (``linger_seconds``) is 2 s — forty times the stream's spacing — and whose
    gathering ends after ``gather`` seconds: (calls before, calls after, notifications sent)."""
    projector = CountingProjector()
    runner = ProjectorRunner(projector, database_url, poll_seconds=60, linger_seconds=2.0,  # type: ignore[arg-type]
                             gather_seconds=gather)  # fmt: skip
    runner.start()
    try:
        assert projector.called.wait(60), "the runner catches up once when it starts"
        first = projector.calls
        sent = _notify_stream(database_url, 5.0, 0.05)
        deadline = time.monotonic() + 60
        while projector.calls == first and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(3.0)  # the last gathering ends 2 s after the last notification; any later call shows
        return first, projector.calls, sent
    finally:
        runner.stop()


def test_appends_that_keep_coming_are_gathered_into_one_batch(database_url: str) -> None:
    """Before, the runner lingered 50 ms (here: 2 s) flat after a wake-up, so a steady stream was a
    batch per linger (three here); now it waits for a quiet gap, and a stream 40 × denser than the
    gap is one batch once it ends."""
    first, calls, sent = _calls_during_stream(database_url, gather=60)
    assert sent >= 20 and calls == first + 1, (first, calls, sent)


def test_gathering_ends_after_gather_seconds_under_a_steady_stream(database_url: str) -> None:
    """The bound on the read models' lag: a stream that never pauses is still projected every
    ``gather_seconds`` (1 s here: ≈ 5 batches in 5 s), never one batch per notification."""
    first, calls, sent = _calls_during_stream(database_url, gather=1.0)
    assert 3 <= calls - first <= 7 and calls - first < sent // 3, (first, calls, sent)


def test_under_steady_appends_the_runner_stops_listening_and_listens_again(database_url: str) -> None:
    """Notifications every 10 ms for 4 s (steady ingest), a 200 ms linger: once they have kept coming
    for ``BUSY_LINGERS`` lingers the runner UNLISTENs for the rest of its gather (a notification
    costs its backend a wake-up: ≈ 1 µs of PostgreSQL's CPU per event under full load), still
    projecting at least once per gather; after the stream it LISTENs again before catching up, so a
    single later notification wakes it — the poll (60 s) cannot."""
    projector = CountingProjector()
    runner = ProjectorRunner(projector, database_url, poll_seconds=60, linger_seconds=0.2,  # type: ignore[arg-type]
                             gather_seconds=2.0)  # fmt: skip
    runner.start()
    try:
        assert projector.called.wait(60), "the runner catches up once when it starts"
        first = projector.calls
        sent = _notify_stream(database_url, 4.0, 0.01)
        assert runner.unlistens >= 1, (runner.unlistens, sent)
        during = projector.calls - first
        assert 1 <= during < sent // 10, (during, sent)  # batches per gather, not per notification
        deadline = time.monotonic() + 60
        while not runner._listening and time.monotonic() < deadline:  # the gather after the stream ends
            time.sleep(0.01)
        time.sleep(0.5)  # past the catch-up that follows the LISTEN
        before, wakeups = projector.calls, runner.wakeups
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(f"NOTIFY {CHANNEL}, 'one'")
        deadline = time.monotonic() + 60
        while projector.calls == before and time.monotonic() < deadline:
            time.sleep(0.01)
        assert projector.calls > before and runner.wakeups > wakeups
    finally:
        runner.stop()
