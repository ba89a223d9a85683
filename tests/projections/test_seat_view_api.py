"""The state route over HTTP (a real PostgreSQL): a seat's view lists the seat's own hu, and the
hand's record names its tiles, with null for an event that has not happened."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.projections.helpers import append


@pytest.mark.db
def test_the_state_route_shows_a_seat_its_own_win_and_tiles_by_name(
    client: Any, platform: dict[str, str]
) -> None:
    """``GET …/state?at=3&seat=1`` on the conformance stream double-win: seat 1 may win alice's 5p."""
    import json

    from tests.paths import STREAMS

    events = [json.loads(line) for line in (STREAMS / "double-win.jsonl").read_text().splitlines()]
    table_id = "dw-" + uuid.uuid4().hex[:10]
    append(client, platform, table_id, events)
    for seat in (1, 2):
        url = f"/v1/tables/{table_id}/state"
        view = client.get(url, params={"at": 3, "seat": seat}, headers=platform).json()
        wins = [a for a in view["legal_actions"] if a["type"] == "hu"]
        assert [(a["winners"], a["tile"], a["from"]) for a in wins] == [([seat], "5p", 0)]
    end = client.get(f"/v1/tables/{table_id}/state", params={"seat": 1}, headers=platform).json()
    record = end["hand"]["record"]
    assert [w["tile"] for w in record["wins"]] == ["5p", "5p"] and record["ma_event"] is None
    assert record["end_event"] == 4
    mid = client.get(f"/v1/tables/{table_id}/state", params={"at": 3, "seat": 1}, headers=platform).json()
    assert mid["hand"]["record"]["end_event"] is None
