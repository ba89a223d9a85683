"""Request dependencies: the container, the caller (API key → Principal), role checks."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from fastapi import Depends, Path, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from domain.rules import PRESETS
from services.api.ratelimit import limits_of
from services.bootstrap import Container
from services.errors import Forbidden, InvalidTableId, Malformed, Unauthorized
from services.replica import READ_FROM
from services.store.keys import Principal

READ_FROM_HEADER = b"kwx-read-from"  # primary / replica: which database answered (services/replica.py)
TABLE_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_BIGINT = 2**63 - 1  # PostgreSQL bigint: the bound of every position / entry number in a query

# Path parameters as the OpenAPI document states them; the checks below enforce them (with their own
# error codes: invalid_table_id, malformed/player_id), so these annotations only document.
TableId = Annotated[
    str,
    Path(
        description="1–64 characters of A-Za-z0-9_- (else 422 invalid_table_id)",
        json_schema_extra={"pattern": TABLE_ID_RE.pattern, "minLength": 1, "maxLength": 64},
    ),
]
PRESET_ENUM = {"enum": list(PRESETS)}  # documents ?preset= / ?rules= (check_preset enforces it)
PlayerId = Annotated[
    str,
    Path(
        description="a player id as in table_opened (1–64 characters, no NUL); `house` is a player id "
        "like any other (the house account is `GET /v1/house/ledger`)",
        json_schema_extra={"minLength": 1, "maxLength": 64},
    ),
]

bearer = HTTPBearer(auto_error=False, description="an API key from `kwx keys create`")


async def get_container(request: Request) -> Container:
    """``async`` on purpose: FastAPI runs a plain ``def`` dependency in its thread pool (a thread hop
    per request)."""
    return _container_of(request)


def _container_of(request: Request) -> Container:
    container: Container = request.app.state.container
    return container


async def get_principal(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None = Depends(bearer),  # noqa: B008 - documents the scheme
) -> Principal:
    return await principal_of(_container_of(request), request.headers.get("authorization"))


async def principal_of(container: Container, authorization: str | None) -> Principal:
    """The caller of ``Authorization: Bearer KEY`` (the scheme in any case), else 401; counted
    against the key's and the tenant's rate limits (429). Shared by the routes' dependency and the
    append fast path (services.api.tables.FastAppend)."""
    scheme, _, key = (authorization or "").partition(" ")
    key = key.strip()
    if scheme.lower() != "bearer" or not key:
        raise Unauthorized(
            "send Authorization: Bearer <key> (kwx keys create)",
            message_zh="请在 Authorization 头中发送 Bearer <密钥>（用 kwx keys create 创建）",
        )
    keys = container.keys
    known, principal = keys.cached(key)  # no thread hop for a cached key
    if not known:
        principal = await run_in_threadpool(keys.authenticate, key)
    if principal is None:
        raise Unauthorized("unknown or revoked API key", message_zh="密钥无效：不存在或已被吊销")
    limits = limits_of(container)  # 429 rate_limited (services/api/ratelimit.py); None: off
    if limits is not None:
        await limits.check(principal)
    return principal


def check_table_id(table_id: str) -> str:
    if not TABLE_ID_RE.match(table_id):
        raise InvalidTableId("table_id: 1–64 characters of A-Za-z0-9_-", field="path.table_id",
                             message_zh="table_id：1–64 个字符，只能是 A-Za-z0-9_-")  # fmt: skip
    return table_id


def require_role(principal: Principal, *roles: str) -> None:
    """403 unless the key's role is one of ``roles``; the answer names the key's ``role`` and the
    ``roles`` that may, so a page says it in its own words (and ``message_zh`` in Chinese)."""
    if principal.role not in roles:
        raise Forbidden(
            f"role {principal.role!r} may not do this (needs {' or '.join(roles)})",
            message_zh=f"密钥的角色 {principal.role} 不能做这件事（需要 {' 或 '.join(roles)} 角色的密钥）",
            role=principal.role,
            roles=list(roles),
        )


def check_player_id(player_id: str) -> str:
    """A player id as events carry it (1–64 characters, no NUL): anything else can have no stats."""
    if not 1 <= len(player_id) <= 64 or "\x00" in player_id:
        raise Malformed("player_id: 1–64 characters, no NUL", field="path.player_id",
                        message_zh="player_id：1–64 个字符，不能含 NUL")  # fmt: skip
    return player_id


def empty_period(since: str | None, until: str | None) -> Malformed:
    """``since`` after ``until`` (tables, the leaderboard): the refusal, in both languages."""
    return Malformed(f"since {since} is after until {until}: an empty period", field="query.since",
                     message_zh=f"起始 {since} 晚于截止 {until}：这段时间是空的")  # fmt: skip


def check_preset(preset: str | None) -> str | None:
    """``?preset=``: one of the presets of RULES.md (an unknown name is a typo, not an empty answer)."""
    if preset is not None and preset not in PRESETS:
        known = ", ".join(PRESETS)
        raise Malformed(f"unknown preset {preset[:64]!r}: expected one of {known}", field="query.preset",
                        message_zh=f"没有这个规则预设 {preset[:64]!r}：可选 {known}")  # fmt: skip
    return preset


# ------------------------------------------------------------------------------- the language
LANG_SCOPE_KEY = "kwx.lang"  # the language a read chose, for ReadHeaders (request scope)


async def read_lang(
    request: Request,
    lang: Annotated[
        Literal["zh", "en"] | None,
        Query(description="zh or en: the language of the answer's texts (wins over Accept-Language)"),
    ] = None,
) -> str:
    """Every read route's language (issue 13): ``?lang=zh|en``, else ``Accept-Language`` (zh when
    Chinese is preferred over English), else en; a bad ``lang`` is 422 naming ``query.lang``. Added
    to the read routers as a router-level dependency; a route whose text has a language takes it as
    a parameter too (``Depends(read_lang)``, resolved once). The answer carries
    ``Content-Language`` and ``Vary: Accept-Language`` (:class:`ReadHeaders`)."""
    from projections.wording import language

    chosen = lang or language(request.headers.get("accept-language"))
    request.scope[LANG_SCOPE_KEY] = chosen
    return chosen


class ReadHeaders:
    """Pure ASGI middleware for the reads' own headers: an answer to a request that went through
    :func:`read_lang` carries ``Content-Language`` and ``Vary: Accept-Language`` (unless the route
    set them itself); an answer read from a database says which one, ``Kwx-Read-From: primary``
    or ``replica`` (``services.replica.READ_FROM``: the read says where it ran)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        read_from: list[str] = []
        token = READ_FROM.set(read_from)

        async def send_with_headers(message: Message) -> None:
            lang = scope.get(LANG_SCOPE_KEY)
            if message["type"] == "http.response.start" and (lang is not None or read_from):
                headers = list(message.get("headers", []))
                names = {k.lower() for k, _ in headers}
                if lang is not None and b"content-language" not in names:
                    headers.append((b"content-language", str(lang).encode()))
                if lang is not None and b"vary" not in names:
                    headers.append((b"vary", b"Accept-Language"))
                if read_from:  # one name; both, in the order used, if one request read from each
                    headers.append((READ_FROM_HEADER, ", ".join(dict.fromkeys(read_from)).encode()))
                message["headers"] = headers
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        finally:
            READ_FROM.reset(token)
