"""Request dependencies: the container, the caller (API key → Principal), role checks."""

from __future__ import annotations

import re

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from services.bootstrap import Container
from services.errors import Forbidden, InvalidTableId, Unauthorized
from services.store.keys import Principal

TABLE_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

bearer = HTTPBearer(auto_error=False, description="an API key from `kwx keys create`")


def get_container(request: Request) -> Container:
    container: Container = request.app.state.container
    return container


async def get_principal(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None = Depends(bearer),  # noqa: B008 - FastAPI idiom
) -> Principal:
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise Unauthorized("send Authorization: Bearer <key> (kwx keys create)")
    keys = get_container(request).keys
    known, principal = keys.cached(credentials.credentials)  # no thread hop for a cached key
    if not known:
        principal = await run_in_threadpool(keys.authenticate, credentials.credentials)
    if principal is None:
        raise Unauthorized("unknown or revoked API key")
    return principal


def check_table_id(table_id: str) -> str:
    if not TABLE_ID_RE.match(table_id):
        raise InvalidTableId("table_id: 1–64 characters of A-Za-z0-9_-", field="table_id")
    return table_id


def require_role(principal: Principal, *roles: str) -> None:
    if principal.role not in roles:
        raise Forbidden(f"role {principal.role!r} may not do this (needs {' or '.join(roles)})")
