"""structlog as JSON lines on stdout: request id and table id bound per request (contextvars).

A command whose stdout is its answer (``kwx projections status --json``, ``kwx keys create``)
writes its log lines to stderr instead (:func:`on_stderr`), so a script reads only the answer."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator

import msgspec
import structlog

from services import tracing


def _dumps(obj: object, **_: object) -> str:
    return msgspec.json.encode(obj, enc_hook=str).decode()


_STREAM = ["stdout"]  # the name in ``sys`` the lines go to


class _Stdout:
    """Whatever ``sys.stdout`` (or ``sys.stderr``, :func:`on_stderr`) is when a line is written,
    not when logging was configured: a stream replaced later (a test's capture, closed after it)
    never leaves the loggers writing to a closed file."""

    def write(self, text: str) -> int:
        return getattr(sys, _STREAM[0]).write(text)  # type: ignore[no-any-return]

    def flush(self) -> None:
        getattr(sys, _STREAM[0]).flush()


@contextlib.contextmanager
def on_stderr() -> Iterator[None]:
    """Log lines go to stderr while inside (a command's answer owns stdout); as before after."""
    before = _STREAM[0]
    _STREAM[0] = "stderr"
    try:
        yield
    finally:
        _STREAM[0] = before


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
