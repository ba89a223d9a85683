"""The projector as a child process of ``kwx serve`` (``KWX_PROJECTOR=on``, the default).

The projector folds every ingested event through the engine again (projections/). In the server's
own process it competed with the request handlers for the GIL; as ``kwx projections follow`` in a
process of its own it only shares the machine's cores. ``kwx serve`` starts it after migrating,
restarts it if it dies (with a growing pause, at most 30 s, back to 1 s after a minute's good
run), and stops it (SIGINT: the child closes its pool and, on the embedded server, its handle)
when the server stops. On Linux the child gets SIGTERM if the server dies without stopping it
(``PR_SET_PDEATHSIG``), so it never outlives the server. It runs in its own session, so a Ctrl-C
in the terminal reaches the server, which then stops the child itself.

It runs at a lower CPU priority (``nice`` 10 by default, ``KWX_PROJECTOR_NICE``): when ingest keeps
the cores busy the projector yields to it and falls behind, and it catches up as soon as there is
idle time (measured in docs/operations.md, Speed). ``KWX_PROJECTOR_NICE=0`` shares the cores
equally.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from services.logs import get_logger

log = get_logger("kwx.projector_process")


def _child_setup(nice: int) -> Callable[[], None]:
    def setup() -> None:  # pragma: no cover - runs in the child between fork and exec
        # a server started with SIGINT ignored (a shell's background job) must not pass that on:
        # SIGINT is how the child is asked to stop
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if nice:
            os.nice(nice)
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                libc = ctypes.CDLL(None, use_errno=True)
                libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1
            except (OSError, AttributeError):
                pass

    return setup


class ProjectorProcess:
    """Runs and supervises ``kwx projections follow`` against ``database_url``.

    A child that exits is started again after a pause that doubles with each exit in a row
    (``first_pause`` 1 s … ``longest_pause`` 30 s) and starts over at 1 s once a child had run
    ``healthy_after`` (60 s): a crash a week after the last one is not made to wait 30 s."""

    first_pause = 1.0
    longest_pause = 30.0
    healthy_after = 60.0
    beat_check = 0.5  # seconds between the supervisor's looks at the heartbeat pipe

    def __init__(
        self, database_url: str, *, nice: int = 10, env: dict[str, str] | None = None, watchdog: float = 120.0
    ) -> None:
        self.database_url = database_url
        self.nice = max(0, nice)
        # A child that stops beating for this many seconds (hung: a stuck statement, a deadlock,
        # SIGSTOP) is killed and restarted like one that exited; 0: no watchdog. It arms at the
        # first beat, so a slow start-up is never taken for a hang.
        self.watchdog = max(0.0, watchdog)
        self._beats: int | None = None  # the heartbeat pipe's read end (the child writes)
        self.env = dict(os.environ if env is None else env)
        self.env["DATABASE_URL"] = database_url
        self.env["KWX_PROJECTOR"] = "off"  # the child is the projector; it starts no other
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def command(self) -> list[str]:
        return [sys.executable, "-m", "services.cli", "projections", "follow"]

    def start(self) -> None:
        self._spawn()
        self._thread = threading.Thread(target=self._supervise, name="kwx-projector-supervisor", daemon=True)
        self._thread.start()

    def _spawn(self) -> None:
        with self._lock:
            if self._stopping.is_set():
                return
            self._close_beats()
            env, keep = self.env, ()
            if self.watchdog:
                self._beats, write_end = os.pipe()
                os.set_blocking(self._beats, False)
                env, keep = {**self.env, "KWX_PROJECTOR_HEARTBEAT_FD": str(write_end)}, (write_end,)
            try:
                self.proc = subprocess.Popen(
                    self.command,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                    preexec_fn=_child_setup(self.nice),
                    pass_fds=keep,
                )
            finally:
                for fd in keep:  # the child's now; ours would keep the pipe open after it died
                    os.close(fd)
            self.starts += 1
            log.info("projector_process_started", pid=self.proc.pid, starts=self.starts)

    def _supervise(self) -> None:
        pause = self.first_pause
        while not self._stopping.is_set():
            proc = self.proc
            if proc is None:
                return
            started = time.monotonic()
            code = self._wait(proc)
            if self._stopping.is_set():
                return
            if time.monotonic() - started >= self.healthy_after:
                pause = self.first_pause  # it had been running well: a new failure, not the same one
            log.warning("projector_process_exited", pid=proc.pid, code=code, restart_in=pause)
            if self._stopping.wait(pause):
                return
            pause = min(pause * 2, self.longest_pause)
            self._spawn()

    def _wait(self, proc: subprocess.Popen[bytes]) -> int:
        """The child's exit status — after killing it if its heartbeat stopped for ``watchdog``
        seconds (once it had beaten at all)."""
        beats = self._beats
        if not self.watchdog or beats is None:
            return proc.wait()
        last: float | None = None
        while True:
            try:
                return proc.wait(self.beat_check)
            except subprocess.TimeoutExpired:
                pass
            try:
                if os.read(beats, 4096):
                    last = time.monotonic()
            except BlockingIOError:
                pass  # no beat since the last look
            except OSError:
                return proc.wait()
            if last is not None and time.monotonic() - last > self.watchdog and not self._stopping.is_set():
                silent = round(time.monotonic() - last, 1)
                log.error(
                    "projector_process_hung", pid=proc.pid, silent_seconds=silent, watchdog=self.watchdog
                )
                proc.kill()
                return proc.wait()

    def _close_beats(self) -> None:
        if self._beats is not None:
            with contextlib.suppress(OSError):
                os.close(self._beats)
            self._beats = None

    def stop(self, timeout: float = 15.0) -> None:
        with self._lock:
            self._stopping.set()
            proc = self.proc
        if proc is not None and proc.poll() is None:
            for sig, wait in ((signal.SIGINT, timeout), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
                proc.send_signal(sig)
                try:
                    proc.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
            log.info("projector_process_stopped", pid=proc.pid, code=proc.returncode)
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
        with self._lock:
            self._close_beats()
