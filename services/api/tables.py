"""``/v1/tables/{table_id}/events``: append (platform keys) and read (platform and support keys).

The routes parse, call and answer: the body is read and decoded by services/api/body.py, the batch
stored by the store (``services.store.fast.AsyncFastPath`` and ``EventStore.append``), whose errors
are ``ServiceError``s or database faults that services/api/answers.py maps to answers. No SQL here.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Annotated, Any

import msgspec
import structlog
from fastapi import APIRouter, Depends, Header, Query, Request, Response
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services import metrics, tracing
from services.api import schemas
from services.api.answers import error_answer, retry_after
from services.api.body import MAX_VERSION, read_append
from services.api.deps import (
    TableId,
    check_table_id,
    get_container,
    get_principal,
    principal_of,
    read_lang,
    require_role,
)
from services.bootstrap import Container
from services.errors import ServiceError
from services.logs import get_logger
from services.store import fast
from services.store.keys import Principal
from services.store.reads import wire

router = APIRouter(prefix="/v1/tables", tags=["tables"])
log = get_logger("kwx.api")

_encoder = msgspec.json.Encoder()

_READ_ERRORS = schemas.error_responses(401, 403, 404, 422, 429, 431, 503)
_APPEND_ERRORS = schemas.error_responses(400, 401, 403, 408, 409, 413, 415, 422, 429, 431, 503)


@router.post(
    "/{table_id}/events",
    operation_id="tables-append_events",
    summary="Append events to a table, atomically",
    status_code=201,
    response_model=schemas.AppendResponse,
    responses=_APPEND_ERRORS,  # type: ignore[arg-type]
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": schemas.AppendRequest.model_json_schema()},
                "application/x-ndjson": {
                    "schema": {
                        "type": "string",
                        "description": "one event object per line (blank lines "
                        "are skipped); `expected_version` in the query; an error names its `line`",
                    },
                },
            },
        },
        "parameters": [
            {
                "name": "expected_version",
                "in": "query",
                "required": False,
                "schema": {"type": "integer", "minimum": 0, "maximum": MAX_VERSION},
                "description": "with an application/x-ndjson body only: the table's version this batch "
                "follows (as `expected_version` in a JSON body)",
            },
        ],
    },
)
async def append_events(
    table_id: TableId,
    request: Request,
    principal: Annotated[Principal, Depends(get_principal)],
    container: Annotated[Container, Depends(get_container)],
) -> Response:
    # The documented route. Requests normally never reach it: ``FastAppend`` answers them first with
    # the same ``append`` below (``create_app`` installs it); without it, this serves them.
    answer = await append(
        container, principal, table_id, request.headers, request.receive, query=request.url.query
    )
    return Response(answer, status_code=201, media_type="application/json")


async def append(
    container: Container,
    principal: Principal,
    table_id: str,
    headers: Mapping[str, str],
    receive: Receive,
    fast_path: fast.AsyncFastPath | None = None,
    query: str = "",
) -> bytes:
    """Everything ``POST /v1/tables/{table_id}/events`` does after authentication, in the order
    its errors are checked; the JSON answer (201), or a ``ServiceError``. With ``fast_path`` (the
    middleware's), a batch this process's cache can place is stored from the event loop without a
    thread hop; without it, ``EventStore.append`` on an executor thread. ``query``: the raw query
    string (``expected_version`` of a JSON-lines body)."""
    check_table_id(table_id)
    structlog.contextvars.bind_contextvars(table_id=table_id)
    require_role(principal, "platform")
    started = time.perf_counter()
    try:
        with tracing.span("kwx.append"):
            result = await _append(container, principal, table_id, headers, receive, fast_path, query)
    except ServiceError as error:
        metrics.observe_refusal(error.body(), time.perf_counter() - started)
        raise
    metrics.observe_append(result, time.perf_counter() - started)
    # The outcome rides on the request's one access line (services.api.app.RequestContext).
    structlog.contextvars.bind_contextvars(
        outcome="replayed" if result.replayed else "stored",
        count=result.count,
        version=result.version,
        recorded_violations=len(result.rulings),
    )
    return _encoder.encode(result.body())


async def _append(
    container: Container,
    principal: Principal,
    table_id: str,
    headers: Mapping[str, str],
    receive: Receive,
    fast_path: fast.AsyncFastPath | None,
    query: str,
) -> Any:
    append = await read_append(headers, receive, container.settings, query)
    body = append.body
    store, tenant, expected = container.store, principal.tenant, body.expected_version
    try:
        if fast_path is not None:
            result = await fast_path.append(store, tenant, table_id, expected, body.events)
        else:
            result = await fast.in_thread(store, tenant, table_id, expected, body.events)
    except ServiceError as error:  # an illegal event or a conflict of a JSON-lines body: its line too
        line = append.line_of(error.extra.get("index"))
        if line is not None:
            error.extra["line"] = line
        raise
    return result


_APPEND_PATH = re.compile(r"^/v1/tables/([^/]+)/events$")
APPEND_ROUTE = "/v1/tables/{table_id}/events"
_JSON = [(b"content-type", b"application/json")]


class FastAppend:
    """ASGI middleware that answers ``POST /v1/tables/{table_id}/events`` itself, with exactly the
    route's checks, errors and log line, and passes every other request on to FastAPI.

    Ingest is the hot path (issue 3: 100-event batches at a good fraction of PostgreSQL's COPY rate
    on 2 cores). FastAPI's routing, dependency solving and exception middleware cost ≈ 0.3–0.4 ms of
    CPU per request, as much as PostgreSQL's work on the batch; here they cost nothing. The route
    above stays the documented one (openapi/openapi.json) and shares ``append`` with this path.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._fast: fast.AsyncFastPath | None = None  # the store's, built on the first append

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, self._closing(receive), send)
            return
        match = None
        if scope["type"] == "http" and scope["method"] == "POST":
            match = _APPEND_PATH.match(scope["path"])
        if match is None:
            await self.app(scope, receive, send)
            return
        scope["kwx_route"] = APPEND_ROUTE  # the metrics' route label (services/metrics.py)
        headers = Headers(scope=scope)
        retry = None
        try:
            container: Container = scope["app"].state.container
            principal = await principal_of(container, headers.get("authorization"))
            fast_path = self._fast_path(container)
            query = scope.get("query_string", b"").decode("latin-1")
            answer = await append(container, principal, match[1], headers, receive, fast_path, query)
            status = 201
        except ClientDisconnect:
            return
        except Exception as exc:  # every failure becomes its answer, as the handlers give it
            status, body = error_answer(exc)
            answer = _encoder.encode(body)
            retry = retry_after(status, body)  # 503, 429
        headers_out = [*_JSON, (b"content-length", str(len(answer)).encode())]
        if retry is not None:
            headers_out.append(retry)
        await send({"type": "http.response.start", "status": status, "headers": headers_out})
        await send({"type": "http.response.body", "body": answer})

    def _fast_path(self, container: Container) -> fast.AsyncFastPath:
        """The store's async fast path for this app's container (no database URL: a test's stand-in
        container — then the executor path serves)."""
        if self._fast is None:
            url = getattr(container, "database_url", None)
            settings = container.settings
            self._fast = fast.AsyncFastPath(
                url if isinstance(url, str) else None, size=settings.pool_size, role=settings.db_role
            )
        return self._fast

    def _closing(self, receive: Receive) -> Receive:
        """``receive`` for the lifespan: at shutdown, close this loop's async pool first."""

        async def wrapped() -> Message:
            message = await receive()
            if message["type"] == "lifespan.shutdown" and self._fast is not None:
                await self._fast.close()
            return message

        return wrapped


@router.get(
    "/{table_id}/events",
    operation_id="tables-read_events",
    dependencies=[Depends(read_lang)],  # every read takes ?lang=zh|en (services/api/deps.py)
    summary="Read a table's stored events in version order",
    response_model=schemas.EventsPage,
    responses={
        **_READ_ERRORS,
        200: {
            "description": "a page of events; with `Accept: application/x-ndjson`, every event after "
            "`after` as JSON lines (one StoredEvent each), without paging",
            "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
        },
    },  # type: ignore[arg-type]
)
def read_events(
    table_id: TableId,
    principal: Annotated[Principal, Depends(get_principal)],
    container: Annotated[Container, Depends(get_container)],
    after: Annotated[int, Query(ge=0, le=MAX_VERSION, description="versions greater than this")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    accept: Annotated[
        str | None, Header(description="application/x-ndjson: every event as JSON lines")
    ] = None,
) -> Response:
    from services.api.read import ndjson_events, table_of

    head = table_of(container, principal, table_id, "platform", "support")
    tenant = principal.tenant
    if accept is not None and "application/x-ndjson" in accept:  # bulk export (issue 4): services/api/read.py
        return container.table_read(
            tenant, table_id, head.version, lambda src: ndjson_events(src, tenant, table_id, after)
        )
    # The page needs the table up to the last row it may hold (or its head): on the replica once it
    # has replayed that far (services/replica.py), the same rows as the primary's
    needs = min(head.version, after + limit + 1)
    rows = container.table_read(
        tenant, table_id, needs, lambda src: src.store.read_table(tenant, table_id, after, limit + 1)
    )
    more = len(rows) > limit
    rows = rows[:limit]
    page = {
        "table_id": table_id,
        "version": head.version,
        "events": [wire(r) for r in rows],
        "next_after": rows[-1].version if more else None,
    }
    return Response(_encoder.encode(page), media_type="application/json")
