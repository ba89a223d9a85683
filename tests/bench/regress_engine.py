"""Engine regression corpus: fold many streams and digest every result, to prove that a speed-up
changes nothing.

For each stream of the corpus — simulated tables of every preset (``domain.simulate``), the
conformance streams (../shared/conformance/streams) and tests/golden — it folds event by event
with ``engine.step`` and records, per stream:

- ``final``: sha256 of ``encode_state`` of the final state;
- ``states``: sha256 over ``encode_state`` of *every* intermediate state (claim windows with
  their scored candidates, 漏胡 restrictions …);
- ``settlements``: sha256 of the settlements (msgspec JSON) — the money;
- ``rulings``: sha256 of every ruling returned by ``check`` (accepted or not);
- ``whatif``: the same fold with ``rules_override`` of another preset (violations recorded): the
  digest of its final state, or where it stopped;
- ``fuzz/…``: random events on a recording copy of the first table of each preset
  (:func:`digest_fuzz`).

Usage::

    .venv/bin/python tests/bench/regress_engine.py --write /tmp/base.json   # before
    .venv/bin/python tests/bench/regress_engine.py --compare /tmp/base.json # after: diff, exit 1
    .venv/bin/python tests/bench/regress_engine.py --root /tmp/old --write /tmp/base.json
      # the same, with the ``domain`` package of another checkout (e.g. ``git archive``)

``--tables N --hands H`` size the simulated part (default 35 × 8: 5 tables per preset).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

PRESETS = ["default", "xiangyang", "shiyan", "xiaogan", "yunmeng", "uncapped", "platform_3d"]
HERE = Path(__file__).resolve().parents[2]


def corpus(tables: int, hands: int) -> list[tuple[str, list[bytes]]]:
    """(name, events as JSON lines) of every stream."""
    import msgspec

    from domain.simulate import simulate_table
    from tests.paths import GOLDEN
    from tests.paths import STREAMS as CONFORMANCE

    enc = msgspec.json.Encoder()
    out: list[tuple[str, list[bytes]]] = []
    for i in range(tables):
        preset = PRESETS[i % len(PRESETS)]
        events = simulate_table(random.Random(31_000 + i), hands, {"preset": preset}, f"r{i}")
        out.append((f"sim-{i}-{preset}", [enc.encode(e) for e in events]))
    for folder in (CONFORMANCE, GOLDEN):
        if folder.is_dir():
            for p in sorted(folder.glob("*.jsonl")):
                lines = [ln.encode() for ln in p.read_text().splitlines() if ln.strip()]
                out.append((f"{folder.name}/{p.stem}", lines))
    return out


def digest_stream(lines: list[bytes], whatif: str) -> dict[str, Any]:
    import msgspec

    from domain import engine
    from domain.events import decode

    enc = msgspec.json.Encoder(order="deterministic")
    events = [decode(x) for x in lines]
    h_states = hashlib.sha256()
    h_rulings = hashlib.sha256()
    state = engine.initial()
    stopped = None
    for i, ev in enumerate(events):
        state, ruling, accepted = engine.step(state, ev)
        if ruling is not None:
            h_rulings.update(enc.encode(ruling))
        if not accepted:
            stopped = i
            break
        h_states.update(engine.encode_state(state))
    res: dict[str, Any] = {
        "final": hashlib.sha256(engine.encode_state(state)).hexdigest(),
        "states": h_states.hexdigest(),
        "settlements": hashlib.sha256(enc.encode(state.settlements)).hexdigest(),
        "rulings": h_rulings.hexdigest(),
        "stopped": stopped,
    }
    try:
        w = engine.fold(events, rules_override={"preset": whatif})
        res["whatif"] = [
            hashlib.sha256(engine.encode_state(w)).hexdigest(),
            hashlib.sha256(enc.encode(w.settlements)).hexdigest(),
        ]
    except engine.IllegalEvent as exc:
        res["whatif"] = ["illegal", exc.index, exc.ruling.code]
    return res


def digest_fuzz(lines: list[bytes], seed: int, n: int) -> dict[str, Any]:
    """A recording table (violations: "record") and ``n`` random well-formed events applied from
    random states of the stream, three more after each accepted one (tests/domain/test_engine_fuzz):
    the odd paths (rule violations applied, claims out of turn …) digested too."""
    import msgspec

    from domain import engine
    from domain.events import decode
    from tests.domain.test_engine_fuzz import random_event

    rng = random.Random(seed)
    events = [decode(x) for x in lines]
    opened = msgspec.structs.replace(events[0], violations="record")  # type: ignore[call-arg]
    st = engine.fold([opened])
    states = [st]
    for ev in events[1:]:
        st = engine.evolve(st, ev)
        states.append(st)
    h = hashlib.sha256()
    enc = msgspec.json.Encoder(order="deterministic")
    for i in range(n):
        new, ruling, ok = engine.step(rng.choice(states), random_event(rng, i))
        h.update(enc.encode(ruling))
        if ok:
            for j in range(3):
                new, ruling, ok = engine.step(new, random_event(rng, 10 * i + j))
                h.update(enc.encode(ruling))
            h.update(engine.encode_state(new))
    return {"fuzz": h.hexdigest()}


def run_all(tables: int, hands: int, fuzz: int = 1500) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    streams = corpus(tables, hands)
    for n, (name, lines) in enumerate(streams):
        out[name] = digest_stream(lines, PRESETS[(n * 3 + 1) % len(PRESETS)])
    for n, (name, lines) in enumerate(streams[: len(PRESETS)]):
        out[f"fuzz/{name}"] = digest_fuzz(lines, n, fuzz)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", help="folder holding the domain package to test")
    ap.add_argument("--tables", type=int, default=35)
    ap.add_argument("--hands", type=int, default=8)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write")
    g.add_argument("--compare")
    args = ap.parse_args()
    sys.path.insert(0, args.root or str(HERE))
    if args.root:
        sys.path.append(str(HERE))  # tests.domain (the fuzz events) from this checkout
    got = run_all(args.tables, args.hands)
    if args.write:
        Path(args.write).write_text(json.dumps(got, indent=1, sort_keys=True))
        print(f"wrote {len(got)} streams to {args.write}")
        return 0
    want = json.loads(Path(args.compare).read_text())
    bad = 0
    for name in sorted(set(want) | set(got)):
        a, b = want.get(name), got.get(name)
        if a != b:
            bad += 1
            keys = sorted(k for k in set(a or {}) | set(b or {}) if (a or {}).get(k) != (b or {}).get(k))
            print(f"DIFF {name}: {', '.join(keys)}")
    print(f"{len(got)} streams, {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
