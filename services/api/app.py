"""The FastAPI application: routers, the error handlers (one mapping, services/api/answers.py),
request ids and access logs. ``POST /v1/tables/{id}/events`` is answered ahead of FastAPI by the
ASGI middleware ``tables.FastAppend`` (same checks, errors and log line; ``fast_append=False``
leaves it to the documented route); every other request goes through FastAPI.

``create_app(settings, container)`` serves an already built container (``kwx serve`` with one
worker, the tests); without one the lifespan builds it from ``settings`` (a ``kwx serve --workers
N`` worker sets its own first: services/api/served.py). Building the app connects to nothing, so
``kwx openapi`` works without a database.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import structlog
from fastapi import Depends, FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi_offline import FastAPIOffline
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services import metrics
from services.api import (
    discovery,
    export,
    feed,
    hand_reads,
    health,
    read,
    read_schemas,
    stats,
    tables,
    timeline,
)
from services.api.answers import error_answer, retry_after
from services.api.deps import ReadHeaders, read_lang
from services.api.gate import ReadGate
from services.bootstrap import Container
from services.errors import ServiceError
from services.logs import get_logger
from services.settings import Settings
from services.store.faults import DATABASE_ERRORS

log = get_logger("kwx.api")
DOCS_ASSETS = "/docs/assets"  # the API docs' scripts, styles and icon (fastapi-offline's static files)
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")

# KWX_CORS_ORIGINS: a named origin's pages may read (a dashboard of the platform's own); appends
# come from a platform's servers, not from browsers, so a preflight for them is refused.
CORS_METHODS = ("GET", "HEAD")

DESCRIPTION = """Game-record service for 卡五星 (Ka Wu Xing): platforms append table event streams,
every event is checked by the rules engine and stored once, hash-chained, never changed.
Errors are always `{"error": code, "message": …}`. Authentication: `Authorization: Bearer KEY`."""


def create_app(
    settings: Settings | None = None, container: Container | None = None, *, fast_append: bool = True
) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # The container's lifecycles (services/bootstrap.py): the projector's thread starts once the
        # container is there (unless projector_background is off) and stops before the pool closes.
        owned = None
        container: Container | None = getattr(app.state, "container", None)
        if container is None:
            from services.bootstrap import bootstrap

            owned = container = app.state.container = bootstrap(settings)
        metrics.POOLS.add("sync", getattr(container, "pool", None))
        metrics.mark_build()
        container.start_projector()
        try:
            yield
        finally:
            feed.stop(app)  # the feed's listener (services/api/feed.py)
            container.stop_projector()
            if owned is not None:
                owned.close()

    # /docs (Swagger UI) and /redoc load their scripts and styles from kwx itself (DOCS_ASSETS), not a
    # CDN: fastapi-offline ships them in its package, so the pages work with no outside network.
    app = FastAPIOffline(
        title="kwx", version="0.1.0", description=DESCRIPTION, lifespan=lifespan, static_url=DOCS_ASSETS
    )
    app.state.container = container
    lang = [Depends(read_lang)]  # every read takes ?lang=zh|en (issue 13; tables.py: on its GET)
    app.include_router(health.router, dependencies=lang)
    app.include_router(tables.router)
    app.include_router(discovery.router, dependencies=lang)  # issue 13: find tables, list hands (before read)
    app.include_router(read.router, dependencies=lang)  # projections (issue 4): state, settlement, audit
    app.include_router(hand_reads.router, dependencies=lang)  # issue 13: a hand's audit, from its snapshot
    app.include_router(timeline.router, dependencies=lang)  # issue 13: a hand in plain zh / en
    app.include_router(stats.router, dependencies=lang)  # issue 4: stats, ledger, leaderboard, discrepancies
    app.include_router(export.router, dependencies=lang)  # issue 13: exports, a hand's dispute report
    app.include_router(feed.router, dependencies=lang)  # issue 15: the tenant's live feed (SSE, NDJSON)
    read_schemas.install(app)  # issue 13: the read answers' schemas in the OpenAPI document
    from services import web

    app.include_router(web.router)  # issue 17: /replay and /dashboard, every asset in the package
    _install_error_handlers(app)
    app.add_middleware(ReadGate)  # reads take turns, fairly by tenant; a backlog is a quick 503
    if fast_append:  # POST …/events without FastAPI's per-request machinery (False: tests compare)
        app.add_middleware(tables.FastAppend)
    app.add_middleware(ReadHeaders)  # Content-Language / Vary (deps.read_lang), Kwx-Read-From
    app.add_middleware(RequestContext)
    app.add_middleware(ReadGZip)  # what is read, gzipped for a client that takes it
    chosen = settings or getattr(container, "settings", None) or Settings()
    if chosen.cors_origins:  # outermost: a browser's preflight is answered before keys and limits
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(chosen.cors_origins),
            allow_methods=list(CORS_METHODS),
            allow_headers=["Authorization", "Accept", "Accept-Language"],
            expose_headers=["Content-Language", "Kwx-Read-From", "Retry-After", "X-Request-Id"],
            max_age=600,
        )
    if chosen.metrics == "on":
        _add_metrics_route(app)
    from services import tracing

    if tracing.wanted():  # OTEL_EXPORTER_OTLP_ENDPOINT …: traces (services/tracing.py); off: nothing
        tracing.setup()
    if tracing.active():
        tracing.instrument(app)
    return app


def _add_metrics_route(app: FastAPI) -> None:
    @app.get(
        "/metrics", tags=["health"], operation_id="health-metrics", summary="Prometheus metrics",
        description="The text exposition format; no key needed and no tenant data in it "
        "(services/metrics.py lists every metric). `KWX_METRICS=off` removes it, `KWX_METRICS=PORT` "
        "moves it to a port of its own.",
        response_class=Response, dependencies=[Depends(read_lang)],  # (its text has no language)
        responses={200: {"content": {metrics.CONTENT_TYPE: {"schema": {"type": "string"}}},
                         "description": "every metric, in the Prometheus text format"}},
    )  # fmt: skip
    def metrics_route(request: Request) -> Response:
        container = getattr(request.app.state, "container", None)
        pool, replica = getattr(container, "pool", None), getattr(container, "replica", None)
        body = metrics.render(pool, replica, getattr(container, "kept", None))
        return Response(body, media_type=metrics.CONTENT_TYPE)


def _error(status: int, body: dict[str, Any]) -> JSONResponse:
    retry = retry_after(status, body)  # a database fault (docs/faults.md), a rate limit: retry then
    if retry is not None:
        return JSONResponse(body, status_code=status, headers={"Retry-After": retry[1].decode()})
    return JSONResponse(body, status_code=status)


def _install_error_handlers(app: FastAPI) -> None:
    async def answer(request: Request, exc: Exception) -> JSONResponse:
        status, body = error_answer(exc)  # one mapping, shared with the append fast path
        return _error(status, body)

    for kind in (ServiceError, *DATABASE_ERRORS, Exception):
        app.add_exception_handler(kind, answer)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = _field_name(tuple(first.get("loc", ())))
        body = {"error": "malformed", "message": f"{first.get('msg', 'invalid input')} - at `{where}`",
                "field": where, "message_zh": f"{where}：{invalid_zh(first)}"}  # fmt: skip
        return _error(422, body)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        codes = {404: "not_found", 405: "method_not_allowed"}
        where = f"{request.method} {request.url.path[:200]}"
        message = {404: f"no such route: {where}", 405: f"method not allowed: {where}"}.get(
            exc.status_code, str(exc.detail)
        )
        headers = getattr(exc, "headers", None)  # 405 carries Allow
        message_zh = {404: f"没有这个路由：{where}", 405: f"这个路由不接受此方法：{where}"}.get(
            exc.status_code, f"HTTP {exc.status_code}"
        )
        body = {
            "error": codes.get(exc.status_code, "http_error"),
            "message": message,
            "message_zh": message_zh,
        }
        return JSONResponse(body, status_code=exc.status_code, headers=headers)


_INVALID_ZH = {  # pydantic's error types, as a Chinese reader is told them; ctx fills the numbers
    "missing": "缺少这一项",
    "greater_than_equal": "应不小于 {ge}",
    "greater_than": "应大于 {gt}",
    "less_than_equal": "应不大于 {le}",
    "less_than": "应小于 {lt}",
    "int_parsing": "应为整数",
    "int_from_float": "应为整数",
    "float_parsing": "应为数字",
    "bool_parsing": "应为 true 或 false",
    "literal_error": "应为以下之一：{expected}",
    "enum": "应为以下之一：{expected}",
    "string_too_long": "最多 {max_length} 个字符",
    "string_too_short": "至少 {min_length} 个字符",
    "string_type": "应为字符串",
    "string_pattern_mismatch": "格式不对（应符合 {pattern}）",
    "too_long": "最多 {max_length} 项",
    "json_invalid": "不是合法的 JSON",
}


def invalid_zh(error: Mapping[str, Any]) -> str:
    """What is wrong with one input, in Chinese (the request's ``message`` says it in pydantic's
    English): its type's words with the limits it names, or a plain 不符合要求."""
    words = _INVALID_ZH.get(str(error.get("type", "")))
    if words is None:
        return "不符合要求"
    ctx = {k: str(v).replace(" or ", " 或 ") for k, v in (error.get("ctx") or {}).items()}  # 'zh' or 'en'
    try:
        return words.format(**ctx)
    except (KeyError, IndexError):
        return "不符合要求"


def _field_name(loc: tuple[Any, ...]) -> str:
    """One name per parameter (README, Errors): ``query.NAME``, ``path.NAME``, ``header.NAME``, a body
    field its JSON path ``$.…``."""
    if loc and loc[0] == "body":
        return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc[1:])
    return ".".join(str(p) for p in loc) or "$"


class ReadGZip:
    """Starlette's ``GZipMiddleware`` for reads (``GET``) of 1 KB or more, for a client that sends
    ``Accept-Encoding: gzip``: a long table's state (its settlements, ≈ 1 KB a hand: 34 KB at hand
    40, ≈ 3 KB gzipped), lists, exports, the pages' scripts. A stream is flushed chunk by chunk and
    the live feed's ``text/event-stream`` is left as it is (the library's own exclusions). An
    append's answer is small, and its path is left as it was. Level 1: the state at the end of a
    200-hand table, 175 KB, is 21 KB in 0.35 ms (level 6: 14 KB in 1.8 ms, more than the read's
    own work saved by it on a fast network)."""

    def __init__(self, app: ASGIApp) -> None:
        from starlette.middleware.gzip import GZipMiddleware

        self.app = app
        self.gzip = GZipMiddleware(app, minimum_size=1024, compresslevel=1)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            await self.gzip(scope, receive, send)
        else:
            await self.app(scope, receive, send)


class RequestContext:
    """Pure ASGI middleware: X-Request-ID in (if sane) and out, bound to every log line, and one
    access line per request (method, path, status, ms). Headers are never logged (keys)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"x-request-id"), "")
        request_id = incoming if _REQUEST_ID.match(incoming) else uuid.uuid4().hex
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(request_id=request_id)
        started = time.perf_counter()
        status: int | None = None
        # No answer sent: 499 (nginx's "client closed request") when the client left before it
        # (the app returned) or the request was cancelled (shutdown grace over: the client got
        # services.api.served's 503); 500 only when the app raised.
        unanswered = 499

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), (b"x-request-id", request_id.encode())]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except asyncio.CancelledError:
            if status is None:
                structlog.contextvars.bind_contextvars(outcome="cancelled")
            raise
        except BaseException:
            unanswered = 500
            raise
        else:
            if status is None:
                structlog.contextvars.bind_contextvars(outcome="client_gone")
        finally:
            seconds = time.perf_counter() - started
            answered = unanswered if status is None else status
            log.info("request", method=scope["method"], path=scope["path"], status=answered,
                     ms=round(seconds * 1000, 2))  # fmt: skip
            structlog.contextvars.clear_contextvars()
            metrics.observe_request(scope.get("kwx_route") or metrics.route_of(scope), scope["method"],
                                    answered, seconds)  # fmt: skip
            metrics.POOLS.maybe()
