"""Driver side of the warm zygote (see zygote.py for the protocol). Never imports torch."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from torchcourse.runner import execute

ZYGOTE_SCRIPT = Path(__file__).with_name("zygote.py")
START_TIMEOUT = 180.0

_spawner: dict = {}  # pid -> the one lasting thread (a pool of one) that forks zygotes (see _spawn)
_spawner_lock = threading.Lock()


def _spawn(start: Callable[[], subprocess.Popen]) -> subprocess.Popen:
    """``start()`` on a thread that lasts as long as this process. A sandboxed zygote is bwrap
    ``--die-with-parent``, whose parent-death signal (PR_SET_PDEATHSIG) fires when the *thread*
    that forked it ends: started from a short-lived thread (a class service's start-up thread, a
    request's), the zygote was SIGKILLed, with the runs in flight on it, as soon as that thread
    returned."""
    from concurrent.futures import ThreadPoolExecutor

    with _spawner_lock:
        pool = _spawner.get(os.getpid())  # a forked child has none of its parent's threads
        if pool is None:
            _spawner.clear()
            pool = _spawner[os.getpid()] = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tc-zygote-spawn")
    return pool.submit(start).result()


class ZygoteError(Exception):
    def __init__(self, message: str, *, no_torch: bool = False, before_fork: bool = False, died_mid_run: bool = False, missing: str | None = None,
                 jail_failed: bool = False):
        super().__init__(message)
        # the zygote could not confine this run (told on a pipe the snippet never holds, never
        # read off the run's output): the snippet did not run; a new zygote may (retry once)
        self.jail_failed = jail_failed
        self.died_mid_run = died_mid_run  # collateral of the zygote's death: safe to retry once
        self.no_torch = no_torch  # a module to preload is not installed (torch, or ``missing``)
        self.missing = missing
        self.before_fork = before_fork  # the snippet never started: safe to retry


class Zygote:
    def __init__(self, python: str, *, preload: tuple[str, ...] = ("torch",), env: dict[str, str] | None = None,
                 sandbox=None, busy_slots=()):
        """``sandbox`` (a :class:`torchcourse.runner.sandbox.Sandbox`): the zygote runs inside it
        (bwrap), accepts requests only from outside it, and confines each snippet process it
        forks (tc_jail.confine: its own run directory only). ``busy_slots``: run slots that runs
        of a replaced zygote still hold: this one never puts a run of its own there."""
        self.python = python
        self.preload = tuple(preload)
        self.sandbox = sandbox
        self.on_slot: Callable[[int | None], None] | None = None  # told each run's slot (sandbox)
        self.on_slot_end: Callable[[int | None], None] | None = None  # told once that run has ended
        self._runs = 0  # runs in flight on this zygote
        self._retiring = False  # replaced: closed once its last run in flight has ended
        self._runs_lock = threading.Lock()
        self.dir = tempfile.mkdtemp(prefix="tc-zyg-", dir=sandbox.zygote_root if sandbox is not None else None)
        self.sock_path = os.path.join(self.dir, "z.sock")
        self.log_path = os.path.join(self.dir, "zygote.log")
        self._log = open(self.log_path, "wb")
        argv = [python, str(ZYGOTE_SCRIPT)]
        config = {"socket": self.sock_path, "preload": list(self.preload), "jail": None}
        base_env = execute.snippet_env()
        pass_fds: tuple[int, ...] = ()
        if sandbox is not None:
            sandbox.own(self.dir, group=False)
            spec = sandbox.jail_spec(relative=True)
            if busy_slots and spec.get("slots"):
                spec["busy"] = sorted(busy_slots)
            argv = [*sandbox.zygote_command(self.dir), *argv]
            config["jail"] = spec
            base_env = sandbox.env()
            pass_fds = sandbox.pass_fds()
        self.proc = _spawn(lambda: subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env={**base_env, **(env or {})},
            cwd=self.dir,
            start_new_session=True,
            close_fds=True,
            pass_fds=pass_fds,
        ))
        try:  # its start-up line, on the lifeline pipe (not argv: see zygote._read_config)
            self.proc.stdin.write((json.dumps(config) + "\n").encode("utf-8"))
            self.proc.stdin.flush()
        except OSError:
            pass  # gone already: _read_hello says why
        self.hello = self._read_hello()
        if not self.hello.get("ok"):
            err = str(self.hello.get("error", "unknown error"))
            self.close()
            raise ZygoteError(err, no_torch=bool(self.hello.get("no_torch")), missing=self.hello.get("missing"))

    def _read_hello(self) -> dict:
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + START_TIMEOUT
        buf = b""
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise ZygoteError("warm runner did not start in time")
            ready = execute.readable([fd], min(left, 1.0))
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    break
                buf += chunk
        line = buf.split(b"\n", 1)[0]
        try:
            return json.loads(line.decode("utf-8", "replace"))
        except ValueError:
            try:
                log = Path(self.log_path).read_text(errors="replace")[-500:]
            except OSError:
                log = ""
            self.close()
            raise ZygoteError(f"warm runner failed to start: {log.strip() or line!r}")

    def preloaded(self) -> set[str]:
        """Top-level names of the modules the zygote imported before forking."""
        return set(self.hello.get("modules") or ())

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _connect(self) -> socket.socket:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(self.sock_path)
        except OSError as exc:
            s.close()
            raise ZygoteError(f"warm runner unreachable: {exc}", before_fork=True) from exc
        return s

    def run(self, run_dir: str, *, timeout: float, cancel: threading.Event | None, on_start: Callable[[int], None] | None = None, on_end: Callable[[int], None] | None = None, cleanup_dir: str | None = None, held: list | None = None) -> execute.RawRun:
        """Run the snippet in ``run_dir`` (its file written there) in a process forked from the
        zygote. ``held``: the connection is appended there instead of closed once the status is
        in; the caller closes it when it is done with the result (a spare's supervisor lets the
        snippet process exit only then, so that tearing it down does not compete with the
        caller's normalization and verdict)."""
        with self._runs_lock:
            self._runs += 1
        try:
            return self._run(run_dir, timeout=timeout, cancel=cancel, on_start=on_start, on_end=on_end, cleanup_dir=cleanup_dir, held=held)
        finally:
            with self._runs_lock:
                self._runs -= 1
                last = self._retiring and self._runs == 0
            if last:
                threading.Thread(target=self.close, daemon=True).start()

    def retire(self) -> None:
        """This zygote is replaced: the runs in flight on it finish (another learner's run is
        never collateral of a replacement); it is closed once the last of them has ended."""
        with self._runs_lock:
            self._retiring = True
            idle = self._runs == 0
        if idle:
            self.close()

    def _run(self, run_dir: str, *, timeout: float, cancel: threading.Event | None, on_start, on_end, cleanup_dir, held) -> execute.RawRun:
        r, w = os.pipe()
        s = None
        pid = None
        forked = False
        slot = None
        state = {"reaped": False}
        try:
            s = self._connect()
            started = time.monotonic()
            socket.send_fds(s, [json.dumps({"dir": run_dir, "file": execute.SNIPPET_FILE, "timeout": float(timeout), "cleanup": cleanup_dir or "", **execute.private_dirs(run_dir)}).encode()], [w])
            os.close(w)
            w = -1
            s.settimeout(30)
            buf = b""
            while b"\n" not in buf:
                chunk = s.recv(4096)
                if not chunk:
                    raise ZygoteError("warm runner closed the connection before forking", before_fork=True)
                buf += chunk
            line, buf = buf.split(b"\n", 1)
            msg = json.loads(line)
            if "pid" not in msg:
                raise ZygoteError(f"warm runner refused: {msg}")
            pid = int(msg["pid"])
            forked = True
            slot = msg.get("slot")
            if self.on_slot is not None:
                self.on_slot(slot)
            if self.sandbox is not None:
                # the pid is the one in the sandbox's PID namespace: signal only the process it
                # names out here (None once it is gone: nothing to signal)
                pid = self._outer_pid(pid)
            if on_start and pid:
                on_start(pid)
            s.setblocking(False)
            state = {"buf": buf, "lost": False, "reaped": False}

            def poll_status(_wait: float) -> int | None:
                while b"\n" not in state["buf"]:
                    try:
                        chunk = s.recv(4096)
                    except (BlockingIOError, InterruptedError):
                        return None
                    except OSError:
                        chunk = b""
                    if not chunk:
                        state["lost"] = True
                        return 0
                    state["buf"] += chunk
                line, state["buf"] = state["buf"].split(b"\n", 1)
                state["reaped"] = True
                msg = json.loads(line)
                state["jail_failed"] = msg.get("jail") == "failed"
                return int(msg["status"])

            raw = execute.collect(r, pid, poll_status=poll_status, status_fd=s.fileno(), timeout=timeout, cancel=cancel, started=started)
            if state["lost"] and raw.outcome == "exited":
                raise ZygoteError("warm runner died during the run", died_mid_run=True)
            if state.get("jail_failed"):
                # only the zygote's own words before the snippet ran are in the output
                text = raw.output.decode("utf-8", "replace").strip().splitlines()
                raise ZygoteError((text[-1] if text else "沙箱没能建立，代码没有运行").replace("[torchcourse] ", ""), jail_failed=True)
            return raw
        except (OSError, ValueError, KeyError) as exc:
            raise ZygoteError(f"warm runner protocol error: {exc}", before_fork=not forked) from exc
        finally:
            if pid:
                if not state["reaped"]:
                    execute.stop_supervisor(pid)  # it kills the snippet's tree and exits
                if on_end:
                    on_end(pid)
            if forked and self.on_slot_end is not None:
                self.on_slot_end(slot)
            if w >= 0:
                os.close(w)
            os.close(r)
            if s is not None:
                if held is not None and state["reaped"]:
                    held.append(s)
                else:
                    s.close()

    def _outer_pid(self, inner: int) -> int | None:
        """The pid, as seen here, of the zygote's child that has pid ``inner`` inside the sandbox
        (``NSpid:`` of /proc/PID/status, among the descendants of the bwrap process)."""
        todo, seen, levels = [self.proc.pid], 0, None
        while todo and seen < 10000:
            pid = todo.pop()
            seen += 1
            ids = []
            try:
                with open(f"/proc/{pid}/status", "rb") as fh:
                    for line in fh:
                        if line.startswith(b"NSpid:"):
                            ids = line.split()[1:]
                            if levels is None:  # bwrap's own; the sandbox's pids have one level more
                                levels = len(ids) + 1
                            elif len(ids) != levels:
                                ids = None  # inside a run's own PID namespace: not the zygote's child
                            elif int(ids[-1]) == inner:
                                return pid
                            break
                if ids is None:
                    continue
                for tid in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                        todo.extend(int(c) for c in fh.read().split())
            except (OSError, ValueError):
                continue
        return None

    def close(self) -> None:
        proc = getattr(self, "proc", None)
        if proc is not None:
            try:
                if proc.stdin:
                    proc.stdin.close()  # lifeline: the zygote kills its children and exits
            except OSError:
                pass
            try:
                proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                execute.kill_group(proc.pid)
                proc.kill()
                proc.wait()
            if proc.stdout:
                proc.stdout.close()
        try:
            self._log.close()
        except Exception:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)
