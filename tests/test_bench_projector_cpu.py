"""The projector bench's in-process line (``_models_only``): it runs every read model's rows and
writes over real simulated tables, without a database — so that its number measures them."""

from __future__ import annotations

import pytest

from projections import registry
from tests.bench.bench_projector_cpu import _models_only, _tables


def test_the_models_line_runs_every_models_rows_and_writes(capsys: pytest.CaptureFixture[str]) -> None:
    us = _models_only(_tables(3, 4, "t"), page=200)
    line = capsys.readouterr().out
    assert line.startswith("models in-process (")
    for name in registry.NAMES:
        assert f"{name} {us[name]:.2f}" in line
        assert us[name] > 0
    assert us["with_facts"] > 0  # 4 hands each: hand starts, settlements, reports
    # every model with rows wrote them: ledger (opening balances + entries), stats (+ patterns),
    # settlements, discovery (tables, players, hands), the feed (+ its NOTIFY), discrepancies
    assert us["statements"] >= 8 * 2  # at least 8 statements per page, over the first two pages
