"""The sandbox around snippet runs in a shared classroom (and ``torchcourse run --sandbox``).

Built from what exists — bubblewrap, the kernel's namespaces, Landlock, resource limits — not a
filter of our own. Two layers:

1. **bwrap** around the interpreter (the warm zygote, or one cold run): new PID, network, IPC and
   UTS namespaces (no network at all: only a loopback that is down), ``--die-with-parent``, a
   new session, and a file system built from read-only binds of the system (``/usr``, ``/etc``,
   the ``/lib`` links) and of Python (the interpreter's prefix, the virtual environment, the
   runner's own scripts), an empty private ``/tmp``, a fresh ``/proc`` and a minimal ``/dev``, and
   the run directories' root writable. Nothing else is mounted: not ``/home``, not ``/root``,
   not TORCHCOURSE_HOME, the data and cache directories, the users file or the classroom's root
   (paths given in ``hide`` are masked even when they lie under a bound path). As root (a
   server), bwrap runs privileged and the process inside becomes an unprivileged uid
   (``TORCHCOURSE_SANDBOX_UID``, default 65534) before any Python of ours runs — with run slots
   the zygote keeps CAP_SETUID to give each slot's runs a uid of their own below it
   (:func:`slot_uids`), so the kernel's per-uid counts are each run's own; as a normal user
   (a learner's machine), bwrap uses an unprivileged user namespace.
2. **tc_jail.confine** in each snippet process (see tc_jail.py): a user namespace of its own (the
   process limit is per run), address-space / process / CPU / file-size limits, and a Landlock
   domain that lets it read the bound system paths and write only its own ``tc-run-*``
   directory, with no TCP and no signals or abstract sockets outside its domain. Concurrent runs
   forked from one zygote therefore cannot see, write or signal each other.

:func:`sandbox_problem` says (in Chinese) why the sandbox cannot work here, or None.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from torchcourse.runner import core, execute
from torchcourse.runner.cgroups import Cgroups
from torchcourse.runner.fileguard import FileGuard
from torchcourse.runner.tc_jail import run_nofile

RUNNER_DIR = os.path.dirname(os.path.abspath(__file__))
JAIL_SCRIPT = os.path.join(RUNNER_DIR, "tc_jail.py")
DEFAULT_MEM = 2 << 30  # address space a run may add (bytes)
DEFAULT_NPROC = 64  # processes (and threads) of one run
DEFAULT_FSIZE = 256 << 20  # the largest file a run may write
# a fresh interpreter's own address space besides the snippet's data (python + torch + numpy
# mapped: 0.64 GB here, 0.72 GB once its thread pool runs), added to the limit of a cold run; a
# warm run's limit is relative to the zygote's size instead
COLD_BASE_VM = 1 << 30
ZYGOTE_MEM = 2 << 30  # the zygote's share of the sandbox-wide memory group (torch's pages: ~0.35 GB)
SHM_SIZE = 16 << 20  # the sandbox's own /dev/shm (each run mounts a private one over it)
RUN_SHM_SIZE = 512 << 20  # each run's private /dev/shm (DataLoader workers' tensors, sem_open)
RUNS_TMPFS_PER_JOB = 1 << 30  # the run directories' tmpfs (classroom service only), per run at once
RUN_SPACE_RESERVE = 16 << 20  # below this much free room, a new run first waits for removals
SYSTEM_DIRS = ("/usr", "/etc")
LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

MSG_NO_BWRAP = "没有 bwrap（bubblewrap）：在 Debian / Ubuntu 上 `apt-get install bubblewrap`，Fedora 上 `dnf install bubblewrap`"
MSG_NO_LANDLOCK = ("内核的 Landlock 不可用（ABI {abi}，至少要 6）：需要 Linux ≥ 6.12，且启动参数的 lsm= 含 landlock"
                   "（看 /sys/kernel/security/lsm）")
MSG_NO_USERNS = ("bwrap 建不了沙箱：{err}。非 root 运行时它要用非特权的用户命名空间："
                 "sysctl -w user.max_user_namespaces=15000；Debian 旧内核还要 kernel.unprivileged_userns_clone=1；"
                 "Ubuntu 24.04 还要 kernel.apparmor_restrict_unprivileged_userns=0（或以 root 运行 serve）")
MSG_PROBE = "沙箱试运行失败：{err}"


def sandbox_uid() -> tuple[int, int]:
    """The uid:gid a privileged (root) sandbox runs snippets as."""
    raw = os.environ.get("TORCHCOURSE_SANDBOX_UID", "65534")
    try:
        uid, _, gid = raw.partition(":")
        return int(uid), int(gid or uid)
    except ValueError:
        return 65534, 65534


@functools.lru_cache(maxsize=16)
def _slot_uids(base: int, slots: int) -> tuple[int, ...]:
    return tuple(slot_uids(base, slots))


def slot_uids(base: int, slots: int) -> list[int]:
    """Each run slot's own kernel uid, counted down from below the sandbox's uid (65534: 65533,
    65532, …), skipping every uid that names a user of this machine (``/etc/passwd``, NSS)."""
    import pwd

    out, uid = [], base - 1
    while len(out) < slots and uid > 0:
        try:
            pwd.getpwuid(uid)
        except KeyError:
            out.append(uid)
        uid -= 1
    return out


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def default_hidden() -> list[str]:
    """Server files no snippet may see: TORCHCOURSE_HOME and the data and cache directories."""
    from torchcourse import paths

    out = []
    home = os.environ.get("TORCHCOURSE_HOME")
    if home:
        out.append(home)
    for f in (paths.data_dir, paths.cache_dir):
        try:
            out.append(str(f()))
        except Exception:  # noqa: BLE001 - no such directory on this platform
            pass
    return [os.path.realpath(p) for p in out]


def python_paths(python: str) -> list[str]:
    """Read-only paths the interpreter needs: its prefix and base prefix, the directory of its
    real executable, the site-packages directories (not an editable install's source tree)."""
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        prefix, base = sys.prefix, sys.base_prefix
        sp = [p for p in sys.path if p and ("site-packages" in p or "dist-packages" in p)]
    else:
        out = subprocess.run([python, "-c", "import sys,json;print(json.dumps([sys.prefix,sys.base_prefix,[p for p in sys.path if 'packages' in p]]))"], capture_output=True, text=True, timeout=60)
        import json

        prefix, base, sp = json.loads(out.stdout)
    found = [prefix, base, os.path.dirname(os.path.realpath(python)), os.path.dirname(os.path.abspath(python)), *sp]
    out: list[str] = []
    for p in found:
        p = os.path.realpath(p)
        if os.path.isdir(p) and not any(_under(p, q) for q in out) and not any(_under(p, s) for s in SYSTEM_DIRS):
            out = [q for q in out if not _under(q, p)] + [p]
    return out


_PRIVATE_MOUNTS = [False]
CLONE_NEWNS = 0x00020000
MS_NOSUID, MS_NODEV, MS_PRIVATE, MS_REC, MS_SHARED = 2, 4, 1 << 18, 1 << 14, 1 << 20


def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def private_mounts() -> bool:
    """Give this (still single-threaded, root) process a mount namespace of its own, every mount
    private: a tmpfs it mounts later is seen only by it and its children and vanishes with it.
    False when that is not possible (not root, threads already running)."""
    if _PRIVATE_MOUNTS[0]:
        return True
    if os.geteuid() != 0 or threading.active_count() > 1:
        return False
    libc = _libc()
    if libc.unshare(CLONE_NEWNS) != 0:
        return False
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return False
    _PRIVATE_MOUNTS[0] = True
    return True


def _mount_tmpfs(path: str, size: int, uid: int, gid: int, mode: int = 0o700) -> bool:
    opts = f"size={size},mode={mode:04o},uid={uid},gid={gid}".encode()
    return _libc().mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, opts) == 0


def _umount(path: str) -> None:
    _libc().umount2(path.encode(), 2)  # MNT_DETACH


class Sandbox:
    """One sandbox configuration (and its private directory of run directories)."""

    def __init__(self, python: str | None = None, *, hide: list[str] | tuple[str, ...] = (), mem: int = DEFAULT_MEM,
                 nproc: int = DEFAULT_NPROC, fsize: int = DEFAULT_FSIZE, root: str | None = None,
                 runs_tmpfs: int | None = None):
        """``runs_tmpfs``: bytes of a tmpfs mounted on the run directories' root, so that runs
        writing files without end fill that and not the server's disk — only by a process that
        has a mount namespace of its own (:func:`private_mounts`; the classroom service), where
        the mount vanishes with it."""
        self.python = python or execute.default_python()
        self.mem, self.nproc, self.fsize = int(mem), int(nproc), int(fsize)
        self.nofile = run_nofile(1)  # (SandboxRunner: from its runs at once)
        self.privileged = os.geteuid() == 0
        self.uid, self.gid = sandbox_uid() if self.privileged else (os.getuid(), os.getgid())
        # root: every run slot's processes have a uid of their own (slot_uids) and the sandbox's
        # gid, so the run directories give the group what they give the owner
        self.dir_mode = 0o770 if self.privileged else 0o700
        from torchcourse.runner.cgroups import sweep_dead

        sweep_dead(root or tempfile.gettempdir(), "tc-sandbox-", shutil.rmtree)  # left by a killed sandbox
        self.root = tempfile.mkdtemp(prefix=f"tc-sandbox-{os.getpid()}-", dir=root)
        self.runs_root = os.path.join(self.root, "runs")
        self.zygote_root = os.path.join(self.root, "zyg")
        for d in (self.runs_root, self.zygote_root):
            os.mkdir(d, 0o700)
            self.own(d, group=False)  # (only the zygote's uid uses the zygotes' directory)
        # the runs pass through the runs' directory to their own, and none writes in it: utime on
        # it was a channel from one run to every other (its times)
        runs_mode = 0o750 if self.privileged else 0o700
        os.chmod(self.runs_root, runs_mode)
        self.runs_on_tmpfs = False
        if runs_tmpfs and _PRIVATE_MOUNTS[0]:
            self.runs_on_tmpfs = _mount_tmpfs(self.runs_root, int(runs_tmpfs), self.uid, self.gid, runs_mode)
            # shared: each run's own tmpfs, mounted on its directory later (run_space), reaches the
            # zygote's bwrap (whose copy of this mount is its slave) and the runs forked from it
            if self.runs_on_tmpfs and _libc().mount(None, self.runs_root.encode(), None, MS_SHARED, None) != 0:
                _umount(self.runs_root)
                self.runs_on_tmpfs = False
        self.run_mounts: set[str] = set()
        # the run slots' cgroup.procs (each slot's memory group's, and its cpu group's on cgroup v1),
        # handed to the zygote (SandboxRunner)
        self.slot_fds: list[list[int]] = []
        self._cold_uids: dict[str, int] = {}  # a cold run's tc-run-* directory -> its uid (cold_uid)
        self._uids_lock = threading.Lock()
        # root: a proc of an empty PID namespace, bound into the sandbox, lets each run mount a
        # /proc of its own PID namespace (tc_jail.proc_anchor)
        self.proc_anchor = os.path.join(self.root, "proc") if self.privileged else None
        if self.proc_anchor:
            os.mkdir(self.proc_anchor, 0o755)
        self.read_paths = [*(d for d in SYSTEM_DIRS if os.path.isdir(d)), *python_paths(self.python), RUNNER_DIR]
        self.hidden = [os.path.realpath(p) for p in [*default_hidden(), *hide] if p]

    # -- files -----------------------------------------------------------------------------
    def own(self, path: str, group: bool = True) -> None:
        """Give ``path`` (and everything in it) to the sandbox's uid and gid, with ``group`` the
        group with the owner's rights (root only; else a no-op): a warm run's processes have their
        run slot's own uid (:meth:`slot_uids`) and the sandbox's gid. Which run reaches which
        directory is Landlock's to say (each run only its own)."""
        if not self.privileged:
            return

        def give(p: str) -> None:
            os.lchown(p, self.uid, self.gid)
            st = os.lstat(p)
            if group and not stat.S_ISLNK(st.st_mode):
                mode = stat.S_IMODE(st.st_mode)
                if (mode >> 3) & 0o7 != (mode >> 6) & 0o7:
                    os.chmod(p, (mode & ~0o070) | ((mode & 0o700) >> 3))

        give(path)
        if os.path.isdir(path):
            for dirpath, dirnames, filenames in os.walk(path):
                for n in dirnames + filenames:
                    give(os.path.join(dirpath, n))

    def slot_uids(self) -> list[int]:
        """The run slots' own uids (root with run slots: see :func:`slot_uids`) and one more for
        a warm run that finds no slot free, else []."""
        if not (self.privileged and self.slot_fds):
            return []
        return list(_slot_uids(self.uid, len(self.slot_fds) + 1))

    def cold_uid(self, base: str) -> int:
        """The uid of the cold run in ``base`` (until :meth:`release`): with run slots, a free one
        of as many uids again below the slots' (the zygote's uid sends files over unix sockets to
        every warm run: a cold run with that uid could use up its count of files in flight);
        without, the sandbox's uid."""
        n = len(self.slot_fds) + 1
        if not self.slot_uids():
            return self.uid
        with self._uids_lock:
            if base not in self._cold_uids:
                pool = _slot_uids(self.uid, 2 * n)[n:]
                used = set(self._cold_uids.values())
                # (more cold runs at once than slots: the last ones share a uid, never the zygote's)
                self._cold_uids[base] = next((u for u in pool if u not in used), pool[-1])
            return self._cold_uids[base]

    def run_space(self, base: str, size: int) -> None:
        """A tmpfs of ``size`` bytes on one run's ``tc-run-*`` directory (its files moved into it):
        a run that writes without end fills its own space, never another run's (classroom only)."""
        if not self.runs_on_tmpfs or base in self.run_mounts:
            return
        saved = {}
        run = os.path.join(base, "run")
        for name in os.listdir(run):
            with open(os.path.join(run, name), "rb") as fh:
                saved[name] = fh.read()
        if not _mount_tmpfs(base, size, self.uid, self.gid, self.dir_mode):
            return
        self.run_mounts.add(base)
        os.mkdir(run)
        for name, data in saved.items():
            with open(os.path.join(run, name), "wb") as fh:
                fh.write(data)

    def give_run(self, base: str, uid: int) -> None:
        """The run directory ``base`` (a ``tc-run-*``) becomes the run's alone once its uid is
        known: owned by that uid, mode 0700. Until then the sandbox's group reaches it like any
        run directory; after it no other run can even pass through it: Landlock keeps each run to
        its own directory for reading and writing, but not for ``stat`` or ``connect`` to a unix
        socket, and another run's directory names are in ``/proc/self/mountinfo``."""
        if not self.privileged:
            return
        # (the subdirectories too: a run that opened another's ``run/`` with O_PATH in the
        # milliseconds before could still stat what is in it through that descriptor)
        for d in (base, *(os.path.join(base, sub) for sub in ("run", "home", "tmp"))):
            try:
                os.chown(d, uid, self.gid)
                os.chmod(d, 0o700)
            except OSError:
                pass  # (the run is over and its directory gone)

    def release(self, base: str) -> None:
        with self._uids_lock:
            self._cold_uids.pop(base, None)
        if base in self.run_mounts:
            self.run_mounts.discard(base)
            _umount(base)

    def close(self) -> None:
        for base in list(self.run_mounts):
            self.release(base)
        if self.runs_on_tmpfs:
            _umount(self.runs_root)
            self.runs_on_tmpfs = False
        shutil.rmtree(self.root, ignore_errors=True)

    # -- commands --------------------------------------------------------------------------
    def env(self) -> dict[str, str]:
        """The whole environment inside: nothing of the server's (no token, no paths of it)."""
        return {"PATH": "/usr/local/bin:/usr/bin:/bin", **execute.FIXED_ENV, "HOME": "/nonexistent", "TMPDIR": "/tmp"}

    def pass_fds(self) -> tuple[int, ...]:
        return tuple(fd for fds in self.slot_fds for fd in fds)

    def jail_spec(self, *, relative: bool) -> dict:
        mem = self.mem if relative else self.mem + COLD_BASE_VM
        spec = {"read": [*self.read_paths, "/proc"], "mem": mem, "nproc": self.nproc, "fsize": self.fsize, "relative": relative,
                "shm": RUN_SHM_SIZE, "pidns": True, "nofile": self.nofile}
        if self.runs_on_tmpfs:  # a class: each run's directory is a file system of its own (run_space)
            spec["keeper"] = True  # flock() only on the run's own files (tc_supervise.LockKeeper)
        if relative:  # a warm run: the zygotes' directory (their control socket) is hidden from it
            spec["hide"] = [self.zygote_root]
        if relative and self.runs_on_tmpfs:  # and the other runs' directories (tc_jail.cover_other_runs)
            spec["runs"] = self.runs_root
        if relative and self.slot_fds:
            spec["slots"] = [list(fds) for fds in self.slot_fds]
            if self.slot_uids():
                spec["uids"] = self.slot_uids()
        return spec

    def bwrap_args(self, writable: list[str], chdir: str) -> list[str]:
        args = ["bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                "--die-with-parent", "--new-session"]
        if self.privileged:
            # for tc_jail --drop (the zygote keeps CAP_SETUID alone: tc_jail.take_uid)
            args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        else:
            args += ["--unshare-user"]
        args += ["--tmpfs", "/tmp"]
        made = {"/", "/tmp"}

        def parents(path: str) -> list[str]:
            out = []
            parts = Path(path).parts[1:-1]
            cur = ""
            for part in parts:
                cur += "/" + part
                if cur in made or any(_under(cur, r) for r in ro + writable if r != cur and _under(cur, r)):
                    continue
                made.add(cur)
                out += ["--perms", "0755", "--dir", cur]
            return out

        ro = list(self.read_paths)
        for link in LINKS:
            if os.path.islink(link):
                args += ["--symlink", os.readlink(link), link]
            elif os.path.isdir(link):
                ro.append(link)
        for p in sorted(ro, key=lambda x: x.count("/")):
            args += parents(p) + ["--ro-bind", p, p]
            made.add(p)
        for p in writable:
            args += parents(p) + ["--bind", p, p]
            made.add(p)
        if self.proc_anchor:
            args += parents(self.proc_anchor) + ["--ro-bind", self.proc_anchor, self.proc_anchor]
        for h in self.hidden:
            if any(_under(h, b) for b in ro + writable) and not any(_under(b, h) for b in ro + writable):
                if os.path.isdir(h):
                    args += ["--tmpfs", h]
                elif os.path.exists(h):
                    args += ["--ro-bind", "/dev/null", h]
        # /dev/shm: a tmpfs of the sandbox's own that the unprivileged uid may write (bwrap's --dev
        # leaves a root-owned directory): multiprocessing's locks (sem_open) and DataLoader
        # workers' shared tensors live there. Runs cannot list it (Landlock: no READ_DIR).
        args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(SHM_SIZE), "--tmpfs", "/dev/shm", "--chdir", chdir, "--"]
        return args

    def _anchor(self) -> list[str]:
        """Before bwrap (root): the proc anchor's mount namespace (tc_jail.proc_anchor)."""
        return [self.python, "-I", "-S", JAIL_SCRIPT, "--proc-anchor", self.proc_anchor, "--"] if self.proc_anchor else []

    def _drop(self, keep_setuid: bool = False, uid: int | None = None) -> list[str]:
        how = "--drop-keep-setuid" if keep_setuid else "--drop"
        uid = self.uid if uid is None else uid
        return [self.python, "-I", "-S", JAIL_SCRIPT, how, f"{uid}:{self.gid}", "--"] if self.privileged else []

    def zygote_command(self, zygote_dir: str) -> list[str]:
        """What goes before ``python zygote.py …``: bwrap, then the drop to the sandbox's uid —
        keeping CAP_SETUID when there are run slots, to give each slot's runs its own uid."""
        return [*self._anchor(), *self.bwrap_args([self.runs_root, zygote_dir], zygote_dir), *self._drop(bool(self.slot_uids()))]

    def cold_wrap(self, base: str) -> tuple[list[str], list[str]]:
        """(outer, inner) for execute.run_cold: bwrap binding only this run's directory, and the
        confinement of the snippet's own interpreter (an absolute address-space limit)."""
        import json

        spec = {**self.jail_spec(relative=False), "dir": base}
        outer = [*self._anchor(), *self.bwrap_args([base], os.path.join(base, "run")), *self._drop(uid=self.cold_uid(base))]
        inner = [self.python, "-I", "-S", JAIL_SCRIPT, "--confine", json.dumps(spec), "--"]
        return outer, inner


MSG_RUN_MEM = "🧱 这次运行用完了它自己的内存上限（{mb} MB，这次运行的所有进程合计），系统终止了其中占内存最多的进程"
MSG_CLASS_MEM = "🧱 沙箱里同时进行的所有运行合计的内存总上限（{mb} MB）用完了（不是这次运行自己的上限），系统终止了这次运行占内存最多的进程"
MSG_PROCESS_MEM = "🧱 这次运行的一个进程达到了每个进程的内存上限（{mb} MB 地址空间），内存分配失败"
MSG_NO_RUN_LIMIT = "（这台机器上没有按次运行合计的内存上限，只有每个进程的上限）"
MSG_RUN_FILES = ("🗂️ 这次运行同时持有的文件（打开的文件描述符加上文件映射）超过了每次运行的上限 {cap:,} 个"
                 "（停止时约 {n:,} 个），它的所有进程已被终止：整台机器只有一张打开文件表，由所有运行共用")
MSG_RUN_KMEM = ("🧱 这次运行占用的内核内存（打开的文件、内存映射、epoll 监视、管道、套接字里没读走的数据等）超过了每次运行的上限 {cap} MB"
                "（停止时约 {n} MB），它的所有进程已被终止：这些内核表由整台机器的所有运行共用")
MSG_RUN_SOCKETS = ("🔌 这次运行同时持有的套接字超过了每次运行的上限 {cap:,} 个（停止时约 {n:,} 个，含 TIME_WAIT 的连接），"
                   "它的所有进程已被终止：套接字里的数据和选项占用的内核内存不算在任何一次运行的内存上限里")
MSG_RUN_LOCKS = ("🔒 这次运行同时持有的文件锁超过了每次运行的上限 {cap:,} 个（停止时约 {n:,} 个），它的所有进程已被终止："
                 "整台机器的文件锁登记在同一张表里，锁越多，查看这张表时机器上每个加锁的进程就等得越久")
_OOM_MARKERS = ("MemoryError", "can't allocate memory", "Cannot allocate memory")


def _out_of_memory(res: core.RunResult) -> bool:
    """The run ended on a failed allocation (RLIMIT_AS: MemoryError, torch's allocator)."""
    raised = (res.raised or "").rsplit(".", 1)[-1]
    if raised.endswith("MemoryError"):
        return True
    tail = (res.actual or "").strip().splitlines()[-1:] or [""]
    return any(m in tail[0] for m in _OOM_MARKERS)


class SandboxRunner(core.Runner):
    """A :class:`torchcourse.runner.Runner` whose every run (warm and cold) is sandboxed."""

    def __init__(self, cache_dir: Path | None = None, warm: bool = True, *, python: str | None = None,
                 preload=None, hash_seed: str | None = None, sandbox: Sandbox | None = None, hide=(),
                 env: dict[str, str] | None = None, jobs: int = 2, total_mem: int | None = None,
                 run_space: int | None = None, data=(), cgroups: bool | None = None):
        """``env``: variables added to every run's environment (``run --sandbox`` passes the
        user's TORCHCOURSE_HOME, so that a file can try — and fail — to reach it). ``jobs``: runs
        at once, for the sandbox-wide memory group (``total_mem``, default jobs × the per-run limit
        + the zygote's share). ``run_space``: bytes of the run directories' tmpfs (see Sandbox).
        ``cgroups``: False runs without memory cgroups even as root (None: unless
        TORCHCOURSE_SANDBOX_CGROUPS=0): only the per-process limits then hold."""
        super().__init__(cache_dir, warm, python=python, preload=preload, hash_seed=hash_seed, data=data)
        self.sandbox = sandbox or Sandbox(self.python, hide=hide, runs_tmpfs=run_space or jobs * RUNS_TMPFS_PER_JOB)
        self._runs_root = self.sandbox.runs_root
        self.run_space_each = max(16 << 20, int(run_space or jobs * RUNS_TMPFS_PER_JOB) // max(1, jobs))  # each run's own tmpfs
        self._extra_env = dict(env or {})
        sb = self.sandbox
        if sb.runs_on_tmpfs:
            # a class: each run's torch uses as many threads as its share of the cores. Its OpenMP
            # threads meet at every parallel region, and with another slot's busy process on a core
            # one of them waited a scheduler slice each time: another learner's ordinary torch
            # loop made a 2-thread run 31-53x slower (1 thread: 1.0-1.2x, its fair share)
            self._extra_env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // max(1, jobs))))
        sb.nofile = run_nofile(jobs)
        self.cgroups_mem = int(total_mem or jobs * sb.mem + ZYGOTE_MEM)
        # one memory group per run slot below the sandbox's: at most ``jobs`` runs at once, plus
        # the zygote's spare and a run still exiting
        self.cgroups = Cgroups(os.path.basename(sb.root), total_mem=self.cgroups_mem, total_pids=jobs * (sb.nproc + 8) + 32,
                               slots=jobs + 2, slot_mem=sb.mem, enabled=cgroups, weight=jobs)
        if self.cgroups.slots:
            sb.slot_fds = self.cgroups.slot_fds()
        # the files each run holds at once (the machine's one open-file table): see fileguard
        self.guard = FileGuard(v2=self.cgroups.v2) if self.cgroups.slots else None
        self._slot = threading.local()  # this thread's run: its memory group and its counters before
        self._slots_held: dict[int, int] = {}  # run slot -> warm runs in flight there (any zygote)
        self._slots_lock = threading.Lock()
        self._reclaiming: set[int] = set()  # slots whose memory group is being given back (_on_slot_end)
        self._learner = threading.local()  # whose run this thread runs (run_as), for the CPU weights
        self._cpu_runs: dict[str, tuple[str, object]] = {}  # CPU group -> (learner, the run's token)
        self._cpu_share: dict[str, float] = {}  # CPU group -> the share last written
        self._cpu_lock = threading.Lock()

    def run_as(self, learner: str, snippet, **kw) -> core.RunResult:
        """:meth:`run`, for ``learner`` of a class: while it runs, each of the learner's runs in
        flight weighs 1/n of a run on the CPU (n: their runs in flight), so that all of a learner's
        runs together weigh as much as one run of another learner. By run slot alone, one learner's
        three busy runs at ``--jobs 4`` on 2 cores left another learner's run 1/4 of the CPU
        (2.3-2.7x slower)."""
        self._learner.name = learner
        try:
            return self.run(snippet, **kw)
        finally:
            self._learner.name = None

    def _weigh_in(self, group: str | None) -> None:
        """This thread's run is now in memory group ``group``: weigh its CPU group as its learner's."""
        learner = getattr(self._learner, "name", None)
        cpu = self.cgroups.cpu_group(group)
        if learner is None or cpu is None:
            return
        token = object()
        with self._cpu_lock:
            self._cpu_runs[cpu] = (learner, token)
            self._slot.cpu.append((cpu, token))
            self._rebalance(learner)

    def _weigh_out(self) -> None:
        """This thread's run has ended: its CPU groups weigh as any run's again (unless another run
        has them by now), and its learner's other runs weigh more."""
        runs, self._slot.cpu = getattr(self._slot, "cpu", []), []
        with self._cpu_lock:
            for cpu, token in runs:
                held = self._cpu_runs.get(cpu)
                if held is None or held[1] is not token:
                    continue
                del self._cpu_runs[cpu]
                if self._cpu_share.pop(cpu, 1.0) != 1.0:
                    self.cgroups.weigh(cpu, 1.0)
                self._rebalance(held[0])

    def _rebalance(self, learner: str) -> None:
        mine = [cpu for cpu, (who, _t) in self._cpu_runs.items() if who == learner]
        for cpu in mine:
            self._set_share(cpu, 1.0 / len(mine))

    def _set_share(self, cpu: str, share: float) -> None:
        if self._cpu_share.get(cpu) != share and self.cgroups.weigh(cpu, share):
            self._cpu_share[cpu] = share

    def _env_overrides(self) -> dict[str, str]:
        return {**self._extra_env, **super()._env_overrides()}

    def gpu_available(self) -> bool:
        return False  # no device is mounted in the sandbox

    def fingerprint(self) -> dict:
        return {**super().fingerprint(), "sandbox": 1}

    def _new_zygote(self):
        from torchcourse.runner.warm import Zygote

        with self._slots_lock:
            # a replaced zygote's runs still in flight keep their slots: the new zygote's runs go
            # elsewhere, so that no two runs ever share one run's memory limit
            busy = [slot for slot, n in self._slots_held.items() if n > 0]
        z = Zygote(self.python, preload=self.preload, env=self._env_overrides(), sandbox=self.sandbox, busy_slots=busy)
        z.on_slot = self._on_slot
        z.on_slot_end = self._on_slot_end
        self.cgroups.enter(z.proc.pid)  # the zygote and its spare (its torch pages stay charged where they were)
        return z

    def _on_slot(self, slot) -> None:
        """A warm run started in run slot ``slot`` (its processes are in that group already; the
        snippet has not allocated anything yet)."""
        group = self.cgroups.slots[slot] if isinstance(slot, int) and 0 <= slot < len(self.cgroups.slots) else None
        uids = self.sandbox.slot_uids()
        base = getattr(self._slot, "base", None)
        if base and isinstance(slot, int) and 0 <= slot < len(uids):
            self.sandbox.give_run(base, uids[slot])
        if group is not None:
            with self._slots_lock:
                self._slots_held[slot] = self._slots_held.get(slot, 0) + 1
        self._slot.group = group
        self._slot.before = self.cgroups.counters(group)
        self._watch(group)
        self._weigh_in(group)

    def _watch(self, group: str | None) -> None:
        if self.guard is not None and group is not None:
            self.guard.unwatch(getattr(self._slot, "watch", None))  # (a retried run's first try)
            base = getattr(self._slot, "base", None)
            dev = None
            if base in self.sandbox.run_mounts:  # (its own tmpfs: every lock on it is the run's)
                try:
                    dev = os.stat(base).st_dev
                except OSError:
                    pass
            self._slot.watch = self.guard.watch(group, dev)

    def _on_slot_end(self, slot) -> None:
        self._weigh_out()  # (before the slot may go to another run)
        if isinstance(slot, int):
            with self._slots_lock:
                if self._slots_held.get(slot, 0) > 0:
                    self._slots_held[slot] -= 1
                free = self._slots_held.get(slot, 0) == 0 and slot not in self._reclaiming
                if free:
                    self._reclaiming.add(slot)
            if free and 0 <= slot < len(self.cgroups.slots):
                # off the run's clock and the next run's: the zygote hands out the slot that has
                # been free longest, so this one's turn comes after the others'
                threading.Thread(target=self._reclaim, args=(slot,), name="tc-slot-reclaim", daemon=True).start()
            elif free:
                with self._slots_lock:
                    self._reclaiming.discard(slot)

    def _reclaim(self, slot: int) -> None:
        try:
            self.cgroups.reclaim(self.cgroups.slots[slot])
        finally:
            with self._slots_lock:
                self._reclaiming.discard(slot)

    def _memory_note(self, res: core.RunResult, whole_before: int) -> None:
        """Say whose memory limit ended the run: its own run's (all its processes together), the
        class's total, or one process's own limit (RLIMIT_AS: MemoryError)."""
        group = getattr(self._slot, "group", None)
        stopped = getattr(self._slot, "stopped", None)
        if stopped:
            why, n = stopped
            self._note(res, MSG_RUN_FILES.format(cap=self.guard.cap, n=n) if why == "files"
                       else MSG_RUN_SOCKETS.format(cap=self.guard.socket_cap, n=n) if why == "sockets"
                       else MSG_RUN_LOCKS.format(cap=self.guard.lock_cap, n=n) if why == "locks"
                       else MSG_RUN_KMEM.format(cap=self.guard.kmem_cap >> 20, n=n >> 20))
            return
        kills, fail = getattr(self._slot, "after", None) or self.cgroups.counters(group)
        b_kills, b_fail = getattr(self._slot, "before", (0, 0))
        run_mb, total_mb = self.sandbox.mem >> 20, self.cgroups_mem >> 20
        note = ""
        if group and kills > b_kills:
            if fail > b_fail:
                note = MSG_RUN_MEM.format(mb=run_mb)
            else:
                note = MSG_CLASS_MEM.format(mb=total_mb)
        elif not group and self.cgroups.oom_kills() > whole_before:
            note = MSG_CLASS_MEM.format(mb=total_mb)
        elif _out_of_memory(res):
            note = MSG_PROCESS_MEM.format(mb=run_mb) + ("" if self.cgroups.slots else MSG_NO_RUN_LIMIT)
        if note:
            self._note(res, note)

    @staticmethod
    def _note(res: core.RunResult, note: str) -> None:
        res.limit_note = note
        res.message = (note + " " + res.message).strip()

    def _run(self, snippet, **kw) -> core.RunResult:
        self._slot.group, self._slot.before, self._slot.cold, self._slot.watch = None, (0, 0), [], None
        self._slot.stopped, self._slot.after, self._slot.cpu = None, None, []
        try:
            return self._run_noted(snippet, **kw)
        finally:
            self._weigh_out()
            if self.guard is not None:
                self.guard.unwatch(self._slot.watch)  # (a run that ended without its verdict)
            for group in self._slot.cold:  # (a cold run's own memory group, read by the verdict)
                threading.Thread(target=self.cgroups.remove, args=(group,), daemon=True).start()

    def _run_noted(self, snippet, **kw) -> core.RunResult:
        before = self.cgroups.oom_kills()
        if self.sandbox.runs_on_tmpfs:
            # a run that filled the run space is removed in the background: the next run (another
            # learner's, at once) waits for that instead of finding no room for its own directory
            try:
                st = os.statvfs(self.sandbox.runs_root)
                if st.f_bavail * st.f_frsize < RUN_SPACE_RESERVE:
                    core.drain_removals()
            except OSError:
                pass
        try:
            # (a zygote that can no longer confine a run says so out of band, and core replaces it
            # and runs the snippet once more: see warm.ZygoteError.jail_failed)
            res = super()._run(snippet, **kw)
        except OSError as exc:  # no room even for the run's directory
            return core.RunResult("error", expected=snippet.expected, message=f"💥 无法运行代码片段：{exc}")
        if not res.cached:
            self._memory_note(res, before)
        return res

    def _prepare(self, base: str) -> None:
        self.sandbox.run_space(base, self.run_space_each)
        execute.private_dirs(os.path.join(base, "run"))
        self.sandbox.own(base)
        self._slot.base = base  # (a warm run's directory becomes its slot uid's: _on_slot)

    def _release(self, base: str) -> None:
        # the run's processes have ended: the guard lets its slot go and the memory counters are
        # read now, before the output is judged (a long verdict — a megabyte of output — must not
        # leave the guard on a slot that the next run, maybe another learner's, already uses)
        self._slot.stopped = self.guard.unwatch(self._slot.watch) if self.guard is not None else None
        self._slot.watch = None
        self._slot.after = self.cgroups.counters(getattr(self._slot, "group", None))
        self.sandbox.release(base)

    def _run_cold(self, run_dir: str, *, timeout: float, cancel, cleanup_dir: str) -> execute.RawRun:
        env = {**self.sandbox.env(), **execute.private_dirs(run_dir)}
        if self.sandbox.slot_uids():  # (a cold run's uid is its own too: Sandbox.cold_uid)
            self.sandbox.give_run(cleanup_dir, self.sandbox.cold_uid(cleanup_dir))

        group = self.cgroups.cold_group()  # a memory group of this run's own

        def start(pgid: int) -> None:
            # this run's bwrap, before its python starts (5-30 ms: cold runs only)
            if group:
                self.cgroups.enter(pgid, group)
                self._slot.group, self._slot.before = group, self.cgroups.counters(group)
                self._watch(group)
                self._weigh_in(group)
            else:
                self.cgroups.enter(pgid)
            self._track(pgid)

        if group:
            self._slot.cold.append(group)  # removed once the verdict has read its counters
        return execute.run_cold(run_dir, python=self.python, timeout=timeout, cancel=cancel, on_start=start, on_end=self._untrack,
                                cleanup_dir=cleanup_dir, env=self._env_overrides(), wrap=self.sandbox.cold_wrap(cleanup_dir), base_env=env)

    def close(self, wait: float = execute.ESCALATE_AFTER + 1.0) -> None:
        super().close(wait)
        if self.guard is not None:
            self.guard.close()
        self.cgroups.close()
        self.sandbox.close()


_problem_lock = threading.Lock()
_problem_cache: dict[str, str | None] = {}


def sandbox_problem(python: str | None = None) -> str | None:
    """None when the sandbox works here (a real sandboxed run was tried: bwrap, the uid drop, the
    user namespace, Landlock), else the reason in Chinese with what to install or set."""
    python = python or execute.default_python()
    with _problem_lock:
        if python not in _problem_cache:
            _problem_cache[python] = _probe(python)
        return _problem_cache[python]


PROBE_CODE = (
    "import os, socket\n"
    "s = socket.socket()\n"
    "try:\n"
    "    s.connect(('127.0.0.1', 9))\n"
    "    print('net-open')\n"
    "except OSError:\n"
    "    print('net-closed')\n"
    "try:\n"
    "    open('/etc/hostname-tc-probe', 'w')\n"
    "    print('fs-open')\n"
    "except OSError:\n"
    "    print('fs-closed')\n"
    "print('uid', os.getuid())\n"
)


def _probe(python: str) -> str | None:
    if shutil.which("bwrap") is None:
        return MSG_NO_BWRAP
    from torchcourse.runner import tc_jail

    abi = tc_jail.landlock_abi()
    if abi < tc_jail.MIN_ABI:
        return MSG_NO_LANDLOCK.format(abi=abi)
    try:
        sb = Sandbox(python)
    except OSError as exc:
        return MSG_PROBE.format(err=exc)
    try:
        base = core._new_base(sb.runs_root)
        run_dir = os.path.join(base, "run")
        os.mkdir(run_dir)
        Path(run_dir, execute.SNIPPET_FILE).write_text(PROBE_CODE, encoding="utf-8")
        execute.private_dirs(run_dir)
        sb.own(base)
        outer, inner = sb.cold_wrap(base)
        cmd = [*outer, *inner, python, "-I", "-S", execute.SNIPPET_FILE]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=run_dir, env={**sb.env(), **execute.private_dirs(run_dir)})
        except (OSError, subprocess.SubprocessError) as exc:
            return MSG_PROBE.format(err=exc)
        text = out.stdout + out.stderr
        if out.returncode != 0 or "net-closed" not in text or "fs-closed" not in text:
            err = (out.stderr.strip().splitlines() or [f"退出码 {out.returncode}"])[-1]
            if "bwrap" in out.stderr and ("namespace" in out.stderr or "uid map" in out.stderr or "Operation not permitted" in out.stderr or "Permission denied" in out.stderr):
                return MSG_NO_USERNS.format(err=err)
            if "net-open" in text or "fs-open" in text:
                return MSG_PROBE.format(err="网络或文件系统没有被隔离")
            return MSG_PROBE.format(err=err)
        if sb.privileged and f"uid {sb.uid}" not in text:
            return MSG_PROBE.format(err=f"代码没有以 uid {sb.uid} 运行")
        return None
    finally:
        sb.close()
