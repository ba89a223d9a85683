"""``make test-citus`` fails loudly when Citus cannot be built here — never a skip (issue 14).

Runs anywhere (no cluster needed); ``make test-citus`` names it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import citus_cluster


def test_a_build_that_fails_stops_the_run_with_the_builds_own_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "build.sh"
    script.write_text(
        "#!/usr/bin/env bash\necho 'citus: configure: error: no acceptable C compiler' >&2\nexit 1\n"
    )
    monkeypatch.setattr(citus_cluster, "BUILD_SCRIPT", script)
    monkeypatch.setattr(citus_cluster, "HOME", tmp_path / "home")
    with pytest.raises(citus_cluster.CitusUnavailable, match="no acceptable C compiler"):
        citus_cluster.build(tmp_path / "home")
    # the command line: a non-zero exit with the reason, before any test runs
    assert citus_cluster.main(["run", "--", "tests/service/test_store.py"]) == 3
    assert "building Citus failed (exit 1)" in capsys.readouterr().err


def test_no_build_script_is_an_error_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(citus_cluster, "BUILD_SCRIPT", tmp_path / "missing.sh")
    with pytest.raises(citus_cluster.CitusUnavailable, match="missing"):
        citus_cluster.build(tmp_path / "home")


def test_a_finished_build_is_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "home" / "pg"
    (out / "lib").mkdir(parents=True)
    (out / "lib" / "citus.so").write_bytes(b"")
    (out / ".citus-built").write_text("")
    monkeypatch.setattr(citus_cluster, "BUILD_SCRIPT", tmp_path / "never-run.sh")
    assert citus_cluster.build(tmp_path / "home") == out
