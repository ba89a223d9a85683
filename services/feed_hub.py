"""The live feed's listener (``GET /v1/feed``, services/api/feed.py): one per serving process.

A thread holds one connection that ``LISTEN``s on ``kwx_feed``; the projector NOTIFYs each tenant
with new feed rows in its batch's transaction (projections/feed.py), and the hub wakes that
tenant's open feeds (an :class:`asyncio.Event` each, set on its own loop). It also counts the open
feeds against the process's bound (``KWX_FEED_MAX``) and the ``kwx_feeds_open`` gauge. When the
connection is lost the streams fall back on their poll (``KWX_FEED_POLL``) until it listens again.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading

import psycopg

from projections import feed as feed_model
from services import metrics
from services.errors import Unavailable
from services.logs import get_logger

log = get_logger("kwx.feed")


class Hub:
    """One per process: a thread LISTENs on ``kwx_feed`` (the projector NOTIFYs each tenant with new
    rows, in its transaction) and wakes that tenant's open feeds; counts the open feeds."""

    def __init__(self, conninfo: str, limit: int) -> None:
        self.conninfo = conninfo
        self.limit = limit
        self.open = 0
        self._subs: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.listening = False

    def acquire(self) -> None:
        with self._lock:
            if self.open >= self.limit:
                raise Unavailable(
                    f"too many open feeds in this process (KWX_FEED_MAX={self.limit}); retry",
                    message_zh=f"本进程打开的实时推送太多（KWX_FEED_MAX={self.limit}），请重试",
                )
            self.open += 1
            metrics.FEEDS_OPEN.inc()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="kwx-feed-listen", daemon=True)
                self._thread.start()

    def release(self) -> None:
        with self._lock:
            self.open -= 1
            metrics.FEEDS_OPEN.dec()

    def subscribe(self, tenant: str) -> tuple[asyncio.AbstractEventLoop, asyncio.Event]:
        sub = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            self._subs.setdefault(tenant, set()).add(sub)
        return sub

    def unsubscribe(self, tenant: str, sub: tuple[asyncio.AbstractEventLoop, asyncio.Event]) -> None:
        with self._lock:
            subs = self._subs.get(tenant)
            if subs is not None:
                subs.discard(sub)
                if not subs:
                    del self._subs[tenant]

    def _wake(self, tenant: str) -> None:
        with self._lock:
            subs = list(self._subs.get(tenant, ()))
        for loop, event in subs:
            with contextlib.suppress(RuntimeError):  # its loop has closed
                loop.call_soon_threadsafe(event.set)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(3)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with psycopg.connect(self.conninfo, autocommit=True) as conn:
                    conn.execute(f"LISTEN {feed_model.CHANNEL}")
                    self.listening = True
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=0.5):
                            self._wake(note.payload)
            except psycopg.Error as exc:  # the streams poll meanwhile; listen again in a second
                self.listening = False
                log.warning("feed_listen_lost", error=str(exc)[:300])
                self._stop.wait(1.0)
        self.listening = False
