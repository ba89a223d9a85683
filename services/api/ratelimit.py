"""Rate limits per API key and per tenant (issue 11 §5; docs/faults.md, Limits).

``KWX_RATE_LIMIT_KEY`` (default ``1000/second``) bounds the requests of one key,
``KWX_RATE_LIMIT_TENANT`` (``2000/second``) those of all of a tenant's keys together, in the
`limits <https://limits.readthedocs.io>`_ library's notation (``100/second``, several at once:
``100/second;3000/minute``); ``off`` turns either off. A request over a limit is answered **429
``rate_limited``** with ``Retry-After`` (whole seconds until its window ends) and nothing of it is
done. Every request with a key is counted — the append fast path too, where the check is one
in-memory counter per limit (≈ 6 µs each) — but ``/v1/health`` needs no key and is never limited.

The counts are fixed windows of the rate's period (``limits``' ``FixedWindowRateLimiter``: the
cheapest of its strategies; a client can get up to twice the rate across the edge of two
windows). They live where ``KWX_RATE_LIMIT_STORAGE`` says: ``memory://`` (the default, nothing to
run) counts in each process, so with ``kwx serve --workers N`` a key gets up to N times the rate
(one count per worker); ``redis://HOST:PORT`` (``pip install redis``) shares one count between
every worker and every host. The memory counts are ``limits.aio``'s, awaited on the event loop:
its sweep of expired counts is an asyncio task. The threaded ``limits`` memory storage starts a
``threading.Timer`` for that sweep whenever the last one has ended (10 ms), so a worker serving a
request every 10 ms or slower started an OS thread per request, on the event loop, which waits for
the thread to start: ≈ 0.1–0.45 ms of CPU a request, where an append of one event costs ≈ 1 ms
(docs/benchmarks.md, The rate limits' cost). ``redis://`` keeps the threaded storage, its round
trip in the thread pool. When the shared storage does not answer, requests are let through
(fail open, logged as ``rate_limit_storage_unavailable`` at most every 10 s): a limit is a guard,
not a reason to refuse all traffic.

Why a library: ``limits`` is kept (the engine of Flask-Limiter and SlowAPI), has the window
strategies and the shared storages; a hand-written token bucket would have neither.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

from services.errors import RateLimited
from services.logs import get_logger
from services.settings import Settings
from services.store.keys import Principal

if TYPE_CHECKING:
    from services.bootstrap import Container

log = get_logger("kwx.ratelimit")


class RateLimits:
    """The limits of one process, from Settings; :meth:`check` raises :class:`RateLimited`."""

    def __init__(self, key_rate: str, tenant_rate: str, storage_uri: str = "memory://") -> None:
        from limits import parse_many

        self.storage_uri = storage_uri
        self.local = storage_uri.startswith("memory://")  # no I/O: checked on the event loop
        if self.local:
            from limits.aio import storage as aio_storage
            from limits.aio import strategies as aio_strategies

            self._limiter: Any = aio_strategies.FixedWindowRateLimiter(aio_storage.MemoryStorage())
        else:
            from limits import storage, strategies

            self._limiter = strategies.FixedWindowRateLimiter(storage.storage_from_string(storage_uri))
        self._rules: list[tuple[str, str, Any]] = [
            (scope, setting, item)
            for scope, setting, rate in (("key", "KWX_RATE_LIMIT_KEY", key_rate),
                                         ("tenant", "KWX_RATE_LIMIT_TENANT", tenant_rate))
            for item in (parse_many(rate) if rate else [])
        ]  # fmt: skip
        self._complained = 0.0

    @classmethod
    def from_settings(cls, settings: Settings) -> RateLimits | None:
        """None when both limits are off."""
        if not settings.rate_limit_key and not settings.rate_limit_tenant:
            return None
        return cls(settings.rate_limit_key, settings.rate_limit_tenant, settings.rate_limit_storage)

    async def check(self, principal: Principal) -> None:
        """Count one request of ``principal``; :class:`RateLimited` if that is over a limit (the
        request is not counted against the limits after the one it broke). On the event loop for
        the memory counts, in the thread pool for a shared storage (its round trip)."""
        if self.local:
            for scope, setting, item in self._rules:
                who = principal.key_id if scope == "key" else principal.tenant
                if not await self._limiter.hit(item, scope, who):
                    stats = await self._limiter.get_window_stats(item, scope, who)
                    raise _refused(scope, setting, item, stats.reset_time)
            return
        from starlette.concurrency import run_in_threadpool

        await run_in_threadpool(self._check_shared, principal)

    def _check_shared(self, principal: Principal) -> None:
        try:
            for scope, setting, item in self._rules:
                who = principal.key_id if scope == "key" else principal.tenant
                if not self._limiter.hit(item, scope, who):
                    reset = self._limiter.get_window_stats(item, scope, who).reset_time
                    raise _refused(scope, setting, item, reset)
        except RateLimited:
            raise
        except Exception as exc:  # the shared storage is down: let the request through
            now = time.monotonic()
            if now - self._complained > 10:
                self._complained = now
                log.warning("rate_limit_storage_unavailable", storage=self.storage_uri.split("@")[-1],
                            detail=str(exc)[:200])  # fmt: skip


def _refused(scope: str, setting: str, item: Any, reset: float) -> RateLimited:
    retry = max(1, math.ceil(reset - time.time()))
    return RateLimited(
        f"more than {item.amount} requests per {_period(item)} for this {scope} ({setting}); "
        f"retry in {retry} s",
        message_zh=f"此{'密钥' if scope == 'key' else '租户'}的请求超过每"
        f"{_period(item, 'zh')} {item.amount} 次（{setting}），请 {retry} 秒后重试",
        scope=scope,
        limit=str(item),
        retry_after=retry,
    )


_PERIOD_ZH = {"second": "秒", "minute": "分钟", "hour": "小时", "day": "天", "month": "月", "year": "年"}


def _period(item: Any, lang: str = "en") -> str:
    """The limit's window: "minute" / "10 minutes", in Chinese "分钟" / " 10 分钟"."""
    multiple = item.get_expiry() // item.GRANULARITY.seconds
    name = item.GRANULARITY.name
    if lang == "zh":
        name = _PERIOD_ZH.get(name, name)
        return name if multiple == 1 else f" {multiple} {name}"
    return name if multiple == 1 else f"{multiple} {name}s"


def limits_of(container: Container) -> RateLimits | None:
    """The container's rate limits, built on first use from its settings (None: off)."""
    return container.rate_limits
