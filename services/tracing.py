"""OpenTelemetry traces (issue 15), with the OpenTelemetry SDK and its FastAPI and psycopg
instrumentations.

On when the SDK's usual settings ask for traces — ``OTEL_EXPORTER_OTLP_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` set, or ``OTEL_TRACES_EXPORTER`` set to something other than
``none`` — and ``OTEL_SDK_DISABLED`` is not ``true``. Then each serving process (every worker of
``kwx serve``) has a tracer provider exporting over OTLP/HTTP (the SDK reads its own variables:
endpoint, headers, ``OTEL_SERVICE_NAME`` — default ``kwx`` — and the sampler), the app is
instrumented (one server span per request, named by its route template), the SQL too (one span per
statement, on every pooled connection: psycopg's instrumentation, installed before the pools
connect), and the append adds its own spans (``kwx.append``, and ``kwx.engine`` around the rules
engine's check where it runs in the request's thread). Every structlog line written inside a span
carries ``trace_id`` and ``span_id``.

Off (the default): nothing of the SDK is imported and :func:`span` is a shared null context — a
request pays one attribute read.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from typing import Any

_provider: Any = None  # the TracerProvider, once set up
_tracer: Any = None
_NULL = contextlib.nullcontext()


def wanted(env: Mapping[str, str] | None = None) -> bool:
    """Whether the environment asks for traces (the SDK's own variables)."""
    env = os.environ if env is None else env
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    endpoint = env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    return bool(exporter or endpoint)


def active() -> bool:
    return _tracer is not None


def setup(exporter: Any = None, *, simple: bool = False, as_global: bool = True) -> Any:
    """This process's tracer provider (made once): ``exporter`` (default: OTLP over HTTP, from the
    SDK's variables) behind a batch processor (``simple``: exported as each span ends — tests);
    psycopg instrumented; the OpenTelemetry API's global provider too unless ``as_global`` is off
    (tests: a global provider can be set only once per process). Returns the provider."""
    global _provider, _tracer
    if _provider is not None:
        return _provider
    from opentelemetry import trace
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    name = os.environ.get("OTEL_SERVICE_NAME") or "kwx"
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    provider.add_span_processor(SimpleSpanProcessor(exporter) if simple else BatchSpanProcessor(exporter))
    if as_global:
        with contextlib.suppress(Exception):  # a provider set already (another library): keep ours local
            trace.set_tracer_provider(provider)
    PsycopgInstrumentor().instrument(tracer_provider=provider, enable_commenter=False, skip_dep_check=True)
    _provider, _tracer = provider, provider.get_tracer("kwx")
    return provider


def shutdown() -> None:
    """Flush and forget the provider, and take psycopg's instrumentation off (tests)."""
    global _provider, _tracer
    if _provider is None:
        return
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

    PsycopgInstrumentor().uninstrument()
    _provider.shutdown()
    _provider = _tracer = None


def instrument(app: Any) -> None:
    """The FastAPI instrumentation on ``app``, outermost (the append's fast path included)."""
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

    FastAPIInstrumentor.instrument_app(app, tracer_provider=_provider, excluded_urls="/metrics")


def span(name: str, **attributes: Any) -> Any:
    """A span named ``name`` around a block when tracing is on; else the shared null context."""
    if _tracer is None:
        return _NULL
    return _tracer.start_as_current_span(name, attributes=attributes or None)


def add_ids(logger: Any, method: str, event: dict[str, Any]) -> dict[str, Any]:
    """structlog processor: ``trace_id`` and ``span_id`` of the current span, when there is one."""
    if _tracer is not None:
        from opentelemetry import trace

        context = trace.get_current_span().get_span_context()
        if context.is_valid:
            event.setdefault("trace_id", format(context.trace_id, "032x"))
            event.setdefault("span_id", format(context.span_id, "016x"))
    return event


@contextlib.contextmanager
def in_memory() -> Iterator[Any]:
    """Tests: tracing on for the block with the SDK's in-memory exporter (yielded)."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    shutdown()
    setup(exporter, simple=True, as_global=False)
    try:
        yield exporter
    finally:
        shutdown()
