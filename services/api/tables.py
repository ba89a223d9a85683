"""``/v1/tables/{table_id}/events``: append (platform keys) and read (platform and support keys)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Annotated, Any

import msgspec
import psycopg
import structlog
from fastapi import APIRouter, Depends, Header, Query, Request, Response
from msgspec import Meta
from psycopg import errors as pg_errors
from psycopg_pool import AsyncConnectionPool
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from domain.admission import admit
from domain.events import MAX_BASE, Event, explain
from services.api import schemas
from services.api.answers import error_answer, retry_after
from services.api.deps import (
    TableId,
    check_table_id,
    get_container,
    get_principal,
    principal_of,
    require_role,
)
from services.bootstrap import Container
from services.db import connection_lost
from services.errors import (
    BadRequest,
    BadRules,
    BatchTooLarge,
    Malformed,
    PayloadTooLarge,
    RequestTimeout,
    UnsupportedMediaType,
)
from services.logs import get_logger
from services.store.events import AppendResult, EventStore
from services.store.keys import Principal

router = APIRouter(prefix="/v1/tables", tags=["tables"])
log = get_logger("kwx.api")

MAX_VERSION = 2**62
_encoder = msgspec.json.Encoder()
_APPEND_THREADS = ThreadPoolExecutor(max_workers=40, thread_name_prefix="kwx-append")  # threads start on use


class AppendBody(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    events: Annotated[list[Event], Meta(min_length=1)]
    expected_version: Annotated[int, Meta(ge=0, le=MAX_VERSION)] | None = None


_decoder = msgspec.json.Decoder(AppendBody)

_READ_ERRORS = schemas.error_responses(401, 403, 404, 422, 429, 431, 503)
_APPEND_ERRORS = schemas.error_responses(400, 401, 403, 408, 409, 413, 415, 422, 429, 431, 503)


def check_content_type(declared: str | None) -> None:
    """The body is JSON: a declared Content-Type must say so (none at all is taken as JSON)."""
    if declared is None:
        return
    media = declared.split(";", 1)[0].strip().lower()
    if media != "application/json" and not (media.startswith("application/") and media.endswith("+json")):
        raise UnsupportedMediaType(
            f"Content-Type {declared[:100]!r}: send the body as application/json", field="header.content-type"
        )


async def read_body(receive: Receive, declared: str | None, limit: int, timeout: float = 30.0) -> bytes:
    """The request's body from the ASGI ``receive``, refused (413) as soon as it passes ``limit``,
    and (408) when all of it has not arrived within ``timeout`` seconds: a client trickling its body
    holds a connection and a worker's memory for as long as it likes otherwise (docs/faults.md)."""
    if declared is not None:
        if not declared.isdigit():
            raise BadRequest("bad Content-Length: expected a number of bytes", field="header.content-length")
        if int(declared) > limit:
            raise PayloadTooLarge(f"body larger than {limit} bytes", limit=limit)
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise ClientDisconnect()
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    raise PayloadTooLarge(f"body larger than {limit} bytes", limit=limit)
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)
    except TimeoutError:
        raise RequestTimeout(
            f"the body did not arrive within {timeout:g} s ({size} bytes came); send it at once",
            timeout_seconds=timeout,
        ) from None


def _field_of(message: str) -> str | None:
    marker = " - at `"
    return message.split(marker, 1)[1].rstrip("`") if marker in message else None


_BASE_FIELD = re.compile(r"^\$\.events\[([0-9]+)\]\.(base|rules)$")


def decode_append(raw: bytes) -> AppendBody:
    """The append's body, decoded and admitted: every event of the shape its type decodes with
    (``malformed``, naming the JSON path, the valid values listed) and, as a new event, admitted by
    ``domain.admission`` (a real ``at``, rules within today's ranges: ``bad_rules``, report amounts).
    Nothing is changed: what is stored are the bytes as sent."""
    try:
        body = _decoder.decode(raw)
    except msgspec.ValidationError as exc:
        text = str(exc)
        field = _field_of(text) or "$"
        bad = _BASE_FIELD.match(field)
        if bad is not None:  # base and the rules object are the table's rules (docs/rules-options.md)
            raise _bad_rules_at(raw, int(bad[1]), bad[2], text) from None
        raise Malformed(explain(text), field=field) from None
    except msgspec.DecodeError as exc:  # "$": the body as a whole (CONTRACT §3: 400 naming the field)
        raise BadRequest(f"body is not valid JSON: {exc}", field="$") from None
    except RecursionError:
        raise Malformed("body nested too deeply", field="$") from None
    if b"\\u0000" in raw:  # PostgreSQL text cannot hold NUL: name the field instead of failing later
        for i, event in enumerate(body.events):
            path = _nul_path(msgspec.to_builtins(event), f"$.events[{i}]")
            if path is not None:
                raise Malformed(f"NUL character not allowed - at `{path}`", field=path)
    for i, event in enumerate(body.events):
        refusal = admit(event)
        if refusal is not None:
            if refusal.code == "bad_rules":
                raise BadRules(
                    f"table_opened: {refusal.message}", field=refusal.field, index=i, event_id=event.id,
                    allowed=refusal.allowed, message_zh=f"开桌规则有误：{refusal.message_zh}",
                )  # fmt: skip
            path = f"$.events[{i}].{refusal.field}"
            raise Malformed(
                f"{refusal.message} - at `{path}`", field=path, index=i, event_id=event.id,
                allowed=refusal.allowed, message_zh=refusal.message_zh,
            )  # fmt: skip
    return body


def _bad_rules_at(raw: bytes, index: int, name: str, text: str) -> BadRules:
    """``bad_rules`` for a ``table_opened`` whose ``base`` (or whole ``rules``) the decoder refused."""
    try:
        event = msgspec.json.decode(raw)["events"][index]
        event_id = event.get("id") if isinstance(event, dict) else None
    except (msgspec.DecodeError, KeyError, IndexError, TypeError, RecursionError):
        event_id = None
    head = text.split(" - at `", 1)[0]
    if name == "base":
        low, high = 1, MAX_BASE
        return BadRules(
            f"table_opened: base must be an integer {low}…{high} (coins per unit): {head}",
            field="base", index=index, event_id=event_id if isinstance(event_id, str) else None,
            allowed={"min": low, "max": high}, message_zh=f"开桌规则有误：底分base必须是{low}…{high}的整数",
        )  # fmt: skip
    return BadRules(
        f'table_opened: rules must be an object such as {{"preset": "default"}}: {head}',
        field="rules", index=index, event_id=event_id if isinstance(event_id, str) else None,
        message_zh='开桌规则有误：rules必须是一个对象，例如 {"preset": "default"}',
    )  # fmt: skip


def _nul_path(value: Any, path: str) -> str | None:
    if isinstance(value, str):
        return path if "\x00" in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            if "\x00" in key:
                return path
            found = _nul_path(item, f"{path}.{key}")
            if found:
                return found
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _nul_path(item, f"{path}[{i}]")
            if found:
                return found
    return None


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
            "content": {"application/json": {"schema": schemas.AppendRequest.model_json_schema()}},
        }
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
    answer = await append(container, principal, table_id, request.headers, request.receive)
    return Response(answer, status_code=201, media_type="application/json")


async def append(
    container: Container,
    principal: Principal,
    table_id: str,
    headers: Mapping[str, str],
    receive: Receive,
    pool: AsyncConnectionPool | None = None,
) -> bytes:
    """Everything ``POST /v1/tables/{table_id}/events`` does after authentication, in the order
    its errors are checked; the JSON answer (201), or a ``ServiceError``. With ``pool`` (an async
    pool of this event loop), a batch this process's cache can place is stepped here and stored with
    one statement on it, without a thread hop; anything else goes to ``EventStore.append``."""
    check_table_id(table_id)
    structlog.contextvars.bind_contextvars(table_id=table_id)
    require_role(principal, "platform")
    settings = container.settings
    check_content_type(headers.get("content-type"))
    raw = await read_body(
        receive, headers.get("content-length"), settings.max_body_bytes, settings.body_timeout
    )
    body = decode_append(raw)
    if len(body.events) > settings.max_batch:
        raise BatchTooLarge(
            f"{len(body.events)} events in one batch; at most {settings.max_batch}", limit=settings.max_batch
        )
    store, tenant = container.store, principal.tenant
    result = None
    retried = False
    if pool is not None:
        try:
            result = await _append_planned(store, pool, tenant, table_id, body)
        except psycopg.OperationalError as exc:
            if not connection_lost(exc):
                raise
            # The connection broke under the statement: stored or not, nobody knows. The store's
            # append finds out on another connection (the same batch again: stored now, or
            # recognised as stored — a replay), and that is the one retry (docs/faults.md).
            store.cache.drop((tenant, table_id))
            log.warning("append_connection_lost", detail=str(exc)[:200])
            structlog.contextvars.bind_contextvars(retried=True)
            retried = True
    if result is None:
        # A plain executor, not anyio's run_in_threadpool (≈ 0.1 ms of bookkeeping per call in the
        # event loop's thread); up to 40 appends at once, as anyio's default limiter allowed.
        call = partial(store.append, retry=False) if retried else store.append
        result = await asyncio.get_running_loop().run_in_executor(
            _APPEND_THREADS, call, tenant, table_id, body.expected_version, body.events
        )
    # The outcome rides on the request's one access line (services.api.app.RequestContext).
    structlog.contextvars.bind_contextvars(
        outcome="replayed" if result.replayed else "stored",
        count=result.count,
        version=result.version,
        recorded_violations=len(result.rulings),
    )
    return _encoder.encode(result.body())


async def _append_planned(
    store: EventStore, pool: AsyncConnectionPool, tenant: str, table_id: str, body: AppendBody
) -> AppendResult | None:
    """The fast path without a thread: the batch stepped in this thread from the cached tip (CPU
    work that would hold the GIL in any thread), its one conditional statement awaited on the
    async pool. None when there is no cached guess or the database refused it (the store's
    ``append`` then answers: head read, replay, conflict, refusal)."""
    plan = store.plan_cached(tenant, table_id, body.expected_version, body.events)
    if plan is None:
        return None
    try:
        async with pool.connection() as conn:
            inserted = (await conn.execute(plan.sql, plan.params)).rowcount
    except pg_errors.UniqueViolation:
        inserted = 0  # an id already stored: the store's append says replay or conflict
    return store.finish_fast(plan, inserted)


_APPEND_PATH = re.compile(r"^/v1/tables/([^/]+)/events$")
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
        self._pools: dict[asyncio.AbstractEventLoop, asyncio.Task[AsyncConnectionPool | None]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, self._closing_pools(receive), send)
            return
        match = None
        if scope["type"] == "http" and scope["method"] == "POST":
            match = _APPEND_PATH.match(scope["path"])
        if match is None:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        retry = None
        try:
            container: Container = scope["app"].state.container
            principal = await principal_of(container, headers.get("authorization"))
            pool = await self._pool(container)
            status, answer = 201, await append(container, principal, match[1], headers, receive, pool)
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

    async def _pool(self, container: Container) -> AsyncConnectionPool | None:
        """This event loop's async pool, opened on first use; None without a database URL (a test's
        stand-in container) or if it cannot be opened (then the executor path serves)."""
        loop = asyncio.get_running_loop()
        task = self._pools.get(loop)
        if task is None:
            task = self._pools[loop] = loop.create_task(self._open(container))
        return await asyncio.shield(task)

    @staticmethod
    async def _open(container: Container) -> AsyncConnectionPool | None:
        url = getattr(container, "database_url", None)
        if not isinstance(url, str):
            return None
        from services.db import open_async_pool

        settings = container.settings
        try:
            return await open_async_pool(url, size=settings.pool_size, role=settings.db_role)
        except Exception:  # the sync pool and the executor still serve; say so once
            log.warning("async_pool_unavailable", exc_info=True)
            return None

    def _closing_pools(self, receive: Receive) -> Receive:
        """``receive`` for the lifespan: at shutdown, close this loop's async pool first."""

        async def wrapped() -> Message:
            message = await receive()
            if message["type"] == "lifespan.shutdown":
                task = self._pools.pop(asyncio.get_running_loop(), None)
                pool = await task if task is not None else None
                if pool is not None:
                    await pool.close()
            return message

        return wrapped


@router.get(
    "/{table_id}/events",
    operation_id="tables-read_events",
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
    if accept is not None and "application/x-ndjson" in accept:  # bulk export (issue 4): services/api/read.py
        return ndjson_events(container, principal.tenant, table_id, after)
    rows = container.store.read_table(principal.tenant, table_id, after, limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    page = {
        "table_id": table_id,
        "version": head.version,
        "events": [
            {
                "version": r.version,
                "recorded_at": r.recorded_at.isoformat(),
                "id": r.event_id,
                "type": r.type,
                "event": msgspec.Raw(r.body.encode()),
                "ruling": msgspec.Raw(r.ruling.encode()) if r.ruling is not None else None,
            }
            for r in rows
        ],
        "next_after": rows[-1].version if more else None,
    }
    return Response(_encoder.encode(page), media_type="application/json")
