"""constraints.txt: the exact versions ``make install`` installs (``pip install -c``), written by
``make lock``. Every package pyproject.toml asks for is pinned there, every pin lies inside the
range pyproject.toml allows, and the virtualenv the suite runs in holds those versions — so what CI
tests on a fresh clone is what was pinned, not whatever PyPI released since."""

from __future__ import annotations

import tomllib
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.paths import REPO


def _pins() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for number, raw in enumerate((REPO / "constraints.txt").read_text().splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        assert sep and version, f"constraints.txt:{number}: {raw!r} is not NAME==VERSION"
        key = canonicalize_name(name)
        assert key not in pins, f"constraints.txt:{number}: {name} pinned twice"
        pins[key] = Version(version)
    return pins


def _requirements() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        wanted += extra
    return [Requirement(r) for r in wanted]


def test_every_requirement_is_pinned_inside_its_range() -> None:
    pins = _pins()
    problems = []
    for req in _requirements():
        if req.marker is not None and not req.marker.evaluate():
            continue  # (uvloop on Windows)
        pin = pins.get(canonicalize_name(req.name))
        if pin is None:
            problems.append(f"{req.name}: not in constraints.txt (run make lock)")
        elif not req.specifier.contains(pin, prereleases=True):
            problems.append(f"{req.name}: pinned {pin}, pyproject.toml asks {req.specifier}")
    assert problems == []


def test_the_suite_runs_on_the_pinned_versions() -> None:
    """What ``make install`` put in the virtualenv is constraints.txt's set: a package installed at
    another version (a hand-made upgrade, an install without ``-c``) fails here, naming it."""
    drift = []
    for key, pin in sorted(_pins().items()):
        try:
            installed = Version(metadata.version(key))
        except metadata.PackageNotFoundError:
            drift.append(f"{key}: pinned {pin}, not installed")
            continue
        if installed != pin:
            drift.append(f"{key}: pinned {pin}, installed {installed}")
    assert drift == [], "the virtualenv differs from constraints.txt (make install): " + "; ".join(drift)
