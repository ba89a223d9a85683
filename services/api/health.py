"""``/v1/health``: no key needed; says whether the database answers."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from services.api import schemas
from services.api.deps import get_container
from services.bootstrap import Container

router = APIRouter(prefix="/v1", tags=["health"])


@router.get(
    "/health",
    operation_id="health-get",
    summary="Service and database health",
    response_model=schemas.Health,
    responses={503: {"model": schemas.ErrorBody, "description": "the database does not answer"}},
)
def health(container: Annotated[Container, Depends(get_container)]) -> JSONResponse:
    body: dict[str, Any] = {"status": "ok", "database": "ok", "engine": container.engine.name}
    try:
        with container.pool.connection(timeout=2.0) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:
        body.update(status="unavailable", database="unreachable", error="unavailable", message=str(exc)[:200])
        return JSONResponse(body, status_code=503)
    return JSONResponse(body)
