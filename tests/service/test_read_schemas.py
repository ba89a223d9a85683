"""Typed reads (issue 13): every GET route's 200 answer has a real schema in the committed
openapi/openapi.json, and real answers (against the real database: simulated multi-hand tables of
every preset, a table that records violations, the conformance and golden streams, with the
projections caught up) validate against it with ``jsonschema`` — strictly, so that a key a route
adds or drops fails here until services/api/read_schemas.py says so."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from domain import engine
from projections.projector import Projector
from tests.paths import REPO
from tests.projections.helpers import PRESETS, append, simulated, violating
from tests.service.streams import expectation, load, stream_files

pytestmark = pytest.mark.db

SPEC = json.loads((REPO / "openapi" / "openapi.json").read_text())
# Every GET route answering JSON (or JSON lines); /metrics answers the Prometheus text format and is
# checked with Prometheus's own parser (tests/service/test_metrics.py).
GETS = {path: ops["get"] for path, ops in SPEC["paths"].items() if "get" in ops and path != "/metrics"}
_T = "/v1/tables/{table_id}"


def _schema(path: str) -> dict[str, Any]:
    """The 200 answer's schema: the JSON one, or (an NDJSON-only route: an export) the lines'."""
    content = GETS[path]["responses"]["200"]["content"]
    schema: dict[str, Any] = (content.get("application/json") or content["application/x-ndjson"])["schema"]
    return schema


def _validator(path: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator({**_schema(path), "components": SPEC["components"]})


def _resolved(schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref is None:
        return schema
    out: dict[str, Any] = SPEC["components"]["schemas"][ref.rsplit("/", 1)[1]]
    return out


def test_every_get_route_has_a_real_200_schema() -> None:
    assert len(GETS) >= 15
    for path in GETS:
        schema = _resolved(_schema(path))
        if schema == {"type": "string"}:  # an NDJSON export: text, one JSON value a line
            assert "application/json" not in GETS[path]["responses"]["200"]["content"], path
            continue
        assert schema and schema.get("type") == "object" and schema.get("properties"), path
        assert schema.get("required"), path


def test_the_read_answers_are_closed_objects_with_their_keys_required() -> None:
    mine = [p for p, op in GETS.items() if _schema(p).get("$ref", "").endswith("Answer")]
    assert len(mine) == 9  # state, settlement, audit, hand audit, stats, 2 ledgers, leaderboard, feed

    def walk(node: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node:
                yield where, node
            for k, v in node.items():
                yield from walk(v, f"{where}.{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                yield from walk(v, f"{where}[{i}]")

    names = {_schema(p)["$ref"].rsplit("/", 1)[1] for p in mine}
    for name in names:
        for where, obj in walk(SPEC["components"]["schemas"][name], name):
            assert obj.get("additionalProperties") is False, where
    rules = SPEC["components"]["schemas"]["Rules"]
    assert rules["additionalProperties"] is False and set(rules["required"]) == set(rules["properties"])


@pytest.fixture(scope="module")
def answers(app: Any, make_key: Any, container: Any) -> dict[str, list[Any]]:
    """Real 200 answers of every GET route (by its path template), from one tenant's tables."""
    from fastapi.testclient import TestClient

    tenant = "rs" + uuid.uuid4().hex[:8]
    platform, support = make_key(tenant, "platform"), make_key(tenant, "support")
    dashboard = make_key(tenant, "dashboard")
    got: dict[str, list[Any]] = {p: [] for p in GETS}
    tables: list[tuple[str, list[dict[str, Any]]]] = []
    state, settle, h_audit = f"{_T}/state", f"{_T}/hands/{{hand}}/settlement", f"{_T}/hands/{{hand}}/audit"
    stats, ledger = "/v1/players/{player_id}/stats", "/v1/players/{player_id}/ledger"
    with TestClient(app) as client:

        def get(template: str, headers: dict[str, str], refusable: bool = False, **params: Any) -> Any:
            """GET ``template`` filled with ``params`` (the rest as the query); a 404 or 422 is
            fine when ``refusable`` (the table breaks under other rules; no hand of that preset)."""
            names = {k for k in params if "{" + k + "}" in template}
            url = template.format(**{k: params.pop(k) for k in names})
            r = client.get(url, params=params, headers=headers)
            if refusable and r.status_code in (404, 422):
                return None
            assert r.status_code == 200, (url, params, r.text)
            ndjson = r.headers["content-type"].startswith("application/x-ndjson")
            got[template].append(r.text if ndjson else r.json())
            return None if ndjson else r.json()

        streams = [load(p) for p in stream_files() if "error" not in expectation(p)]
        sims = [simulated(seed, 4, preset=PRESETS[seed % len(PRESETS)]) for seed in range(40, 47)]
        for events in [*sims, violating(3, 4)[0], violating(4, 3)[0], *streams]:
            table_id = "rs-" + uuid.uuid4().hex[:10]
            append(client, platform, table_id, events)
            tables.append((table_id, events))
        get(f"{_T}/audit", support, table_id=tables[0][0])  # before the projector ran
        Projector(container.pool, container.store, engine).catch_up()
        players: set[str] = set()
        for table_id, events in tables:
            players.update(events[0]["players"])
            step = max(1, len(events) // 12)
            for at in [*range(1, len(events) + 1, step), len(events)]:
                get(state, support, table_id=table_id, at=at)
                get(state, platform, table_id=table_id, at=at)
                get(state, platform, table_id=table_id, at=at, seat=at % 3)
            settled = {h["hand"] for h in get(f"{_T}/hands", support, table_id=table_id)["hands"]}
            for n in [e["hand"] for e in events if e["type"] == "hand_started"]:
                if n in settled:
                    get(settle, platform, table_id=table_id, hand=n)
                    get(settle, support, True, table_id=table_id, hand=n, rules="xiangyang")
                    get(settle, support, True, table_id=table_id, hand=n, cap=16)
                for lang in ("en", "zh"):
                    get(h_audit, {**support, "Accept-Language": lang}, table_id=table_id, hand=n)
                    get(f"{_T}/hands/{{hand}}/timeline", support, table_id=table_id, hand=n, lang=lang)
                if n <= 2 and f"{_T}/hands/{{hand}}/report" in got:  # the export routes (another
                    for lang in ("en", "zh"):  # engineer's): a few hands each
                        get(
                            f"{_T}/hands/{{hand}}/report", support, True, table_id=table_id, hand=n, lang=lang
                        )
                    get(f"{_T}/hands/{{hand}}/export", platform, table_id=table_id, hand=n)
            for lang in ("en", "zh"):
                get(f"{_T}/audit", {**support, "Accept-Language": lang}, table_id=table_id)
            get(f"{_T}/events", platform, table_id=table_id)
            if f"{_T}/export" in got:
                get(f"{_T}/export", platform, table_id=table_id)
        for player in sorted(players):
            get(stats, dashboard, player_id=player)
            get(stats, dashboard, True, player_id=player, preset="default")
            get(ledger, dashboard, player_id=player, limit=5)
            get("/v1/players/{player_id}/tables", support, player_id=player)
        get("/v1/house/ledger", dashboard)
        get("/v1/house/ledger", make_key("rs-empty-" + uuid.uuid4().hex[:6], "dashboard"))
        from projections.queries.player_stats import SORTABLE

        for by in SORTABLE:
            get("/v1/leaderboard", dashboard, by=by, order="asc", limit=3)
        get("/v1/leaderboard", dashboard, since="2000-01-01", until="2100-01-01", min_hands=1)
        get("/v1/discrepancies", support)
        if "/v1/feed" in got:  # the live feed (issue 15): its NDJSON long-poll, lines of text
            get("/v1/feed", support, format="ndjson", limit=50)
        get("/v1/tables", support)
        get("/v1/health", {})
        for probe in ("/v1/health/live", "/v1/health/ready"):
            if probe in got:
                get(probe, {})
        get("/v1/projections/parked", support)
    return got


def test_real_answers_of_every_get_route_validate_against_openapi(answers: dict[str, list[Any]]) -> None:
    for path, bodies in answers.items():
        assert bodies, f"no answer of GET {path} was checked"
        validator = _validator(path)
        for body in bodies:
            errors = sorted(validator.iter_errors(body), key=lambda e: list(e.absolute_path))
            assert not errors, (path, errors[0].message, list(errors[0].absolute_path))


def test_a_seat_view_a_settlement_with_what_if_and_a_discrepancy_were_among_them(
    answers: dict[str, list[Any]],
) -> None:
    states = answers["/v1/tables/{table_id}/state"]
    assert {s["view"] for s in states} == {"seat", "public", "full"}
    assert any(s["hand"] and s["hand"].get("wall") for s in states)  # a full view of a known wall
    settlements = answers["/v1/tables/{table_id}/hands/{hand}/settlement"]
    assert any("what_if" in s for s in settlements) and any("what_if" not in s for s in settlements)
    assert any(w["derivation"]["violation"] for s in settlements for w in s["settlement"]["wins"])
    audits = answers["/v1/tables/{table_id}/audit"]
    assert any(a["rulings"] for a in audits) and any(a["settlements"] for a in audits)
    assert any(a["kong_chains"] for a in audits) and any(a["lou_hu"] for a in audits)


def test_a_drift_fails_the_schema(answers: dict[str, list[Any]]) -> None:
    """A key added anywhere in an answer, or one dropped, is a validation error."""
    for path in ("/v1/tables/{table_id}/state", "/v1/tables/{table_id}/hands/{hand}/settlement",
                 "/v1/tables/{table_id}/hands/{hand}/audit", "/v1/players/{player_id}/stats"):  # fmt: skip
        body = next(b for b in answers[path] if b)
        validator = _validator(path)
        assert validator.is_valid(body)
        added = copy.deepcopy(body)
        added["surprise"] = 1
        assert not validator.is_valid(added), path
        dropped = copy.deepcopy(body)
        dropped.pop(next(iter(dropped)))
        assert not validator.is_valid(dropped), path
    settlement = copy.deepcopy(answers["/v1/tables/{table_id}/hands/{hand}/settlement"][0])
    settlement["settlement"]["net"].append("x")  # a nested value of the wrong type
    assert not _validator("/v1/tables/{table_id}/hands/{hand}/settlement").is_valid(settlement)
    state = copy.deepcopy(next(s for s in answers["/v1/tables/{table_id}/state"] if s["hand"]))
    state["hand"]["seats"][0]["extra"] = True  # a nested key
    assert not _validator("/v1/tables/{table_id}/state").is_valid(state)
