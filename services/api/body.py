"""The append's body, read and decoded before anything is stored: the declared Content-Type
(``415``; ``application/json``, or one event per line as ``application/x-ndjson``), the length
(``413``, as soon as it passes the limit), the time it takes to arrive (``408``), the JSON
(``400``), the shape of every event (``422 malformed``, naming the JSON path, and for JSON lines
the line) and its admission as a new event (``422 bad_rules`` and friends; ``domain.admission``).
Pure of the store: the routes (services/api/tables.py) call these in this order, then the store.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Annotated, Any
from urllib.parse import parse_qs

import msgspec
from msgspec import Meta
from starlette.requests import ClientDisconnect
from starlette.types import Receive

from domain.admission import admit
from domain.events import MAX_BASE, Event, explain
from services.errors import (
    BadRequest,
    BadRules,
    BatchTooLarge,
    Malformed,
    PayloadTooLarge,
    RequestTimeout,
    UnsupportedMediaType,
)
from services.settings import Settings

MAX_VERSION = 2**62


class AppendBody(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    events: Annotated[list[Event], Meta(min_length=1)]
    expected_version: Annotated[int, Meta(ge=0, le=MAX_VERSION)] | None = None


_decoder = msgspec.json.Decoder(AppendBody)
_event_decoder = msgspec.json.Decoder(Event)

NDJSON_TYPES = ("application/x-ndjson", "application/jsonl")
"""JSON lines: one event per line, ``expected_version`` in the query (CONTRACT.md §3)."""


class Append(msgspec.Struct, frozen=True):
    """A decoded append: the body, and for a JSON-lines body each event's line number (1-based;
    errors about an event name its line)."""

    body: AppendBody
    lines: list[int] | None = None

    def line_of(self, index: object) -> int | None:
        if self.lines is None or not isinstance(index, int) or not 0 <= index < len(self.lines):
            return None
        return self.lines[index]


async def read_append(
    headers: Mapping[str, str], receive: Receive, settings: Settings, query: str = ""
) -> Append:
    """The append's body from the request, checked in this order: Content-Type, length and arrival
    (:func:`read_body`), decoding and admission (:func:`decode_append` or :func:`decode_ndjson`),
    the batch's size. ``query`` is the request's raw query string."""
    kind = check_content_type(headers.get("content-type"))
    expected = _expected_in_query(query)
    if kind == "json" and expected is not None:
        raise Malformed(
            "expected_version goes in the JSON body (the query parameter is for application/x-ndjson bodies)",
            field="query.expected_version",
        )
    raw = await read_body(
        receive, headers.get("content-length"), settings.max_body_bytes, settings.body_timeout
    )
    append = Append(decode_append(raw)) if kind == "json" else decode_ndjson(raw, expected)
    count = len(append.body.events)
    if count > settings.max_batch:
        limit = settings.max_batch
        raise BatchTooLarge(f"{count} events in one batch; at most {limit}", limit=limit)
    return append


def check_content_type(declared: str | None) -> str:
    """``"json"`` or ``"ndjson"``: a declared Content-Type must say JSON (none at all is taken as
    JSON) or JSON lines."""
    if declared is None:
        return "json"
    media = declared.split(";", 1)[0].strip().lower()
    if media in NDJSON_TYPES:
        return "ndjson"
    if media != "application/json" and not (media.startswith("application/") and media.endswith("+json")):
        raise UnsupportedMediaType(
            f"Content-Type {declared[:100]!r}: send the body as application/json (or one event per line "
            "as application/x-ndjson)",
            field="header.content-type",
        )
    return "json"


def _expected_in_query(query: str) -> int | None:
    """``expected_version`` of the query string, if given: a whole number 0…2**62."""
    if "expected_version" not in query:
        return None
    values = parse_qs(query, keep_blank_values=True).get("expected_version")
    if not values:
        return None
    text = values[-1].strip()
    if len(values) > 1 or not text.isdigit() or int(text) > MAX_VERSION:
        raise Malformed(
            f"expected_version must be one whole number 0…{MAX_VERSION} (got {values[-1][:40]!r})",
            field="query.expected_version",
        )
    return int(text)


def decode_ndjson(raw: bytes, expected: int | None) -> Append:
    """A JSON-lines body: each non-blank line one event, decoded and admitted as in
    :func:`decode_append`; an error names the line (``line``, 1-based, and ``index``, the event's
    place in the batch). Each line is decoded on its own, so a line can never reach another."""
    events: list[Event] = []
    lines: list[int] = []
    for number, line in enumerate(raw.split(b"\n"), 1):
        if not line.strip():
            continue
        index = len(events)
        try:
            events.append(_event_decoder.decode(line))
        except msgspec.ValidationError as exc:
            text = str(exc)
            inner = _field_of(text) or "$"
            path = f"$.events[{index}]{inner[1:]}"
            bad = _BASE_FIELD.match(path)
            if bad is not None:
                error = _bad_rules_at(b'{"events":[' + line + b"]}", 0, bad[2], text)
                error.extra["index"] = index
                raise _with_line(error, number) from None
            raise _with_line(Malformed(explain(text), field=path, index=index), number) from None
        except msgspec.DecodeError as exc:
            raise Malformed(f"line {number} is not one JSON object: {exc}", field=f"$.events[{index}]",
                            index=index, line=number) from None  # fmt: skip
        except RecursionError:
            raise Malformed(f"line {number} is nested too deeply", field=f"$.events[{index}]", index=index,
                            line=number) from None  # fmt: skip
        lines.append(number)
    if not events:
        raise Malformed("no events: send one JSON event per line", field="$.events")
    body = AppendBody(events=events, expected_version=expected)
    append = Append(body, lines)
    try:
        _check_events(body, raw)
    except (Malformed, BadRules) as error:
        line = append.line_of(error.extra.get("index"))
        if line is not None:
            raise _with_line(error, line) from None
        raise
    return append


def _with_line(error: Malformed | BadRules, line: int) -> Malformed | BadRules:
    """``error`` naming the JSON-lines body's line ``line``: in ``line`` and in the message."""
    error.extra["line"] = line
    error.message = f"line {line}: {error.message}"
    if isinstance(error.extra.get("message_zh"), str):
        error.extra["message_zh"] = f"第{line}行：{error.extra['message_zh']}"
    return error


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


_EVENT_AT = re.compile(r"^\$\.events\[([0-9]+)\]")
_BASE_FIELD = re.compile(r"^\$\.events\[([0-9]+)\]\.(base|rules)$")


def decode_append(raw: bytes) -> AppendBody:
    """The append's body, decoded and admitted: every event of the shape its type decodes with
    (``malformed``, naming the JSON path, the valid values listed, and ``index`` when the path is
    inside an event) and, as a new event, admitted by ``domain.admission`` (a real ``at``, rules
    within today's ranges: ``bad_rules``, report amounts).
    Nothing is changed: what is stored are the bytes as sent."""
    try:
        body = _decoder.decode(raw)
    except msgspec.ValidationError as exc:
        text = str(exc)
        field = _field_of(text) or "$"
        bad = _BASE_FIELD.match(field)
        if bad is not None:  # base and the rules object are the table's rules (docs/rules-options.md)
            raise _bad_rules_at(raw, int(bad[1]), bad[2], text) from None
        at = _EVENT_AT.match(field)
        if at is None:
            raise Malformed(explain(text), field=field) from None
        raise Malformed(explain(text), field=field, index=int(at[1])) from None
    except msgspec.DecodeError as exc:  # "$": the body as a whole (CONTRACT §3: 400 naming the field)
        raise BadRequest(f"body is not valid JSON: {exc}", field="$") from None
    except RecursionError:
        raise Malformed("body nested too deeply", field="$") from None
    _check_events(body, raw)
    return body


def _check_events(body: AppendBody, raw: bytes) -> None:
    """What every decoded batch must pass before it is stored: no NUL in any text, and each event
    admitted as a new event (``domain.admission``)."""
    if b"\\u0000" in raw:  # PostgreSQL text cannot hold NUL: name the field instead of failing later
        for i, event in enumerate(body.events):
            path = _nul_path(msgspec.to_builtins(event), f"$.events[{i}]")
            if path is not None:
                raise Malformed(f"NUL character not allowed - at `{path}`", field=path, index=i)
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
