"""Run one launch command with a timeout, its output going straight to files.

The launcher runs in its own session (process group), so a timeout or an interrupt can kill the
whole MPI job; on Linux it also gets SIGTERM if this harness dies (even from SIGKILL).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from commstack.launch.command import LaunchCommand

KILL_GRACE_S = 5.0
_PR_SET_PDEATHSIG = 1


# Set when the sweep is stopping: runs in flight report `interrupted`, none are started.
STOP = threading.Event()
_HELD = {signal.SIGINT, signal.SIGTERM}
_LIVE: "set[subprocess.Popen[bytes]]" = set()
_LIVE_LOCK = threading.Lock()


def stop_all() -> None:
    """Stop every run in flight (runs side by side live in worker threads)."""
    STOP.set()
    with _LIVE_LOCK:
        live = list(_LIVE)
    for proc in live:
        _kill_group(proc)


class Interrupted(Exception):
    """The harness was asked to stop (SIGINT, SIGTERM) while a point was running."""


@dataclass
class RunOutcome:
    status: str  # ok | crash | timeout | interrupted
    exit_code: Optional[int]
    start: float
    end: float

    @property
    def duration_s(self) -> float:
        return self.end - self.start


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM (delivered when this block ends) in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signals are handled by the main thread anyway
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _in_child() -> None:
    """Between fork and exec of the launcher: take back the signals the harness held while
    starting it (a mask survives exec), and die with the harness."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD)
    _die_with_parent()


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:  # not glibc Linux: the launcher may outlive a killed harness
        pass


def run(cmd: LaunchCommand, stdout: Path, stderr: Path, timeout: float, cwd: Path) -> RunOutcome:
    """Run to completion, timeout or interrupt. An interrupt (SIGINT, SIGTERM) landing anywhere
    in here, even while the launcher is being started, gives an `interrupted` outcome."""
    env = cmd.full_env()
    start = time.time()
    proc: "Optional[subprocess.Popen[bytes]]" = None
    timer: Optional[threading.Timer] = None
    timed_out = threading.Event()
    try:
        # Held while the launcher is forked: Python runs at-fork callbacks (logging's, for one)
        # in the parent, and a KeyboardInterrupt raised inside one is printed and dropped. Held,
        # the signal lands just after, here, and the run is stopped as interrupted.
        with open(stdout, "wb") as out, open(stderr, "wb") as err, signals_held():
            proc = subprocess.Popen(
                cmd.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=env,
                cwd=cwd,
                start_new_session=True,
                preexec_fn=_in_child,
            )
        with _LIVE_LOCK:
            _LIVE.add(proc)
        # A blocking wait plus a timer, not wait(timeout=): that one polls with sleeps of up to
        # 50 ms, which would add tens of milliseconds to every point.
        running = proc

        def on_timeout() -> None:
            timed_out.set()
            _kill_group(running)

        timer = threading.Timer(timeout, on_timeout)
        timer.daemon = True
        timer.start()
        code = proc.wait()
    except (KeyboardInterrupt, Interrupted):
        if timer is not None:
            timer.cancel()
        if proc is not None:
            _kill_group(proc)
        return RunOutcome("interrupted", proc.returncode if proc else None, start, time.time())
    finally:
        if timer is not None:
            timer.cancel()
        if proc is not None:
            with _LIVE_LOCK:
                _LIVE.discard(proc)
    end = time.time()
    if STOP.is_set():
        return RunOutcome("interrupted", code, start, end)
    if timed_out.is_set():
        return RunOutcome("timeout", code, start, end)
    return RunOutcome("ok" if code == 0 else "crash", code, start, end)


def _kill_group(proc: "subprocess.Popen[bytes]") -> None:
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, KILL_GRACE_S)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=wait)
            # Ranks may linger in the group after the launcher exits.
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue
        return
