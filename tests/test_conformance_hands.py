"""Every vector of ../shared/conformance/hands.jsonl through the real ``kwx score`` entry point."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from services.cli import main
from tests.paths import HANDS

VECTORS: list[dict[str, Any]] = [
    json.loads(line) for line in HANDS.read_text(encoding="utf-8").splitlines() if line.strip()
]


def kwx_score(
    lines: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    exit_code: int | None = 0,
) -> list[Any]:
    """``kwx score`` on ``lines`` via stdin: the result lines; the exit code must be ``exit_code``
    (None: 1 when some result is an unreadable line's error, else 0)."""
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(lines) + "\n"))
    code = main(["score"])
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    if exit_code is None:
        exit_code = 1 if any(r.get("error", {}).get("unreadable") for r in results) else 0
    assert code == exit_code
    return results


def check(vector: dict[str, Any], result: dict[str, Any]) -> None:
    expect = vector["expect"]
    if expect.get("error"):
        assert "error" in result, result
        assert result["error"]["message"]
        return
    assert "error" not in result, result
    patterns = {p["id"]: p["x"] for p in result["patterns"]}
    assert len(patterns) == len(result["patterns"])  # no pattern twice in these vectors
    if "patterns_any_of" in expect:
        assert patterns in expect["patterns_any_of"]
    else:
        assert patterns == expect["patterns"]
    for key in ("multiplier", "payable", "allowed"):
        assert result[key] == expect[key], key
    assert all(p["detail"] for p in result["patterns"])


@pytest.mark.parametrize(
    "vector",
    [pytest.param(v, id=v["id"]) for v in VECTORS],
)
def test_vector(
    vector: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (result,) = kwx_score([json.dumps(vector)], monkeypatch, capsys)
    check(vector, result)


def test_all_vectors_in_one_run_as_a_file_via_the_installed_script(tmp_path: Path) -> None:
    # given the whole file, when `kwx score FILE` runs as a process, then one line per vector, exit 0
    kwx = Path(sys.executable).with_name("kwx")
    proc = subprocess.run([str(kwx), "score", str(HANDS)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(results) == len(VECTORS)
    for vector, result in zip(VECTORS, results, strict=True):
        check(vector, result)


# -- kwx score: input handling ---------------------------------------------------------------------

GOOD = {
    "concealed": "4556p 123s 789s CCC",
    "melds": [],
    "win": "5p",
    "self_draw": True,
    "rules": {"preset": "default"},
}


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"concealed": "4556x 123s 789s CCC"}, "concealed", "unexpected character"),
        ({"concealed": "4556p 123s 789s CC"}, "concealed", "must have 13"),
        ({"win": "0p"}, "win", "unknown tile"),
        ({"win": 5}, "win", "string"),
        ({"melds": [{"kind": "chi", "tile": "5s"}]}, "melds[0].kind", "expected peng"),
        ({"melds": [{"kind": "peng", "tile": "Z"}]}, "melds[0].tile", "unknown tile"),
        ({"rules": {"preset": "nowhere"}}, "rules.preset", "unknown preset"),
        ({"rules": {"preset": "default", "cap": "eight"}}, "rules.cap", "bad rule option"),
        ({"rules": {"preset": "default", "no_such": 1}}, "rules.no_such", "unknown rule option"),
        ({"self_draw": None}, "self_draw", "missing"),
        ({"self_draw": False, "kong_draw": True}, "kong_draw", "self-draw"),
        ({"self_draw": True, "robbed_kong": True}, "robbed_kong", "another player"),
        ({"concealed": "5555p 123s 789s CCC"}, "concealed", "more than four of 5p"),
        ({"win": "7p"}, "concealed", "not a winning hand"),
    ],
)
def test_bad_input_is_an_error_line_naming_the_field(
    change: dict[str, Any],
    field: str,
    words: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    (result,) = kwx_score([json.dumps(line)], monkeypatch, capsys, exit_code=None)
    assert result["error"]["field"] == field
    assert words in result["error"]["message"]
    # a hand that does not win is an answer (exit 0); anything else is a line kwx could not read
    assert result["error"].get("unreadable", False) is (words != "not a winning hand")


def test_every_line_answered_in_order_and_unknown_keys_ignored(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a good line with extra keys, a line of broken JSON, a blank line and a good line
    lines = [
        json.dumps({**GOOD, "id": "x", "expect": {"anything": 1}, "note": "ignored"}),
        "{not json",
        "",
        json.dumps(GOOD),
    ]
    results = kwx_score(lines, monkeypatch, capsys, exit_code=1)  # the broken line: exit 1
    assert len(results) == 3
    assert results[0]["multiplier"] == 2 and results[2]["multiplier"] == 2
    assert "invalid JSON" in results[1]["error"]["message"]
    assert results[0]["decomposition"] == "456p 123s 789s CCC 55p"
    assert results[0]["patterns"] == [{"id": "ka_wu_xing", "x": 2, "detail": "5p in 4-5-6p"}]
    assert set(results[0]) >= {"capped", "min_required", "shu_kan", "cap_note"}


def test_a_file_that_cannot_be_opened_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err
    (tmp_path / "latin1.jsonl").write_bytes(b"\xff\xfe{}")
    assert main(["score", str(tmp_path / "latin1.jsonl")]) == 2


def test_rules_default_to_the_default_preset(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    line = {k: v for k, v in GOOD.items() if k not in ("rules", "melds")}
    (result,) = kwx_score([json.dumps(line)], monkeypatch, capsys)
    assert (result["multiplier"], result["payable"], result["allowed"]) == (2, 2, True)


def test_kong_chain_input(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # 杠上开花 after a chain of 3 kongs with kong_chain_kai_hua doubling: ×2 per kong = ×8.
    line = {
        "concealed": "123p 23s 99s",
        "melds": [{"kind": "kong_concealed", "tile": "7s"}, {"kind": "kong_exposed", "tile": "9p"}],
        "win": "1s",
        "self_draw": True,
        "kong_draw": True,
        "kong_chain": 3,
        "rules": {"preset": "uncapped", "kong_chain_kai_hua": "doubling"},
    }
    (result,) = kwx_score([json.dumps(line)], monkeypatch, capsys)
    assert [(p["id"], p["x"]) for p in result["patterns"]] == [("gang_shang_kai_hua", 8)]
