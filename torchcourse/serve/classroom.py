"""What a class served from one machine needs besides the users file: the sandbox check and the
one shared runner.

:func:`sandbox_problem` is the hook ``serve --users`` calls before it starts: a class runs
snippets that any learner may have edited into anything, so without a working sandbox it refuses
to start and prints why. It asks :mod:`torchcourse.runner.sandbox` (the sandbox snippet runs use);
without that module, bubblewrap itself is tried. :class:`ClassRunner` then starts the class's
shared runner service (:mod:`torchcourse.runner.classroom`).
"""

from __future__ import annotations

import shutil
import subprocess


def sandbox_problem() -> str | None:
    """Why snippets cannot be sandboxed on this machine (Chinese), or None when they can."""
    try:
        from torchcourse.runner import sandbox
    except ImportError:
        sandbox = None
    probe = getattr(sandbox, "problem", None) or getattr(sandbox, "sandbox_problem", None)
    if probe is not None:
        return probe()
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "找不到 bwrap（bubblewrap）。多人课堂的代码块要在沙箱里运行：apt-get install bubblewrap"
    try:
        r = subprocess.run([bwrap, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "--", "true"],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap 启动不了：{exc}"
    if r.returncode != 0:
        why = (r.stderr.strip().splitlines() or ["没有说原因"])[-1]
        return (f"bwrap 在这台机器上用不了（{why}）；常见原因是内核不允许非特权用户命名空间"
                "（sysctl kernel.unprivileged_userns_clone=1，或容器没有放开）")
    return None


class ClassRunnerError(RuntimeError):
    """The class's shared runner did not start (the message says why, in Chinese)."""


class ClassRunner:
    """The one warm runner service of a class (:mod:`torchcourse.runner.classroom`), started by
    ``serve --users`` before any app and ended after the last: every learner's app reaches it
    through ``TORCHCOURSE_CLASS_RUNNER`` (its unix socket, in a private 0700 directory) and queues
    its runs there under ``TORCHCOURSE_LEARNER``. The users file and the data root are hidden
    from every snippet."""

    START_WAIT = 120.0  # seconds for the service to listen (it checks the sandbox first)

    def __init__(self, *, hide: list[str], preload: tuple[str, ...] | None = None, jobs: int | None = None,
                 data: tuple[str, ...] = ()) -> None:
        import json
        import os
        import select
        import sys
        import tempfile
        import time

        self.dir = tempfile.mkdtemp(prefix="tc-class-")  # 0700: serve's user only
        self.socket = os.path.join(self.dir, "runner.sock")
        argv = [sys.executable, "-m", "torchcourse.runner.classroom", "--socket", self.socket, "--lifeline"]
        for path in hide:
            argv += ["--hide", str(path)]
        for module in preload or ():
            argv += ["--preload", module]
        for path in data:  # the course's data files, copied into every run directory
            argv += ["--data", str(path)]
        if jobs:
            argv += ["--jobs", str(jobs)]
        self.errors = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors,
                                     start_new_session=True)  # Ctrl+C reaches serve, which ends it after the apps
        line, end = b"", time.monotonic() + self.START_WAIT
        while not line.endswith(b"\n") and self.proc.poll() is None and time.monotonic() < end:
            if select.select([self.proc.stdout], [], [], 0.1)[0]:
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                if not chunk:
                    break
                line += chunk
        try:
            self.info = json.loads(line.decode("utf-8", "replace") or "{}")
        except ValueError:
            self.info = {}
        if not self.info.get("ok"):
            self.errors.seek(0)
            why = self.errors.read().decode("utf-8", "replace").strip().splitlines()
            self.stop()
            raise ClassRunnerError(why[-1] if why else f"课堂运行服务没有启动（退出码 {self.proc.returncode}）")
        self.jobs = int(self.info.get("jobs") or 0)

    def env(self) -> dict[str, str]:
        from torchcourse.runner.classroom import ENV_SOCKET

        return {ENV_SOCKET: self.socket}

    def stop(self) -> None:
        import shutil
        import signal

        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                import os

                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        self.errors.close()
        shutil.rmtree(self.dir, ignore_errors=True)
