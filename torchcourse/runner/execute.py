"""Low-level execution: collect a process's merged output under a timeout, a cap and a cancel
event, and kill its whole process group. Used by both the cold path (a brand-new interpreter)
and the warm path (a child forked by the zygote). Never imports torch.
"""

from __future__ import annotations

import math
import os
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable

OUTPUT_CAP = 1_000_000  # bytes kept; a run that writes more is stopped (see collect)
# lines kept, the same way: judging an output costs Python work per line (normalize), done by the
# process that runs the snippet — in a class, the one service, outside every run's CPU group: a
# megabyte of empty lines cost it 0.35 s per run, and one learner's runs kept it busy 87 % of a core
OUTPUT_LINES_CAP = 20_000
SNIPPET_FILE = "snippet.py"
TRUNCATION_NOTICE = "⚠️ [torchcourse] 输出超过 1 MB 或 20,000 行：运行已停止，后面的部分已截断。"

FIXED_ENV = {
    "PYTHONHASHSEED": "0",
    "PYTHONUNBUFFERED": "1",
    "PYTHONIOENCODING": "utf-8",
    "NO_COLOR": "1",
    "TERM": "dumb",
    "COLUMNS": "80",
    "LC_ALL": "C.UTF-8",
    "TZ": "UTC",
}
# Variables that would change how the snippet interpreter starts; dropped from the snippet env.
_DROP_ENV = (
    "PYTHONSTARTUP", "PYTHONINSPECT", "PYTHONDEVMODE", "PYTHONWARNINGS", "PYTHONBREAKPOINT",
    "PYTHONSAFEPATH", "PYTHONOPTIMIZE", "PYTHONDONTWRITEBYTECODE", "PYTHONFAULTHANDLER",
    "PYTHONTRACEMALLOC", "PYTHONNOUSERSITE", "FORCE_COLOR", "CLICOLOR_FORCE", "TORCHCOURSE_HOME",
    "PYTEST_CURRENT_TEST", "PYTHONPATH", "COVERAGE_PROCESS_START",
)


def readable(fds, timeout: float) -> list[int]:
    """Those of ``fds`` (descriptors) ready to read (or at their end) within ``timeout`` seconds.
    ``poll``, not ``select``: select refuses descriptors past 1024, and a class's one service
    holds more than that with a few hundred runs waiting. (A signal does not cut the wait short:
    Python retries it.)"""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return [fd for fd, _ev in poller.poll(max(0, math.ceil(timeout * 1000)))]


def snippet_env() -> dict[str, str]:
    """The fixed environment every snippet (cold or warm) runs in."""
    env = {k: v for k, v in os.environ.items() if k not in _DROP_ENV and not k.startswith("LC_")}
    env.pop("LANG", None)
    env.update(FIXED_ENV)
    if "TORCHINDUCTOR_CACHE_DIR" not in env:
        # each snippet's TMPDIR is private and removed with it; torch.compile's kernel cache keeps
        # its usual shared place (tempdir/torchinductor_<user>) so compiled kernels are reused
        import getpass
        import tempfile

        try:
            user = getpass.getuser()
        except Exception:  # pragma: no cover - no user name in this environment
            user = str(os.getuid())
        env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(tempfile.gettempdir(), f"torchinductor_{user}")
    return env


@dataclass
class RawRun:
    """What one execution produced, before normalization."""

    output: bytes
    seconds: float
    returncode: int | None  # exit code when it exited normally
    signal: int | None  # signal number when killed by one
    truncated: bool
    outcome: str  # "exited" | "timeout" | "cancelled"


def kill_group(pgid: int | None) -> None:
    if not pgid or pgid <= 1:
        return
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def stop_supervisor(pid: int | None) -> None:
    """Ask a supervisor (tc_supervise) to kill its snippet's whole tree and exit."""
    if not pid or pid <= 1:
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass


SUPERVISOR_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tc_supervise.py")
ESCALATE_AFTER = 5.0  # seconds a supervisor gets to clean up before its group is SIGKILLed


def collect(
    out_fd: int,
    pgid: int,
    *,
    poll_status: Callable[[float], int | None],
    status_fd: int | None,
    timeout: float,
    cancel: threading.Event | None,
    started: float,
) -> RawRun:
    """Read ``out_fd`` until the process has exited and the pipe is closed.

    ``poll_status(wait)`` returns the raw wait status once the process is reaped (else None);
    ``status_fd`` (optional) becomes readable when a status may be available.
    """
    buf = bytearray()
    truncated = False
    lines = 0  # newlines kept so far
    out_open = True
    status: int | None = None
    outcome = "exited"
    deadline = started + timeout
    drain_deadline: float | None = None
    reap_deadline: float | None = None
    escalate_at: float | None = None
    ended_at: float | None = None
    os.set_blocking(out_fd, False)
    while True:
        now = time.monotonic()
        if status is None and outcome == "exited":
            if cancel is not None and cancel.is_set():
                outcome = "cancelled"
            elif now >= deadline:
                outcome = "timeout"
            if outcome != "exited":
                stop_supervisor(pgid)  # it kills the snippet's whole tree, then exits
                ended_at = now
                escalate_at = now + ESCALATE_AFTER
                reap_deadline = now + 10.0
        if status is None and escalate_at is not None and now >= escalate_at:
            kill_group(pgid)
            escalate_at = None
        if status is not None and out_open and drain_deadline is None:
            # the snippet is gone; whatever it left in its group goes too, then drain
            kill_group(pgid)
            drain_deadline = now + 1.0
        if status is not None and (not out_open or (drain_deadline is not None and now >= drain_deadline)):
            break
        if status is None and reap_deadline is not None and now >= reap_deadline:
            break
        rlist = [out_fd] if out_open else []
        if status is None and status_fd is not None:
            rlist.append(status_fd)
        wait = 0.05
        if outcome == "exited" and status is None:
            wait = max(0.0, min(wait, deadline - now))
        try:
            ready = readable(rlist, wait) if rlist else []
            if not rlist:
                time.sleep(wait)
        except InterruptedError:  # pragma: no cover
            ready = []
        if out_fd in ready:
            try:
                chunk = os.read(out_fd, 1 << 16)
            except BlockingIOError:
                chunk = None
            if chunk == b"":
                out_open = False
            elif chunk:
                room = OUTPUT_CAP - len(buf)
                kept = chunk[:room] if room > 0 else b""
                newlines = kept.count(b"\n")
                if lines + newlines > OUTPUT_LINES_CAP:  # (cut after the cap's last line)
                    cut = -1
                    for _ in range(OUTPUT_LINES_CAP - lines):
                        cut = kept.index(b"\n", cut + 1)
                    kept, room = kept[:cut + 1], 0
                lines += kept.count(b"\n")
                buf += kept
                if (len(chunk) > room or len(kept) < len(chunk)) and not truncated:
                    truncated = True
                    if status is None and outcome == "exited" and escalate_at is None:
                        # past the cap the run is stopped: reading and dropping a flood for the
                        # rest of its time would cost this process (a class's one service) a core
                        stop_supervisor(pgid)
                        ended_at = time.monotonic()
                        escalate_at = ended_at + ESCALATE_AFTER
                        reap_deadline = ended_at + 10.0
        if status is None:
            status = poll_status(0.0)
            if status is not None and ended_at is None:
                ended_at = time.monotonic()
    seconds = (ended_at or time.monotonic()) - started
    returncode = sig = None
    if status is not None:
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
        elif os.WIFEXITED(status):
            returncode = os.WEXITSTATUS(status)
    return RawRun(bytes(buf), seconds, returncode, sig, truncated, outcome)


def private_dirs(run_dir: str) -> dict[str, str]:
    """An empty HOME and TMPDIR for one snippet, next to its run directory (``base/run``) inside
    the same ``tc-run-*`` directory, so both go when it is removed."""
    base = os.path.dirname(os.path.abspath(run_dir))
    out = {"HOME": os.path.join(base, "home"), "TMPDIR": os.path.join(base, "tmp")}
    for d in out.values():
        try:
            os.mkdir(d)
        except FileExistsError:
            pass
    return out


def run_cold(run_dir: str, *, python: str, timeout: float, cancel: threading.Event | None, on_start: Callable[[int], None] | None = None, on_end: Callable[[int], None] | None = None, cleanup_dir: str | None = None, env: dict[str, str] | None = None, wrap: tuple[list[str], list[str]] | None = None, base_env: dict[str, str] | None = None, pass_fds: tuple[int, ...] = ()) -> RawRun:
    """``python snippet.py`` in ``run_dir``: a brand-new interpreter in its own session, under a
    supervisor (tc_supervise.py) that enforces the timeout, kills the snippet's whole process
    tree, and does so by itself when the driver dies (lifeline: its stdin). ``cleanup_dir`` is
    removed by the supervisor when the driver is gone.

    ``wrap`` = (outer, inner) (the sandbox): ``outer`` goes before the supervisor's command (bwrap
    …), ``inner`` before the snippet's (its confinement); ``base_env`` replaces :func:`snippet_env`."""
    started = time.monotonic()
    overrides = env or {}
    env = dict(base_env) if base_env is not None else snippet_env()
    env.update(overrides)  # e.g. another PYTHONHASHSEED for verify --accept's second pass
    env.update(private_dirs(run_dir))
    outer, inner = wrap or ([], [])
    proc = subprocess.Popen(
        [*outer, python, "-I", "-S", SUPERVISOR_SCRIPT, repr(float(timeout)), cleanup_dir or run_dir, "--", *inner, python, SNIPPET_FILE],
        pass_fds=pass_fds,
        cwd=run_dir,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
        close_fds=True,
    )
    if on_start:
        on_start(proc.pid)
    pidfd = None
    if hasattr(os, "pidfd_open"):
        try:
            pidfd = os.pidfd_open(proc.pid)
        except OSError:
            pidfd = None

    def poll_status(_wait: float) -> int | None:
        try:
            pid, status = os.waitpid(proc.pid, os.WNOHANG)
        except ChildProcessError:
            return 0
        if pid == 0:
            return None
        proc.returncode = os.waitstatus_to_exitcode(status)
        return status

    try:
        return collect(proc.stdout.fileno(), proc.pid, poll_status=poll_status, status_fd=pidfd, timeout=timeout, cancel=cancel, started=started)
    finally:
        if proc.returncode is None:
            stop_supervisor(proc.pid)
            try:
                proc.wait(timeout=ESCALATE_AFTER)
            except subprocess.TimeoutExpired:  # pragma: no cover
                kill_group(proc.pid)
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
        try:
            proc.stdin.close()
        except OSError:
            pass
        if pidfd is not None:
            os.close(pidfd)
        proc.stdout.close()
        if on_end:
            on_end(proc.pid)


def default_python() -> str:
    return sys.executable
