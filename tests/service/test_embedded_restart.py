"""After ``kwx serve`` is SIGKILLed, the embedded PostgreSQL it started keeps running (it is a
daemon of its own); the next ``kwx serve`` on the same ``KWX_DATA_DIR`` adopts it, serves and
appends, and its clean stop then stops the server — before, the dead process's handle stayed in
the server's handle list, so no later stop was ever the last one and the server ran for good
(services/db.py, start_embedded; issue 11 §5)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.service.serving import alive, free_port, wait_for, wait_healthy
from tests.service.streams import legal_table

pytestmark = pytest.mark.db


@pytest.fixture()
def data_dir() -> Iterator[Path]:
    # not under pytest's tmp_path (see tests/conftest.py: the server may run as another user)
    base = Path(tempfile.mkdtemp(prefix="kwx-embedded-"))
    base.chmod(0o755)
    try:
        yield base / "data"
    finally:
        _stop_leftover(base / "data" / "pg")
        shutil.rmtree(base, ignore_errors=True)


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "TEST_DATABASE_URL")}
    env.update(KWX_DATA_DIR=str(data_dir), KWX_PROJECTOR="off", KWX_WORKERS="1", KWX_LOG_LEVEL="warning")
    return env


def _serve(data_dir: Path, out: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    with out.open("ab") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "services.cli", "serve", "--port", str(port)],
            env=_env(data_dir), stdout=sink, stderr=sink, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, proc, 120, out)
    except BaseException:
        proc.kill()
        proc.wait(30)
        raise
    return proc, base


def _postmaster(pgdata: Path) -> int | None:
    try:
        return int((pgdata / "postmaster.pid").read_text().split()[0])
    except (FileNotFoundError, IndexError, ValueError):
        return None


def _stop_leftover(pgdata: Path) -> None:
    """Whatever a failed test left running on this data folder."""
    pid = _postmaster(pgdata)
    if pid is not None and alive(pid):
        os.kill(pid, signal.SIGQUIT)  # immediate shutdown
        wait_for(lambda: not alive(pid), 30, "the leftover postmaster did not stop")


def test_a_sigkilled_serve_leaves_a_server_the_next_start_adopts_and_stops(data_dir: Path) -> None:
    out = data_dir.parent / "serve.out"
    pgdata = data_dir / "pg"
    first, _ = _serve(data_dir, out)
    postmaster = _postmaster(pgdata)
    assert postmaster is not None and alive(postmaster)
    first.kill()  # SIGKILL: no atexit, no pg_ctl stop
    first.wait(30)
    assert alive(postmaster)  # the server outlives it: nobody stopped it

    second, base = _serve(data_dir, out)
    try:
        assert _postmaster(pgdata) == postmaster  # adopted, not a second server
        keys = ["keys", "create", "--tenant", "crash", "--role", "platform"]
        created = subprocess.run(
            [sys.executable, "-m", "services.cli", *keys],
            env=_env(data_dir), capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        key = created.stdout.strip().splitlines()[-1]
        answer = httpx.post(f"{base}/v1/tables/after-crash/events", json={"events": legal_table(3)[:20]},
                            headers={"Authorization": f"Bearer {key}"}, timeout=60)  # fmt: skip
        assert answer.status_code == 201, answer.text
        assert alive(postmaster)  # the key command's own handle did not stop it on its way out
    finally:
        second.send_signal(signal.SIGTERM)
        code = second.wait(60)
    assert code == 0, out.read_text(errors="replace")[-2000:]
    wait_for(lambda: not alive(postmaster), 60, "the embedded PostgreSQL was left running after a clean stop")
    assert _postmaster(pgdata) is None  # a clean shutdown removes its pid file
