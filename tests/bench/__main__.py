"""`make bench`: run every ``tests/bench/bench_*.py`` module's ``run()``, in name order.

``python -m tests.bench [NAME ...]`` runs only the named ones (``ingest``, ``win`` …).
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    names = sorted(p.stem for p in Path(__file__).parent.glob("bench_*.py"))
    wanted = {a if a.startswith("bench_") else f"bench_{a}" for a in argv}
    failed = 0
    for name in names:
        if wanted and name not in wanted:
            continue
        print(f"== {name}", flush=True)
        started = time.perf_counter()
        try:
            importlib.import_module(f"tests.bench.{name}").run()
        except Exception as exc:  # one broken benchmark must not hide the others
            failed += 1
            print(f"!! {name} failed: {exc.__class__.__name__}: {exc}", flush=True)
        print(f"== {name}: {time.perf_counter() - started:.1f} s\n", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
