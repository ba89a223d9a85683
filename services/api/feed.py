"""``GET /v1/feed``: a tenant's live feed for integrators (issue 15; docs/projections.md, feed).

The entries are the read model ``feed``'s rows (projections/feed.py): settlements, rulings
(recorded violations), discrepancies and parked events of the key's tenant, each with ``seq``, the
tenant's own dense cursor. Two ways to read it:

* **Server-Sent Events** (the default, ``Accept: text/event-stream``): every entry after the cursor,
  then the new ones as the projector commits them; ``id:`` is the entry's ``seq``, ``event:`` its
  kind, ``data:`` the entry as JSON. A client that reconnects with ``Last-Event-ID`` (or
  ``?after=``) gets every entry after it, once, in order. A comment (``: ping``) every
  ``KWX_FEED_HEARTBEAT`` seconds (15) keeps proxies from closing an idle stream.
* **NDJSON long-poll** (``Accept: application/x-ndjson`` or ``?format=ndjson``): the entries after
  ``?after=`` (up to ``limit``) one JSON object a line; when there is none yet, the answer waits up
  to ``?wait=`` seconds for the first ones, then ends (an empty body: nothing new). Resume with
  ``after=`` the last line's ``seq``.

Roles: ``platform`` and ``support`` see every kind; ``dashboard`` sees ``settlement`` entries only
(the hands' results it charts; rulings, discrepancies and parked events are the other roles'). A
dashboard's cursor is the same ``seq``, so its entries skip the numbers of the kinds it does not see.

Cheap streams: the route answers (its headers) before it waits, so the read gate's turn
(services/api/gate.py) is given back at once; one listener connection per process (``LISTEN
kwx_feed``, :class:`services.feed_hub.Hub`) wakes the streams of a tenant when the projector's
transaction commits, with a poll every ``KWX_FEED_POLL`` seconds (2) as the fallback; each page
is a short pooled read. At most ``KWX_FEED_MAX`` (64) feeds are open per process; one more is
``503 unavailable``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

import msgspec
from fastapi import APIRouter, Depends, Header, Query, Request, Response
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from projections import feed as feed_model
from services.api import schemas
from services.api.deps import MAX_BIGINT, get_container, get_principal
from services.bootstrap import Container
from services.db import reading
from services.errors import Malformed
from services.feed_hub import Hub
from services.logs import get_logger
from services.store.keys import Principal

log = get_logger("kwx.feed")
NDJSON = "application/x-ndjson"
KINDS_BY_ROLE: dict[str, tuple[str, ...]] = {
    "platform": feed_model.KINDS,
    "support": feed_model.KINDS,
    "dashboard": ("settlement",),
}
PAGE = 200
_encode = msgspec.json.Encoder().encode


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def hub_of(request: Request, container: Container) -> Hub:
    hub: Hub | None = getattr(request.app.state, "feed_hub", None)
    if hub is None:
        hub = request.app.state.feed_hub = Hub(container.database_url, int(_env_float("KWX_FEED_MAX", 64)))
    return hub


def stop(app: Any) -> None:
    """The process's listener, at shutdown (services/api/app.py's lifespan)."""
    hub: Hub | None = getattr(app.state, "feed_hub", None)
    if hub is not None:
        hub.stop()


async def _page(
    container: Container, tenant: str, after: int, kinds: tuple[str, ...], limit: int
) -> list[Any]:
    return await run_in_threadpool(
        reading, container.pool, lambda conn: feed_model.page(conn, tenant, after, kinds, limit)
    )


async def _wait(event: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), seconds)


def _cursor(after: int | None, last_event_id: str | None) -> int:
    if last_event_id is not None and last_event_id.strip() != "":
        text = last_event_id.strip()
        if not text.isascii() or not text.isdigit() or int(text) > MAX_BIGINT:
            raise Malformed(
                "Last-Event-ID: the seq of the last entry received (an integer ≥ 0)",
                field="header.last-event-id",
                message_zh="Last-Event-ID 应为最后收到的条目序号（不小于 0 的整数）",
            )
        return int(text)
    return after or 0


class _Release:
    """Gives the feed's place back when the response ends, however it ends."""

    hub: Hub

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)  # type: ignore[misc]
        finally:
            self.hub.release()


class _SSE(_Release, EventSourceResponse):
    pass


class _NDJSON(_Release, StreamingResponse):
    pass


router = APIRouter(
    prefix="/v1",
    tags=["feed"],
    responses=schemas.error_responses(401, 403, 422, 429, 431, 501, 503),
)

_ENTRY_EXAMPLE = {"seq": 7, "kind": "settlement", "table_id": "t-1", "version": 42, "data": {"hand": 3}}
_SSE_EXAMPLE = f"id: 7\nevent: settlement\ndata: {_encode(_ENTRY_EXAMPLE).decode()}\n\n"


@router.get(
    "/feed",
    operation_id="feed-feed",
    summary="The tenant's live feed (SSE or NDJSON long-poll)",
    response_class=Response,
    responses={
        200: {
            "description": "Entries after the cursor: `{seq, kind, table_id, version, data}`, `kind` one of "
            "settlement, ruling, discrepancy, parked. As Server-Sent Events (`id:` = seq, `event:` = kind, "
            "`data:` = the entry) that stay open, or NDJSON lines (one entry a line) when asked for.",
            "content": {
                "text/event-stream": {"schema": {"type": "string"},
                                      "example": _SSE_EXAMPLE},
                NDJSON: {"schema": {"type": "string"}, "example": _encode(_ENTRY_EXAMPLE).decode() + "\n"},
            },
        }
    },
)  # fmt: skip
async def live_feed(
    request: Request,
    principal: Annotated[Principal, Depends(get_principal)],
    container: Annotated[Container, Depends(get_container)],
    after: Annotated[
        int | None, Query(ge=0, le=MAX_BIGINT, description="entries after this seq (the tenant's own cursor)")
    ] = None,
    wait: Annotated[
        float,
        Query(ge=0, le=60, description="NDJSON: seconds to wait for the first entry when none is there"),
    ] = 0,
    limit: Annotated[int, Query(ge=1, le=1000, description="NDJSON: at most this many entries")] = 100,
    format: Annotated[
        Literal["sse", "ndjson"] | None, Query(description="`ndjson`: the long-poll (else by Accept)")
    ] = None,
    last_event_id: Annotated[
        str | None, Header(description="SSE: resume after this entry (sent by EventSource on reconnect)")
    ] = None,
) -> Response:
    """Settlements, rulings, discrepancies and parked events of the key's tenant as the projector
    applies them, resumable with nothing skipped and nothing repeated. platform and support see
    every kind; dashboard sees settlements only."""
    container.require_kept((feed_model.NAME,))
    kinds = KINDS_BY_ROLE.get(principal.role, ())
    tenant = principal.tenant
    cursor = _cursor(after, last_event_id)
    ndjson = format == "ndjson" or (format is None and NDJSON in request.headers.get("accept", ""))
    hub = hub_of(request, container)
    poll = _env_float("KWX_FEED_POLL", 2.0)
    hub.acquire()
    try:
        if ndjson:
            response: _SSE | _NDJSON = _NDJSON(
                _ndjson(container, hub, tenant, kinds, cursor, wait, limit, poll), media_type=NDJSON,
                headers={"Cache-Control": "no-store"},
            )  # fmt: skip
        else:
            response = _SSE(
                _sse(container, hub, tenant, kinds, cursor, poll),
                ping=_env_float("KWX_FEED_HEARTBEAT", 15.0),
                headers={"Cache-Control": "no-store"},
            )
    except BaseException:
        hub.release()
        raise
    response.hub = hub
    return response


async def _sse(
    container: Container, hub: Hub, tenant: str, kinds: tuple[str, ...], after: int, poll: float
) -> AsyncIterator[ServerSentEvent]:
    sub = hub.subscribe(tenant)
    try:
        while True:
            sub[1].clear()
            entries = await _page(container, tenant, after, kinds, PAGE)
            for entry in entries:
                after = entry["seq"]
                yield ServerSentEvent(data=_encode(entry).decode(), id=str(after), event=entry["kind"])
            if len(entries) < PAGE:
                await _wait(sub[1], poll)
    finally:
        hub.unsubscribe(tenant, sub)


async def _ndjson(
    container: Container,
    hub: Hub,
    tenant: str,
    kinds: tuple[str, ...],
    after: int,
    wait: float,
    limit: int,
    poll: float,
) -> AsyncIterator[bytes]:
    sub = hub.subscribe(tenant)
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while True:
            sub[1].clear()
            entries = await _page(container, tenant, after, kinds, limit)
            if entries:
                yield b"".join(_encode(e) + b"\n" for e in entries)
                return
            left = deadline - loop.time()
            if left <= 0:
                return
            await _wait(sub[1], min(left, poll))
    finally:
        hub.unsubscribe(tenant, sub)
