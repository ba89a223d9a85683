"""What an exception raised while serving a request answers: one mapping, shared by the app's
exception handlers (services.api.app) and the append fast path (services.api.tables.FastAppend),
so both give the same status and the same ``{"error", "message", …}`` body.

Database faults (docs/faults.md) are ``503 unavailable`` with a message saying which, and a
``Retry-After`` header (``RETRY_AFTER``); never a 500."""

from __future__ import annotations

from typing import Any

import structlog

from services.errors import ServiceError
from services.logs import get_logger
from services.store.faults import fault

log = get_logger("kwx.api")

RETRY_AFTER = (b"retry-after", b"1")  # seconds; on every 503


def retry_after(status: int, body: dict[str, Any]) -> tuple[bytes, bytes] | None:
    """The ``Retry-After`` header of an answer: ``RETRY_AFTER`` on a 503, the seconds until the
    rate limit's window ends on a 429 (``retry_after`` in its body), else None."""
    if status == 503:
        return RETRY_AFTER
    if status == 429:
        return (b"retry-after", str(body.get("retry_after", 1)).encode())
    return None


def _unavailable(message: str, message_zh: str) -> tuple[int, dict[str, Any]]:
    structlog.contextvars.bind_contextvars(outcome="unavailable", message=message)
    return 503, {"error": "unavailable", "message": message, "message_zh": message_zh}


def error_answer(exc: Exception) -> tuple[int, dict[str, Any]]:
    """(status, body) for ``exc``; the outcome goes onto the request's access line, and anything
    unexpected is logged with its traceback and answered 500 without details."""
    if isinstance(exc, ServiceError):
        structlog.contextvars.bind_contextvars(outcome=exc.code, message=exc.message[:300])
        return exc.status, exc.body()
    found = fault(exc)  # a database fault (services/store/faults.py: the driver's errors, translated)
    if found is not None:
        log.warning(found.event, **found.details)
        return _unavailable(found.message, found.message_zh)
    log.error("unexpected_error", exc_info=exc)
    return 500, {"error": "internal", "message": "internal error; see the service log",
                 "message_zh": "服务内部错误：请查看服务日志"}  # fmt: skip
