"""The app of one ``kwx serve --workers N`` worker process (N > 1; docs/operations.md, Workers).

``kwx serve`` bootstraps in its own process (embedded server started or joined, migrations, the
projector child), puts the resolved database URL in ``DATABASE_URL`` and hands uvicorn the import
string ``services.api.served:create_served_app`` (a factory): uvicorn spawns N processes, each
calls it and serves the one listening socket. A worker

- joins the database at ``DATABASE_URL`` (required: a worker never starts or stops an embedded
  server; the parent's handle keeps it running and stops it after the workers have exited);
- never migrates (the parent did, once) and has its own pool of ``KWX_POOL_SIZE`` connections;
- never runs the projector: the parent runs it once, as a child process (``KWX_PROJECTOR=on``), or
  nobody does (``off``). ``kwx serve`` refuses ``KWX_PROJECTOR=thread`` with more than one worker.
- on Linux gets SIGTERM when the parent dies without stopping it (``PR_SET_PDEATHSIG``), so a
  killed ``kwx serve`` leaves no worker holding the port.

Each worker caches table state of its own (services/store/cache.py); the cache is only a guess
checked by the database on every append, so workers appending to one table stay correct
(tests/service/test_workers.py).

``guard`` wraps the app ``kwx serve`` serves (one worker or N): a response sent before its
request's body was read to the end (a 413, a 401 …) closes the connection, so a client streaming a
refused body (chunked, without end) is cut off instead of read and discarded for as long as it
sends; a request still running when a stopping server's grace is over is answered 503, not 500
(docs/faults.md, Process faults; tests/service/test_faults_process.py).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.api.answers import RETRY_AFTER
from services.settings import Settings


def create_served_app() -> ASGIApp:
    from services.api.app import create_app

    settings = Settings.from_env()
    if not settings.database_url:
        raise RuntimeError("a kwx serve worker needs DATABASE_URL (kwx serve --workers sets it)")
    _die_with_parent()
    from services.api.deadline import HeaderDeadline

    # this worker's connections
    HeaderDeadline.configure(settings.header_timeout, settings.max_header_bytes, settings.max_headers)
    app = create_app(settings)
    inner = app.router.lifespan_context  # create_app's lifespan

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[Mapping[str, Any]]:
        from services.bootstrap import bootstrap

        # Built here, so create_app's own lifespan (which would migrate) finds a container and
        # leaves it alone and, with projector_background False, starts no projector thread.
        container = bootstrap(settings, migrate=False)
        container.projector_background = False
        app.state.container = container
        try:
            async with inner(app) as state:
                yield dict(state or {})  # the routers' lifespan state, if any
        finally:
            app.state.container = None
            container.close()

    app.router.lifespan_context = lifespan
    from services import heap

    heap.settle()  # imports and the app: never traversed by the collector again
    return guard(app)


def guard(app: ASGIApp) -> ASGIApp:
    """``app`` as ``kwx serve`` serves it, with two connection-level guards:

    - a response that starts before the request's body was received to its end says ``Connection:
      close`` (uvicorn then closes the connection after it; without, it keeps the connection and
      discards whatever body still comes, without limit);
    - a request cancelled before its answer started — uvicorn cancels what is still running
      ``timeout_graceful_shutdown`` after SIGTERM, a slow client's upload say — is answered ``503
      unavailable`` (retry; an append is stored whole or not at all), not uvicorn's plain-text 500.
    """

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        received = not _has_body(scope)
        started = False

        async def receive_() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                received = True
            return message

        async def send_(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if not received:
                    message = {**message, "headers": [*message.get("headers", ()), (b"connection", b"close")]}
            await send(message)

        try:
            await app(scope, receive_, send_)
        except asyncio.CancelledError:
            if started:
                raise
            await send({"type": "http.response.start", "status": 503, "headers": _STOPPING_HEADERS})
            await send({"type": "http.response.body", "body": _STOPPING})

    return guarded


_STOPPING = b'{"error":"unavailable","message":"the server is stopping; retry"}'
_STOPPING_HEADERS = [
    (b"content-type", b"application/json"),
    (b"content-length", str(len(_STOPPING)).encode()),
    RETRY_AFTER,  # as every 503 (services/api/answers.py)
    (b"connection", b"close"),
]


def _has_body(scope: Scope) -> bool:
    for name, value in scope["headers"]:
        if name == b"content-length":
            return value.strip() != b"0"
        if name == b"transfer-encoding":
            return True
    return False


def _die_with_parent() -> None:
    """SIGTERM when the process that spawned this one (uvicorn's supervisor) dies."""
    if not sys.platform.startswith("linux"):
        return
    parent = int(os.environ.get("KWX_SERVE_PID") or os.getppid())  # set by kwx serve
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl: no signal will come
        os.kill(os.getpid(), signal.SIGTERM)
