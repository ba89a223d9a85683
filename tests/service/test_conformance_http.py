"""The conformance streams (and the project's golden streams) appended through HTTP: a legal stream
is stored and read back event for event (canonical bytes equal), and the events read back settle
exactly as `kwx settle` settles the file, and so does the service's settlement endpoint, hand by
hand (end, dealers, wins, transfers, net); an illegal stream is refused at the same index with the
same rule as `kwx settle` reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from domain.engine import pin_rules
from domain.events import TableOpened, canonical_bytes, convert
from tests.service.streams import expectation, load, stream_files

pytestmark = pytest.mark.db

FILES = stream_files()


def settle(lines: list[bytes]) -> tuple[int, dict[str, Any]]:
    from services.commands.settle import settle_lines

    return settle_lines(lines)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_stream_through_http_settles_like_kwx_settle(
    client: Any, platform: dict[str, str], table_id: str, path: Path
) -> None:
    wire = load(path)
    expect = expectation(path)
    answer = client.post(
        f"/v1/tables/{table_id}/events", json={"expected_version": 0, "events": wire}, headers=platform
    )
    direct_code, direct = settle(path.read_bytes().splitlines())
    if "error" in expect:
        assert answer.status_code == 422, answer.text
        assert (answer.json()["index"], answer.json()["rule"]) == (
            expect["error"]["index"],
            expect["error"]["rule"],
        )
        assert direct_code == 1 and direct["error"]["rule"] == answer.json()["rule"]
        return
    assert answer.status_code == 201, answer.text
    assert answer.json()["version"] == len(wire)
    page = client.get(f"/v1/tables/{table_id}/events?limit=1000", headers=platform).json()
    stored = [e["event"] for e in page["events"]]
    pinned = [pin_rules(e) if isinstance(e, TableOpened) else e for e in map(convert, wire)]  # RULES.md
    assert [canonical_bytes(convert(e)) for e in stored] == [canonical_bytes(e) for e in pinned]
    via_http_code, via_http = settle([msgspec.json.encode(e) for e in stored])
    assert (via_http_code, via_http) == (direct_code, direct) and direct_code == 0
    # and the service's own settlement endpoint agrees with `kwx settle` hand by hand
    for hand in msgspec.json.decode(msgspec.json.encode(direct["hands"])):  # as JSON, like the API
        answer = client.get(f"/v1/tables/{table_id}/hands/{hand['hand']}/settlement", headers=platform)
        assert answer.status_code == 200, answer.text
        served = answer.json()["settlement"]
        for key in ("end", "dealer", "next_dealer", "net"):
            assert served[key] == hand[key], key
        assert _transfers(served) == _transfers(hand)
        assert [(w["seat"], w["multiplier"], w["payable"]) for w in served["wins"]] == [
            (w["seat"], w["multiplier"], w["payable"]) for w in hand["wins"]
        ]


def _transfers(settlement: dict[str, Any]) -> list[tuple[Any, ...]]:
    return sorted(
        ((t["from"], t["to"], t["amount"], t["reason"], t["event"]) for t in settlement["transfers"]),
        key=repr,
    )
