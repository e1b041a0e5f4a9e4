"""What a class served from one machine needs besides the users file: the sandbox check.

:func:`sandbox_problem` is the one hook ``serve --users`` calls before it starts: a class runs
snippets that any learner may have edited into anything, so without a working sandbox it refuses
to start and prints why. It asks :mod:`torchcourse.runner.sandbox` (the sandbox snippet runs use)
when that module exists; otherwise bubblewrap itself is tried the way a run would use it.
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
