"""Property-based fuzzing of the whole API against the committed ``openapi/openapi.json``
(schemathesis, in-process ASGI app, the session's real PostgreSQL).

Every operation gets schema-valid and schema-invalid requests (path, query, headers, bodies; the
append's body schema is the domain's own event types), sent with a valid key of each role in turn
(appends: platform keys); each request is sent to the generated table id and again to
a table that exists (so the read routes run on real data). Checks: never a 5xx, every error body
is ``{"error": str, "message": str, …}``, the status is one the document declares, the content
type and the body conform to it, and schema-invalid input is refused with a 4xx. Bounded: a few
hundred requests in all.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
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
ROLES = itertools.cycle(("platform", "support", "dashboard"))


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


def _check_error_body(response: Any) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:300])
    if response.status_code >= 400:
        body = response.json()
        assert isinstance(body.get("error"), str) and isinstance(body.get("message"), str), body


@schema.parametrize()
@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_against_the_openapi_document(
    case: Any, app: Any, fuzz_keys: dict[str, dict[str, str]], fuzz_table: str
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
