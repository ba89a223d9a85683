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
every worker and every host. When the shared storage does not answer, requests are let through
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
        from limits import parse_many, storage, strategies

        self.storage_uri = storage_uri
        self.local = storage_uri.startswith("memory://")  # no I/O: checked on the event loop
        self._storage = storage.storage_from_string(storage_uri)
        self._limiter = strategies.FixedWindowRateLimiter(self._storage)
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

    def check(self, principal: Principal) -> None:
        """Count one request of ``principal``; :class:`RateLimited` if that is over a limit (the
        request is not counted against the limits after the one it broke)."""
        try:
            for scope, setting, item in self._rules:
                who = principal.key_id if scope == "key" else principal.tenant
                if not self._limiter.hit(item, scope, who):
                    reset = self._limiter.get_window_stats(item, scope, who).reset_time
                    retry = max(1, math.ceil(reset - time.time()))
                    raise RateLimited(
                        f"more than {item.amount} requests per {_period(item)} for this {scope} "
                        f"({setting}); retry in {retry} s",
                        message_zh=f"此{'密钥' if scope == 'key' else '租户'}的请求超过每"
                        f"{_period(item, 'zh')} {item.amount} 次（{setting}），请 {retry} 秒后重试",
                        scope=scope,
                        limit=str(item),
                        retry_after=retry,
                    )
        except RateLimited:
            raise
        except Exception as exc:  # the shared storage is down: let the request through
            now = time.monotonic()
            if now - self._complained > 10:
                self._complained = now
                log.warning("rate_limit_storage_unavailable", storage=self.storage_uri.split("@")[-1],
                            detail=str(exc)[:200])  # fmt: skip


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
