"""The sandbox-wide memory and process-count cgroups of :mod:`torchcourse.runner.sandbox`."""

from __future__ import annotations

import os

from torchcourse.runner.tc_supervise import descendants


def sweep_dead(parent: str, prefix: str, remove) -> None:
    """Remove what a sandbox killed without its clean-up (SIGKILL) left in ``parent``: entries
    named ``PREFIX<pid>-…`` whose process is gone (``remove`` fails harmlessly on a busy one)."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        if not name.startswith(prefix):
            continue
        pid = name[len(prefix):].split("-", 1)[0]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            try:
                remove(os.path.join(parent, name))
            except OSError:
                pass


class Cgroups:
    """A memory and a process-count cgroup (v1) below this process's own, when it may make them
    (root on a server), for the whole sandbox: the zygote, every run forked from it and every cold
    run's bwrap, so that many processes of runs cannot add up past ``total_mem`` (RLIMIT_AS is per
    process), whatever they fork. The kernel's OOM killer then picks within the group: the
    largest process, a hostile run's, rather than the zygote (its torch pages are shared).

    Not one group per run: moving a process into a v1 cgroup takes ~30 ms here (the kernel waits
    for an RCU grace period, and every fork on the machine waits with it), more than a warm run.
    Without the groups (an unprivileged learner's own machine, cgroup v2 without delegation) the
    per-process limits still hold."""

    CONTROLLERS = ("memory", "pids")

    def __init__(self, name: str, *, total_mem: int, total_pids: int):
        self.groups: dict[str, str] = {}
        if os.geteuid() != 0:
            return
        try:
            with open("/proc/self/cgroup") as fh:
                lines = fh.read().splitlines()
        except OSError:
            return
        for line in lines:
            _n, ctrls, path = line.split(":", 2)
            for ctrl in ctrls.split(","):
                base = f"/sys/fs/cgroup/{ctrl}"
                if ctrl in self.CONTROLLERS and os.path.isdir(base) and ctrl not in self.groups:
                    sweep_dead(base + path, "tc-sandbox-", os.rmdir)
                    d = os.path.join(base + path, name)
                    try:
                        os.mkdir(d)
                    except OSError:
                        continue
                    self.groups[ctrl] = d
        if "memory" in self.groups:
            self._set(self.groups["memory"], {"memory.limit_in_bytes": total_mem})
        if "pids" in self.groups:
            self._set(self.groups["pids"], {"pids.max": total_pids})

    @property
    def active(self) -> bool:
        return bool(self.groups)

    @staticmethod
    def _set(d: str, values: dict) -> None:
        for k, v in values.items():
            try:
                with open(os.path.join(d, k), "w") as fh:
                    fh.write(str(v))
            except OSError:
                pass

    def enter(self, pid: int) -> None:
        """``pid`` and its descendants join the groups (their children are born in them)."""
        for d in self.groups.values():
            for p in [pid, *descendants(pid)]:
                try:
                    with open(os.path.join(d, "cgroup.procs"), "w") as fh:
                        fh.write(str(p))
                except OSError:
                    pass  # gone meanwhile

    def oom_kills(self) -> int:
        """How many processes the kernel has killed for the memory group's limit so far."""
        if "memory" not in self.groups:
            return 0
        try:
            with open(os.path.join(self.groups["memory"], "memory.oom_control")) as fh:
                for line in fh:
                    if line.startswith("oom_kill "):
                        return int(line.split()[1])
        except (OSError, ValueError):
            pass
        return 0

    def close(self) -> None:
        for d in self.groups.values():
            for _ in range(100):  # the last processes may still be exiting
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    import time

                    time.sleep(0.05)
