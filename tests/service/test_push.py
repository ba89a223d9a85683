"""``kwx push`` (issue 15) against a real ``kwx serve`` on a real PostgreSQL: streams sent in
batches, an interrupted push resumed from the table's stored version (checked first, by replay),
a file that is not what the table holds refused before anything is appended, an illegal event
named by its line, and the exit codes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.cli import main
from services.settings import Settings
from tests.service.serving import serving

pytestmark = pytest.mark.db


@pytest.fixture(scope="module")
def service(pg_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(base URL, a platform key) of a kwx serve on its own database."""
    from services.bootstrap import bootstrap

    url = pg_cluster.create_database("kwx_push")
    out = tmp_path_factory.mktemp("push") / "serve.log"
    with serving(url, out, workers=1, KWX_PROJECTOR="off", KWX_LOG_LEVEL="warning") as (_, base, _):
        keys = bootstrap(Settings(database_url=url, pool_size=1, log_level="warning"), migrate=False)
        try:
            key = keys.keys.create("pushers", "platform")
        finally:
            keys.close()
        yield base, key


def streams(folder: Path, seed: int, tables: int = 2) -> list[Path]:
    assert main(["simulate", "--tables", str(tables), "--hands", "2", "--seed", str(seed), "--out",
                 str(folder)]) == 0  # fmt: skip
    return sorted(folder.glob("*.jsonl"))


def stored(base: str, key: str, table: str) -> list[dict[str, Any]]:
    answer = httpx.get(f"{base}/v1/tables/{table}/events", params={"limit": 1000},
                       headers={"Authorization": f"Bearer {key}"})  # fmt: skip
    assert answer.status_code == 200, answer.text
    return list(answer.json()["events"])


def events_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def ids(events: list[dict[str, Any]]) -> list[str]:
    """Event ids in order (what is stored is the canonical event: its rules pinned, null fields)."""
    return [e["event"]["id"] if "event" in e else e["id"] for e in events]


def push(base: str, key: str, *args: str) -> int:
    return main(["push", *args, "--url", base, "--key", key, "--batch", "40", "--quiet"])


def test_a_folder_is_pushed_whole(service: tuple[str, str], tmp_path: Path, capsys: Any) -> None:
    base, key = service
    files = streams(tmp_path, seed=61)
    assert push(base, key, str(tmp_path)) == 0
    output = capsys.readouterr().out
    total = 0
    for path in files:
        events = events_of(path)
        total += len(events)
        assert ids(stored(base, key, path.stem)) == ids(events)
        assert f"{path.stem}: {len(events)} events: {len(events)} stored, 0 replayed, 0 refused" in output
    assert f"total: 2 tables, {total} stored, 0 replayed, 0 refused" in output
    # a second push stores nothing more: everything is answered as a replay
    assert push(base, key, str(tmp_path)) == 0
    assert f"total: 2 tables, 0 stored, {total} replayed, 0 refused" in capsys.readouterr().out


def test_an_interrupted_push_resumes_from_the_stored_version(
    service: tuple[str, str], tmp_path: Path, capsys: Any
) -> None:
    base, key = service
    (path,) = streams(tmp_path, seed=62, tables=1)
    events = events_of(path)
    first = httpx.post(f"{base}/v1/tables/resumed/events", headers={"Authorization": f"Bearer {key}"},
                       json={"events": events[:57], "expected_version": 0})  # fmt: skip
    assert first.status_code == 201
    assert push(base, key, str(path), "--table", "resumed") == 0
    assert f"resumed: {len(events)} events: {len(events) - 57} stored, 57 replayed, 0 refused" in (
        capsys.readouterr().out
    )
    assert ids(stored(base, key, "resumed")) == ids(events)


def test_a_file_that_is_not_the_tables_stream_is_refused(
    service: tuple[str, str], tmp_path: Path, capsys: Any
) -> None:
    base, key = service
    one, other = streams(tmp_path, seed=63)
    assert push(base, key, str(one), "--table", "mixed") == 0
    capsys.readouterr()
    before = stored(base, key, "mixed")
    assert push(base, key, str(other), "--table", "mixed") == 1
    output = capsys.readouterr().out
    assert "mixed:" in output and "differ from the file" in output
    assert stored(base, key, "mixed") == before  # nothing appended


def test_an_illegal_event_is_named_by_its_line(service: tuple[str, str], tmp_path: Path, capsys: Any) -> None:
    base, key = service
    (path,) = streams(tmp_path, seed=64, tables=1)
    lines = path.read_text().splitlines()
    lines.insert(45, lines[0].replace('"id":"', '"id":"again-', 1))  # a second table_opened on line 46
    path.write_text("\n".join(lines) + "\n")
    assert push(base, key, str(path), "--table", "illegal") == 1
    output = capsys.readouterr().out
    assert "illegal_event at line 46" in output, output
    assert "40 stored" in output and f"{len(lines) - 40} refused" in output


def test_exit_codes_for_bad_arguments_and_an_absent_service(tmp_path: Path, capsys: Any) -> None:
    (path,) = streams(tmp_path, seed=65, tables=1)
    assert main(["push", str(path), "--url", "http://127.0.0.1:9", "--quiet"]) == 2  # no key
    assert main(["push", str(tmp_path / "missing.jsonl"), "--key", "k", "--quiet"]) == 2
    absent = ["--url", "http://127.0.0.1:9", "--key", "k", "--quiet", "--retries", "2"]
    assert main(["push", str(path), *absent]) == 3
    assert "does not answer" in capsys.readouterr().err
