"""``kwx score [FILE]``: score winning hands read as JSON lines (CONTRACT.md §4).

One input line: ``{"concealed": "4556p 123s 789s CCC", "melds": [{"kind": "peng", "tile": "5s"}],
"win": "5p", "self_draw": true, "rules": {"preset": "default", ...overrides}}`` with optional
booleans ``kong_draw``, ``last_tile``, ``after_kong_discard``, ``robbed_kong``, ``liang_dao`` and
the int ``kong_chain`` (kongs in the chain that ended in a 杠上开花 draw). ``concealed`` does not
include the winning tile. Other top-level keys (``id``, ``expect``, …) are ignored.

One output line each: ``{"patterns": [{"id", "x", "detail"}], "multiplier", "capped", "payable",
"allowed", "min_required", "shu_kan", "cap_note", "decomposition"}``, or
``{"error": {"message", "field"}}`` for a line that cannot be scored (bad JSON, bad notation, bad
rules, not a winning hand). Every line is answered; the exit code is 0 when every line could be
read (a hand that does not win is an answer, not bad input), 1 when some line could not (bad
JSON, bad notation, bad rules: its ``error`` has ``"unreadable": true``), 2 when FILE cannot be
opened.
"""

from __future__ import annotations

import argparse
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", help="JSON lines to read (default: stdin)")


def run(args: argparse.Namespace) -> int:
    import sys

    try:
        if args.file:
            with open(args.file, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        else:
            lines = sys.stdin.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"kwx score: cannot read {args.file or 'stdin'}: {exc}", file=sys.stderr)
        return 2
    out = sys.stdout
    unreadable = 0
    for line in lines:
        if line.strip():
            answer = score_line(line)
            unreadable += '"unreadable":true' in answer
            out.write(answer + "\n")
    out.flush()
    if unreadable:
        print(f"kwx score: {unreadable} line(s) could not be read", file=sys.stderr)
    return 1 if unreadable else 0


class _InputError(Exception):
    """A line that cannot be read (``unreadable``) or a hand that does not win (``unreadable`` False)."""

    def __init__(self, message: str, field: str | None, *, unreadable: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.unreadable = unreadable


_BOOL_FLAGS = ("self_draw", "kong_draw", "last_tile", "after_kong_discard", "robbed_kong", "liang_dao")


def score_line(line: str) -> str:
    """Score one JSON line; the JSON result line (without newline). Never raises on bad input."""
    import msgspec

    try:
        try:
            obj = msgspec.json.decode(line)
        except msgspec.DecodeError as exc:
            raise _InputError(f"invalid JSON: {exc}", None) from None
        result: dict[str, Any] = _score_obj(obj)
    except _InputError as exc:
        error: dict[str, Any] = {"message": exc.message, "field": exc.field}
        if exc.unreadable:
            error["unreadable"] = True
        result = {"error": error}
    return msgspec.json.encode(result).decode()


def _score_obj(obj: Any) -> dict[str, Any]:
    from domain.fan import score
    from domain.rules import RulesError, resolve
    from domain.scoring import WinSituation
    from domain.tiles import Meld, TileError, format_counts, name, parse, tile, to_counts

    if not isinstance(obj, dict):
        raise _InputError("each line must be a JSON object", None)

    def text(key: str) -> str:
        if key not in obj:
            raise _InputError(f"missing {key!r}", key)
        value = obj[key]
        if not isinstance(value, str):
            raise _InputError(f"{key} must be a string of tile notation", key)
        return value

    def flag(key: str, default: bool | None) -> bool:
        value = obj.get(key, default)
        if value is None:
            raise _InputError(f"missing {key!r} (true for a self-draw, false for a discard)", key)
        if not isinstance(value, bool):
            raise _InputError(f"{key} must be true or false", key)
        return value

    try:
        concealed = parse(text("concealed"))
    except TileError as exc:
        raise _InputError(str(exc), "concealed") from None
    win_text = text("win")
    try:
        win = tile(win_text.strip())
    except TileError as exc:
        raise _InputError(str(exc), "win") from None

    raw_melds = obj.get("melds", [])
    if not isinstance(raw_melds, list):
        raise _InputError("melds must be a list of {kind, tile}", "melds")
    melds: list[Meld] = []
    for i, m in enumerate(raw_melds):
        field = f"melds[{i}]"
        if not isinstance(m, dict):
            raise _InputError(f"{field} must be an object {{kind, tile}}", field)
        kind = m.get("kind")
        if kind not in ("peng", "kong_concealed", "kong_added", "kong_exposed"):
            raise _InputError(
                f"{field}.kind is {kind!r}: expected peng, kong_concealed, kong_added or kong_exposed",
                f"{field}.kind",
            )
        if not isinstance(m.get("tile"), str):
            raise _InputError(f"{field}.tile must be a tile string", f"{field}.tile")
        try:
            melds.append(Meld(kind=kind, tile=tile(m["tile"].strip())))
        except TileError as exc:
            raise _InputError(str(exc), f"{field}.tile") from None
    if len(melds) > 4:
        raise _InputError(f"{len(melds)} melds: at most 4", "melds")

    self_draw = flag("self_draw", None)
    flags = {key: flag(key, False) for key in _BOOL_FLAGS[1:]}
    for key in ("kong_draw", "last_tile"):
        if flags[key] and not self_draw:
            raise _InputError(f"{key} describes a self-draw: self_draw must be true", key)
    for key in ("after_kong_discard", "robbed_kong"):
        if flags[key] and self_draw:
            raise _InputError(f"{key} describes a win on another player's tile: self_draw must be false", key)
    kong_chain = obj.get("kong_chain", 1 if flags["kong_draw"] else 0)
    if not isinstance(kong_chain, int) or isinstance(kong_chain, bool) or not 0 <= kong_chain <= 8:
        raise _InputError("kong_chain must be an integer 0…8", "kong_chain")

    rules_spec = obj.get("rules", {"preset": "default"})
    if not isinstance(rules_spec, dict):
        raise _InputError("rules must be an object {preset, ...options}", "rules")
    try:
        rules = resolve(rules_spec)
    except RulesError as exc:
        raise _InputError(exc.message, exc.field) from None

    expected = 13 - 3 * len(melds)
    if len(concealed) != expected:
        raise _InputError(
            f"concealed has {len(concealed)} tiles; with {len(melds)} meld(s) it must have {expected} "
            "(the winning tile is given separately in win)",
            "concealed",
        )
    counts = to_counts([*concealed, win])
    totals = list(counts)
    for meld in melds:
        totals[meld.tile] += meld.size
    over = [name(k) for k in range(len(totals)) if totals[k] > 4]
    if over:
        raise _InputError(
            f"more than four of {', '.join(over)} counting concealed, win and melds", "concealed"
        )

    sit = WinSituation(
        concealed=tuple(counts),
        melds=tuple(melds),
        win_tile=win,
        self_draw=self_draw,
        kong_chain=kong_chain,
        **flags,
    )
    result = score(sit, rules)
    if result is None:
        raise _InputError(
            f"{format_counts(to_counts(concealed))} + winning {name(win)} is not a winning hand "
            f"(with {len(melds)} meld(s): four sets and a pair, or seven pairs)",
            "concealed",
            unreadable=False,
        )
    return {
        "patterns": [{"id": p.id, "x": p.x, "detail": p.detail} for p in result.patterns],
        "multiplier": result.multiplier,
        "capped": result.capped,
        "payable": result.payable,
        "allowed": result.allowed,
        "min_required": result.min_required,
        "shu_kan": result.shu_kan,
        "cap_note": result.cap_note,
        "decomposition": result.decomposition,
    }
