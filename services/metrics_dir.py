"""``kwx serve``'s metrics folder: ``prometheus_client``'s multiprocess mode is chosen when that
package is first imported, from ``PROMETHEUS_MULTIPROC_DIR``, so the folder is set here — a module
that imports nothing of it — before anything imports :mod:`services.metrics`."""

from __future__ import annotations

import os
import re
from pathlib import Path

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
PREFIX = "kwx-metrics-"
_OWNED = re.compile(rf"{PREFIX}(\d+)-")


def use_folder() -> str | None:
    """A fresh folder in ``PROMETHEUS_MULTIPROC_DIR`` (unless the operator set one), so the
    workers and the projector child that ``kwx serve`` starts inherit it and every process's counts
    are summed at a scrape; removed when this process exits. None when one was set already, or
    when ``prometheus_client`` is imported already (``kwx serve``'s code run inside another program,
    a test: this process then counts on its own). The folder's name carries this process's pid, so
    the next ``kwx serve`` removes it if this one was killed before it could (:func:`sweep`)."""
    import atexit
    import shutil
    import sys
    import tempfile

    if os.environ.get(MULTIPROC_ENV):
        return None
    if "prometheus_client" in sys.modules:  # too late to switch this process's counting
        return None
    sweep(Path(tempfile.gettempdir()))
    folder = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-")
    os.environ[MULTIPROC_ENV] = folder
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def sweep(parent: Path) -> list[Path]:
    """Remove the metrics folders in ``parent`` that a ``kwx serve`` of this user left when it was
    killed (SIGKILL runs no exit handler): those whose owner's pid no longer runs. The removed."""
    import shutil

    removed = []
    for folder in parent.glob(f"{PREFIX}*"):
        owner = _OWNED.match(folder.name)
        try:
            mine = folder.is_dir() and folder.stat().st_uid == os.getuid()
        except OSError:
            continue
        if owner and mine and not running(int(owner.group(1))):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def running(pid: int) -> bool:
    """Whether signal 0 finds the process (a zombie not yet reaped still counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it runs, as another user
        return True
    return True
