"""``kwx simulate --tables N --hands H --seed S --preset P [--out DIR] [--start TIME] [--players N]``:
simulated, legal streams.

One JSON-lines stream per table (``table_id`` ``sim-S-i``): written to ``DIR/sim-S-i.jsonl`` with
``--out``, else all tables one after another on stdout. The same arguments give the same bytes.

* ``--start 2026-11-01T08:00:00Z``: every event gets an ``at``; table ``i`` opens at START plus
  ``i`` × ``--table-gap`` minutes (default 45) and its events follow a few seconds apart
  (domain/simulate.py), so a run spreads over days when it has many tables.
* ``--players N``: each table's three players are drawn from a pool ``p001`` … ``pN`` (a random
  draw of its own per table, from the seed), so a player has a history across tables.

Without either option the streams are exactly those of earlier versions (tests depend on them).
"""

from __future__ import annotations

import argparse
import random
from datetime import datetime, timedelta


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tables", type=int, default=1, help="number of tables (default 1)")
    parser.add_argument("--hands", type=int, default=8, help="hands per table (default 8)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--preset", default="default", help="rule preset of every table (default: default)")
    parser.add_argument(
        "--out", default=None, help="folder to write one FILE.jsonl per table (default: stdout)"
    )
    parser.add_argument(
        "--start", default=None, help="RFC 3339 time of the first table's first event: every event gets an at"
    )
    parser.add_argument(
        "--table-gap", type=int, default=45, help="minutes between tables' starts (default 45; with --start)"
    )
    parser.add_argument(
        "--players", type=int, default=None, help="draw each table's players from a pool of N (p001 … pN)"
    )


def _start(text: str) -> datetime | None:
    import msgspec

    from domain.events import Rfc3339

    try:
        msgspec.convert(text, Rfc3339)
    except msgspec.ValidationError:
        return None
    return datetime.fromisoformat(text.upper().replace(" ", "T").replace("Z", "+00:00"))


def pool_players(seed: int, table: int, pool: int) -> list[str]:
    """Three different players of the pool ``p001`` … for table ``table`` of a run with ``seed``."""
    width = max(3, len(str(pool)))
    picked = random.Random(f"players|{seed}|{table}").sample(range(1, pool + 1), 3)
    return [f"p{n:0{width}d}" for n in picked]


def table_seed(seed: int, table: int) -> int:
    """The seed of table ``table`` (0-based) of a run with ``seed``: independent per table."""
    return seed * 1_000_003 + table


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    import msgspec

    from domain.rules import PRESETS
    from domain.simulate import simulate_table

    if args.preset not in PRESETS:
        print(f"kwx simulate: unknown preset {args.preset!r} (one of {', '.join(PRESETS)})", file=sys.stderr)
        return 2
    if args.tables < 1 or args.hands < 1:
        print("kwx simulate: --tables and --hands must be at least 1", file=sys.stderr)
        return 2
    start = _start(args.start) if args.start is not None else None
    if args.start is not None and start is None:
        print(f"kwx simulate: --start {args.start[:64]!r} is not an RFC 3339 time (2026-11-01T08:00:00Z)",
              file=sys.stderr)  # fmt: skip
        return 2
    if args.players is not None and not 3 <= args.players <= 999_999:
        print("kwx simulate: --players must be between 3 and 999999", file=sys.stderr)
        return 2
    if args.table_gap < 0:
        print("kwx simulate: --table-gap must be at least 0", file=sys.stderr)
        return 2
    encoder = msgspec.json.Encoder()
    out_dir = Path(args.out) if args.out else None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    for i in range(args.tables):
        table_id = f"sim-{args.seed}-{i}"
        events = simulate_table(
            random.Random(table_seed(args.seed, i)), args.hands, {"preset": args.preset}, table_id,
            start=start + timedelta(minutes=args.table_gap * i) if start is not None else None,
            players=pool_players(args.seed, i, args.players) if args.players is not None else None,
        )  # fmt: skip
        data = b"".join(encoder.encode(e) + b"\n" for e in events)
        if out_dir is None:
            sys.stdout.buffer.write(data)
        else:
            (out_dir / f"{table_id}.jsonl").write_bytes(data)
    if out_dir is None:
        sys.stdout.flush()
    return 0
