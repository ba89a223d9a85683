"""``kwx simulate`` through the real entry point: given a seed → when run twice → then the same
bytes; with ``--out`` one stream per table, each of which ``kwx settle`` accepts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def _kwx(*args: str) -> subprocess.CompletedProcess[bytes]:
    script = Path(sys.executable).parent / "kwx"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "services.cli"]
    return subprocess.run([*cmd, *args], capture_output=True, timeout=120, check=False)


def test_simulate_to_stdout_is_deterministic() -> None:
    a = _kwx("simulate", "--tables", "2", "--hands", "2", "--seed", "11", "--preset", "platform_3d")
    b = _kwx("simulate", "--tables", "2", "--hands", "2", "--seed", "11", "--preset", "platform_3d")
    assert a.returncode == 0, a.stderr.decode()
    assert a.stdout == b.stdout
    lines = [json.loads(line) for line in a.stdout.splitlines()]
    assert [e["type"] for e in lines].count("table_opened") == 2
    assert lines[-1]["type"] == "table_closed"


def test_simulate_out_writes_one_stream_per_table_that_settles(tmp_path: Path) -> None:
    proc = _kwx("simulate", "--tables", "3", "--hands", "2", "--seed", "4", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr.decode()
    files = sorted(tmp_path.glob("*.jsonl"))
    assert [f.name for f in files] == ["sim-4-0.jsonl", "sim-4-1.jsonl", "sim-4-2.jsonl"]
    for f in files:
        settled = _kwx("settle", str(f))
        assert settled.returncode == 0, settled.stdout.decode()
        doc = json.loads(settled.stdout)
        assert len(doc["hands"]) == 2
        assert sum(doc["net"]) + doc.get("house", 0) == 0


def test_unknown_preset_is_refused() -> None:
    proc = _kwx("simulate", "--preset", "nowhere")
    assert proc.returncode == 2
    assert b"unknown preset" in proc.stderr
