"""Every conformance stream (../shared/conformance/streams) and every golden stream of our own
(tests/golden) through the real ``kwx settle`` entry point, compared with its ``.expect.json``.

Given a stream → when ``kwx settle FILE`` runs → then per hand ``end``, ``next_dealer``, ``wins``
(seat, patterns as id → x, multiplier, payable), ``transfers`` as a multiset of
``[from, to, amount, reason]`` and ``net``; or, for an illegal stream, exit 1 and
``{"error": {"index", "rule"}}``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.paths import GOLDEN
from tests.paths import STREAMS as CONFORMANCE


def _streams() -> list[Path]:
    found: list[Path] = []
    for folder in (CONFORMANCE, GOLDEN):
        found.extend(sorted(folder.glob("*.jsonl")))
    return found


def _kwx() -> list[str]:
    script = Path(sys.executable).parent / "kwx"
    return [str(script)] if script.exists() else [sys.executable, "-m", "services.cli"]


def run_settle(path: Path) -> tuple[int, Any]:
    proc = subprocess.run([*_kwx(), "settle", str(path)], capture_output=True, timeout=60, check=False)
    assert proc.stdout, proc.stderr.decode()
    return proc.returncode, json.loads(proc.stdout)


def _patterns(patterns: Any) -> dict[str, int]:
    if isinstance(patterns, dict):
        return dict(patterns)
    return {p["id"]: p["x"] for p in patterns}


def _hand_view(hand: dict[str, Any]) -> dict[str, Any]:
    return {
        "end": hand["end"],
        "next_dealer": hand["next_dealer"],
        "wins": [
            {
                "seat": w["seat"],
                "patterns": _patterns(w["patterns"]),
                "multiplier": w["multiplier"],
                "payable": w["payable"],
            }
            for w in hand["wins"]
        ],
        "transfers": Counter(tuple(t) for t in hand["transfers"]),
        "net": list(hand["net"]),
    }


def _actual_view(hand: dict[str, Any]) -> dict[str, Any]:
    hand = dict(hand)
    hand["transfers"] = [[t["from"], t["to"], t["amount"], t["reason"]] for t in hand["transfers"]]
    return _hand_view(hand)


STREAMS = _streams()


@pytest.mark.parametrize("path", STREAMS, ids=[f"{p.parent.name}/{p.stem}" for p in STREAMS])
def test_stream_settles_as_expected(path: Path) -> None:
    expect = json.loads(path.with_suffix("").with_suffix(".expect.json").read_text())
    code, out = run_settle(path)
    if "error" in expect:
        assert code == 1, out
        assert out["error"]["index"] == expect["error"]["index"], out
        assert out["error"]["rule"] == expect["error"]["rule"], out
        assert out["error"]["message"]
        return
    assert code == 0, out
    assert len(out["hands"]) == len(expect["hands"])
    for actual, wanted in zip(out["hands"], expect["hands"], strict=True):
        assert actual["hand"] == wanted.get("hand", actual["hand"])
        assert _actual_view(actual) == _hand_view(wanted), f"hand {actual['hand']}"
        assert sum(actual["net"]) + actual.get("house", 0) == 0
        assert all(t["detail"] and isinstance(t["event"], int) for t in actual["transfers"])
    assert out["net"] == [sum(h["net"][s] for h in out["hands"]) for s in range(3)]
    if "net" in expect:
        assert out["net"] == expect["net"]


def test_there_are_streams() -> None:
    assert any(p.parent == GOLDEN for p in STREAMS)
    # the shared conformance streams must be there: a missing ../shared fails, it never skips
    shared = {p.stem for p in STREAMS if p.parent == CONFORMANCE}
    assert {"bao-hu-default", "double-win", "rob-kong"} <= shared


def test_malformed_line_names_line_and_field(tmp_path: Path) -> None:
    good = (CONFORMANCE / "double-win.jsonl").read_text().splitlines()
    bad = json.loads(good[2])
    bad["colour"] = "red"
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([good[0], good[1], json.dumps(bad), *good[3:]]) + "\n")
    code, out = run_settle(path)
    assert code == 1
    assert out["error"]["index"] == 2
    assert out["error"]["rule"] == "malformed"
    assert out["error"]["field"] == "$.colour"


def test_not_json_is_an_error_naming_the_line(tmp_path: Path) -> None:
    good = (CONFORMANCE / "double-win.jsonl").read_text().splitlines()
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([good[0], "{not json", *good[1:]]) + "\n")
    code, out = run_settle(path)
    assert (code, out["error"]["index"], out["error"]["rule"]) == (1, 1, "malformed")


def test_stdin_is_read_when_no_file() -> None:
    data = (CONFORMANCE / "double-win.jsonl").read_bytes()
    proc = subprocess.run([*_kwx(), "settle"], input=data, capture_output=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout)["net"] == [-4, 2, 2]


def test_transfers_carry_the_version_of_their_event() -> None:
    # kong-chain: 暗杠 at v3, 暗杠 at v5, 直杠 at v8, hu at v11 (one event per line, from v1)
    code, out = run_settle(GOLDEN / "kong-chain.jsonl")
    assert code == 0
    rows = [(t["reason"], t["event"], t["amount"]) for t in out["hands"][0]["transfers"]]
    assert rows == [
        ("kong", 3, 2),
        ("kong", 3, 2),
        ("kong", 5, 4),
        ("kong", 5, 4),
        ("kong", 8, 8),
        ("hu", 11, 2),
    ]
    assert "3rd kong of a 杠上杠 chain: 2 × 2^2 = 8 × base 1 = 8" in out["hands"][0]["transfers"][4]["detail"]
