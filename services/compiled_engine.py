"""The rules engine compiled with mypyc, used only while it matches the sources (docs/operations.md,
Speed: a fold costs about half as much CPU compiled).

``python -m services.compiled_engine build`` (``make`` runs it after installing) copies ``domain/``,
compiles its logic modules (:data:`COMPILED`) there with mypyc and puts the extension modules in
``.venv/kwx-compiled`` with a manifest: the sha256 of every ``domain/*.py`` it was built from. The
modules that define msgspec Structs stay interpreted (msgspec refuses mypyc-compiled Struct classes).

A ``.pth`` file in the virtualenv calls :func:`install` when any interpreter of it starts: when
``domain`` is first imported, its package path gets the compiled directory in front, so
``import domain.reducer`` loads the compiled module — **only if the manifest matches the sources
at that moment**. An edited source, no build, a build for another Python, or ``KWX_PURE_ENGINE=1``:
nothing changes and every module runs interpreted. Stale compiled code is never run.

Stdlib only: this module is imported at interpreter start-up.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

SOURCES = Path(__file__).resolve().parents[1] / "domain"
COMPILED = (
    "claims", "engine", "fan", "hu", "legality", "liang_dao", "lou_hu", "patterns", "ready",
    "reducer", "settle", "shape", "table_checks", "table_events", "winning",
)  # fmt: skip
PTH = "zz_kwx_compiled_engine.pth"


def target_dir() -> Path:
    return Path(sys.prefix) / "kwx-compiled"


def manifest(sources: Path) -> dict[str, str]:
    """sha256 of every ``*.py`` of ``sources``, by file name."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(sources.glob("*.py"))}


def current(target: Path, sources: Path = SOURCES) -> bool:
    """Whether ``target`` holds a build of exactly these sources, for this Python."""
    try:
        built = json.loads((target / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return (
        isinstance(built, dict)
        and built.get("python") == sys.implementation.cache_tag
        and built.get("sources") == manifest(sources)
    )


class _Finder(importlib.abc.MetaPathFinder):
    """Finds ``domain`` as the other finders do, with the compiled directory first on its path."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self.active = False

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "domain":
            return None
        sys.meta_path.remove(self)  # once: the package is being imported now
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                break
        locations = spec.submodule_search_locations if spec is not None else None
        if locations is None or not current(self.target, Path(locations[0])):
            return spec
        locations.insert(0, str(self.target / "domain"))
        sys.path.append(str(self.target))  # the mypyc runtime library of the group
        self.active = True
        return spec


_finder: _Finder | None = None


def install(target: Path | None = None) -> None:
    """Called at start-up (the ``.pth`` file): use the compiled modules if they are current."""
    global _finder
    if os.environ.get("KWX_PURE_ENGINE") or "domain" in sys.modules or _finder is not None:
        return
    _finder = _Finder(target or target_dir())
    sys.meta_path.insert(0, _finder)


def active() -> bool:
    """Whether ``domain`` was imported with the compiled modules first on its path."""
    package = sys.modules.get("domain")
    path = list(getattr(package, "__path__", ()))
    return _finder is not None and _finder.active and bool(path) and path[0] == str(_finder.target / "domain")


def build(target: Path | None = None) -> int:
    """Compile a copy of ``domain/`` into ``target`` (default: the virtualenv's), with its manifest;
    install the ``.pth`` hook. 0 on success; else the reason on stderr (the engine stays interpreted)."""
    import shutil
    import subprocess
    import sysconfig
    import tempfile

    target = target or target_dir()
    mypyc = Path(sys.executable).with_name("mypyc")
    with tempfile.TemporaryDirectory(prefix="kwx-mypyc-") as tmp:
        work = Path(tmp)
        shutil.copytree(SOURCES, work / "domain", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
        sources = manifest(work / "domain")
        command = [str(mypyc), *(f"domain/{name}.py" for name in COMPILED)]
        print(f"kwx: mypyc: {len(COMPILED)} modules ({', '.join(COMPILED)})", flush=True)
        done = subprocess.run(command, cwd=work, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"kwx: mypyc failed ({done.returncode}); the engine stays interpreted:\n"
                  f"{(done.stdout + done.stderr)[-2000:]}", file=sys.stderr)  # fmt: skip
            return 1
        shutil.rmtree(target, ignore_errors=True)
        (target / "domain").mkdir(parents=True)
        for module in (work / "domain").glob("*.so"):
            shutil.copy2(module, target / "domain")
        for runtime in work.glob("*__mypyc*.so"):
            shutil.copy2(runtime, target)
        (target / "manifest.json").write_text(
            json.dumps({"python": sys.implementation.cache_tag, "sources": sources}, indent=1)
        )
    site = Path(sysconfig.get_paths()["purelib"])
    (site / PTH).write_text("import services.compiled_engine as _kwx; _kwx.install()\n")
    print(f"kwx: engine compiled ({len(COMPILED)} modules) into {target}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] != ["build"]:
        print("usage: python -m services.compiled_engine build", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(build())
