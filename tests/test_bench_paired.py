"""tests/bench/paired.py's pairing, ratios and verdicts (no timing: rates are given), and the driver's
clock of a database's PostgreSQL CPU."""

from __future__ import annotations

from typing import Any

import pytest

from tests.bench import paired
from tests.bench.paired import Summary, schedule, summarise


def test_schedule_interleaves_and_alternates_the_order_inside_a_pair() -> None:
    assert schedule(3) == [
        (0, "before"), (0, "after"),
        (1, "after"), (1, "before"),
        (2, "before"), (2, "after"),
    ]  # fmt: skip
    order = schedule(6)
    assert sorted(order) == sorted((k, s) for k in range(6) for s in ("before", "after"))
    assert [side for _, side in order].count("before") == 6
    assert sum(1 for k, side in order[::2] if side == "before") == 3  # each side goes first half the time


def test_ratios_are_after_over_before_per_pair_and_the_median_is_theirs() -> None:
    s = Summary("x", before=(100.0, 200.0, 50.0), after=(110.0, 180.0, 60.0))
    assert s.ratios == pytest.approx((1.1, 0.9, 1.2))
    assert s.ratio == pytest.approx(1.1)  # the median of the ratios, not after's median / before's
    assert s.slower_pairs == 1
    assert " 1/3 " in s.line()
    assert s.before_spread == pytest.approx((200 - 50) / 100)


def test_within_noise_when_the_ratios_range_holds_one() -> None:
    s = Summary("x", before=(100.0, 100.0, 100.0), after=(80.0, 101.0, 70.0))
    assert s.before_spread == 0.0
    assert s.verdict == "within noise"


def test_within_noise_when_the_median_is_inside_the_before_sides_spread() -> None:
    # every ratio under 1, but the before side itself moved by 20 % round to round
    s = Summary("x", before=(100.0, 110.0, 90.0), after=(95.0, 100.0, 85.0))
    assert max(s.ratios) < 1.0
    assert s.before_spread == pytest.approx(0.2)
    assert s.verdict == "within noise"


def test_slower_and_faster_outside_the_noise() -> None:
    slower = Summary("x", before=(100.0, 101.0, 99.0), after=(80.0, 82.0, 79.0))
    assert slower.verdict == "slower"
    assert "slower" in slower.line() and "0.8" in slower.line()
    faster = Summary("x", before=(100.0, 101.0, 99.0), after=(130.0, 128.0, 131.0))
    assert faster.verdict == "faster"


def test_summarise_pairs_by_pair_and_leaves_out_a_pair_with_a_failed_side() -> None:
    rounds = {
        (0, "before"): {"a": 100.0, "b": 10.0},
        (0, "after"): {"a": 120.0, "b": 12.0},
        (1, "after"): {"a": 90.0},  # b missing on this side
        (1, "before"): {"a": 100.0, "b": 10.0},
        (2, "before"): None,  # failed
        (2, "after"): {"a": 500.0, "b": 50.0},
    }
    by_name = {s.name: s for s in summarise(rounds, ["a", "b", "c"])}
    assert set(by_name) == {"a", "b"}  # c: no round has it
    assert by_name["a"].before == (100.0, 100.0) and by_name["a"].after == (120.0, 90.0)
    assert by_name["b"].ratios == pytest.approx((1.2,))


def test_a_summary_needs_equal_nonempty_sides() -> None:
    with pytest.raises(ValueError):
        Summary("x", before=(1.0,), after=())
    with pytest.raises(ValueError):
        Summary("x", before=(), after=())


def test_a_base_commit_missing_from_the_clone_is_skipped(capsys: pytest.CaptureFixture[str]) -> None:
    assert paired.main(["--base", "0" * 40, "--rounds", "1"]) == 0
    assert "not in this clone's history" in capsys.readouterr().out


def test_equal_rates_are_within_noise_even_when_their_ratio_is_not_exactly_one() -> None:
    s = Summary("x", before=(156 / 0.3,), after=(156 / (0.1 + 0.2),))
    assert s.ratios != (1.0,)  # 0.3 and 0.1 + 0.2 differ in the last bit
    assert s.verdict == "within noise"


def test_the_ingest_lines_are_also_compared_with_postgresqls_cpu() -> None:
    assert paired.NAMES[:3] == ("ingest_store", "ingest_store_cpu", "ingest_store_db_cpu")
    assert "ingest_http_db_cpu" in paired.NAMES and "fold_engine_db_cpu" not in paired.NAMES
    assert paired.LABELS["ingest_store_db_cpu"].endswith("[cpu+pg]")


@pytest.mark.db
def test_the_database_clock_counts_only_the_named_databases_backends(
    pg_cluster: Any, database_url: str
) -> None:
    """``paired_driver.database_cpu``: the CPU of the backends whose title names the database grows
    with work on that database, and another database's work leaves it as it was."""
    import psycopg

    from tests.bench.paired_driver import database_cpu

    other = pg_cluster.create_database("kwx_other")
    work = "SELECT count(*) FROM generate_series(1, 3000000)"
    with psycopg.connect(database_url) as mine, psycopg.connect(other) as theirs:
        clock = database_cpu(database_url)
        t0 = clock()
        theirs.execute(work).fetchone()
        t1 = clock()
        mine.execute(work).fetchone()
        t2 = clock()
    assert t2 - t1 > 0.05  # the query's CPU, on this database's backend
    assert t1 - t0 < (t2 - t1) / 5  # the other database's query is not counted
