"""Reads take turns, fairly by tenant, and a backlog is a quick 503 (issue 11 §3; docs/faults.md).

Every read route is a plain ``def``: FastAPI runs it in anyio's thread pool (40 threads), where
it waits for one of the process's ``KWX_POOL_SIZE`` (4) connections. Without a gate, 500 reads at
once filled the 40 threads and queued the other 460 in anyio's limiter, first come first served
and without end: another tenant's read waited behind the whole backlog, and the pool's 10-s wait
was the only bound. :class:`ReadGate` (pure ASGI, after the append fast path) admits
``GET``/``HEAD`` requests:

- at most ``KWX_READ_CONCURRENCY`` (default: the pool size) run at once, so the threads never
  pile up on the pool;
- the others wait on the event loop (a future each, no thread), **round robin by tenant** (the
  tenant of the caller's key when this process knows the key, else the key's id; ``/v1/health``
  and requests without a key have a turn of their own): when a turn frees, it goes to the next
  tenant that has a request waiting, so one tenant's flood delays another tenant's read by about
  one request per flooding tenant, not by the flood;
- at most ``KWX_READ_QUEUE`` (256) wait; a newcomer finding it full takes the place of the last
  waiter of the tenant with the most waiting (if that is another tenant), else it is refused;
  no request waits more than ``KWX_READ_WAIT`` seconds (2). The refused and the timed-out get
  **503 ``unavailable``** with ``Retry-After: 1`` at once — the "quick 503" of a bounded wait,
  not a 10-s hang.

A request gives its turn back when its answer starts (every read route builds its whole answer
before that; the NDJSON export then reads page by page, each page a short checkout of its own) or
when it ends. Why not a library: anyio's ``CapacityLimiter`` and asyncio's ``Semaphore`` are
first-come-first-served with no bound on the queue, and none of the kept ASGI limiters share
turns between tenants; this is ≈ 80 lines over asyncio futures.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict, deque
from typing import TYPE_CHECKING

import msgspec
import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.api.answers import RETRY_AFTER
from services.logs import get_logger
from services.store.keys import parse_key_id

if TYPE_CHECKING:
    from services.bootstrap import Container

log = get_logger("kwx.gate")


class _Refused(Exception):
    def __init__(self, message: str, message_zh: str) -> None:
        self.message, self.message_zh = message, message_zh


class Turns:
    """The turns of one process: :meth:`take` (await; raises ``_Refused``) and :meth:`give`."""

    def __init__(self, concurrency: int, queue: int, wait: float) -> None:
        self.concurrency, self.queue, self.wait = concurrency, queue, wait
        self.running = 0
        self.waiting: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()
        self.queued = 0

    async def take(self, who: str) -> None:
        if self.running < self.concurrency and not self.queued:
            self.running += 1
            return
        if self.queued >= self.queue and not self._evict_for(who):
            raise _Refused(f"too many reads are waiting in this process (KWX_READ_QUEUE={self.queue}); retry",
                           f"本进程等待中的读取太多（KWX_READ_QUEUE={self.queue}），请重试")  # fmt: skip
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting.setdefault(who, deque()).append(future)
        self.queued += 1
        try:
            await asyncio.wait_for(asyncio.shield(future), self.wait)
        except TimeoutError:
            if future.done() and not future.cancelled() and future.exception() is None:
                return  # the turn came just as the wait ended: keep it
            self._drop(who, future)
            raise _Refused(f"no turn to read within {self.wait:g} s (KWX_READ_WAIT); retry",
                           f"{self.wait:g} 秒内没有轮到读取（KWX_READ_WAIT），请重试") from None  # fmt: skip
        except asyncio.CancelledError:  # the client left, or shutdown
            if future.done() and not future.cancelled() and future.exception() is None:
                self.give()
            else:
                self._drop(who, future)
            raise

    def give(self) -> None:
        """A turn is over: hand it to the next tenant in line, else free it."""
        while self.waiting:
            who, line = next(iter(self.waiting.items()))
            future = line.popleft()
            self.queued -= 1
            if line:
                self.waiting.move_to_end(who)  # round robin: this tenant's next waits its turn
            else:
                del self.waiting[who]
            if not future.done():
                future.set_result(None)
                return  # the turn passes on: running stays the same
        self.running -= 1

    def _evict_for(self, who: str) -> bool:
        """Make room for ``who`` by refusing the newest waiter of the tenant with the most waiting,
        if that is another tenant with more waiting than ``who``."""
        mine = len(self.waiting.get(who, ()))
        biggest, line = max(self.waiting.items(), key=lambda item: len(item[1]))
        if biggest == who or len(line) <= mine + 1:
            return False
        future = line.pop()
        self.queued -= 1
        message = (f"too many reads are waiting in this process (KWX_READ_QUEUE={self.queue}) and this "
                   "tenant has the most of them; retry")  # fmt: skip
        future.set_exception(_Refused(message, f"本进程等待中的读取太多（KWX_READ_QUEUE={self.queue}），"
                                                "本租户等待的最多，请重试"))  # fmt: skip
        return True

    def _drop(self, who: str, future: asyncio.Future[None]) -> None:
        line = self.waiting.get(who)
        if line is not None and future in line:
            line.remove(future)
            self.queued -= 1
            if not line:
                del self.waiting[who]


class ReadGate:
    """ASGI middleware: reads (``GET``, ``HEAD``) take :class:`Turns` (module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._turns: Turns | None = None

    def _turns_of(self, scope: Scope) -> Turns | None:
        if self._turns is None:
            container: Container | None = getattr(scope["app"].state, "container", None)
            if container is None:
                return None
            s = container.settings
            self._turns = Turns(s.read_concurrency or s.pool_size, s.read_queue, s.read_wait)
        return self._turns

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        turns = self._turns_of(scope)
        if turns is None:
            await self.app(scope, receive, send)
            return
        try:
            await turns.take(_tenant_of(scope))
        except _Refused as refused:
            await _busy(send, refused.message, refused.message_zh)
            return
        held = True

        async def send_(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start" and held:
                held = False
                turns.give()
            await send(message)

        try:
            await self.app(scope, receive, send_)
        finally:
            if held:
                turns.give()


def _tenant_of(scope: Scope) -> str:
    """Whose turn a request takes: the key's tenant when this process knows the key (its cache:
    no database), else the key's id (a new or unknown key), ``-`` without a key (health)."""
    authorization = next((v for k, v in scope["headers"] if k == b"authorization"), b"")
    scheme, _, key = authorization.decode("latin-1").partition(" ")
    key = key.strip()
    if scheme.lower() != "bearer" or not key:
        return "-"
    container: Container = scope["app"].state.container
    known, principal = container.keys.cached(key)
    if known and principal is not None:
        return f"tenant:{principal.tenant}"
    return f"key:{parse_key_id(key) or '?'}"


async def _busy(send: Send, message: str, message_zh: str) -> None:
    structlog.contextvars.bind_contextvars(outcome="read_busy", message=message)
    body = msgspec.json.encode({"error": "unavailable", "message": message, "message_zh": message_zh})
    length = (b"content-length", str(len(body)).encode())
    headers = [(b"content-type", b"application/json"), length, RETRY_AFTER]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})
