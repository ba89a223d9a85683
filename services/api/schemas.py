"""Pydantic models for the OpenAPI document only. Bodies are parsed with msgspec (raw bytes, the
domain's own event types) and answers are encoded with msgspec; these models describe them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ErrorBody(BaseModel):
    model_config = ConfigDict(extra="allow")
    error: str = Field(description="stable error code, e.g. version_conflict, illegal_event")
    message: str


class AppendRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    expected_version: int | None = Field(
        default=None, ge=0, description="the table's current version (0 for a new table); null: no check"
    )
    events: list[dict[str, Any]] = Field(min_length=1, description="events as in CONTRACT.md §1")


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
    version: int
    position: int = Field(description="global position (unique, increasing; not a commit order)")
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


class Health(BaseModel):
    status: str
    database: str
    engine: str
