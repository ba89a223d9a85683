"""`kwx serve` with KWX_PROJECTOR=on (the default) runs the projector as a child process
(`kwx projections follow`, services/projector_process.py): the read models follow what is appended
over HTTP, and the child stops with the server — also when the server is killed outright."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import psycopg
import pytest

from projections import registry
from services.store.keys import KeyStore
from tests.service.serving import alive, free_port, wait_for, wait_healthy
from tests.service.streams import legal_table

pytestmark = pytest.mark.db


def _start(url: str, out: Path) -> tuple[subprocess.Popen[bytes], str, int]:
    env = {k: v for k, v in os.environ.items() if k != "TEST_DATABASE_URL"}
    env.update(DATABASE_URL=url, KWX_PROJECTOR="on", KWX_LOG_LEVEL="info")
    port = free_port()
    with out.open("wb") as sink:
        serve = subprocess.Popen(
            [sys.executable, "-m", "services.cli", "serve", "--port", str(port)],
            env=env,
            stdout=sink,
            stderr=sink,
        )
    base = f"http://127.0.0.1:{port}"
    wait_healthy(base, serve, 90, out)
    found = re.search(r"projector: child process (\d+) \(kwx projections follow", out.read_text())
    assert found, out.read_text()
    return serve, base, int(found.group(1))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_projector_runs_as_a_child_process_and_stops_with_the_server(
    private_db: tuple[Any, str],
) -> None:
    import httpx

    store, url = private_db
    key = KeyStore(store.pool).create("projected", "platform")
    folder = Path(tempfile.mkdtemp(prefix="kwx-serve-proj-"))
    serve, base, child = _start(url, folder / "serve.out")
    try:
        cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        assert b"projections" in cmdline and b"follow" in cmdline
        wire = legal_table(61, hands=2)
        answer = httpx.post(f"{base}/v1/tables/proj-1/events", json={"events": wire},
                            headers={"Authorization": f"Bearer {key}"}, timeout=30)  # fmt: skip
        assert answer.status_code == 201, answer.text

        def settled() -> int:
            with psycopg.connect(url) as conn:
                row = conn.execute(
                    "SELECT count(*) FROM proj_hand_settlements WHERE table_id = 'proj-1'"
                ).fetchone()
            return int(row[0]) if row else 0

        assert wait_for(settled, 300, "the child projector did not project the table") >= 1
        # the child said it follows, and what: a line of its JSON log, beside the server's
        lines = (folder / "serve.out").read_text().splitlines()
        said = [line for line in lines if "projector_following" in line]
        assert len(said) == 1 and json.loads(said[0])["models"] == list(registry.NAMES), said
    finally:
        serve.terminate()
        serve.wait(30)
    wait_for(lambda: not alive(child), 60, "the projector outlived kwx serve")

    # killed outright, the server cannot stop its child: the child notices (PR_SET_PDEATHSIG)
    serve, base, child = _start(url, folder / "serve2.out")
    try:
        os.kill(serve.pid, signal.SIGKILL)
        serve.wait(30)
        wait_for(lambda: not alive(child), 60, "the projector outlived a killed kwx serve")
    finally:
        if alive(child):
            os.kill(child, signal.SIGKILL)
