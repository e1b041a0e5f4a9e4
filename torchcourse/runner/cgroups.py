"""The memory, CPU and process-count cgroups of :mod:`torchcourse.runner.sandbox`: one group for
the whole sandbox, and below it one memory group and one CPU group per run slot."""

from __future__ import annotations

import os
import threading

from torchcourse.runner.tc_supervise import descendants

# TORCHCOURSE_SANDBOX_CGROUPS=0 (or off/no/false): no cgroups even as root (the fallback below)
ENV_SWITCH = "TORCHCOURSE_SANDBOX_CGROUPS"


RUN_SOCKET_MEM = 64 << 20  # bytes of socket buffers per run (cgroup v1's memory.kmem.tcp.limit_in_bytes)


def cgroups_wanted(flag: bool | None = None) -> bool:
    if flag is not None:
        return bool(flag)
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "off", "no", "false")


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
                _rmtree_groups(os.path.join(parent, name)) if remove is os.rmdir else remove(os.path.join(parent, name))
            except OSError:
                pass


def _rmtree_groups(d: str) -> None:
    """rmdir a cgroup and its child groups (a cgroup's files cannot be removed, only its dirs)."""
    for name in os.listdir(d):
        p = os.path.join(d, name)
        if os.path.isdir(p) and not os.path.islink(p):
            _rmtree_groups(p)
    os.rmdir(d)


def _write(path: str, value) -> bool:
    try:
        with open(path, "w") as fh:
            fh.write(str(value))
        return True
    except OSError:
        return False


def _own_cgroups(enabled: bool | None) -> list[list[str]] | None:
    """This process's ``/proc/self/cgroup`` as [hierarchy, controllers, path] entries, or None when
    no cgroups are to be made (not root, switched off, unreadable)."""
    if not cgroups_wanted(enabled) or os.geteuid() != 0:
        return None
    try:
        with open("/proc/self/cgroup") as fh:
            return [line.split(":", 2) for line in fh.read().splitlines() if line.count(":") >= 2]
    except OSError:
        return None


def _read_counters(path: str) -> dict[str, int]:
    out = {}
    try:
        with open(path) as fh:
            for line in fh:
                parts = line.split()
                if len(parts) == 2 and parts[1].isdigit():
                    out[parts[0]] = int(parts[1])
    except OSError:
        pass
    return out


class Cgroups:
    """Below this process's own cgroups, when it may make them (root on a server):

    * one memory and one process-count group for the whole sandbox (the zygote, every run, every
      cold run's bwrap): all runs together stay within ``total_mem`` / ``total_pids``;
    * ``slots`` memory groups below it, one per run slot, each limited to ``slot_mem``: a warm
      run's snippet process moves itself into its slot's group (the zygote hands it the open
      ``cgroup.procs`` of a free slot) before it forks anything or runs any code, so every process
      of that run is born there. The kernel's OOM killer then picks within that one run: many
      medium processes of one run can only kill that run's own processes;
    * one CPU group per run slot too (v1 ``cpu.shares``, v2 ``cpu.weight``): the runs share the
      CPU run by run, not process by process (and a class's runner weighs each learner's runs in
      flight together as one run: :meth:`weigh`, see SandboxRunner.run_as). Without it each ``setsid()``
      of a run's child makes a session of its own, and with the kernel's autogroup scheduling
      (``/proc/sys/kernel/sched_autogroup_enabled``, on by default) each session weighs as much
      as a whole other learner: 60 sessions of one run left another run 1/30 of a core. Inside
      a CPU group other than the root, autogroup no longer applies.

    The groups are made once, when the runner starts: moving a process into a v1 cgroup waits for
    an RCU grace period (5-15 ms here), so a warm run's process moves while it waits for its
    request (a spare), off the run's clock. A cold run gets a group of its own
    (:meth:`cold_group`): it is slow anyway.

    cgroup v1 (``memory.limit_in_bytes``; an OOM kill counts in ``memory.oom_control``'s
    ``oom_kill`` of the killed process's group, ``memory.failcnt`` says that group's own limit
    was hit) and v2 (``memory.max``, ``memory.events``: ``oom_kill``, and ``oom`` for an OOM of
    that group's own limit). v2 needs the memory controller delegated to this process's group.

    Without the groups (not root, no writable memory controller, or ``enabled=False`` /
    TORCHCOURSE_SANDBOX_CGROUPS=0) :attr:`active` is false and only the per-process limits hold
    (RLIMIT_AS per process, RLIMIT_NPROC per run)."""

    CONTROLLERS = ("memory", "pids", "cpu")

    def __init__(self, name: str, *, total_mem: int, total_pids: int, slots: int = 0, slot_mem: int | None = None,
                 enabled: bool | None = None, weight: int = 1):
        self.groups: dict[str, str] = {}  # controller -> the sandbox's group (v1), "memory" -> (v2)
        self.slots: list[str] = []  # the slot groups' directories (memory; v2: every controller)
        self.cpu_slots: list[str] = []  # v1: the slots' cpu groups (v2: the slots themselves)
        self._cpu_twin: dict[str, str] = {}  # v1: a cold run's memory group -> its cpu group
        self.v2 = False
        self.base = ""  # where the zygote and cold bwraps go (v2: a leaf beside the slots)
        self._cold = 0
        entries = _own_cgroups(enabled)
        if entries is None:
            return
        v1 = {}
        unified = None
        for _n, ctrls, path in entries:
            if ctrls == "":
                unified = path
            for ctrl in ctrls.split(","):
                if ctrl in self.CONTROLLERS and os.path.isdir(f"/sys/fs/cgroup/{ctrl}"):
                    v1.setdefault(ctrl, f"/sys/fs/cgroup/{ctrl}" + path)
        if "memory" in v1:
            self._make_v1(v1, name, total_mem, total_pids)
        elif unified is not None:
            self._make_v2(unified, name, total_mem, total_pids)
        # the whole sandbox weighs as much as ``weight`` (jobs) groups of the default weight beside
        # it: a class's apps (AppGroups) weigh as one, so busy screens leave the runs most of the CPU
        if "cpu" in self.groups:
            _write(os.path.join(self.groups["cpu"], "cpu.shares"), 1024 * max(1, weight))
        elif self.v2:
            _write(os.path.join(self.groups["memory"], "cpu.weight"), 100 * max(1, weight))
        if "memory" in self.groups:
            for i in range(slots):
                d = os.path.join(self.groups["memory"], f"slot-{i}")
                try:
                    os.mkdir(d)
                except OSError:
                    break
                self._limit(d, slot_mem or total_mem)
                self._limit_sockets(d)
                self.slots.append(d)
            if "cpu" in self.groups:  # v1 (v2's slots are the same directories, "+cpu" below)
                for i in range(len(self.slots)):
                    d = os.path.join(self.groups["cpu"], f"slot-{i}")
                    try:
                        os.mkdir(d)
                    except OSError:
                        break
                    self.cpu_slots.append(d)  # (cpu.shares: the default, 1024, the same for each)
                if len(self.cpu_slots) != len(self.slots):
                    self.cpu_slots = []

    # -- making --------------------------------------------------------------------------
    def _make_v1(self, v1: dict, name: str, total_mem: int, total_pids: int) -> None:
        for ctrl, parent in v1.items():
            sweep_dead(parent, "tc-sandbox-", os.rmdir)
            d = os.path.join(parent, name)
            try:
                os.mkdir(d)
            except OSError:
                continue
            self.groups[ctrl] = d
        if "memory" in self.groups:
            _write(os.path.join(self.groups["memory"], "memory.use_hierarchy"), 1)  # slots count in the total
            self._limit(self.groups["memory"], total_mem)
            self.base = self.groups["memory"]
        if "pids" in self.groups:
            _write(os.path.join(self.groups["pids"], "pids.max"), total_pids)

    def _make_v2(self, path: str, name: str, total_mem: int, total_pids: int) -> None:
        mount = self._v2_mount()
        if mount is None:
            return
        parent = mount + path.rstrip("/")
        try:
            with open(os.path.join(parent, "cgroup.controllers")) as fh:
                if "memory" not in fh.read().split():
                    return
        except OSError:
            return
        sweep_dead(parent, "tc-sandbox-", os.rmdir)
        # (a group with processes cannot pass controllers down, except the root: this process's
        # group must be the root of its namespace or already delegate memory)
        _write(os.path.join(parent, "cgroup.subtree_control"), "+memory +pids")
        _write(os.path.join(parent, "cgroup.subtree_control"), "+cpu")  # (without it: no CPU groups)
        d = os.path.join(parent, name)
        try:
            os.mkdir(d)
        except OSError:
            return
        if not _write(os.path.join(d, "memory.max"), total_mem):
            os.rmdir(d)
            return
        _write(os.path.join(d, "pids.max"), total_pids)
        _write(os.path.join(d, "cgroup.subtree_control"), "+memory +pids")
        _write(os.path.join(d, "cgroup.subtree_control"), "+cpu")
        base = os.path.join(d, "base")
        try:
            os.mkdir(base)
        except OSError:
            os.rmdir(d)
            return
        self.v2 = True
        self.groups["memory"] = d
        self.base = base

    @staticmethod
    def _v2_mount() -> str | None:
        try:
            with open("/proc/self/mountinfo") as fh:
                for line in fh:
                    left, _, right = line.partition(" - ")
                    if right.split()[:1] == ["cgroup2"]:
                        return left.split()[4]
        except OSError:
            pass
        return None

    def _limit(self, d: str, mem: int) -> None:
        _write(os.path.join(d, "memory.max" if self.v2 else "memory.limit_in_bytes"), int(mem))

    def _limit_sockets(self, d: str) -> None:
        """v1: a run's socket buffers (TCP, and UDP's) charged to its own group, at most
        :data:`RUN_SOCKET_MEM`. Unset, v1 charges them to no group, only to the kernel's one
        ``net.ipv4.tcp_mem`` for the whole machine: 9000 loopback connections of one run, in its own
        network namespace, parked 2.65 GB there in 3.4 s and every TCP connection of the host
        (serve's learners') was reset. (v2 charges socket memory to ``memory.max`` by itself.)"""
        if not self.v2:
            _write(os.path.join(d, "memory.kmem.tcp.limit_in_bytes"), RUN_SOCKET_MEM)

    # -- using ---------------------------------------------------------------------------
    @property
    def active(self) -> bool:
        return bool(self.groups)

    def slot_fds(self) -> list[list[int]]:
        """Each slot's ``cgroup.procs`` (its memory group's, and its cpu group's on v1), open for
        writing (by root: the kernel checks the opener's credentials), for the zygote: a run's
        process writes ``0`` to its slot's to move itself."""
        out = []
        for i, d in enumerate(self.slots):
            fds = []
            for g in (d, *(self.cpu_slots[i:i + 1])):
                try:
                    fds.append(os.open(os.path.join(g, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC))
                except OSError:
                    break
            if len(fds) != 1 + bool(self.cpu_slots):
                for fd in fds:
                    os.close(fd)
                break
            out.append(fds)
        return out

    def enter(self, pid: int, group: str | None = None) -> None:
        """``pid`` and its descendants join the sandbox's groups (or the memory group ``group``);
        their children are born there."""
        dirs = [group, *([self._cpu_twin[group]] if group in self._cpu_twin else [])] if group else (
            [self.base, *(d for c, d in self.groups.items() if c != "memory")] if self.base else [])
        for d in dirs:
            for p in [pid, *descendants(pid)]:
                _write(os.path.join(d, "cgroup.procs"), p)  # (False: gone meanwhile)

    def cold_group(self) -> str | None:
        """A memory group of its own for one cold run (remove it with :meth:`remove`)."""
        if "memory" not in self.groups or not self.slots:
            return None
        self._cold += 1
        d = os.path.join(self.groups["memory"], f"cold-{self._cold}")
        try:
            os.mkdir(d)
        except OSError:
            return None
        with open(os.path.join(self.slots[0], "memory.max" if self.v2 else "memory.limit_in_bytes")) as fh:
            _write(os.path.join(d, "memory.max" if self.v2 else "memory.limit_in_bytes"), fh.read().strip())
        self._limit_sockets(d)
        if self.cpu_slots:  # v1: a cpu group of its own too, beside the slots'
            twin = os.path.join(self.groups["cpu"], f"cold-{self._cold}")
            try:
                os.mkdir(twin)
                self._cpu_twin[d] = twin
            except OSError:
                pass
        return d

    def cpu_group(self, group: str | None) -> str | None:
        """The CPU group of a run slot's or a cold run's memory group ``group`` (v2: the same
        directory), or None."""
        if not group:
            return None
        if self.v2:
            return group
        if group in self._cpu_twin:
            return self._cpu_twin[group]
        if self.cpu_slots and group in self.slots:
            return self.cpu_slots[self.slots.index(group)]
        return None

    def weigh(self, cpu_group: str, share: float) -> bool:
        """Give CPU group ``cpu_group`` ``share`` of the default weight (v1 ``cpu.shares`` 1024,
        v2 ``cpu.weight`` 100; at least the kernel's least)."""
        if self.v2:
            return _write(os.path.join(cpu_group, "cpu.weight"), max(1, round(100 * share)))
        return _write(os.path.join(cpu_group, "cpu.shares"), max(2, round(1024 * share)))

    def remove(self, d: str | None) -> None:
        if not d:
            return
        twin = self._cpu_twin.pop(d, None)
        if twin:
            self.remove(twin)
        import time

        for _ in range(100):  # the last processes may still be exiting
            try:
                os.rmdir(d)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)

    def reclaim(self, d: str | None) -> bool:
        """Give back what ended runs left charged to slot ``d`` — the kernel's caches of the names
        they looked up and did not find, the pages of files they read — while it holds no process
        (v1 ``memory.force_empty``, v2 ``memory.reclaim``). Otherwise the slot's next run, anyone's,
        pays for it: 18 runs each looking up 450,000 missing names left 1.5-1.9 GB in one slot,
        and another learner's 1.5 GB allocation there took 12-13 s instead of 1.2-1.7."""
        if not d:
            return False
        import time

        for _ in range(40):  # the run's last processes may still be exiting (at most 2 s)
            try:
                with open(os.path.join(d, "cgroup.procs")) as fh:
                    if not fh.read().strip():
                        break
            except OSError:
                return False
            time.sleep(0.05)
        else:
            return False  # a run (or the spare) is in it: its pages are not to be pushed out
        if self.v2:
            return _write(os.path.join(d, "memory.reclaim"), 1 << 40)
        # the kernel frees what the slot holds on the writer's CPU time: on v1 this thread moves
        # itself (v1 moves single threads) into the slot's own CPU group first, so that time is
        # the slot's share of the runs' CPU, not the service's outside every group — one learner's
        # runs each leaving 48 MB of names they looked up and did not find cost the service
        # 0.17 s of CPU a run, and the host's processes ran 2x slower than beside plain busy runs.
        # (The calling thread stays there: call it from a thread of its own.)
        cpu = self.cpu_group(d)
        if cpu:
            _write(os.path.join(cpu, "tasks"), threading.get_native_id())
        return _write(os.path.join(d, "memory.force_empty"), 0)

    def counters(self, group: str | None) -> tuple[int, int]:
        """(OOM kills of processes in ``group``, times its own limit started an OOM or was hit)."""
        if not group:
            return 0, 0
        if self.v2:
            ev = _read_counters(os.path.join(group, "memory.events"))
            return ev.get("oom_kill", 0), ev.get("oom", 0)
        kills = _read_counters(os.path.join(group, "memory.oom_control")).get("oom_kill", 0)
        try:
            with open(os.path.join(group, "memory.failcnt")) as fh:
                fail = int(fh.read().strip() or 0)
        except (OSError, ValueError):
            fail = 0
        return kills, fail

    def oom_kills(self) -> int:
        """OOM kills in the sandbox's whole group (v2: hierarchical; v1: of its own processes)."""
        return self.counters(self.groups.get("memory"))[0]

    def close(self) -> None:
        for d in [*self.slots, *self.cpu_slots, *(d for d in (self.base,) if self.v2), *self.groups.values()]:
            self.remove(d)


APPS_PREFIX = "tc-apps-"
# the CPU one learner's app processes (all their tabs) may use together: one core — an app is one
# thread, so a single tab (starting, drawing) is never slowed by it
APP_CPU_CORES = 1.0
CPU_PERIOD_US = 100_000


class AppGroups:
    """serve as root, a class: the learners' app processes (the course's screens, one per tab) in
    CPU groups — one group for all apps beside the class runner's sandbox group, and in it one
    group per learner, all of the default weight.

    Without them every app sat in serve's own group, each in a session of its own (autogroup: each
    as heavy as the runner's whole sandbox): one learner's four tabs asking for 500×500 terminals,
    or pressing keys every 10 ms, made another learner's run 2.4-3.8× slower. Now a learner's apps
    together weigh as much as any other learner's apps, and all apps together as much as one
    group of the default weight: the class runner's sandbox beside them weighs ``jobs`` times that
    (:class:`Cgroups`'s ``weight``). And a learner's apps together get at most
    :data:`APP_CPU_CORES` of CPU time: shares only divide what is contended, and four tabs of one
    learner redrawing at 500×500 still made another learner's screen answer a key 2-2.8× slower.
    Nothing when not root or without a writable CPU controller."""

    def __init__(self, *, enabled: bool | None = None) -> None:
        self.root = ""  # the apps' group ("" when there is none)
        self.v2 = False
        self._learners: dict[str, str] = {}
        entries = _own_cgroups(enabled)
        if entries is None:
            return
        parent = next(("/sys/fs/cgroup/cpu" + path for _n, ctrls, path in entries
                       if "cpu" in ctrls.split(",") and os.path.isdir("/sys/fs/cgroup/cpu")), None)  # v1
        v2 = False
        if parent is None:
            mount = Cgroups._v2_mount()
            unified = next((path for _n, ctrls, path in entries if ctrls == ""), None)
            if mount is None or unified is None:
                return
            parent, v2 = mount + unified.rstrip("/"), True
        if v2:
            _write(os.path.join(parent, "cgroup.subtree_control"), "+cpu")
        sweep_dead(parent, APPS_PREFIX, os.rmdir)
        d = os.path.join(parent, f"{APPS_PREFIX}{os.getpid()}")
        try:
            os.mkdir(d)
        except OSError:
            return
        if v2 and not _write(os.path.join(d, "cgroup.subtree_control"), "+cpu"):
            os.rmdir(d)
            return
        self.root = d
        self.v2 = v2

    def group_of(self, learner: str) -> str:
        """The CPU group of ``learner``'s apps ("" when there are none)."""
        if not self.root:
            return ""
        d = self._learners.get(learner)
        if d is None:
            d = os.path.join(self.root, "l-" + (learner.encode("utf-8").hex() or "0"))
            try:
                os.mkdir(d)
            except FileExistsError:
                pass
            except OSError:
                return ""
            quota = int(APP_CPU_CORES * CPU_PERIOD_US)
            if self.v2:
                _write(os.path.join(d, "cpu.max"), f"{quota} {CPU_PERIOD_US}")
            else:
                _write(os.path.join(d, "cpu.cfs_period_us"), CPU_PERIOD_US)
                _write(os.path.join(d, "cpu.cfs_quota_us"), quota)
            self._learners[learner] = d
        return d

    def enter(self, pid: int, learner: str) -> bool:
        """``pid`` (a learner's new app) and what it started so far join that learner's group."""
        d = self.group_of(learner)
        if not d:
            return False
        moved = True
        for p in [pid, *descendants(pid)]:
            moved = _write(os.path.join(d, "cgroup.procs"), p) and moved
        return moved

    def close(self) -> None:
        if not self.root:
            return
        try:
            _rmtree_groups(self.root)  # (a group that still has a process stays: swept at the next start)
        except OSError:
            pass
        self.root = ""
