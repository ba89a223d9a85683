"""``/v1/health``: no key needed; says whether the database answers, and how fresh the read models
are (``projections``: caught up, or how long ago the oldest event they lack was recorded)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from projections import registry
from services.api import schemas
from services.api.answers import RETRY_AFTER, error_answer
from services.api.deps import get_container
from services.bootstrap import Container

router = APIRouter(prefix="/v1", tags=["health"])


@router.get(
    "/health",
    operation_id="health-get",
    summary="Service and database health",
    response_model=schemas.Health,
    responses={503: {**schemas.error_responses(503)[503], "description": "the database does not answer"}},
)
def health(container: Annotated[Container, Depends(get_container)]) -> JSONResponse:
    body: dict[str, Any] = {"status": "ok", "database": "ok", "engine": container.engine.name}
    try:
        with container.pool.connection(timeout=2.0) as conn:
            body["projections"] = _freshness(conn)
    except Exception as exc:
        # The answer says which fault (as every 503 does), never the driver's own text: this route
        # needs no key, and that text names hosts, sockets and roles. The detail goes to the log.
        status, error = error_answer(exc)
        message = error["message"] if status == 503 else "the database does not answer; retry"
        body.update(status="unavailable", database="unreachable", error="unavailable", message=message)
        return JSONResponse(body, status_code=503, headers={"Retry-After": RETRY_AFTER[1].decode()})
    return JSONResponse(body)


def _freshness(conn: Any) -> dict[str, Any]:
    """How far the read models are behind the log: the slowest model's checkpoint (a model that
    has none yet starts at the beginning), then the first stored event after it, by the log's
    order (``(tx_id, position)``, its index: one probe). Two small statements; they also prove the
    database answers."""
    rows = conn.execute("SELECT name, tx_id::text, position FROM projection_checkpoints").fetchall()
    done = {name: (int(tx), int(position)) for name, tx, position in rows}
    tx, position = min(done.get(name, (0, 0)) for name in registry.NAMES)
    row = conn.execute(_OLDEST_PENDING, (str(tx), position)).fetchone()
    lag = 0.0 if row is None else max(0.0, round(float(row[0]), 3))
    return {"caught_up": row is None, "lag_seconds": lag}


_OLDEST_PENDING = (
    "SELECT extract(epoch FROM statement_timestamp() - recorded_at)::float8 FROM events "
    "WHERE (tx_id, position) > (%s::text::xid8, %s) ORDER BY tx_id, position LIMIT 1"
)
