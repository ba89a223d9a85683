"""Property-based fuzzing of the whole API against the committed ``openapi/openapi.json``
(schemathesis, in-process ASGI app, the session's real PostgreSQL).

Every operation gets schema-valid and schema-invalid requests (path, query, headers, bodies; the
append's body schema is the domain's own event types), sent with a valid key of each role in turn
(appends: platform keys); each request is sent to the generated table id and again to
a table that exists (so the read routes run on real data). Checks: never a 5xx, every error body
is ``{"error": str, "message": str, …}`` (a read's also with its ``message_zh`` in Chinese), the
status is one the document declares, the content type and the body conform to it, and
schema-invalid input is refused with a 4xx. Bounded: a few hundred requests in all.

The append's JSON-lines body (``application/x-ndjson``, a string in the document) is sent as the
generated text's bytes, and every generated JSON append body that has a JSON-lines twin (its events
one per line, ``expected_version`` in the query) is sent both ways to two new tables: the answers
must agree — status, error code, field and event index, the line naming that event.
"""

from __future__ import annotations

import itertools
import json
import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from tests.paths import REPO
from tests.service.streams import legal_table

pytestmark = pytest.mark.db

schema = schemathesis.openapi.from_path(REPO / "openapi" / "openapi.json")
schema.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])

CHECKS = [
    schemathesis.checks.not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_rejection,
]
CJK = re.compile(r"[\u4e00-\u9fff]")
ROLES = itertools.cycle(("platform", "support", "dashboard"))
APPEND = "/v1/tables/{table_id}/events"
NDJSON = "application/x-ndjson"


@schemathesis.serializer(NDJSON)
def _ndjson_body(_ctx: Any, value: Any) -> dict[str, Any]:
    """The generated string as its bytes (a lone surrogate stays a byte sequence that is not UTF-8:
    hostile input the route must refuse with a 4xx); a value the document does not allow (a
    negative case) as its JSON text."""
    if isinstance(value, bytes):
        return {"data": value}
    text = value if isinstance(value, str) else json.dumps(value)
    return {"data": text.encode("utf-8", "surrogatepass")}


def _wire(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


OPENED = legal_table(12, 1)[:2]  # a table opened and its first hand dealt
PREFIXES = itertools.cycle((0, 1, 2))


def _lines_twin(body: Any) -> tuple[bytes, bytes, dict[str, str]] | None:
    """A JSON append body and the same batch in JSON lines, each event's bytes the same in both
    (JSON body, JSON-lines body, query); None when it has no twin: not an object of ``events`` (a
    non-empty list) and ``expected_version`` (an integer, null or absent) alone. The generated
    events come after none, one or two legal ones in turn (the table opened, its hand dealt), so
    that they are judged at a later index and on a table in play."""
    if not isinstance(body, dict) or not set(body) <= {"events", "expected_version"}:
        return None
    events, expected = body.get("events"), body.get("expected_version")
    if not isinstance(events, list) or not events:
        return None
    if expected is not None and type(expected) is not int:
        return None  # the query's text cannot tell a JSON string, float or bool from an int
    events = [*OPENED[: next(PREFIXES)], *events]
    query = {} if expected is None else {"expected_version": str(expected)}
    head = b"" if "expected_version" not in body else b'"expected_version": ' + _wire(expected) + b", "
    as_json = b"{" + head + b'"events": [' + b", ".join(map(_wire, events)) + b"]}"
    return as_json, b"\n".join(map(_wire, events)), query


def _answer(response: Any) -> tuple[int, Any, Any, Any, Any]:
    body = response.json() if response.status_code >= 400 else {}
    field = body.get("field")
    if field == "query.expected_version":  # JSON lines carry it in the query, JSON in the body
        field = "$.expected_version"
    return response.status_code, body.get("error"), field, body.get("index"), body.get("rule")


@pytest.fixture(scope="module")
def fuzz_keys(make_key: Callable[..., dict[str, str]]) -> dict[str, dict[str, str]]:
    tenant = "fz" + uuid.uuid4().hex[:8]
    return {role: make_key(tenant, role) for role in ("platform", "support", "dashboard")}


@pytest.fixture(scope="module")
def fuzz_table(app: Any, fuzz_keys: dict[str, dict[str, str]]) -> str:
    from fastapi.testclient import TestClient

    table_id = "fz-" + uuid.uuid4().hex[:10]
    with TestClient(app) as client:
        answer = client.post(
            f"/v1/tables/{table_id}/events",
            json={"events": legal_table(11, 1)[:-1]},  # left open: fuzzed appends reach the engine
            headers=fuzz_keys["platform"],
        )
    assert answer.status_code == 201, answer.text
    return table_id


@pytest.fixture(scope="module")
def direct(app: Any) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    with TestClient(app) as client:
        yield client


def _check_error_body(response: Any) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:300])
    if response.status_code >= 400:
        body = response.json()
        assert isinstance(body.get("error"), str) and isinstance(body.get("message"), str), body
        if response.request.method == "GET":  # a read's refusal, said in Chinese too (the desk's pages)
            assert CJK.search(body.get("message_zh") or ""), body


@schema.parametrize()
@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_against_the_openapi_document(
    case: Any, app: Any, fuzz_keys: dict[str, dict[str, str]], fuzz_table: str, direct: Any
) -> None:
    generated = case.headers or {}
    headers = {k: v for k, v in generated.items() if k.lower() != "authorization"}
    negative = case.meta is not None and case.meta.generation.mode == GenerationMode.NEGATIVE
    if not (negative and len(headers) == len(generated) and "authorization" not in generated):
        # a valid key of each role in turn (hostile Authorization headers: test_hostile.py); a
        # negative case that leaves the key out on purpose is sent without one (401); only platform
        # keys append
        headers.update(fuzz_keys["platform" if case.method == "POST" else next(ROLES)])
    checks = CHECKS
    if case.path == "/v1/feed":  # the live feed: its long-poll, not waiting (an SSE stream never ends)
        case.query = {**(case.query or {}), "format": "ndjson", "wait": 0}
        checks = CHECKS[:-1]  # a negative format / wait was made valid here
    response = case.call(app=app, headers=headers)
    _check_error_body(response)
    case.validate_response(response, checks=checks)
    if case.path_parameters and "table_id" in case.path_parameters:
        # the same request on a table that exists; a negative case may become valid here
        case.path_parameters = {**case.path_parameters, "table_id": fuzz_table}
        response = case.call(app=app, headers=headers)
        _check_error_body(response)
        case.validate_response(response, checks=CHECKS[:-1])
    if case.path == APPEND and case.method == "POST" and case.media_type == "application/json":
        twin = _lines_twin(case.body)
        if twin is not None:
            _the_lines_twin_answers_alike(direct, fuzz_keys["platform"], *twin)


def _the_lines_twin_answers_alike(
    client: Any, key: dict[str, str], body: bytes, lines: bytes, query: dict[str, str]
) -> None:
    """The batch as JSON to one new table and as JSON lines to another: the same answer; an error
    about an event names its line (each event on its own line: line = index + 1)."""
    tag = uuid.uuid4().hex[:10]
    as_json = client.post(
        f"/v1/tables/fzj-{tag}/events", content=body, headers={**key, "Content-Type": "application/json"}
    )
    as_lines = client.post(
        f"/v1/tables/fzl-{tag}/events",
        content=lines,
        params=query,
        headers={**key, "Content-Type": NDJSON},
    )
    _check_error_body(as_lines)
    answer = _answer(as_json)
    assert _answer(as_lines) == answer, (as_json.text[:300], as_lines.text[:300])
    index = answer[3]
    if isinstance(index, int):
        assert as_lines.json().get("line") == index + 1, as_lines.text[:300]
