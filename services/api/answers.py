"""What an exception raised while serving a request answers: one mapping, shared by the app's
exception handlers (services.api.app) and the append fast path (services.api.tables.FastAppend),
so both give the same status and the same ``{"error", "message", …}`` body."""

from __future__ import annotations

from typing import Any

import psycopg
import structlog
from psycopg_pool import PoolTimeout

from services.errors import ServiceError
from services.logs import get_logger

log = get_logger("kwx.api")


def error_answer(exc: Exception) -> tuple[int, dict[str, Any]]:
    """(status, body) for ``exc``; the outcome goes onto the request's access line, and anything
    unexpected is logged with its traceback and answered 500 without details."""
    if isinstance(exc, ServiceError):
        structlog.contextvars.bind_contextvars(outcome=exc.code, message=exc.message[:300])
        return exc.status, exc.body()
    if isinstance(exc, PoolTimeout):
        log.warning("pool_timeout")
        return 503, {"error": "unavailable", "message": "the database is busy; retry"}
    if isinstance(exc, psycopg.OperationalError):
        log.warning("database_unavailable", detail=str(exc)[:200])
        return 503, {"error": "unavailable", "message": "the database is not reachable; retry"}
    log.error("unexpected_error", exc_info=exc)
    return 500, {"error": "internal", "message": "internal error; see the service log"}
