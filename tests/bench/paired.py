"""Two commits of kwx measured in paired, interleaved rounds in one run (issue 12: "`make bench`
before and after: ingest and replay within noise of today (paired rounds)").

``python -m tests.bench.paired [--base REF] [--after REF] [--rounds N] [--tables T] [--hands H]
[--repeat R]``

Both commits' trees are materialised in a temporary folder (``git archive REF | tar -x``) and run
with this clone's ``.venv`` (each tree first on ``PYTHONPATH``; the driver checks that the tree's own
``services``, ``domain`` and ``projections`` are the ones imported), both **engines interpreted**
(``KWX_PURE_ENGINE=1``: the mypyc-compiled engine in ``.venv`` matches only the current sources);
``--engine compiled`` runs both with that build instead — the service's own engine — which works
only where both trees' ``domain/`` is the one it was built from (the driver refuses otherwise).
One embedded PostgreSQL is started for the run; every round of either tree gets a fresh database
on it, migrated by that tree's own migrations, dropped after the round. The workload is the same
for both: ``T`` + 2 tables (2 warm-up) of ``H`` hands simulated once here (``domain.simulate``,
preset default, seeds 0, 1, …), written to a file each round reads.

A pair is one round of each tree, each round a subprocess of its own (``paired_driver.py``: every
measurement, its docstring). The pairs run one after the other, the order inside a pair
alternating (before/after, then after/before, …), so a change of the machine's load hits both
trees alike and a drift inside a pair cancels over the pairs. Per measurement: the median of each
side (each round's figure the best of its R runs, by the clock, per CPU second of the process
doing kwx's work and — the two ingest lines — per CPU second of it and PostgreSQL's backends of the
round's database), the median of
the per-pair ratios after/before and their spread (min–max), the pairs where after was slower, the
before side's own round-to-round spread ((max − min) / median), and a verdict: "within noise" when the
ratios' range holds 1.0 or |median ratio − 1| ≤ the before side's spread, else "slower" or
"faster". Rates are events/s, so a ratio under 1 is slower. Never fails on speed.

Defaults: base ``KWX_BENCH_BASE`` or 461a6ab (the commit issue 12 was filed against), after
``HEAD``, 6 pairs (``KWX_BENCH_PAIRS``), 16 tables of 8 hands (6,684 events a measurement), the
best of 3 runs (≈ 25–60 s a round on this machine while busy). A base commit missing from the
clone (a shallow clone) is reported and skipped, not a failure.
``make bench`` runs it through ``bench_paired.py``. docs/benchmarks.md has a run's result.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.bench import knob

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).resolve().with_name("paired_driver.py")
DEFAULT_BASE = "461a6ab"
SIDES = ("before", "after")
WARM = 2  # the driver's untimed warm-up tables (paired_driver.WARM)

# (key in the driver's answer, what it is); each also as KEY_cpu: events per CPU second of the
# process doing kwx's work (the driver for the in-process lines, `kwx serve` for the HTTP ones)
MEASURES = (
    ("ingest_store", "ingest: EventStore.append, 100-event batches"),
    ("ingest_http", "ingest: POST /v1/tables/{id}/events, kwx serve"),
    ("replay_state", "replay: GET /v1/tables/{id}/state, from event 1"),
    ("replay_settlement", "replay: GET …/hands/{last}/settlement"),
    ("replay_store", "replay: state_at in process (read + fold)"),
    ("fold_engine", "replay: the engine's fold in memory"),
)
CLOCKS = (("", "wall"), ("_cpu", "cpu"))
# the ingest lines also per CPU second of kwx *and* the round database's PostgreSQL backends
WITH_DB = ("ingest_store", "ingest_http")
NAMES = tuple(
    key + suffix
    for key, _ in MEASURES
    for suffix in (*(c for c, _ in CLOCKS), *(("_db_cpu",) if key in WITH_DB else ()))
)
LABELS = {key + suffix: f"{label} [{clock}]" for key, label in MEASURES for suffix, clock in CLOCKS} | {
    key + "_db_cpu": f"{label} [cpu+pg]" for key, label in MEASURES if key in WITH_DB
}


# ------------------------------------------------------------------------------ pairing and verdict
def schedule(pairs: int) -> list[tuple[int, str]]:
    """The rounds in the order they run, as (pair, side): before/after, then after/before, …"""
    out: list[tuple[int, str]] = []
    for k in range(pairs):
        out += [(k, side) for side in (SIDES if k % 2 == 0 else SIDES[::-1])]
    return out


@dataclass(frozen=True)
class Summary:
    """One measurement over the pairs that have both sides: ``before[k]`` and ``after[k]`` are pair
    ``k``'s rates (higher is better)."""

    name: str
    before: tuple[float, ...]
    after: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.before) != len(self.after) or not self.before:
            raise ValueError(f"{self.name}: {len(self.before)} before and {len(self.after)} after rounds")

    @property
    def ratios(self) -> tuple[float, ...]:
        return tuple(a / b for b, a in zip(self.before, self.after, strict=True))

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)

    @property
    def before_spread(self) -> float:
        """The before side's round-to-round spread: (max − min) / median."""
        return (max(self.before) - min(self.before)) / statistics.median(self.before)

    @property
    def verdict(self) -> str:
        ratios, eps = self.ratios, 1e-9  # a ratio of equal rates may come out as 0.9999999999
        if min(ratios) - eps <= 1.0 <= max(ratios) + eps or abs(self.ratio - 1.0) <= self.before_spread + eps:
            return "within noise"
        return "slower" if self.ratio < 1.0 else "faster"

    @property
    def slower_pairs(self) -> int:
        """The pairs whose after side was slower (a sign that the median alone doesn't show)."""
        return sum(1 for r in self.ratios if r < 1.0)

    def line(self) -> str:
        return (
            f"{statistics.median(self.before):9,.0f} {statistics.median(self.after):9,.0f}   "
            f"{self.ratio:5.3f} [{min(self.ratios):.3f}–{max(self.ratios):.3f}]   "
            f"{self.slower_pairs:>2}/{len(self.ratios):<2}  ±{self.before_spread:.3f}   {self.verdict}"
        )


def summarise(rounds: dict[tuple[int, str], dict[str, float] | None], names: Sequence[str]) -> list[Summary]:
    """A :class:`Summary` per measurement from each round's rates (None: the round failed), over
    the pairs where both sides have the measurement, in pair order."""
    out = []
    pairs = sorted({k for k, _ in rounds})
    for name in names:
        both = [
            (b[name], a[name])
            for k in pairs
            if (b := rounds.get((k, "before")))
            and (a := rounds.get((k, "after")))
            and name in b
            and name in a
        ]
        if both:
            out.append(Summary(name, tuple(b for b, _ in both), tuple(a for _, a in both)))
    return out


# ------------------------------------------------------------------------------------- the run
def git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False)


def commit_of(ref: str) -> str | None:
    """The full hash of ``ref`` if this clone has it (a shallow clone may not)."""
    try:
        found = git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except OSError:  # no git
        return None
    return found.stdout.strip() if found.returncode == 0 else None


def materialise(commit: str, into: Path) -> None:
    """The commit's tree in ``into`` (``git archive | tar -x``)."""
    into.mkdir(parents=True)
    archive = subprocess.Popen(["git", "-C", str(ROOT), "archive", commit], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(into)], stdin=archive.stdout, check=True)
    if archive.stdout is not None:
        archive.stdout.close()
    if archive.wait() != 0:
        raise RuntimeError(f"git archive {commit} failed")


def workload(tables: int, hands: int) -> list[list[dict[str, Any]]]:
    from domain.simulate import simulate_table

    rules = {"preset": "default"}
    return [simulate_table(random.Random(seed), hands, rules, f"pb{seed}") for seed in range(tables)]


def machine() -> str:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    uptime = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    return f"{os.cpu_count()} cores, load average {load} ({uptime})"


def one_round(
    tree: Path, url: str, events: Path, repeat: int, engine: str = "interpreted"
) -> tuple[dict[str, Any] | None, str]:
    """The driver's answer for one round of ``tree`` (None and the reason when it failed)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    env.pop("KWX_PURE_ENGINE", None)
    if engine == "interpreted":
        env["KWX_PURE_ENGINE"] = "1"
    env.pop("DATABASE_URL", None)
    proc = subprocess.run(
        [sys.executable, str(DRIVER), "--tree", str(tree), "--url", url, "--events", str(events),
         "--repeat", str(repeat), "--engine", engine],
        cwd=tree, env=env, capture_output=True, text=True, timeout=3600, check=False,
    )  # fmt: skip
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or lines or ["(no output)"])[-1]
        return None, f"exit {proc.returncode}: {tail}"
    return json.loads(lines[-1]), ""


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.paired", description=__doc__.split("\n")[0])
    parser.add_argument("--base", default=os.environ.get("KWX_BENCH_BASE") or DEFAULT_BASE)
    parser.add_argument("--after", default="HEAD")
    parser.add_argument("--rounds", type=int, default=knob("KWX_BENCH_PAIRS", 6, 1),
                        help="pairs of rounds (one of each tree)")  # fmt: skip
    parser.add_argument("--tables", type=int, default=knob("KWX_BENCH_TABLES", 16, 4))
    parser.add_argument("--hands", type=int, default=knob("KWX_BENCH_HANDS", 8, 2))
    parser.add_argument("--repeat", type=int, default=knob("KWX_BENCH_REPEAT", 3, 1),
                        help="runs of each measurement a round (the best)")  # fmt: skip
    parser.add_argument("--engine", choices=("interpreted", "compiled"), default="interpreted",
                        help="compiled: the service's mypyc build, for trees whose domain/ is the one it "
                             "was built from (a round of another tree fails and says so)")  # fmt: skip
    args = parser.parse_args(list(argv))
    if min(args.rounds, args.tables, args.hands, args.repeat) < 1:
        parser.error("--rounds, --tables, --hands and --repeat must be at least 1")

    commits = {"before": commit_of(args.base), "after": commit_of(args.after)}
    for side, ref in (("before", args.base), ("after", args.after)):
        if commits[side] is None:
            print(f"paired: the {side} commit {ref!r} is not in this clone's history (a shallow clone?): "
                  "skipped")  # fmt: skip
            return 0
    for side in SIDES:
        subject = git("log", "-1", "--format=%h %s", str(commits[side])).stdout.strip()
        print(f"{side:6}: {subject[:100]}")
    if git("status", "--porcelain", "--untracked-files=no").stdout.strip() and args.after == "HEAD":
        print("        (this working tree has uncommitted changes: they are not measured)")
    print(f"machine: {machine()}")
    if args.engine == "interpreted":
        print("both trees run with this clone's .venv, engines interpreted (KWX_PURE_ENGINE=1: the compiled "
              "engine matches only the current sources)")  # fmt: skip
    else:
        print("both trees run with this clone's .venv and its compiled engine (--engine compiled: a tree "
              "whose domain/ differs from the build's fails its rounds)")  # fmt: skip

    from services.db import ensure_database, start_embedded

    work = Path(tempfile.mkdtemp(prefix="kwx-paired-"))
    server = None
    try:
        trees = {side: work / side for side in SIDES}
        for side in SIDES:
            materialise(str(commits[side]), trees[side])
        started = time.perf_counter()
        tables = workload(args.tables + WARM, args.hands)
        events = work / "events.json"
        events.write_text(json.dumps(tables))
        timed_events = sum(len(t) for t in tables[WARM:])
        print(f"workload: {args.tables} tables x {args.hands} hands, preset default, seeds {WARM}…"
              f"{args.tables + WARM - 1} = {timed_events:,} events a measurement (+ {WARM} warm-up tables; "
              f"simulated in {time.perf_counter() - started:.1f} s)")  # fmt: skip
        server = start_embedded(work / "pg", cleanup_mode="delete")
        admin = server.get_uri("postgres")
        print(f"{args.rounds} pairs, {2 * args.rounds} rounds, each a subprocess with a fresh database, "
              f"each measurement the best of {args.repeat} runs in its round:")  # fmt: skip
        rounds: dict[tuple[int, str], dict[str, float] | None] = {}
        rulings: dict[tuple[int, str], int] = {}
        for n, (k, side) in enumerate(schedule(args.rounds)):
            name = f"paired_{side}_{k}"
            ensure_database(admin, name)
            started = time.perf_counter()
            answer, why = one_round(trees[side], server.get_uri(name), events, args.repeat, args.engine)
            seconds = time.perf_counter() - started
            drop(admin, name)
            if answer is None:
                rounds[(k, side)] = None
                print(f"  round {n + 1:2} pair {k + 1} {side:6}: FAILED ({why})", flush=True)
                continue
            rounds[(k, side)] = answer["rates"]
            if k == 0:
                meta = answer["meta"]
                print(f"  {side} tree: driver's engine {meta['engine']}, kwx serve: {meta['serve_engine']}, "
                      f"{meta['rulings']} rulings recorded on the {meta['events']:,} events")  # fmt: skip
            rulings[(k, side)] = answer["meta"].get("rulings", 0)
            got = answer["rates"]
            rates = "  ".join(
                f"{key} {got[key]:,.0f} (cpu {got.get(key + '_cpu', 0):,.0f}"
                + (f", cpu+pg {got[key + '_db_cpu']:,.0f})" if key + "_db_cpu" in got else ")")
                for key, _ in MEASURES if key in got
            )  # fmt: skip
            print(f"  round {n + 1:2} pair {k + 1} {side:6} ({seconds:4.0f} s, migrate "
                  f"{answer['meta']['migrate_s']:.1f} s, load {os.getloadavg()[0]:.2f}): {rates}",
                  flush=True)  # fmt: skip
        if len(set(rulings.values())) > 1:
            print(f"note: the trees recorded different numbers of rulings on the same events: {rulings}")
        summaries = summarise(rounds, NAMES)
        print(f"machine after: {machine()}")
        print("events/s [wall]: by the clock; [cpu]: per CPU second of the process doing kwx's work (the "
              "driver in process, kwx serve over HTTP; PostgreSQL's not counted); [cpu+pg]: per CPU second "
              "of that process and the round database's PostgreSQL backends")  # fmt: skip
        print("median of each side; after/before: median of the per-pair ratios [min–max]; slower: the "
              "pairs where after was slower; ± the before side's round-to-round spread (max - min) / "
              "median")  # fmt: skip
        print(f"{'measurement':55} {'before':>9} {'after':>9}   ratio [range]          slower  spread   "
              "verdict")  # fmt: skip
        for s in summaries:
            print(f"{LABELS[s.name]:55} {s.line()}")
        if not summaries:
            print("no pair had both sides: nothing to compare")
        elif len(summaries[0].ratios) < 5:
            print(f"note: {len(summaries[0].ratios)} pair(s) only: too few for the spreads, and so the "
                  "verdicts, to say much (use --rounds 5 or more)")  # fmt: skip
    finally:
        if server is not None:
            server.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    return 0


def drop(admin_url: str, name: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
