"""The suite on a busy machine (issue 11 §6): run ``pytest`` RUNS times in a row while BUSY CPU-bound
processes run beside it, stopping at the first red run.

    .venv/bin/python -m tests.under_load [--runs 10] [--busy 2] [-- PYTEST ARGS…]
    make test-under-load RUNS=10

The busy processes spin in pure Python at the suite's own priority and are stopped when the runs
end (or after ``--max-hours``, whichever is first). Prints one line per run (exit code, wall time)
and the failures' short summary (the red run's whole output is kept in a file it names); exits
with the first red run's code, else 0.
"""

from __future__ import annotations

import argparse
import multiprocessing
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _spin(until: float) -> None:
    n = 0
    while time.monotonic() < until:
        n += 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.under_load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--busy", type=int, default=2, help="CPU-bound processes beside the suite")
    parser.add_argument("--max-hours", type=float, default=4.0, help="the busy processes stop by then anyway")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    args = parser.parse_args(argv)

    until = time.monotonic() + args.max_hours * 3600
    busy = [multiprocessing.Process(target=_spin, args=(until,), daemon=True) for _ in range(args.busy)]
    for p in busy:
        p.start()
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args.pytest_args]
    print(f"under load: {args.busy} busy process(es); {args.runs} run(s) of: {' '.join(command)}", flush=True)
    code = 0
    try:
        for run in range(1, args.runs + 1):
            started = time.monotonic()
            done = subprocess.run(command, capture_output=True, text=True)
            tail = [line for line in done.stdout.splitlines() if line.strip()][-1:] or ["(no output)"]
            print(f"run {run}/{args.runs}: exit {done.returncode} in {time.monotonic() - started:.0f} s — "
                  f"{tail[0]}", flush=True)  # fmt: skip
            if done.returncode != 0:
                kept = Path(tempfile.mkdtemp(prefix="kwx-under-load-")) / f"run-{run}.txt"
                kept.write_text(done.stdout + "\n--- stderr ---\n" + done.stderr, encoding="utf-8")
                summary = done.stdout.split("short test summary info", 1)[-1]
                print(summary[-6000:], flush=True)
                print(f"the whole output of run {run}: {kept}", flush=True)
                code = done.returncode
                break
    finally:
        for p in busy:
            p.terminate()
        for p in busy:
            p.join(10)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
