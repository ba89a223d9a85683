"""``kwx verify --file EXPORT [--head HASH]`` offline (no database): an export built with the service's
own line writers (services/store/export.py) from a simulated table verifies; tampering any byte of
an event, dropping, repeating or reordering a line, a wrong head line or ``--head`` each fail with a
message naming the first bad line, its version and why; a hand export checks from its own first
event; the command imports neither psycopg nor SQLAlchemy. (The HTTP round trip against the real
database: tests/service/test_export.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from domain.events import canonical_bytes, convert
from services.cli import main
from services.store import chain, export
from tests.paths import REPO as ROOT
from tests.projections.helpers import simulated

TABLE = "vf-table"


def _export(hand: int | None = None, events: list[dict[str, Any]] | None = None) -> list[bytes]:
    """The lines (each with its newline) of a table's export, or of hand ``hand``'s."""
    wire = events if events is not None else simulated(5, 2, table_id=TABLE)
    canonicals = [canonical_bytes(convert(e)) for e in wire]
    hashes = chain.links(chain.genesis(TABLE), canonicals)
    starts = [n for n, e in enumerate(wire, start=1) if e["type"] == "hand_started"]
    first, last = 1, len(wire)
    if hand is not None:
        first = starts[hand - 1]
        last = starts[hand] - 1 if hand < len(starts) else len(wire)
    before = hashes[first - 2] if first > 1 else chain.genesis(TABLE)
    head = export.head_line(
        scope="table" if hand is None else "hand", table_id=TABLE, hand=hand, version=len(wire),
        head_hash=hashes[-1], first_version=first, last_version=last, previous=before,
        last_hash=hashes[last - 1], opened=wire[0],
    )  # fmt: skip
    lines = [head]
    previous = before
    for v in range(first, last + 1):
        lines.append(export.event_line(v, previous, hashes[v - 1], canonicals[v - 1]))
        previous = hashes[v - 1]
    return lines


def _check(lines: list[bytes], head: str | None = None) -> export.Checked:
    return export.verify(lines, head)


@pytest.fixture(scope="module")
def lines() -> list[bytes]:
    return _export()


def test_an_untouched_export_verifies_with_and_without_head(
    lines: list[bytes], tmp_path: Path, capsys: Any
) -> None:
    head = json.loads(lines[0])["head_hash"]
    checked = _check(lines, head)
    assert checked.ok and checked.events == len(lines) - 1 and checked.last_hash == head
    path = tmp_path / "t.ndjson"
    path.write_bytes(b"".join(lines))
    assert main(["verify", "--file", str(path), "--head", head.upper()]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {"ok": True, "file": str(path), "scope": "table", "table_id": TABLE,
                   "events": len(lines) - 1, "last_hash": head, "head_hash": head,
                   "head_checked": True}  # fmt: skip
    assert main(["verify", "--file", str(path)]) == 0


def test_every_byte_of_an_event_is_covered(lines: list[bytes]) -> None:
    """Change any single byte of one event's JSON: the check fails on that line."""
    n = 5
    line = lines[n]
    start = line.index(b'"event":') + len(b'"event":')
    version = json.loads(line)["version"]
    for i in range(start, len(line) - 2):  # the event's bytes (not the closing brace and newline)
        for replacement in (b"x", b"1", b" "):
            if line[i : i + 1] == replacement:
                continue
            tampered = line[:i] + replacement + line[i + 1 :]
            checked = _check([*lines[:n], tampered, *lines[n + 1 :]])
            assert not checked.ok, (i, tampered)
            assert checked.line == n + 1, (i, checked)
            assert checked.version in (version, None), (i, checked)


def test_a_changed_tile_is_a_tampered_event_on_its_line(lines: list[bytes]) -> None:
    n = next(i for i, line in enumerate(lines) if b'"type":"tile_discarded"' in line)
    version = json.loads(lines[n])["version"]
    tile = json.loads(lines[n])["event"]["tile"]
    other = "1p" if tile != "1p" else "2p"
    tampered = lines[n].replace(f'"tile":"{tile}"'.encode(), f'"tile":"{other}"'.encode())
    checked = _check([*lines[:n], tampered, *lines[n + 1 :]])
    assert not checked.ok
    assert checked.message().startswith(
        f"line {n + 1} (version {version}): tampered event: its bytes hash to "
    )


def test_an_edit_that_rewrites_the_hash_too_breaks_the_next_line(lines: list[bytes]) -> None:
    n = 4
    line = json.loads(lines[n])
    event = dict(line["event"], id="forged")
    canonical = canonical_bytes(convert(event))
    forged = export.event_line(line["version"], bytes.fromhex(line["previous"]),
                               chain.link(bytes.fromhex(line["previous"]), canonical), canonical)  # fmt: skip
    checked = _check([*lines[:n], forged, *lines[n + 1 :]])
    assert (checked.ok, checked.line, checked.version) == (False, n + 2, line["version"] + 1)
    assert "previous differs from the chain hash of the line before" in checked.reason


def test_non_canonical_bytes_of_the_same_event_are_refused(lines: list[bytes]) -> None:
    n = 3
    spaced = lines[n].replace(b'"event":{', b'"event":{ ')
    checked = _check([*lines[:n], spaced, *lines[n + 1 :]])
    assert not checked.ok and checked.line == n + 1
    assert "not canonical JSON" in checked.reason


def test_a_dropped_line_is_a_missing_event(lines: list[bytes]) -> None:
    checked = _check([*lines[:6], *lines[7:]])
    assert checked.message() == "line 7 (version 7): missing event: version 6 expected here, not in the file"
    checked = _check([*lines[:6], *lines[9:]])
    assert "missing event: versions 6..8 expected here" in checked.reason
    checked = _check(lines[:-1])  # the last one
    last = len(lines) - 1
    assert checked.message() == (
        f"end of file: missing event: the file ends before version {last} (head line: last_version {last})"
    )


def test_reordered_and_repeated_lines(lines: list[bytes]) -> None:
    checked = _check([*lines[:6], lines[7], lines[6], *lines[8:]])
    assert (
        checked.message() == "line 7 (version 7): reordered: version 6 expected here, it comes later (line 8)"
    )
    checked = _check([*lines[:7], lines[6], *lines[7:]])
    assert checked.message() == "line 8 (version 6): reordered or repeated: version 6 after version 6"
    # renumbered to look consecutive: the chain still says no
    a, b = json.loads(lines[6]), json.loads(lines[7])
    swapped_a = lines[7].replace(b'{"version":%d,' % b["version"], b'{"version":%d,' % a["version"])
    swapped_b = lines[6].replace(b'{"version":%d,' % a["version"], b'{"version":%d,' % b["version"])
    checked = _check([*lines[:6], swapped_a, swapped_b, *lines[8:]])
    assert (checked.line, checked.version) == (7, a["version"])
    assert "an event was removed, inserted or reordered" in checked.reason


def test_a_wrong_head(lines: list[bytes]) -> None:
    head = json.loads(lines[0])
    checked = _check(lines, "ab" * 32)
    assert (
        checked.message()
        == f"line 1: wrong head: --head {'ab' * 32} but the export's head hash is {head['head_hash']}"
    )
    # a head line that claims another head: the chain does not end there
    forged = lines[0].replace(head["head_hash"].encode(), b"cd" * 32)
    checked = _check([forged, *lines[1:]], "cd" * 32)
    assert checked.message() == (
        f"end of file: wrong head: the chain ends at {head['head_hash']}, "
        f"the head line's head hash is {'cd' * 32}"
    )
    # dropping the last event and restating the head to match: --head (given elsewhere) catches it
    shorter = json.loads(lines[-2])
    restated = dict(head, version=shorter["version"], last_version=shorter["version"],
                    head_hash=shorter["hash"], last_hash=shorter["hash"])  # fmt: skip
    cut = [json.dumps(restated).encode() + b"\n", *lines[1:-1]]
    assert _check(cut).ok
    assert "wrong head" in _check(cut, head["head_hash"]).reason


def test_another_tables_id_in_the_head_line_breaks_the_genesis(lines: list[bytes]) -> None:
    head = json.loads(lines[0])
    checked = _check([json.dumps(dict(head, table_id="other")).encode(), *lines[1:]])
    assert checked.line == 1 and "is not the genesis of table 'other'" in checked.reason


def test_not_an_export() -> None:
    assert "empty file" in _check([]).reason
    assert "not a kwx export head line" in _check([b'{"version":1}']).reason
    assert "not a kwx export head line" in _check([b"garbage"]).reason
    lines = _export()
    checked = _check([*lines[:3], b"\n", *lines[3:]])
    assert (checked.line, checked.reason) == (4, "empty line")


def test_a_hand_export_checks_from_its_first_event() -> None:
    table = _export()
    hand = _export(hand=2)
    head = json.loads(hand[0])
    assert head["first_version"] > 1 and json.loads(hand[1])["event"]["type"] == "hand_started"
    assert hand[1:] == table[head["first_version"] : head["last_version"] + 1]
    checked = _check(hand, head["head_hash"])
    assert (
        checked.ok
        and checked.scope == "hand"
        and checked.events == head["last_version"] - head["first_version"] + 1
    )
    # a previous that is not the hash before the hand's first event
    forged = hand[0].replace(head["previous"].encode(), b"00" * 32)
    checked = _check([forged, *hand[1:]])
    assert (checked.line, checked.version) == (2, head["first_version"])
    assert "previous differs" in checked.reason
    # hand 1 starts after table_opened; its previous is version 1's hash, checked the same way
    first = _export(hand=1)
    assert _check(first).ok and json.loads(first[0])["first_version"] == 2
    n = 3
    tampered = hand[n].replace(b'"type":"', b'"type":"x', 1)
    assert "tampered event" in _check([*hand[:n], tampered, *hand[n + 1 :]]).reason


def test_cli_messages_and_exit_codes(lines: list[bytes], tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "bad.ndjson"
    path.write_bytes(b"".join([*lines[:6], *lines[7:]]))
    capsys.readouterr()
    assert main(["verify", "--file", str(path)]) == 1
    out = capsys.readouterr()
    assert f"kwx verify: {path}: line 7 (version 7): missing event: version 6 expected here" in out.err
    reason = "missing event: version 6 expected here, not in the file"
    assert json.loads(out.out) == {"ok": False, "file": str(path), "line": 7, "version": 7, "reason": reason}
    assert main(["verify", "--file", str(tmp_path / "nope.ndjson")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["verify", "--file", str(path), "--table", "x"]) == 2
    assert main(["verify", "--file", str(path), "--init"]) == 2
    assert main(["verify", "--head", "ab"]) == 2


def test_verify_file_imports_no_database_stack(lines: list[bytes], tmp_path: Path) -> None:
    path = tmp_path / "t.ndjson"
    path.write_bytes(b"".join(lines))
    code = (
        "import sys\n"
        "from services.cli import main\n"
        f"rc = main(['verify', '--file', {str(path)!r}])\n"
        "heavy = {'psycopg', 'psycopg_pool', 'sqlalchemy', 'fastapi'}\n"
        "bad = sorted({m.split('.')[0] for m in sys.modules} & heavy)\n"
        "print('IMPORTED', bad)\n"
        "sys.exit(rc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "IMPORTED []" in done.stdout
    # stdin works too
    command = [sys.executable, "-m", "services.cli", "verify", "--file", "-"]
    stdin = b"".join(lines).decode()
    done = subprocess.run(command, cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["file"] == "stdin"


def test_the_worked_example_of_docs_verify_md() -> None:
    doc = (ROOT / "docs" / "verify.md").read_text()
    event = convert({"type": "tile_discarded", "id": "e2", "seat": 0, "tile": "5p"})
    canonical = canonical_bytes(event)
    assert canonical.decode() in doc
    h0 = chain.genesis("demo-1")
    h1 = chain.link(h0, canonical)
    assert doc.count(h0.hex()) >= 3 and doc.count(h1.hex()) >= 3


def test_the_stdlib_script_of_docs_verify_md_checks_an_export(lines: list[bytes], tmp_path: Path) -> None:
    doc = (ROOT / "docs" / "verify.md").read_text()
    script = doc.split("<!-- verify-script -->\n```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "check.py").write_text(script)
    good, bad = tmp_path / "good.ndjson", tmp_path / "bad.ndjson"
    good.write_bytes(b"".join(lines))
    bad.write_bytes(b"".join([*lines[:3], lines[3].replace(b'"type":"', b'"type":"x', 1), *lines[4:]]))
    for hand in (None, 2):
        path = good if hand is None else tmp_path / "hand.ndjson"
        if hand is not None:
            path.write_bytes(b"".join(_export(hand=hand)))
        done = subprocess.run([sys.executable, str(tmp_path / "check.py"), str(path)], capture_output=True,
                              text=True, timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"ok {TABLE} ")
    done = subprocess.run([sys.executable, str(tmp_path / "check.py"), str(bad)], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode != 0 and "version 3: tampered" in done.stderr
