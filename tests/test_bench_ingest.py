"""bench_ingest's autovacuum accounting (tests/bench/bench_ingest.py): the server's log read back by
database, from a byte offset — pure, on a log written here in PostgreSQL's own layout."""

from __future__ import annotations

from pathlib import Path

from tests.bench.bench_ingest import autovacuum_cpu, log_size

LOG = """\
2026-12-03 16:12:54.413 UTC [336] LOG:  automatic analyze of table "bench_on.public.proj_ledger_entries"
\tavg read rate: 0.000 MB/s, avg write rate: 0.000 MB/s
\tbuffer usage: 1009 hits, 0 reads, 0 dirtied
\tsystem usage: CPU: user: 0.19 s, system: 0.01 s, elapsed: 0.21 s
2026-12-03 16:12:55.001 UTC [337] LOG:  checkpoint starting: time
2026-12-03 16:12:56.120 UTC [338] LOG:  automatic vacuum of table "bench.public.events": index scans: 0
\tpages: 0 removed, 5120 remain, 5120 scanned (100.00% of total)
\tsystem usage: CPU: user: 0.30 s, system: 0.02 s, elapsed: 0.40 s
2026-12-03 16:12:57.500 UTC [339] LOG:  automatic analyze of table "bench_on.public.events"
\tsystem usage: CPU: user: 0.36 s, system: 0.00 s, elapsed: 0.37 s
"""


def test_autovacuum_runs_are_summed_by_database(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_text(LOG)
    got = autovacuum_cpu(log, 0)
    assert set(got) == {"bench_on", "bench"}
    assert abs(got["bench_on"] - 0.56) < 1e-9 and abs(got["bench"] - 0.32) < 1e-9


def test_only_the_runs_logged_after_the_offset_count(tmp_path: Path) -> None:
    log = tmp_path / "log"
    first, rest = LOG.split("2026-12-03 16:12:55.001", 1)
    log.write_text(first)
    offset = log_size(log)
    log.write_text(first + "2026-12-03 16:12:55.001" + rest)
    got = autovacuum_cpu(log, offset)
    assert set(got) == {"bench_on", "bench"} and abs(got["bench_on"] - 0.36) < 1e-9
    assert autovacuum_cpu(log, offset, offset) == {}
    assert log_size(tmp_path / "absent") == 0
