"""services.compiled_engine: the mypyc-compiled engine is used only while it matches the sources."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import domain.reducer
from services import compiled_engine as ce


def test_the_engine_runs_compiled_exactly_when_the_build_is_current() -> None:
    compiled = domain.reducer.__file__.endswith(".so")
    assert ce.active() == compiled
    if os.environ.get("KWX_PURE_ENGINE"):
        assert not compiled
    elif os.environ.get("KWX_EXPECT_COMPILED"):  # CI: make test built it, so the suite ran compiled
        assert compiled and Path(domain.reducer.__file__).parent == ce.target_dir() / "domain"
    if compiled:
        assert ce.current(ce.target_dir())


def _build_of(sources: Path, target: Path, python: str | None = None) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    tag = python or sys.implementation.cache_tag
    (target / "manifest.json").write_text(json.dumps({"python": tag, "sources": ce.manifest(sources)}))
    return target


def test_a_build_is_current_only_for_the_same_sources_and_python(tmp_path: Path) -> None:
    sources = tmp_path / "domain"
    shutil.copytree(ce.SOURCES, sources, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    target = _build_of(sources, tmp_path / "built")
    assert ce.current(target, sources)
    edited = sources / "reducer.py"
    edited.write_text(edited.read_text() + "\n# edited\n")
    assert not ce.current(target, sources)  # one source changed: the build is stale
    assert not ce.current(_build_of(sources, tmp_path / "other-python", "cpython-99"), sources)
    assert not ce.current(tmp_path / "nothing-built", sources)


def test_a_stale_build_is_never_imported(tmp_path: Path) -> None:
    """A fresh interpreter pointed at a build whose manifest does not match: domain stays the .py."""
    stale = tmp_path / "stale"
    (stale / "domain").mkdir(parents=True)
    (stale / "manifest.json").write_text(json.dumps({"python": sys.implementation.cache_tag, "sources": {}}))
    code = (
        "import sys; from pathlib import Path; import services.compiled_engine as ce\n"
        "sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, ce._Finder)]\n"
        "ce._finder = None; ce.install(Path(sys.argv[1]))\n"
        "import domain.reducer; print(domain.reducer.__file__, ce.active())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "KWX_PURE_ENGINE"}
    out = subprocess.run([sys.executable, "-c", code, str(stale)], capture_output=True, text=True, env=env,
                         check=True).stdout.split()  # fmt: skip
    assert out == [str(ce.SOURCES / "reducer.py"), "False"]
