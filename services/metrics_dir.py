"""``kwx serve``'s metrics folder: ``prometheus_client``'s multiprocess mode is chosen when that
package is first imported, from ``PROMETHEUS_MULTIPROC_DIR``, so the folder is set here — a module
that imports nothing of it — before anything imports :mod:`services.metrics`."""

from __future__ import annotations

import os

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def use_folder() -> str | None:
    """A fresh folder in ``PROMETHEUS_MULTIPROC_DIR`` (unless the operator set one), so the
    workers and the projector child that ``kwx serve`` starts inherit it and every process's counts
    are summed at a scrape; removed when this process exits. None when one was set already, or
    when ``prometheus_client`` is imported already (``kwx serve``'s code run inside another program,
    a test: this process then counts on its own)."""
    import atexit
    import shutil
    import sys
    import tempfile

    if os.environ.get(MULTIPROC_ENV):
        return None
    if "prometheus_client" in sys.modules:  # too late to switch this process's counting
        return None
    folder = tempfile.mkdtemp(prefix="kwx-metrics-")
    os.environ[MULTIPROC_ENV] = folder
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder
