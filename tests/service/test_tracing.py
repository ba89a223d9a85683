"""OpenTelemetry traces (issue 15), with the SDK's in-memory exporter: one trace per request
through the append (the server span named by its route, ``kwx.append``, ``kwx.engine``, and the
SQL statements from psycopg's instrumentation), the trace id in the request's structlog line; and
off — nothing of the SDK imported — when no OTEL setting asks for traces. Real PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from services import tracing
from tests.service.streams import legal_table

pytestmark = pytest.mark.db


def test_the_sdk_settings_turn_it_on() -> None:
    assert not tracing.wanted({})
    assert tracing.wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert tracing.wanted({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"})
    assert tracing.wanted({"OTEL_TRACES_EXPORTER": "otlp"})
    assert not tracing.wanted(
        {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}
    )
    assert not tracing.wanted({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"})


def test_off_imports_nothing_of_the_sdk() -> None:
    """(FastAPI itself imports the OpenTelemetry API when it is installed; the SDK, the exporter
    and the instrumentations are kwx's to import, and only when traces are asked for.)"""
    code = (
        "import sys\n"
        "from services.api.app import create_app\n"
        "from services import tracing\n"
        "app = create_app()\n"
        "assert not tracing.active() and tracing.span('x') is tracing.span('y')\n"
        "ours = ('opentelemetry.sdk', 'opentelemetry.instrumentation', 'opentelemetry.exporter')\n"
        "print(sorted(m for m in sys.modules if m.startswith(ours)))\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip() == "[]", done.stdout


def test_one_trace_per_append_through_the_engine_and_the_sql(database_url: str) -> None:
    import io

    from services import logs

    out, real = io.StringIO(), sys.stdout
    sys.stdout = out  # the log lines (structlog writes to the stdout it was configured with)
    try:
        exporter = _traced_append(database_url, out)
    finally:
        sys.stdout = real
        logs.configure("info")  # later tests log to pytest's stdout again
    spans, logged = exporter
    by_name: dict[str, list[Any]] = {}
    for s in spans:
        by_name.setdefault(s.name, []).append(s)
    (server,) = [s for s in spans if s.parent is None and s.attributes.get("http.route")]
    assert server.attributes["http.route"] == "/v1/tables/{table_id}/events", server.attributes
    trace_id = server.context.trace_id
    append, engine = by_name["kwx.append"][0], by_name["kwx.engine"][0]
    sql = [s for s in spans if s.attributes.get("db.system") == "postgresql"]
    assert sql, sorted(by_name)
    for s in (append, engine, *sql):
        assert s.context.trace_id == trace_id, s.name  # one trace for the request
    assert engine.attributes["kwx.events"] == 30
    line = next(json.loads(x) for x in logged.splitlines() if '"traced-req"' in x and '"request"' in x)
    assert line["trace_id"] == format(trace_id, "032x")
    assert not tracing.active()  # in_memory() turned it off again


def _traced_append(database_url: str, out: Any) -> tuple[Any, str]:
    """(finished spans, log text) of one append with tracing on (the in-memory exporter)."""
    from fastapi.testclient import TestClient

    from services.api.app import create_app
    from services.bootstrap import bootstrap
    from services.settings import Settings

    with tracing.in_memory() as exporter:
        container = bootstrap(Settings(database_url=database_url, projector="off"), url=database_url,
                              migrate=False)  # fmt: skip
        try:
            key = {"Authorization": f"Bearer {container.keys.create('traced', 'platform')}"}
            exporter.clear()
            with TestClient(create_app(container=container)) as client:
                body = {"events": legal_table(91)[:30], "expected_version": 0}
                answer = client.post("/v1/tables/traced-1/events", json=body,
                                     headers={**key, "X-Request-ID": "traced-req"})  # fmt: skip
                assert answer.status_code == 201, answer.text
        finally:
            container.close()
        return exporter.get_finished_spans(), out.getvalue()
