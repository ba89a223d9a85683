"""structlog as JSON lines on stdout: request id and table id bound per request (contextvars)."""

from __future__ import annotations

import logging
import sys

import msgspec
import structlog

from services import tracing


def _dumps(obj: object, **_: object) -> str:
    return msgspec.json.encode(obj, enc_hook=str).decode()


class _Stdout:
    """Whatever ``sys.stdout`` is when a line is written, not when logging was configured: a
    stream replaced later (a test's capture, closed after it) never leaves the loggers writing to a
    closed file."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()


def configure(level: str = "info") -> None:
    numeric = getattr(logging, level.upper(), logging.INFO)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            tracing.add_ids,  # trace_id, span_id inside a span (services/tracing.py; off: nothing)
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.dict_tracebacks,
            structlog.processors.JSONRenderer(serializer=_dumps),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=_Stdout()),  # type: ignore[arg-type]
        cache_logger_on_first_use=True,
    )


def get_logger(name: str = "kwx") -> structlog.typing.FilteringBoundLogger:
    return structlog.get_logger(name)  # type: ignore[no-any-return]
