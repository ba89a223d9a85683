"""``kwx simulate --tables N --hands H --seed S --preset P [--out DIR]``: simulated, legal streams.

One JSON-lines stream per table (``table_id`` ``sim-S-i``): written to ``DIR/sim-S-i.jsonl`` with
``--out``, else all tables one after another on stdout. The same seed gives the same bytes.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tables", type=int, default=1, help="number of tables (default 1)")
    parser.add_argument("--hands", type=int, default=8, help="hands per table (default 8)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--preset", default="default", help="rule preset of every table (default: default)")
    parser.add_argument(
        "--out", default=None, help="folder to write one FILE.jsonl per table (default: stdout)"
    )


def table_seed(seed: int, table: int) -> int:
    """The seed of table ``table`` (0-based) of a run with ``seed``: independent per table."""
    return seed * 1_000_003 + table


def run(args: argparse.Namespace) -> int:
    import random
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
    encoder = msgspec.json.Encoder()
    out_dir = Path(args.out) if args.out else None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    for i in range(args.tables):
        table_id = f"sim-{args.seed}-{i}"
        events = simulate_table(
            random.Random(table_seed(args.seed, i)), args.hands, {"preset": args.preset}, table_id
        )
        data = b"".join(encoder.encode(e) + b"\n" for e in events)
        if out_dir is None:
            sys.stdout.buffer.write(data)
        else:
            (out_dir / f"{table_id}.jsonl").write_bytes(data)
    if out_dir is None:
        sys.stdout.flush()
    return 0
