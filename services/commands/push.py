"""``kwx push FILE|DIR… --url URL [--key KEY] [--table ID] [--batch N]``: send JSON-lines streams
to a running kwx, in batches, with a progress bar.

Each ``*.jsonl`` file is one table's stream (a folder: every ``*.jsonl`` in it, by name); the table
id is the file's name without ``.jsonl``, or ``--table`` for a single file. Before sending, push
asks the table's stored version S and, when S > 0, re-sends the file's events up to S: the service
answers them as a replay (idempotent by event id) only when they are exactly what is stored, so an
interrupted push resumes from S, and a file that is not what the table holds is refused before
anything is appended. Then it sends the rest, ``--batch`` events per ``POST`` (JSON lines,
``expected_version`` in the query). A 503 or 429 is retried after its ``Retry-After``.

At the end it prints, per table and in total, how many events were stored, replayed and refused.
Exit codes: 0 everything stored, 1 a table refused (an illegal event, a conflict: the message
says which line), 2 bad arguments or files, 3 the service could not be reached.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RETRIES = 8


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="FILE|DIR", help="JSON-lines streams (a folder: *.jsonl)")
    parser.add_argument("--url", default=os.environ.get("KWX_URL", "http://127.0.0.1:8000"),
                        help="the service (default: $KWX_URL or http://127.0.0.1:8000)")  # fmt: skip
    parser.add_argument("--key", default=None, help="a platform API key (default: $KWX_KEY)")
    parser.add_argument("--table", default=None, help="the table id (one FILE only; default: its name)")
    parser.add_argument("--batch", type=int, default=500, help="events per request (default 500)")
    parser.add_argument("--retries", type=int, default=RETRIES,
                        help=f"tries per request on 503, 429 or a lost link (default {RETRIES})")  # fmt: skip
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


@dataclass
class Outcome:
    table: str
    lines: int = 0
    stored: int = 0
    replayed: int = 0
    refused: int = 0
    error: dict[str, Any] | None = field(default=None)


class Unreachable(Exception):
    pass


def _files(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            found.extend(sorted(path.glob("*.jsonl")))
        elif path.is_file():
            found.append(path)
        else:
            raise FileNotFoundError(f"kwx push: {name}: no such file or folder")
    return found


def _lines(path: Path) -> list[bytes]:
    """The file's events: its non-blank lines, as sent."""
    return [line for line in path.read_bytes().split(b"\n") if line.strip()]


def _request(client: Any, method: str, url: str, **kwargs: Any) -> Any:
    """One request, retried after ``Retry-After`` on 503/429 and on a lost connection."""
    import httpx

    tries = max(1, getattr(client, "kwx_retries", RETRIES))
    for attempt in range(tries):
        try:
            answer = client.request(method, url, **kwargs)
        except httpx.TransportError as exc:
            if attempt == tries - 1:
                raise Unreachable(f"{url}: {exc.__class__.__name__}: {exc}") from None
            time.sleep(min(2**attempt * 0.25, 5))
            continue
        if answer.status_code in (429, 503) and attempt < tries - 1:
            time.sleep(min(float(answer.headers.get("retry-after") or 1), 30))
            continue
        return answer
    raise AssertionError("unreachable")


def _stored_version(client: Any, base: str, table: str) -> int:
    answer = _request(client, "GET", f"{base}/v1/tables/{table}/events", params={"after": 0, "limit": 1})
    if answer.status_code == 404:
        return 0
    if answer.status_code != 200:
        raise RuntimeError(f"reading {table}: {answer.status_code} {answer.text[:300]}")
    return int(answer.json()["version"])


def _send(client: Any, base: str, table: str, events: list[bytes], expected: int) -> Any:
    return _request(
        client, "POST", f"{base}/v1/tables/{table}/events", params={"expected_version": expected},
        content=b"\n".join(events) + b"\n", headers={"Content-Type": "application/x-ndjson"},
    )  # fmt: skip


def _refusal(answer: Any, first_line: int) -> dict[str, Any]:
    """The service's error, with ``line`` as the file's line (the batch's line + the offset)."""
    try:
        error = dict(answer.json())
    except ValueError:
        error = {"error": str(answer.status_code), "message": answer.text[:300]}
    if isinstance(error.get("line"), int):
        error["line"] = error["line"] + first_line - 1
    error["status"] = answer.status_code
    return error


def push_table(client: Any, base: str, table: str, events: list[bytes], batch: int, bar: Any) -> Outcome:
    out = Outcome(table, lines=len(events))
    stored = _stored_version(client, base, table)
    if stored > len(events):
        out.error = {"error": "longer_table", "message": f"the table holds {stored} events, the file only "
                     f"{len(events)}: not this table's stream"}  # fmt: skip
        out.refused = len(events)
        return out
    done = 0
    while done < stored:  # what is stored must be the file's own events: re-sent, answered as replays
        upto = min(stored, done + batch)
        answer = _send(client, base, table, events[done:upto], done)
        if answer.status_code != 201:  # (a 201 here is a replay: the table is past expected_version)
            out.error = _refusal(answer, done + 1)
            out.error["message"] = f"the stored events differ from the file: {out.error.get('message', '')}"
            out.refused = len(events) - done
            return out
        out.replayed += upto - done
        bar.update(upto - done)
        done = upto
    while done < len(events):
        upto = min(len(events), done + batch)
        answer = _send(client, base, table, events[done:upto], done)
        if answer.status_code != 201:
            # a conflict (another writer on this table meanwhile) or a refusal: stop this table; a
            # second push resumes from what is stored then, checking it first
            out.error = _refusal(answer, done + 1)
            out.refused = len(events) - done
            return out
        out.stored += upto - done
        bar.update(upto - done)
        done = upto
    return out


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def run(args: argparse.Namespace) -> int:
    import httpx

    key = args.key or os.environ.get("KWX_KEY")
    if not key:
        print("kwx push: no key: pass --key KEY or set KWX_KEY (a platform key)", file=sys.stderr)
        return 2
    if args.batch < 1:
        print("kwx push: --batch must be at least 1", file=sys.stderr)
        return 2
    try:
        files = _files(args.paths)
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.table and len(files) != 1:
        print(f"kwx push: --table names one table, but {len(files)} files were given", file=sys.stderr)
        return 2
    if not files:
        print("kwx push: no *.jsonl files", file=sys.stderr)
        return 2
    streams = [(args.table or f.name.removesuffix(".jsonl"), _lines(f)) for f in files]
    total = sum(len(lines) for _, lines in streams)
    if args.quiet:
        bar: Any = _NoBar()
    else:
        from tqdm import tqdm

        bar = tqdm(total=total, unit="ev", desc="kwx push", file=sys.stderr, dynamic_ncols=True)
    base = args.url.rstrip("/")
    outcomes: list[Outcome] = []
    headers = {"Authorization": f"Bearer {key}"}
    try:
        with httpx.Client(headers=headers, timeout=60) as client:
            client.kwx_retries = args.retries  # type: ignore[attr-defined]
            for table, lines in streams:
                outcomes.append(push_table(client, base, table, lines, args.batch, bar))
    except Unreachable as exc:
        bar.close()
        print(f"kwx push: the service does not answer: {exc}", file=sys.stderr)
        return 3
    except RuntimeError as exc:
        bar.close()
        print(f"kwx push: {exc}", file=sys.stderr)
        return 1
    bar.close()
    for o in outcomes:
        line = f"{o.table}: {o.lines} events: {o.stored} stored, {o.replayed} replayed, {o.refused} refused"
        if o.error:
            where = f" at line {o.error['line']}" if "line" in o.error else ""
            line += f" — {o.error.get('error')}{where}: {o.error.get('message')}"
        print(line)
    stored, replayed, refused = (sum(getattr(o, name) for o in outcomes) for name in ("stored", "replayed",
                                                                                      "refused"))  # fmt: skip
    print(f"total: {len(outcomes)} tables, {stored} stored, {replayed} replayed, {refused} refused")
    return 1 if refused else 0
