"""kwx migrate / keys create / verify against a real PostgreSQL (DATABASE_URL), in process."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import psycopg
import pytest

from services.cli import main

pytestmark = pytest.mark.db


@pytest.fixture()
def fresh_url(pg_cluster: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    url = pg_cluster.create_database("kwx_cli")
    monkeypatch.setenv("DATABASE_URL", url)
    return str(url)


def test_migrate_then_keys_create_prints_one_key(fresh_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate"]) == 0
    assert "at revision" in capsys.readouterr().out
    assert main(["keys", "create", "--tenant", "acme", "--role", "platform"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and re.fullmatch(r"kwx_[0-9a-f]{12}_[A-Za-z0-9_-]{43}", lines[0])
    with psycopg.connect(fresh_url) as conn:
        assert conn.execute("SELECT tenant, role FROM api_keys").fetchall() == [("acme", "platform")]


def test_keys_create_refuses_a_bad_role(fresh_url: str) -> None:
    with pytest.raises(SystemExit):
        main(["keys", "create", "--tenant", "acme", "--role", "admin"])


def test_verify_reports_the_first_broken_link_and_exits_1(
    fresh_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from domain.events import convert
    from services.bootstrap import bootstrap
    from services.settings import Settings
    from tests.service.streams import legal_table

    container = bootstrap(Settings(database_url=fresh_url))
    try:
        wire = legal_table(41)
        container.store.append("acme", "good", 0, [convert(e) for e in wire])
        container.store.append("acme", "bad", 0, [convert(e) for e in wire])
    finally:
        container.close()
    capsys.readouterr()
    assert main(["verify"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["ok"] is True
    with psycopg.connect(fresh_url) as owner:
        owner.execute("ALTER TABLE events DISABLE TRIGGER events_immutable")
        owner.execute("UPDATE events SET body = body || '{\"at\": \"2020-01-01T00:00:00Z\"}' "
                      "WHERE table_id = 'bad' AND version = 2")  # fmt: skip
        owner.execute("ALTER TABLE events ENABLE TRIGGER events_immutable")
    assert main(["verify"]) == 1
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    broken = [line for line in lines if "broken" in line]
    assert [(b["table_id"], b["version"]) for b in broken] == [("bad", 2)]
    assert lines[-1]["ok"] is False and lines[-1]["tables"] == 2


def test_verify_table_and_tenant_pick_tables_when_tenants_share_an_id(
    fresh_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Table ids are per tenant (issue 11 §4): ``--table ID`` checks that id in every tenant,
    ``--tenant T`` narrows to one; each broken line names its tenant."""
    from domain.events import convert
    from services.bootstrap import bootstrap
    from services.settings import Settings
    from tests.service.streams import legal_table

    container = bootstrap(Settings(database_url=fresh_url))
    try:
        for tenant, seed in (("acme", 42), ("beta", 43)):
            container.store.append(tenant, "shared", 0, [convert(e) for e in legal_table(seed)[:6]])
        container.store.append("beta", "other", 0, [convert(e) for e in legal_table(44)[:4]])
    finally:
        container.close()
    with psycopg.connect(fresh_url) as owner:
        owner.execute("ALTER TABLE events DISABLE TRIGGER events_immutable")
        owner.execute("UPDATE events SET body = body || '{\"at\": \"2020-01-01T00:00:00Z\"}' "
                      "WHERE tenant = 'beta' AND table_id = 'shared' AND version = 3")  # fmt: skip
        owner.execute("ALTER TABLE events ENABLE TRIGGER events_immutable")
    capsys.readouterr()

    def verify(*args: str) -> tuple[int, list[dict[str, Any]]]:
        code = main(["verify", *args])
        return code, [json.loads(line) for line in capsys.readouterr().out.splitlines()]

    code, lines = verify("--table", "shared")
    assert code == 1 and lines[-1]["tables"] == 2 and lines[-1]["events"] == 6 + 3
    assert lines[:-1] == [{"tenant": "beta", "table_id": "shared", "version": 3,
                           "broken": "hash mismatch: the event or an earlier one changed"}]  # fmt: skip
    code, lines = verify("--table", "shared", "--tenant", "acme")
    assert code == 0 and (lines[-1]["tables"], lines[-1]["events"]) == (1, 6)
    code, lines = verify("--tenant", "beta")
    assert code == 1 and lines[-1]["tables"] == 2 and [b["table_id"] for b in lines[:-1]] == ["shared"]
    assert verify("--tenant", "nobody")[1][-1] == {"ok": True, "tables": 0, "events": 0, "broken_tables": 0}


def test_building_the_cli_imports_neither_the_web_stack_nor_the_database_driver() -> None:
    """``kwx score`` / ``kwx settle`` start fast: command modules import their heavy parts in run()."""
    import subprocess
    import sys

    heavy = "('fastapi', 'starlette', 'uvicorn', 'psycopg', 'sqlalchemy')"
    code = f"import sys, services.cli as c; c.build_parser(); print([m for m in {heavy} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_commands_one_line_help_names_each_of_its_actions() -> None:
    """``kwx --help`` is where an operator first looks: a command with actions (keys, projections)
    names every one of them there, not only the first (it said ``rebuild`` alone for projections)."""
    import argparse

    from services.cli import COMMANDS, build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    with_actions = 0
    for name, sub in commands.choices.items():
        nested = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
        for actions in nested:
            with_actions += 1
            help_text = COMMANDS[name][1]
            named = [action for action in actions.choices if re.search(rf"\b{action}\b", help_text)]
            assert named == list(actions.choices), (name, help_text)
    assert with_actions >= 2


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("KWX_PROJECTOR_WATCHDOG", "soon", "KWX_PROJECTOR_WATCHDOG='soon'"),
        ("KWX_PROJECTOR_WATCHDOG", "-1", "KWX_PROJECTOR_WATCHDOG=-1.0: expected seconds, 0 or more"),
        ("KWX_PROJECTOR_GATHER", "a while", "KWX_PROJECTOR_GATHER='a while'"),
        ("KWX_PROJECTOR_GATHER", "60", "KWX_PROJECTOR_GATHER=60.0: expected seconds, 0 to 10"),
        ("KWX_POOL_SIZE", "four", "KWX_POOL_SIZE='four'"),
        ("KWX_HEADER_TIMEOUT", "0", "KWX_HEADER_TIMEOUT=0.0: expected seconds, more than 0"),
        ("KWX_HEADER_TIMEOUT", "ten", "KWX_HEADER_TIMEOUT='ten'"),
        ("KWX_WORKERS", "0", "KWX_WORKERS=0: expected at least 1"),
        ("KWX_MAX_HEADER_BYTES", "100", "KWX_MAX_HEADER_BYTES=100: expected bytes, at least 1024"),
        ("KWX_MAX_HEADERS", "many", "KWX_MAX_HEADERS='many'"),
        ("KWX_RATE_LIMIT_KEY", "100/fortnight", "KWX_RATE_LIMIT_KEY='100/fortnight': expected a rate"),
        ("KWX_RATE_LIMIT_TENANT", "lots", "KWX_RATE_LIMIT_TENANT='lots': expected a rate"),
        ("KWX_RATE_LIMIT_STORAGE", "localhost", "KWX_RATE_LIMIT_STORAGE='localhost': expected memory://"),
        ("KWX_READ_WAIT", "0", "KWX_READ_WAIT=0.0: expected seconds, more than 0"),
        ("KWX_READ_CONCURRENCY", "0", "KWX_READ_CONCURRENCY=0: expected at least 1"),
        ("KWX_PROJECTOR", "maybe", "KWX_PROJECTOR='maybe': expected on, thread or off"),
        ("DATABASE_READ_URL", "mysql://u@h/db", "DATABASE_READ_URL: expected a PostgreSQL URL"),
        ("DATABASE_READ_URL", "postgresql://u@h:x/db", "DATABASE_READ_URL: not a valid URL"),
        ("KWX_READ_REPLICA_WAIT", "soon", "KWX_READ_REPLICA_WAIT='soon'"),
        ("KWX_CORS_ORIGINS", "*", "KWX_CORS_ORIGINS: '*' is not allowed: name each origin"),
        ("KWX_CORS_ORIGINS", "https://a.example/", "KWX_CORS_ORIGINS: 'https://a.example/': expected"),
    ],
)
def test_a_setting_kwx_cannot_read_is_named_with_exit_2_and_no_traceback(
    name: str, value: str, says: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(name, value)
    assert main(["serve", "--port", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kwx: ") and says in err and "Traceback" not in err, err


@pytest.mark.parametrize("command", [["migrate"], ["serve", "--port", "1"], ["verify"], ["keys", "list"]])
def test_a_database_kwx_cannot_connect_to_is_one_line_and_exit_1(
    command: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing listens on port 1: every command that needs the database says so in one line (the
    driver's reason), exit 1, no traceback."""
    monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
    assert main(command) == 1
    err = capsys.readouterr().err
    assert err.startswith("kwx: cannot connect to the database: ") and "port 1" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_commands_say_which_database_they_use(fresh_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Every command that opens a database names it on stderr (never its password); stdout keeps
    only the command's own answer (a key, a revision, JSON lines)."""
    assert main(["migrate"]) == 0
    err = capsys.readouterr().err
    host_db = fresh_url.split("@", 1)[1].split("?", 1)[0]
    assert "kwx migrate: database postgresql://" in err and host_db in err and "(DATABASE_URL)" in err
    assert main(["keys", "create", "--tenant", "acme", "--role", "support"]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1 and "kwx keys: database postgresql://" in err
    assert main(["verify"]) == 0
    assert "kwx verify: database" in capsys.readouterr().err
    assert main(["projections", "status"]) == 0
    assert "kwx projections: database" in capsys.readouterr().err


def test_projections_status_is_a_table_for_a_person_and_json_lines_for_a_script(
    fresh_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``kwx projections status`` reads like ``kwx keys list``: a header and a row per model, what
    is wrong said in words under it; ``--json`` gives the same facts one object per model."""
    from projections import registry

    assert main(["migrate"]) == 0
    with psycopg.connect(fresh_url, autocommit=True) as conn:  # read models copied from elsewhere
        conn.execute(
            "INSERT INTO projection_checkpoints (name, epoch, tx_id, position) "
            "SELECT 'ledger', (SELECT max(epoch) FROM log_epochs), 10^15, 7 "
            "ON CONFLICT (name) DO UPDATE SET epoch = excluded.epoch, tx_id = excluded.tx_id, "
            "position = excluded.position"
        )
    monkeypatch.setenv("KWX_READ_MODELS", "ledger,feed,snapshots")
    capsys.readouterr()
    assert main(["projections", "status", "--json"]) == 0
    out, err = capsys.readouterr()
    facts = {line["projection"]: line for line in map(json.loads, out.splitlines())}
    assert len(out.splitlines()) == len(facts) == len(registry.NAMES)  # the answer only: no log line
    assert '"projector_checkpoint_stale"' in err  # the log's warning went to stderr
    assert facts["ledger"]["stale"] is True and facts["ledger"]["kept"] is True
    assert facts["discovery"]["kept"] is False and facts["feed"]["stale"] is False

    assert main(["projections", "status"]) == 0
    header, *lines = capsys.readouterr().out.splitlines()
    assert header.split()[:6] == ["model", "kept", "behind", "parked", "oldest", "parked"]
    rows = {line.split()[0]: line.split() for line in lines[: len(registry.NAMES)]}
    assert set(rows) == set(registry.NAMES)
    assert rows["ledger"][1] == "yes" and rows["ledger"][5] == "STALE" and rows["ledger"][6].endswith("/7")
    assert rows["discovery"][1] == "no" and rows["feed"][5] == "no"
    said = lines[len(registry.NAMES) :]
    stale = [s for s in said if s.startswith("ledger: checkpoint ahead of the log")]
    assert len(stale) == 1 and "kwx projections rebuild" in stale[0]
    assert any("KWX_READ_MODELS" in s for s in said)


def test_a_reader_that_goes_away_ends_a_command_quietly() -> None:
    """``kwx … | head -1``: the pipe closes under the command; it stops with exit 1 and no
    traceback, as a Unix filter does (it used to print ``BrokenPipeError`` and its stack)."""
    import os
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)  # every write to the pipe now fails at once (EPIPE): no race with a reader
    try:
        done = subprocess.run([sys.executable, "-m", "services.cli", "openapi"], stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=120)  # fmt: skip
    finally:
        os.close(write)
    assert done.returncode == 1 and done.stderr == "", done.stderr


def test_the_database_a_command_names_is_one_psql_connects_to(
    fresh_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The URL a command prints can be pasted into ``psql``: a server on a Unix socket (the
    embedded one) keeps its ``host`` parameter. It used to print the socket's directory as the
    URL's path (``postgresql://postgres@/srv/.kwx/pg/kwx``), which names no database."""
    from services.db import describe

    assert main(["projections", "status"]) == 0
    named = re.search(r"(postgresql://\S+)", capsys.readouterr().err)
    assert named is not None
    with psycopg.connect(named.group(1)) as conn:
        assert conn.execute("SELECT current_database()").fetchone() == (
            fresh_url.split("?")[0].rsplit("/", 1)[1],
        )
    said = describe("postgresql://kwx:s3cret@db.example:5433/kwx?sslmode=require&password=s3cret")
    assert said == "postgresql://kwx@db.example:5433/kwx"
    said = describe("postgresql://kwx:s3cret@/kwx?host=/run/kwx&password=s3cret&port=5433")
    assert said == "postgresql://kwx@/kwx?host=/run/kwx&port=5433"
    # An IPv6 address keeps its brackets: without them the port reads as part of the address.
    said = describe("postgresql://kwx:s3cret@[::1]:5433/kwx?sslmode=require")
    assert said == "postgresql://kwx@[::1]:5433/kwx"
    assert psycopg.conninfo.conninfo_to_dict(said) == {
        "user": "kwx",
        "host": "::1",
        "port": "5433",
        "dbname": "kwx",
    }


def test_an_embedded_database_is_made_only_with_init(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.service.test_serve import _stop_embedded

    # Not under pytest's tmp_path, like tests/conftest.py's server: pytest chmods its base folder
    # to 0700 when another session starts, which locks out the server (the `embedded_postgres` user
    # when we are root).
    tmp_path = Path(tempfile.mkdtemp(prefix="kwx-init-"))
    tmp_path.chmod(0o755)
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("KWX_DATA_DIR", str(tmp_path / "kwx"))
    assert main(["keys", "list"]) == 2
    assert "no kwx database in" in capsys.readouterr().err and not (tmp_path / "kwx" / "pg").exists()
    try:
        assert main(["migrate", "--init"]) == 0
        assert f"kwx migrate: created database embedded PostgreSQL in {tmp_path / 'kwx' / 'pg'}" in (
            capsys.readouterr().err
        )
        assert main(["keys", "list"]) == 0  # now there is one: no --init needed
        err = capsys.readouterr().err
        assert "kwx keys: database embedded" in err and "created" not in err
    finally:
        _stop_embedded(tmp_path / "kwx" / "pg")
        shutil.rmtree(tmp_path, ignore_errors=True)
