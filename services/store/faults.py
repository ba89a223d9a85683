"""Database faults, translated in one place (docs/faults.md): which driver and pool errors mean
"the database is not there just now" (a ``503 unavailable`` with ``Retry-After``), with the log line
and the message a client reads. The HTTP layer maps a :class:`Fault` to its answer
(services/api/answers.py) without knowing the driver."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import PoolTimeout

from services.db import Unreachable, connection_lost

# What a request can raise from the database besides a ServiceError: the exception classes an
# app's handlers must take (services.api.app).
DATABASE_ERRORS: tuple[type[Exception], ...] = (PoolTimeout, psycopg.OperationalError)


@dataclass(frozen=True, slots=True)
class Fault:
    """A database fault: the warning to log (``event`` with ``details``) and the 503's message."""

    event: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    message_zh: str = "数据库暂时不可用，请重试"


def fault(exc: BaseException) -> Fault | None:
    """The fault ``exc`` is, or None when it is not a database fault."""
    if isinstance(exc, Unreachable):
        return Fault("database_unreachable", "the database is not reachable; retry", _detail(exc),
                     "无法连接数据库，请重试")  # fmt: skip
    if isinstance(exc, PoolTimeout):
        return Fault("pool_timeout", "the database is busy; retry", message_zh="数据库正忙，请重试")
    if isinstance(exc, pg_errors.QueryCanceled):  # statement_timeout (30 s) or a cancel
        return Fault("statement_canceled", "the database did not answer in time; retry", _detail(exc),
                     "数据库未能及时答复，请重试")  # fmt: skip
    if isinstance(exc, pg_errors.LockNotAvailable):  # lock_timeout
        return Fault("lock_timeout", "the table is locked by another request; retry", _detail(exc),
                     "这张牌桌正被另一个请求锁定，请重试")  # fmt: skip
    if isinstance(exc, pg_errors.ReadOnlySqlTransaction):  # a standby (failover in progress)
        return Fault("database_read_only", "the database is read-only just now; retry", _detail(exc),
                     "数据库此刻只读（可能正在切换主库），请重试")  # fmt: skip
    if isinstance(exc, psycopg.OperationalError):
        lost = connection_lost(exc)
        message = (
            "the connection to the database was lost; retry"
            if lost
            else "the database is not available; retry"
        )
        zh = "与数据库的连接断开了，请重试" if lost else "数据库暂时不可用，请重试"
        return Fault("database_unavailable", message, {**_detail(exc), "lost": lost}, zh)
    if connection_lost(exc):  # a Citus worker lost at COMMIT (an internal error, not operational)
        return Fault("database_unavailable", "the connection to the database was lost; retry",
                     {**_detail(exc), "lost": True}, "与数据库的连接断开了，请重试")  # fmt: skip
    return None


def _detail(exc: BaseException) -> dict[str, Any]:
    return {"detail": str(exc)[:200]}
