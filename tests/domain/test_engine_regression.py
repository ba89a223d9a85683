"""Regression of the whole engine: given seeded simulated tables of every preset (and random events
on recording copies of them) → when they are folded event by event → then every intermediate
state, every ruling and every settlement hashes to the digests recorded in engine_regression.json.

The digests were written by the engine before its speed-ups (docs/benchmarks.md); a speed-up must
leave them unchanged. A rule fix that changes the engine's behaviour on purpose changes them too:
rewrite the file with

    .venv/bin/python -m tests.domain.test_engine_regression --write

and say so in the commit. The streams named in a failure show where the behaviour changed
(tests/bench/regress_engine.py compares a larger corpus against any other checkout).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.bench.regress_engine import PRESETS, digest_fuzz, digest_stream

DIGESTS = Path(__file__).with_name("engine_regression.json")
TABLES, HANDS, FUZZ = 14, 4, 400


def _corpus() -> dict[str, dict[str, Any]]:
    import random

    import msgspec

    from domain.simulate import simulate_table

    enc = msgspec.json.Encoder()
    out: dict[str, dict[str, Any]] = {}
    for i in range(TABLES):
        preset = PRESETS[i % len(PRESETS)]
        events = simulate_table(random.Random(51_000 + i), HANDS, {"preset": preset}, f"g{i}")
        lines = [enc.encode(e) for e in events]
        out[f"sim-{i}-{preset}"] = digest_stream(lines, PRESETS[(i * 3 + 1) % len(PRESETS)])
        if i < len(PRESETS):
            out[f"fuzz-{i}-{preset}"] = digest_fuzz(lines, i, FUZZ)
    return out


def test_engine_behaves_as_recorded() -> None:
    want = json.loads(DIGESTS.read_text())
    got = _corpus()
    assert sorted(got) == sorted(want)
    changed = {name: sorted(k for k in want[name] if want[name][k] != got[name].get(k)) for name in want}
    assert {name: keys for name, keys in changed.items() if keys} == {}


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.domain.test_engine_regression --write")
    DIGESTS.write_text(json.dumps(_corpus(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {DIGESTS}")
