"""``KWX_READ_MODELS``: a deployment keeps some read models live and not the others (issue 16: what
each costs is in docs/projections.md §6). The kept ones are projected, watched by health and metrics
and answered from; a route of another answers 501 ``not_kept`` (after the key is checked), never an
old or empty page; a table's own reads (events, settlement) answer from the events as always.
Against a real PostgreSQL, the projector built the way the service builds it."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from services.settings import Settings, SettingsError
from tests.service.streams import legal_table

KEPT = "feed,snapshots"


def test_the_setting_reads_names_all_and_none() -> None:
    from projections import registry

    assert Settings.from_env({}).kept_models() == registry.NAMES
    assert Settings.from_env({"KWX_READ_MODELS": "ALL"}).kept_models() == registry.NAMES
    # in the registry's order, whatever the order given; commas or spaces; once each
    assert Settings.from_env({"KWX_READ_MODELS": "feed, ledger feed"}).kept_models() == ("ledger", "feed")
    assert Settings.from_env({"KWX_READ_MODELS": "none"}).kept_models() == ()


@pytest.mark.parametrize(("value", "said"), [("ledgr", "unknown read model ledgr"), (",", "empty")])
def test_a_name_it_does_not_know_is_a_settings_error_naming_it(value: str, said: str) -> None:
    with pytest.raises(SettingsError) as error:
        Settings.from_env({"KWX_READ_MODELS": value})
    assert "KWX_READ_MODELS" in str(error.value) and said in str(error.value)
    assert "player_stats" in str(error.value)  # what it would take


def test_the_startup_line_says_which_models_are_kept() -> None:
    from projections import registry
    from services.commands.serve import _projector_line

    assert "every read model" in _projector_line("thread", None, registry.NAMES)
    assert "KWX_READ_MODELS: snapshots, feed" in _projector_line("off", None, ("snapshots", "feed"))
    assert _projector_line("on", None, ()).startswith("none (KWX_READ_MODELS=none")


@pytest.fixture(scope="module")
def kept(pg_cluster: Any) -> Iterator[tuple[Any, Any, str]]:
    """(client, container, owner URL) of a service keeping only ``feed`` and ``snapshots``, on a
    database of its own, with one legal table of three hands appended and projected."""
    from fastapi.testclient import TestClient

    from services import migrate
    from services.api.app import create_app
    from services.bootstrap import bootstrap

    url = pg_cluster.create_database("kwx_kept")
    migrate.upgrade(url)
    settings = Settings(database_url=url, projector="off", read_models=KEPT)
    container = bootstrap(settings, url=url, migrate=False)
    try:
        with TestClient(create_app(container=container)) as client:
            yield client, container, url
    finally:
        container.close()


@pytest.fixture(scope="module")
def table(kept: tuple[Any, Any, str]) -> dict[str, Any]:
    client, container, _ = kept
    key = {"Authorization": f"Bearer {container.keys.create('acme', 'platform')}"}
    events = legal_table(seed=5, hands=3)
    body = {"expected_version": None, "events": events}
    answer = client.post("/v1/tables/t-kept/events", json=body, headers=key)
    assert answer.status_code == 201, answer.text
    # the projector the service starts (its thread, or the child's `kwx projections follow`): the
    # kept models only; run here to the end of the log, once
    container.projector_background = True
    container.start_projector()
    container.stop_projector()
    assert container.projector.names == ("snapshots", "feed")
    assert container.projector.catch_up() == len(events)
    player = events[0]["players"][0]  # table_opened
    return {"key": key, "player": player, "events": events}


def test_only_the_kept_models_are_projected(kept: tuple[Any, Any, str], table: dict[str, Any]) -> None:
    with psycopg.connect(kept[2]) as conn:
        moved = dict(conn.execute("SELECT name, position FROM projection_checkpoints").fetchall())
        (entries,) = conn.execute("SELECT count(*) FROM proj_ledger_entries").fetchone() or (0,)
        (stats,) = conn.execute("SELECT count(*) FROM proj_player_stats").fetchone() or (0,)
        (feed,) = conn.execute("SELECT count(*) FROM proj_feed WHERE kind = 'settlement'").fetchone() or (0,)
    assert set(moved) == {"snapshots", "feed"} and all(p > 0 for p in moved.values())
    assert entries == 0 and stats == 0
    assert feed == 3  # a settlement entry a hand


@pytest.mark.parametrize(
    ("path", "model"),
    [
        ("/v1/players/{player}/ledger", "ledger"),
        ("/v1/house/ledger", "ledger"),
        ("/v1/players/{player}/stats", "player_stats"),
        ("/v1/leaderboard", "player_stats"),
        ("/v1/discrepancies", "discrepancies"),
        ("/v1/tables", "discovery"),
        ("/v1/players/{player}/tables", "discovery"),
        ("/v1/tables/t-kept/hands", "discovery"),
    ],
)
def test_a_route_of_a_model_not_kept_answers_501_not_kept(
    kept: tuple[Any, Any, str], table: dict[str, Any], path: str, model: str
) -> None:
    client = kept[0]
    url = path.format(player=table["player"])
    answer = client.get(url, headers=table["key"])
    assert answer.status_code == 501, answer.text
    body = answer.json()
    assert body["error"] == "not_kept" and body["model"] == model and body["kept"] == ["snapshots", "feed"]
    assert "KWX_READ_MODELS" in body["message"] and "Retry-After" not in answer.headers
    assert f"此服务未保留读取模型 {model}" in body["message_zh"]
    assert client.get(url).status_code == 401  # the key first: nothing said to a caller without one


def test_the_kept_models_and_the_tables_own_reads_answer(
    kept: tuple[Any, Any, str], table: dict[str, Any]
) -> None:
    client, key = kept[0], table["key"]
    feed = client.get("/v1/feed", params={"format": "ndjson", "limit": 100}, headers=key)
    assert feed.status_code == 200, feed.text
    kinds = [json.loads(line)["kind"] for line in feed.text.splitlines()]
    assert kinds.count("settlement") == 3
    settled = client.get("/v1/tables/t-kept/hands/1/settlement", headers=key)
    assert settled.status_code == 200 and settled.json()["hand"] == 1
    events = client.get("/v1/tables/t-kept/events", params={"limit": 1000}, headers=key)
    assert events.status_code == 200 and len(events.json()["events"]) == len(table["events"])


def test_health_and_metrics_watch_the_kept_models_only(
    kept: tuple[Any, Any, str], table: dict[str, Any]
) -> None:
    client = kept[0]
    projections = client.get("/v1/health").json()["projections"]
    # the ledger has applied nothing, on purpose: no lag
    assert projections["models"] == ["snapshots", "feed"]
    assert projections["caught_up"] is True and projections["lag_seconds"] == 0.0
    assert client.get("/v1/health/ready").status_code == 200
    scraped = client.get("/metrics").text
    assert 'kwx_projection_behind_events{model="feed"} 0.0' in scraped
    assert 'model="ledger"' not in scraped.split("kwx_projection_behind_events", 1)[1].split("# HELP", 1)[0]


def test_the_cli_rebuilds_the_kept_models_and_says_which_are_kept(
    kept: tuple[Any, Any, str], table: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    from services.cli import main

    monkeypatch.setenv("DATABASE_URL", kept[2])
    monkeypatch.setenv("KWX_READ_MODELS", KEPT)
    assert main(["projections", "status", "--json"]) == 0
    status = {line["projection"]: line for line in map(json.loads, capsys.readouterr().out.splitlines())}
    assert {n for n, line in status.items() if line["kept"]} == {"snapshots", "feed"}
    assert status["feed"]["behind"] == 0 and status["ledger"]["behind"] == len(table["events"])
    assert main(["projections", "rebuild", "--json"]) == 0
    rebuilt = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert rebuilt["rebuilt"] == ["snapshots", "feed"] and rebuilt["events"] == len(table["events"])
    # a model not kept can still be projected on purpose, by name
    assert main(["projections", "rebuild", "ledger"]) == 0
    assert capsys.readouterr().out.startswith("rebuilt ledger from position 0: ")
    with psycopg.connect(kept[2]) as conn:
        (entries,) = conn.execute("SELECT count(*) FROM proj_ledger_entries").fetchone() or (0,)
    assert entries > 0
    monkeypatch.setenv("KWX_READ_MODELS", "none")
    assert main(["projections", "rebuild"]) == 2
    assert "KWX_READ_MODELS=none: no read model is kept here" in capsys.readouterr().err
    assert main(["projections", "rebuild", "--json"]) == 2
    assert "no read model is kept" in json.loads(capsys.readouterr().out)["error"]


def test_the_feed_not_kept_answers_501_and_the_ledger_kept_answers(
    kept: tuple[Any, Any, str], table: dict[str, Any]
) -> None:
    """The same database served by a deployment that keeps the ledger and not the feed."""
    from fastapi.testclient import TestClient

    from services.api.app import create_app
    from services.bootstrap import bootstrap

    url = kept[2]
    settings = Settings(database_url=url, projector="off", read_models="ledger")
    other = bootstrap(settings, url=url, migrate=False)
    try:
        with TestClient(create_app(container=other)) as client:
            feed = client.get("/v1/feed", params={"format": "ndjson"}, headers=table["key"])
            assert feed.status_code == 501 and feed.json()["model"] == "feed", feed.text
            ledger = client.get(f"/v1/players/{table['player']}/ledger", headers=table["key"])
            assert ledger.status_code == 200, ledger.text
            assert client.get("/v1/health").json()["projections"]["models"] == ["ledger"]
    finally:
        other.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kwx_serve_keeping_none_starts_no_projector(kept: tuple[Any, Any, str], tmp_path: Path) -> None:
    from tests.service.serving import descendants, serving

    out = tmp_path / "serve.out"
    with serving(kept[2], out, workers=1, KWX_READ_MODELS="none", KWX_PROJECTOR="on") as (proc, base, _):
        assert "projector: none (KWX_READ_MODELS=none" in out.read_text()
        # (the child would be started before the server answers its first request)
        followers = [pid for pid in descendants(proc.pid) if b"follow" in _cmdline(pid)]
        assert followers == []
        assert httpx.get(f"{base}/v1/health", timeout=30).json()["projections"]["models"] == []


def _cmdline(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (FileNotFoundError, ProcessLookupError):
        return []  # gone meanwhile
