"""``kwx settle [FILE]`` (CONTRACT.md §4): settle a stream of events read as JSON lines.

Prints one JSON document ``{"hands": [settlement of every finished hand], "net": [a, b, c]}``.
On an illegal or malformed stream it exits 1 and prints
``{"error": {"index": i, "rule": code, "message": …}}`` with the 0-based line of the event
(``rule`` is ``malformed`` for a line that is not a valid event; ``field`` then names the field).
Blank lines are skipped but still count as lines.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", help="JSON lines, one event per line (default: stdin)")


def settle_lines(lines: list[bytes]) -> tuple[int, dict[str, object]]:
    """(exit code, the JSON document to print) for the given lines."""
    import msgspec

    from domain import events as ev
    from domain.engine import IllegalEvent, fold

    decoded: list[ev.Event] = []
    line_of: list[int] = []
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            decoded.append(ev.decode(raw))
        except ev.EventDecodeError as exc:
            error: dict[str, object] = {
                "index": i,
                "rule": "malformed",
                "message": f"line {i}: {exc.message}",
            }
            field = exc.field
            if field is None and "unknown field `" in exc.message:
                field = "$." + exc.message.split("unknown field `", 1)[1].split("`", 1)[0]
            if field:
                error["field"] = field
            return 1, {"error": error}
        line_of.append(i)
    try:
        state = fold(decoded)
    except IllegalEvent as exc:
        index = line_of[exc.index] if 0 <= exc.index < len(line_of) else exc.index
        ruling = exc.ruling
        return 1, {
            "error": {
                "index": index,
                "rule": ruling.code,
                "message": ruling.message,
                "event": decoded[exc.index].id if 0 <= exc.index < len(decoded) else None,
            }
        }
    hands = [msgspec.to_builtins(s) for s in state.settlements]
    net = [0, 0, 0]
    house = 0
    for s in state.settlements:
        for seat in range(3):
            net[seat] += s.net[seat]
        house += s.house
    doc: dict[str, object] = {"hands": hands, "net": net}
    if house:
        doc["house"] = house
    return 0, doc


def run(args: argparse.Namespace) -> int:
    import sys

    import msgspec

    if args.file:
        try:
            with open(args.file, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            print(f"kwx settle: {exc}", file=sys.stderr)
            return 2
    else:
        data = sys.stdin.buffer.read()
    code, doc = settle_lines(data.splitlines())
    sys.stdout.write(msgspec.json.encode(doc).decode() + "\n")
    return code
