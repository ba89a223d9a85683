"""Event streams for the service tests: the conformance streams, the project's golden streams, and
legal synthetic tables (the simulator when it is there, else the conformance streams re-labelled)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from tests.paths import GOLDEN
from tests.paths import STREAMS as CONFORMANCE


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def stream_files() -> list[Path]:
    files: list[Path] = []
    for folder in (CONFORMANCE, GOLDEN):
        if folder.is_dir():
            files.extend(sorted(folder.glob("*.jsonl")))
    return files


def expectation(path: Path) -> dict[str, Any]:
    expect = path.with_name(path.name.replace(".jsonl", ".expect.json"))
    return json.loads(expect.read_text()) if expect.exists() else {}


def legal_streams() -> list[list[dict[str, Any]]]:
    """The streams that settle (no expected error)."""
    return [load(p) for p in stream_files() if "error" not in expectation(p)]


def legal_table(seed: int = 1, hands: int = 3) -> list[dict[str, Any]]:
    """One legal table, as wire dicts."""
    try:
        from domain.simulate import simulate_table
    except ImportError:
        simulate_table = None
    if simulate_table is not None:
        try:
            return list(simulate_table(random.Random(seed), hands, {"preset": "default"}, f"sim{seed}"))
        except TypeError:
            pass
    streams = legal_streams()
    return [dict(e) for e in streams[seed % len(streams)]]


def relabel(events: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    """The same events with ids ``prefix-<original id>``."""
    return [dict(e, id=f"{prefix}-{e['id']}") for e in events]
