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


def test_simulate_with_times_and_a_player_pool_is_deterministic_and_plays_the_same_hands() -> None:
    args = ("simulate", "--tables", "6", "--hands", "2", "--seed", "8")
    timed = ("--start", "2026-11-30T22:00:00Z", "--table-gap", "50", "--players", "4")
    a, b, plain = _kwx(*args, *timed), _kwx(*args, *timed), _kwx(*args)
    assert a.returncode == 0 and plain.returncode == 0, a.stderr.decode()
    assert a.stdout == b.stdout  # same seed, start and pool: the same bytes
    events = [json.loads(line) for line in a.stdout.splitlines()]
    untimed = [json.loads(line) for line in plain.stdout.splitlines()]
    # the options add times and names, and change nothing of the play
    assert [{k: v for k, v in e.items() if k not in ("at", "players")} for e in events] == [
        {k: v for k, v in e.items() if k != "players"} for e in untimed
    ]
    opened = [e for e in events if e["type"] == "table_opened"]
    assert all(set(e["players"]) <= {"p001", "p002", "p003", "p004"} and len(set(e["players"])) == 3
               for e in opened)  # fmt: skip
    assert len({p for e in opened for p in e["players"]}) == 4  # a player sits at several tables
    times = [e["at"] for e in events]
    assert times == sorted(times) and times[0] == "2026-11-30T22:00:00Z"
    assert {t[:10] for t in times} == {"2026-11-30", "2026-12-01"}  # six tables 50 minutes apart
    assert opened[1]["at"] == "2026-11-30T22:50:00Z"


def test_simulate_refuses_a_bad_start_or_pool() -> None:
    for bad in (("--start", "yesterday"), ("--start", "2026-11-30"), ("--players", "2")):
        proc = _kwx("simulate", *bad)
        assert proc.returncode == 2 and b"kwx simulate:" in proc.stderr, bad
