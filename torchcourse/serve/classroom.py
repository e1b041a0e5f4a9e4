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

from torchcourse.runner.fileguard import RUN_FILES_AT_MOST  # (the most files one run holds before it is stopped)


def kernel_limit_warnings(jobs: int, sysctl_dir: str = "/proc/sys") -> list[str]:
    """Machine-wide kernel limits that one learner's runs could use up for everyone (Chinese
    warnings; none when the machine is set up for a class). ``fs.file-max``: one table for the
    machine; each run is stopped once it holds ~100,000 files (runner/fileguard.py), so the table
    must hold that for every run at once (the slots: ``jobs`` + 2) with room for the host.
    ``kernel.core_pattern`` piped to a program (apport, systemd-coredump): the kernel starts it, as
    root and outside every group, for each crashing process, whatever its RLIMIT_CORE."""
    def read(name: str) -> int | None:
        try:
            with open(f"{sysctl_dir}/{name}") as fh:
                return int(fh.read().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    out = []
    file_max = read("fs/file-max")
    needed = (max(1, jobs) + 2) * RUN_FILES_AT_MOST
    if file_max is not None and file_max < needed:
        out.append(f"fs.file-max 只有 {file_max}：每次运行最多能占用约 {RUN_FILES_AT_MOST} 个打开的文件才会被停止，"
                   f"{jobs} 个同时进行的运行（加上备用的）就能占满全机的打开文件表，那时别的学员的运行会卡住，"
                   f"这台机器上的其他程序也打不开文件。请以 root 运行 sysctl -w fs.file-max=9223372036854775807"
                   f"（systemd 的默认值；至少 {needed}）")
    hard = read("fs/pipe-user-pages-hard")
    if hard:
        out.append(f"fs.pipe-user-pages-hard 是 {hard}：所有代码块共用一个 uid，一个学员开足够多的管道后，别的学员新建管道会失败。"
                   "请以 root 运行 sysctl -w fs.pipe-user-pages-hard=0（默认值）")
    try:
        with open(f"{sysctl_dir}/kernel/core_pattern") as fh:
            core_pattern = fh.read().strip()
    except OSError:
        core_pattern = ""
    if core_pattern.startswith("|"):
        helper = core_pattern[1:].split()[0] if core_pattern[1:].split() else core_pattern
        out.append(f"kernel.core_pattern 把崩溃交给程序 {helper}：代码块的进程每崩溃一次，内核就在所有运行的限制之外"
                   "以 root 启动它，读取整个进程的内存映像（运行的 RLIMIT_CORE 是 0 也一样），一个学员的代码块反复崩溃"
                   "就能让它占满 CPU 和磁盘。请以 root 运行 sysctl -w kernel.core_pattern=core（运行不写 core 文件）")
    return out


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
