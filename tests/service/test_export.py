"""Verifiable outside kwx (issue 13) against a real PostgreSQL: a table appended through the API →
``GET …/export`` and ``…/hands/{n}/export`` → ``kwx verify --file`` passes (and fails on a wrong
``--head``); exports are byte-identical each time and whatever the page size; tenants and roles as
the other reads; bad hand numbers are 4xx naming ``path.hand``; the hand report carries the hashes,
the settlement's derivation and the reported-vs-computed difference."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from domain.events import canonical_bytes, convert
from services.cli import main
from services.store import chain
from tests.projections.helpers import append, simulated

pytestmark = pytest.mark.db


def _new_id() -> str:
    return "ex-" + uuid.uuid4().hex[:12]


@pytest.fixture()
def support(make_key: Any, tenant: str) -> dict[str, str]:
    return make_key(tenant, "support")


@pytest.fixture()
def table(client: Any, platform: dict[str, str]) -> tuple[str, list[dict[str, Any]]]:
    table_id = _new_id()
    events = simulated(7, 3)
    append(client, platform, table_id, events)
    return table_id, events


def _lines(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in body.splitlines()]


def _verify(tmp_path: Path, body: bytes, *args: str, capsys: Any) -> tuple[int, str, str]:
    path = tmp_path / f"export-{uuid.uuid4().hex[:6]}.ndjson"
    path.write_bytes(body)
    capsys.readouterr()
    code = main(["verify", "--file", str(path), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_table_export_round_trips_through_kwx_verify(
    client: Any, container: Any, support: dict[str, str], tenant: str, table: Any, tmp_path: Path, capsys: Any
) -> None:
    table_id, events = table
    r = client.get(f"/v1/tables/{table_id}/export", headers=support)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/x-ndjson")
    lines = _lines(r.content)
    head = container.store.head(tenant, table_id)
    assert lines[0]["kind"] == "head" and lines[0]["scope"] == "table"
    assert lines[0]["version"] == head.version == len(events) == len(lines) - 1
    assert lines[0]["head_hash"] == head.last_hash.hex() == lines[-1]["hash"]
    assert lines[0]["preset"] == events[0]["rules"]["preset"]
    assert tenant.encode() not in r.content  # tenant-free
    # each line: the event as stored, in canonical form (what the chain hashed), its version, the
    # hash before it and its own (the store pins a table's full rules into table_opened)
    previous = chain.genesis(table_id)
    for n, (line, raw) in enumerate(zip(lines[1:], r.content.splitlines()[1:], strict=True), start=1):
        written = raw.split(b'"event":', 1)[1][:-1]
        assert written == canonical_bytes(convert(line["event"]))
        assert (line["version"], line["event"]["id"], line["event"]["type"]) == (
            n, events[n - 1]["id"], events[n - 1]["type"],
        )  # fmt: skip
        assert line["previous"] == previous.hex()
        previous = chain.link(previous, written)
        assert line["hash"] == previous.hex()

    code, out, err = _verify(tmp_path, r.content, "--head", head.last_hash.hex(), capsys=capsys)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["ok"] and summary["events"] == len(events) and summary["head_checked"]

    code, _out, err = _verify(tmp_path, r.content, "--head", "00" * 32, capsys=capsys)
    assert code == 1
    assert "line 1: wrong head" in err


def test_exports_are_byte_identical_every_time_and_whatever_the_page_size(
    client: Any, support: dict[str, str], platform: dict[str, str], table: Any, monkeypatch: Any
) -> None:
    from services.api import export

    table_id, _ = table
    first = client.get(f"/v1/tables/{table_id}/export", headers=support).content
    assert client.get(f"/v1/tables/{table_id}/export", headers=support).content == first
    assert client.get(f"/v1/tables/{table_id}/export", headers=platform).content == first  # same table
    hand = client.get(f"/v1/tables/{table_id}/hands/2/export", headers=support).content
    monkeypatch.setattr(export, "PAGE", 7)  # pages end inside hands, many pages
    assert client.get(f"/v1/tables/{table_id}/export", headers=support).content == first
    assert client.get(f"/v1/tables/{table_id}/hands/2/export", headers=support).content == hand


def test_hand_export_checks_from_the_hands_first_event(
    client: Any, support: dict[str, str], table: Any, tmp_path: Path, capsys: Any
) -> None:
    table_id, events = table
    whole = client.get(f"/v1/tables/{table_id}/export", headers=support).content.splitlines()
    by_version = {json.loads(line)["version"]: line for line in whole[1:]}
    starts = [n for n, e in enumerate(events, start=1) if e["type"] == "hand_started"]
    assert len(starts) == 3
    for hand in (1, 2, 3):
        r = client.get(f"/v1/tables/{table_id}/hands/{hand}/export", headers=support)
        assert r.status_code == 200, r.text
        raw = r.content.splitlines()
        head = json.loads(raw[0])
        first = starts[hand - 1]
        last = starts[hand] - 1 if hand < 3 else len(events)
        assert (head["scope"], head["hand"], head["first_version"], head["last_version"]) == (
            "hand", hand, first, last,
        )  # fmt: skip
        assert json.loads(raw[1])["event"]["type"] == "hand_started"
        assert json.loads(raw[1])["event"]["hand"] == hand
        # the hash just before the hand's first event, and the same lines as the table's export
        before = json.loads(by_version[first - 1])["hash"]
        assert head["previous"] == before
        assert raw[1:] == [by_version[v] for v in range(first, last + 1)]
        assert head["head_hash"] == json.loads(whole[0])["head_hash"]
        code, out, err = _verify(tmp_path, r.content, "--head", head["head_hash"], capsys=capsys)
        assert code == 0, err
        assert json.loads(out)["events"] == last - first + 1
    # a hand export whose middle event was changed fails on that line
    r = client.get(f"/v1/tables/{table_id}/hands/2/export", headers=support)
    raw = r.content.splitlines()
    line = json.loads(raw[3])
    tampered = raw[3].replace(
        b'"id":"' + line["event"]["id"].encode(), b'"id":"X' + line["event"]["id"].encode()
    )
    assert tampered != raw[3]
    code, _out, err = _verify(tmp_path, b"\n".join([*raw[:3], tampered, *raw[4:]]) + b"\n", capsys=capsys)
    assert code == 1
    assert f"line 4 (version {line['version']}): tampered event" in err


def test_another_tenants_table_is_the_same_404_as_a_missing_one_and_roles_hold(
    client: Any, make_key: Any, table: Any
) -> None:
    table_id, _ = table
    other = make_key("o" + uuid.uuid4().hex[:10], "support")
    for url in (f"/v1/tables/{table_id}/export", f"/v1/tables/{table_id}/hands/1/export",
                f"/v1/tables/{table_id}/hands/1/report"):  # fmt: skip
        theirs = client.get(url, headers=other)
        missing = client.get(url.replace(table_id, _new_id()), headers=other)
        assert theirs.status_code == missing.status_code == 404
        assert theirs.json()["error"] == missing.json()["error"] == "not_found"
        dashboard = client.get(url, headers=make_key("d" + uuid.uuid4().hex[:10], "dashboard"))
        assert dashboard.status_code == 403


def test_platform_may_export_but_the_report_is_supports(
    client: Any, platform: dict[str, str], table: Any
) -> None:
    table_id, _ = table
    assert client.get(f"/v1/tables/{table_id}/hands/1/export", headers=platform).status_code == 200
    r = client.get(f"/v1/tables/{table_id}/hands/1/report", headers=platform)
    assert r.status_code == 403 and r.json()["error"] == "forbidden"


@pytest.mark.parametrize("hand", ["0", "-1", "x", "1.5", str(2**31), str(2**70)])
def test_a_bad_hand_number_is_a_422_naming_it(
    client: Any, support: dict[str, str], table: Any, hand: str
) -> None:
    table_id, _ = table
    for route in ("export", "report"):
        r = client.get(f"/v1/tables/{table_id}/hands/{hand}/{route}", headers=support)
        assert r.status_code == 422, r.text
        assert r.json()["field"] == "path.hand"


def test_a_hand_that_never_started_is_a_404(client: Any, support: dict[str, str], table: Any) -> None:
    table_id, _ = table
    for route in ("export", "report"):
        r = client.get(f"/v1/tables/{table_id}/hands/4/{route}", headers=support)
        assert r.status_code == 404
        assert "no hand 4" in r.json()["message"]


def test_bad_table_id_and_lang(client: Any, support: dict[str, str], table: Any) -> None:
    table_id, _ = table
    assert client.get("/v1/tables/bad%20id/export", headers=support).json()["error"] == "invalid_table_id"
    r = client.get(f"/v1/tables/{table_id}/hands/1/report?lang=fr", headers=support)
    assert r.status_code == 422 and r.json()["field"] == "query.lang"


def test_hand_report_has_hashes_derivation_and_the_reported_difference(
    client: Any, platform: dict[str, str], support: dict[str, str]
) -> None:
    from domain import engine
    from tests.service.streams import legal_table

    events = legal_table(61, 3)
    started = [n for n, e in enumerate(events) if e["type"] == "hand_started"]
    i = next(i for i, e in enumerate(events) if e["type"] == "settlement_reported" and i < started[-1])
    table_id = _new_id()
    events = [dict(e, id=f"{table_id}-{n}") for n, e in enumerate(events)]
    hand = events[i]["hand"]
    settled = next(s for s in reversed(engine.fold([convert(e) for e in events[: i + 1]]).settlements)
                   if s.hand == hand)  # fmt: skip
    right = [{"from": t.from_, "to": t.to, "amount": t.amount} for t in settled.transfers]
    assert right, "the hand moved coins"
    wrong = [dict(right[0], amount=right[0]["amount"] + 5), *right[1:]]
    events[i] = dict(events[i], transfers=wrong)
    # a second report of the hand, late: after the next hand started (outside the hand's events)
    j = next(j for j in range(i, len(events)) if events[j]["type"] == "hand_started")
    late = {"type": "settlement_reported", "id": f"{table_id}-late", "hand": hand, "transfers": right}
    events = [*events[: j + 1], late, *events[j + 1 :]]
    append(client, platform, table_id, events)

    r = client.get(f"/v1/tables/{table_id}/hands/{hand}/report?lang=en", headers=support)
    assert r.status_code == 200, r.text
    report = r.json()
    assert r.headers["content-language"] == "en"
    export = _lines(client.get(f"/v1/tables/{table_id}/hands/{hand}/export", headers=support).content)
    assert [(e["version"], e["hash"], e["previous"], e["event"]) for e in report["events"]] == [
        (e["version"], e["hash"], e["previous"], e["event"]) for e in export[1:]
    ]
    assert report["head"]["hash"] == export[0]["head_hash"]
    assert report["chain"]["verified"] is True
    assert report["chain"]["previous"] == export[0]["previous"]
    assert report["settlement"]["net"] == list(settled.net)
    assert report["settlement"]["transfers"] and all(
        "event_id" in t for t in report["settlement"]["transfers"]
    )
    for win in report["settlement"]["wins"]:
        assert (
            win["derivation"]["multiplier"].endswith(str(win["multiplier"])) or win["derivation"]["violation"]
        )
    checked, again = report["reported"]
    assert (checked["status"], again["status"]) == ("differs", "match")
    assert again["reported_event"] == j + 2 > report["chain"]["last_version"]
    assert set(again["difference"].values()) == {0}
    difference = checked["difference"]
    assert set(difference) == {"0", "1", "2", "house"}
    assert sorted(abs(d) for d in difference.values()) == [0, 0, 5, 5]  # one line 5 coins too many
    assert all(difference[k] == checked["net_reported"][k] - checked["net_computed"][k] for k in difference)
    assert "matches" in report["summary"]  # the last report

    zh = client.get(f"/v1/tables/{table_id}/hands/{hand}/report?lang=zh", headers=support)
    assert zh.headers["content-language"] == "zh"
    assert "一致" in zh.json()["summary"] and "第" in zh.json()["events"][0]["line"]
    assert not any(c.isascii() and c.isalpha() for c in zh.json()["events"][0]["line"].split("（")[0])
    by_header = client.get(f"/v1/tables/{table_id}/hands/{hand}/report",
                           headers={**support, "Accept-Language": "zh-CN"})  # fmt: skip
    assert by_header.json()["lang"] == "zh"


WIRE_TILE = re.compile(r"(?<![A-Za-z0-9_])([1-9]+[ps]|[CFP])(?![A-Za-z0-9_])")


def test_the_chinese_report_says_seats_tiles_and_coins_as_the_timeline_and_settlement_do(
    client: Any, platform: dict[str, str], support: dict[str, str]
) -> None:
    """One Chinese for one hand: the zh report's event lines name seats and tiles in the timeline's
    words (``乙（bob）``, ``5筒``), a kong's coins say the settlement's own Chinese derivation, and no
    Chinese text carries a wire tile name or a seat number (a 杠 + 漂 + 胡 hand of platform_3d)."""
    table_id = _new_id()
    events = simulated(1, 1)  # platform_3d: hand 1 has a kong, 漂 and a win
    append(client, platform, table_id, events)
    zh = client.get(f"/v1/tables/{table_id}/hands/1/report?lang=zh", headers=support).json()
    en = client.get(f"/v1/tables/{table_id}/hands/1/report?lang=en", headers=support).json()
    timeline = client.get(f"/v1/tables/{table_id}/hands/1/timeline?lang=zh", headers=support).json()
    words = timeline["seat_words"]
    players = zh["players"]
    seated = 0
    for row, event in zip(zh["events"], events[1:], strict=False):
        assert row["type"] == event["type"]
        line = row["line"]
        assert "座位" not in line and "号位" not in line and not WIRE_TILE.search(line), line
        if "seat" in event:
            assert f"{words[event['seat']]}（{players[event['seat']]}）" in line, line
            seated += 1
    assert seated > 20
    transfers = zh["settlement"]["transfers"]
    assert {t["reason"] for t in transfers} >= {"kong", "piao", "hu"}
    for t in transfers:
        assert not WIRE_TILE.search(t["detail_zh"]) and "号位" not in t["detail_zh"], t["detail_zh"]
    piao = [t["detail_zh"] for t in transfers if t["reason"] == "piao"]
    assert all(words[t["from"]] in d and words[t["to"]] in d for t, d in zip(
        [t for t in transfers if t["reason"] == "piao"], piao, strict=True))  # fmt: skip
    coins = [c for chain in zh["kong_chains"] for k in chain["kongs"] for c in k["coins"]]
    assert coins
    assert [c["detail_zh"] for c in coins] == [t["detail_zh"] for t in transfers if t["reason"] == "kong"]
    assert zh["chain"]["how_to_check"] != en["chain"]["how_to_check"]
    assert "kwx verify" in zh["chain"]["how_to_check"] and "then" not in zh["chain"]["how_to_check"]


def test_the_english_report_says_each_event_in_the_timelines_words(
    client: Any, platform: dict[str, str], support: dict[str, str]
) -> None:
    """The English report's event lines say what the timeline's English says: ``declares ready (liang
    dao)`` (it said ``declares liang dao``: 亮倒 left in pinyin), a kong by its kind (``makes an
    exposed kong of 9 bamboo``, it said ``kongs``), and one winner ``wins`` (it said ``p008 win``)."""
    table_id = _new_id()
    events = simulated(11, 4, preset="default")
    append(client, platform, table_id, events)
    kinds = {"exposed": "an exposed kong of", "added": "an added kong of", "concealed": "a concealed kong of"}
    seen: set[str] = set()
    for hand in range(1, 5):
        report = client.get(f"/v1/tables/{table_id}/hands/{hand}/report?lang=en", headers=support).json()
        for row in report["events"]:
            event = events[row["version"] - 1]
            line = row["line"].split(" (ruling: ")[0]
            if event["type"] == "liang_dao":
                assert " declares ready (liang dao), discarding " in line, line
            elif event["type"] == "kong":
                assert f" makes {kinds[event['kind']]} " in line, line
            elif event["type"] == "hu":
                assert line.endswith(" on " + line.rsplit(" on ", 1)[1]), line
                assert (" wins on " in line) == (len(event["winners"]) == 1), line
            else:
                continue
            seen.add(event["type"])
    assert seen == {"liang_dao", "kong", "hu"}, seen  # the table shows each


def test_an_export_stops_at_the_head_it_read_while_events_are_appended(
    client: Any, container: Any, platform: dict[str, str], support: dict[str, str], tenant: str,
    monkeypatch: Any, tmp_path: Path, capsys: Any,
) -> None:  # fmt: skip
    from services.api import export as export_api
    from services.store import chain_reads

    table_id = _new_id()
    events = simulated(9, 2)
    append(client, platform, table_id, events[:-5])
    before = container.store.head(tenant, table_id)
    real = chain_reads.hashed_page
    appended: list[int] = []

    def page_then_append(*args: Any) -> Any:
        if not appended:  # while the export streams, the platform appends the rest
            result = container.store.append(tenant, table_id, before.version,
                                            [convert(e) for e in events[-5:]])  # fmt: skip
            appended.append(result.version)
        return real(*args)

    monkeypatch.setattr(export_api.chain_reads, "hashed_page", page_then_append)
    body = client.get(f"/v1/tables/{table_id}/export", headers=support).content
    assert appended == [before.version + 5]
    lines = _lines(body)
    assert lines[0]["version"] == before.version == lines[-1]["version"] == len(lines) - 1
    assert lines[0]["head_hash"] == before.last_hash.hex()
    code, _out, err = _verify(tmp_path, body, "--head", before.last_hash.hex(), capsys=capsys)
    assert code == 0, err
