"""Pydantic models for the OpenAPI document only. Bodies are parsed with msgspec (raw bytes, the
domain's own event types) and answers are encoded with msgspec; these models describe them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ErrorBody(BaseModel):
    model_config = ConfigDict(extra="allow")
    error: str = Field(description="stable error code, e.g. version_conflict, illegal_event")
    message: str


def _event_schema() -> dict[str, Any]:
    """The JSON Schema of one event, from the domain's own msgspec types (what the append decodes
    with), its ``$ref``s inlined so it can sit anywhere in the OpenAPI document."""
    import msgspec

    from domain.events import Event

    whole = msgspec.json.schema(Event)
    defs = whole.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return inline(defs[node["$ref"].rsplit("/", 1)[1]])
            return {k: inline(v) for k, v in node.items() if k != "discriminator"}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return inline(whole)  # type: ignore[no-any-return]


class AppendRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    expected_version: int | None = Field(
        default=None,
        ge=0,
        le=2**62,
        description="the table's current version (0 for a new table); null: no check",
    )
    events: list[dict[str, Any]] = Field(
        min_length=1, description="events as in CONTRACT.md §1", json_schema_extra={"items": _event_schema()}
    )


class Ruling(BaseModel):
    model_config = ConfigDict(extra="allow")
    index: int
    version: int
    rule: str
    message: str


class AppendResponse(BaseModel):
    table_id: str
    version: int = Field(description="the table's version after the batch")
    first_version: int
    count: int
    rulings: list[Ruling] = Field(description="violations recorded (tables with violations: record)")


class StoredEvent(BaseModel):
    version: int = Field(description="1, 2, … within the table: the order of its events")
    recorded_at: str
    id: str
    type: str
    event: dict[str, Any]
    ruling: dict[str, Any] | None


class EventsPage(BaseModel):
    table_id: str
    version: int = Field(description="the table's current version")
    events: list[StoredEvent]
    next_after: int | None = Field(description="pass as ?after= for the next page; null at the end")


class ProjectionsHealth(BaseModel):
    caught_up: bool = Field(description="every kept read model holds every stored event")
    lag_seconds: float = Field(
        description="how long ago the oldest event not yet in every read model was recorded (0 when "
        "caught up): how stale stats, ledgers and settlements may be"
    )
    parked: int = Field(
        0,
        description="events some read model could not apply, parked (docs/projections.md §1): "
        "every other event keeps arriving; `kwx projections status` says which models",
    )
    stale: list[str] = Field(
        default_factory=list,
        description="read models whose checkpoint is ahead of anything the log can produce "
        "(restored or copied read models): they receive nothing until rebuilt",
    )
    models: list[str] = Field(
        default_factory=list,
        description="the read models this deployment keeps (KWX_READ_MODELS), the ones the fields above "
        "are about; a route of another answers 501 not_kept",
    )


class ParkedEvent(BaseModel):
    model: str = Field(description="the read model that could not apply the event")
    table_id: str
    version: int
    event_id: str
    error_class: str = Field(description="the error's class, or `parked_behind`")
    error: str
    parked_at: str = Field(description="ISO 8601, UTC")
    tries: int
    waits_for: int | None = Field(
        None, description="the version of the parked event of the same table this one waits behind"
    )


class ParkedEvents(BaseModel):
    parked: list[ParkedEvent]


class ReplicaHealth(BaseModel):
    status: str = Field(
        description='"ok"; "down" (every read goes to the primary until it is back); "error" (it '
        "answers, but not the lag query)"
    )
    in_recovery: bool | None = Field(description="true for a streaming replica (false: it is not one)")
    lag_seconds: float | None = Field(
        description="0 when it has replayed all the WAL it received, else the age of the last "
        "transaction it replayed"
    )
    lag_bytes: int | None = Field(
        description="the primary's WAL position minus the replica's replay position"
    )
    replay_paused: bool | None = Field(description="replay paused on the replica (pg_wal_replay_pause)")


class Health(BaseModel):
    status: str
    database: str
    engine: str
    projections: ProjectionsHealth | None = Field(
        None, description="the read models' freshness (absent when the database does not answer)"
    )
    replica: ReplicaHealth | None = Field(
        None,
        description="the read replica (DATABASE_READ_URL) and its lag; absent without one. The "
        "read models' freshness on it is the projector's lag plus the replica's",
    )


class Live(BaseModel):
    status: str = Field(description='"ok": the process answers (it does not look at the database)')


class ReadyChecks(BaseModel):
    database: str = Field(description='"ok", or "unreachable"')
    migrations: str | None = Field(
        None, description='"ok" (at the head this code expects), or "behind" / "ahead" / "unknown"'
    )
    schema_revision: str | None = Field(None, description="the database's revision (alembic_version)")
    expected_revision: str = Field(description="the revision at the head of this code's migrations")
    projections: str | None = Field(
        None, description='"ok" (lag within max_lag_seconds, no stale checkpoint), or "lagging" / "stale"'
    )
    lag_seconds: float | None = Field(None, description="as in /v1/health's projections")
    max_lag_seconds: float = Field(description="KWX_READY_MAX_LAG: the bound on lag_seconds")


class Ready(BaseModel):
    status: str = Field(description='"ready", or "not_ready" (then 503 with Retry-After)')
    reasons: list[str] = Field(description="why not ready: one line each, for an operator")
    checks: ReadyChecks


ERROR_STATUSES: dict[int, str] = {
    400: "bad_request: the body is not JSON, or bad framing (Content-Length, Transfer-Encoding)",
    401: "unauthorized: no `Authorization: Bearer KEY`, or an unknown or revoked key",
    403: "forbidden: the key's role may not do this",
    404: "not_found: no such table (in the key's tenant: another tenant's is the same 404), hand, player "
    "or route",
    408: "request_timeout: the body did not arrive within KWX_BODY_TIMEOUT seconds",
    409: "version_conflict (with current_version) or id_conflict",
    413: "payload_too_large or batch_too_large",
    415: "unsupported_media_type: the body is not sent as application/json (or application/x-ndjson)",
    422: (
        "malformed (field; index when it is inside an appended event), bad_rules (field, allowed), "
        "invalid_table_id or illegal_event (index, rule)"
    ),
    429: "rate_limited: over KWX_RATE_LIMIT_KEY or KWX_RATE_LIMIT_TENANT (scope, limit, retry_after)",
    431: "request_header_fields_too_large: headers over KWX_MAX_HEADER_BYTES or KWX_MAX_HEADERS",
    501: "not_kept: this deployment does not keep the read model the route answers from (KWX_READ_MODELS; "
    "`model`, `kept`)",
    503: "unavailable: the database is busy or unreachable, or too many reads wait; retry",
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for these error statuses, all in the one error format (ErrorBody); a 503
    and a 429 also document their ``Retry-After`` header (services.api.answers.retry_after)."""
    return {
        s: {"model": ErrorBody, "description": ERROR_STATUSES[s], **(_RETRY_AFTER if s in (429, 503) else {})}
        for s in statuses
    }


_RETRY_AFTER: dict[str, Any] = {
    "headers": {
        "Retry-After": {
            "description": "seconds to wait before trying again (the same batch, for an append)",
            "schema": {"type": "integer"},
        }
    }
}
