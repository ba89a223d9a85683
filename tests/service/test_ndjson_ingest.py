"""JSON lines in (issue 15): ``POST /v1/tables/{id}/events`` takes ``application/x-ndjson`` — one
event per line, ``expected_version`` in the query — stored exactly as the same batch sent as JSON;
every error names its line. And a re-send that overlaps stored events says the stored version to
resume from (``stored_version`` on ``409 id_conflict``). Through HTTP, on a real PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.service.streams import legal_table

pytestmark = pytest.mark.db

Headers = dict[str, str]
NDJSON = {"Content-Type": "application/x-ndjson"}


def lines(events: list[dict[str, Any]], *, blank: bool = False) -> bytes:
    text = "\n".join(json.dumps(e, ensure_ascii=False) for e in events) + "\n"
    return (("\n" + text.replace("\n", "\n\n", 1)) if blank else text).encode()


def push(client: Any, table: str, body: bytes, headers: Headers, query: str = "") -> Any:
    return client.post(f"/v1/tables/{table}/events{query}", content=body, headers={**headers, **NDJSON})


def stored(client: Any, table: str, headers: Headers) -> list[dict[str, Any]]:
    answer = client.get(f"/v1/tables/{table}/events?limit=1000", headers=headers)
    assert answer.status_code == 200, answer.text
    return list(answer.json()["events"])


def test_a_jsonl_batch_is_stored_as_the_same_json_batch(
    client: Any, platform: Headers, table_id: str
) -> None:
    wire = legal_table(31)
    as_lines = push(client, table_id, lines(wire[:12], blank=True), platform, "?expected_version=0")
    assert as_lines.status_code == 201, as_lines.text
    assert as_lines.json()["version"] == 12 and as_lines.json()["count"] == 12
    twin = table_id + "-json"
    as_json = client.post(f"/v1/tables/{twin}/events", json={"events": wire[:12], "expected_version": 0},
                          headers=platform)  # fmt: skip
    assert as_json.status_code == 201
    a, b = stored(client, table_id, platform), stored(client, twin, platform)
    assert [e["event"] for e in a] == [e["event"] for e in b] and len(a) == 12
    # the next batch follows; a replay of the same lines answers as the first time
    nxt = push(client, table_id, lines(wire[12:20]), platform, "?expected_version=12")
    assert nxt.status_code == 201 and nxt.json()["version"] == 20
    again = push(client, table_id, lines(wire[12:20]), platform, "?expected_version=12")
    assert (again.status_code, again.json()) == (nxt.status_code, nxt.json())


def test_without_expected_version_it_appends_at_the_end(
    client: Any, platform: Headers, table_id: str
) -> None:
    wire = legal_table(32)
    assert push(client, table_id, lines(wire[:5]), platform).status_code == 201
    answer = push(client, table_id, lines(wire[5:9]), platform)
    assert answer.status_code == 201 and answer.json()["version"] == 9


def test_a_bad_line_is_a_422_naming_its_line(client: Any, platform: Headers, table_id: str) -> None:
    wire = legal_table(33)
    text = lines(wire[:4]).decode().splitlines()
    broken = dict(wire[2])
    broken["tile"] = "10p"  # no such tile
    text[2] = json.dumps(broken)
    # line numbers count blank lines: with a blank first line, event 2 is on line 4
    answer = push(client, table_id, ("\n" + "\n".join(text)).encode(), platform)
    assert answer.status_code == 422, answer.text
    error = answer.json()
    assert error["line"] == 4 and error["index"] == 2 and error["message"].startswith("line 4: ")
    assert error["field"].startswith("$.events[2]")
    text[2] = '{"type": "discard", '  # not JSON
    answer = push(client, table_id, "\n".join(text).encode(), platform)
    assert answer.status_code == 422 and answer.json()["line"] == 3
    assert client.get(f"/v1/tables/{table_id}/events", headers=platform).status_code == 404  # nothing stored


def test_one_line_cannot_reach_into_another(client: Any, platform: Headers, table_id: str) -> None:
    """Two objects on one line, or a line that closes the array, are one bad line — never a way to
    set other fields of the batch."""
    wire = legal_table(34)
    two = json.dumps(wire[0]) + ", " + json.dumps(wire[1])
    assert push(client, table_id, (two + "\n").encode(), platform).json()["line"] == 1
    sneaky = json.dumps(wire[0]) + '], "expected_version": 99, "events": [' + json.dumps(wire[0])
    answer = push(client, table_id, (sneaky + "\n").encode(), platform)
    assert answer.status_code == 422 and answer.json()["line"] == 1


def test_an_illegal_event_names_its_line(client: Any, platform: Headers, table_id: str) -> None:
    wire = legal_table(35)
    body = lines([*wire[:3], dict(wire[0], id="x-open-again")])
    answer = push(client, table_id, body, platform)
    assert answer.status_code == 422
    error = answer.json()
    assert error["error"] == "illegal_event" and error["index"] == 3 and error["line"] == 4


def test_bad_rules_on_a_line_name_the_option_and_the_line(
    client: Any, platform: Headers, table_id: str
) -> None:
    opened = dict(legal_table(36)[0])
    opened["rules"] = {"preset": "default", "kong_points": {"concealed": -1, "added": 1, "exposed": 1}}
    answer = push(client, table_id, lines([opened]), platform)
    assert answer.status_code == 422 and answer.json()["error"] == "bad_rules"
    assert answer.json()["line"] == 1 and answer.json()["field"].startswith("rules.kong_points")


@pytest.mark.parametrize(
    ("query", "why"),
    [("?expected_version=-1", "negative"), ("?expected_version=x", "not a number"),
     ("?expected_version=1&expected_version=2", "twice")],
)  # fmt: skip
def test_a_bad_expected_version_in_the_query_is_a_422(
    client: Any, platform: Headers, table_id: str, query: str, why: str
) -> None:
    answer = push(client, table_id, lines(legal_table(37)[:2]), platform, query)
    assert answer.status_code == 422, why
    assert answer.json()["field"] == "query.expected_version"


def test_json_bodies_keep_expected_version_in_the_body(client: Any, platform: Headers, table_id: str) -> None:
    answer = client.post(f"/v1/tables/{table_id}/events?expected_version=0",
                         json={"events": legal_table(38)[:2]}, headers=platform)  # fmt: skip
    assert answer.status_code == 422 and answer.json()["field"] == "query.expected_version"


def test_an_empty_jsonl_body_is_a_422(client: Any, platform: Headers, table_id: str) -> None:
    answer = push(client, table_id, b"\n\n", platform)
    assert answer.status_code == 422 and answer.json()["field"] == "$.events"


def test_an_overlapping_resend_says_where_to_resume(client: Any, platform: Headers, table_id: str) -> None:
    wire = legal_table(39)
    assert push(client, table_id, lines(wire[:10]), platform).status_code == 201
    overlap = push(client, table_id, lines(wire[6:14]), platform, "?expected_version=10")
    assert overlap.status_code == 409
    error = overlap.json()
    assert error["error"] == "id_conflict" and error["stored_version"] == 10 and error["index"] == 0
    resumed = push(client, table_id, lines(wire[error["stored_version"]:14]), platform,
                   f"?expected_version={error['stored_version']}")  # fmt: skip
    assert resumed.status_code == 201 and resumed.json()["version"] == 14
    other = push(client, table_id, lines([dict(wire[3], at="2026-01-01T00:00:00Z")]), platform)
    assert other.status_code == 409 and other.json()["stored_version"] == 14
