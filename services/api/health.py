"""``/v1/health``: no key needed; says whether the database answers, and how fresh the read models
are (``projections``: caught up, or how long ago the oldest event they lack was recorded; how many
events are parked — a count only, no tenant or table; which checkpoints are stale); with a read
replica (``DATABASE_READ_URL``), ``replica``: up or down and its lag behind the primary, in
seconds and bytes of WAL (services/replica.py). A replica down is no 503: reads use the primary.

``/v1/health/live`` and ``/v1/health/ready`` (issue 15): liveness (the process answers; no database
call, so a slow database never gets a healthy process restarted) and readiness (the database
answers, its schema is at this code's migration head, the read models lag less than
``KWX_READY_MAX_LAG`` seconds and no checkpoint is stale): what a load balancer or an orchestrator
asks before it sends traffic. Neither needs a key, and neither names a tenant or a table.

``/v1/projections/parked``: a tenant's own parked events (support or platform key), never another
tenant's."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse

from projections import parked
from projections.queries.freshness import Freshness
from services.api import schemas
from services.api.answers import RETRY_AFTER, error_answer
from services.api.deps import Principal, get_container, get_principal, require_role
from services.bootstrap import Container
from services.db import reading

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
            body["projections"] = Freshness(container.kept)(conn)
    except Exception as exc:
        # The answer says which fault (as every 503 does), never the driver's own text: this route
        # needs no key, and that text names hosts, sockets and roles. The detail goes to the log.
        status, error = error_answer(exc)
        message = error["message"] if status == 503 else "the database does not answer; retry"
        body.update(status="unavailable", database="unreachable", error="unavailable", message=message)
        return JSONResponse(body, status_code=503, headers={"Retry-After": RETRY_AFTER[1].decode()})
    if container.replica is not None:  # DATABASE_READ_URL: how far behind it is (down: reads use the primary)
        body["replica"] = container.replica.lag(container.pool)
    return JSONResponse(body)


@router.get(
    "/health/live",
    operation_id="health-live",
    summary="Liveness: the process answers",
    response_model=schemas.Live,
)
def live() -> JSONResponse:
    return JSONResponse({"status": "ok"})


def _schema_revision(conn: Any) -> str | None:
    """The database's revision; None before any migration, or before 0010 (the revision that lets
    the service's role read ``alembic_version``: a schema it can't read is behind this code)."""
    row = conn.execute(
        "SELECT coalesce(has_table_privilege(to_regclass('alembic_version'), 'SELECT'), false)"
    ).fetchone()
    if not row or not row[0]:
        return None
    found = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    return str(found[0]) if found else None


def _revision_state(found: str | None, expected: tuple[str, ...]) -> str:
    """ok / behind / ahead / unknown: revisions are zero-padded numbers (0001, 0002, …)."""
    if found in expected:
        return "ok"
    if found is None:
        return "behind"
    try:
        return "ahead" if int(found) > max(int(h) for h in expected) else "behind"
    except ValueError:
        return "unknown"


@router.get(
    "/health/ready",
    operation_id="health-ready",
    summary="Readiness: database, schema and read models",
    response_model=schemas.Ready,
    responses={503: {"model": schemas.Ready, "description": "not ready: `reasons` says why (Retry-After)"}},
)
def ready(container: Annotated[Container, Depends(get_container)]) -> JSONResponse:
    from services import migrate

    expected = migrate.heads()
    max_lag = container.settings.ready_max_lag
    checks: dict[str, Any] = {"database": "ok", "migrations": None, "schema_revision": None,
                              "expected_revision": ",".join(expected), "projections": None,
                              "lag_seconds": None, "max_lag_seconds": max_lag}  # fmt: skip
    reasons: list[str] = []
    try:
        with container.pool.connection(timeout=2.0) as conn:
            found = _schema_revision(conn)
            freshness = Freshness(container.kept)(conn)
    except Exception as exc:
        error_answer(exc)  # logs the fault; the driver's text is not repeated to a keyless caller
        checks["database"] = "unreachable"
        reasons.append("the database does not answer")
    else:
        checks["schema_revision"] = found
        checks["migrations"] = state = _revision_state(found, expected)
        if state != "ok":
            reasons.append(f"the database's schema is {state} (at {found or 'none'}, this code expects "
                           f"{checks['expected_revision']}): run kwx migrate")  # fmt: skip
        checks["lag_seconds"] = lag = freshness["lag_seconds"]
        if freshness["stale"]:
            checks["projections"] = "stale"
            names = ", ".join(freshness["stale"])
            reasons.append(f"stale read models ({names}): run kwx projections rebuild")
        elif lag > max_lag:
            checks["projections"] = "lagging"
            reasons.append(f"the read models lag {lag:.1f} s, more than KWX_READY_MAX_LAG={max_lag:g}")
        else:
            checks["projections"] = "ok"
    body = {"status": "not_ready" if reasons else "ready", "reasons": reasons, "checks": checks}
    if reasons:
        return JSONResponse(body, status_code=503, headers={"Retry-After": RETRY_AFTER[1].decode()})
    return JSONResponse(body)


@router.get(
    "/projections/parked",
    operation_id="projections-parked",
    tags=["projections"],
    summary="This tenant's parked events",
    description="Events of the caller's tenant that a read model could not apply, oldest first "
    "(docs/projections.md §1): the model, table, version and event id, the error, when, how many "
    "tries, and `waits_for` — the version of the parked event of the same table it waits behind. "
    "An operator applies them again with `kwx projections retry` after a fix.",
    response_model=schemas.ParkedEvents,
    responses=schemas.error_responses(401, 403, 503),
)
def parked_events(
    principal: Annotated[Principal, Depends(get_principal)],
    container: Annotated[Container, Depends(get_container)],
    limit: Annotated[int, Query(ge=1, le=1000, description="at most this many")] = 100,
) -> JSONResponse:
    require_role(principal, "support", "platform")
    items = reading(container.pool, lambda conn: parked.of_tenant(conn, principal.tenant, limit))
    return JSONResponse({"parked": items})
