"""Rules audit — a few audit streams through ``kwx settle`` in-process (``services.cli.main``).

The whole-stream golden cases tests/golden/audit-*.jsonl (with their hand derivations in
``_derivation``) also run through the real ``kwx settle`` in tests/test_conformance_streams.py.
"""

from __future__ import annotations

import json

import pytest

from services.cli import main
from tests.paths import GOLDEN


def _settle(name: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:  # type: ignore[type-arg]
    code = main(["settle", str(GOLDEN / f"{name}.jsonl")])
    return code, json.loads(capsys.readouterr().out)


def test_unless_bigger_gang_shang_pao_is_paid(capsys: pytest.CaptureFixture[str]) -> None:
    # 卡五星 ×2 × 杠上炮 ×2 = 4 > the ×2 passed (除非胡第二家的比第一家的牌大): seat 1 pays 4.
    code, out = _settle("audit-lou-hu-unless-bigger", capsys)
    assert code == 0
    (hand,) = out["hands"]
    assert hand["wins"][0]["multiplier"] == 4
    assert [(t["from"], t["to"], t["amount"], t["reason"]) for t in hand["transfers"]] == [
        (0, 1, 2, "kong"),
        (2, 1, 2, "kong"),
        (1, 2, 4, "hu"),
    ]
    assert out["net"] == [-2, 0, 2]


def test_passed_robbed_kong_rejects_the_next_win(capsys: pytest.CaptureFixture[str]) -> None:
    # RULES.md §9: a passed robbable kong restricts like a passed discard: line 13 is rejected.
    code, out = _settle("audit-lou-hu-robbed-kong-passed", capsys)
    assert code == 1
    assert (out["error"]["index"], out["error"]["rule"]) == (13, "lou_hu")
    assert "漏胡" in out["error"]["message"]


def test_3d_fee_piao_ma(capsys: pytest.CaptureFixture[str]) -> None:
    # fee 1 × 3 to the house, 买码 7s → payable 9, 漂 3 and 1: net [25, -15, -13], house +3.
    code, out = _settle("audit-3d-fee-piao-ma", capsys)
    assert code == 0
    (hand,) = out["hands"]
    assert hand["wins"][0]["payable"] == 9 and hand["wins"][0]["ma"] == 7
    assert hand["net"] == [25, -15, -13] and hand["house"] == 3
