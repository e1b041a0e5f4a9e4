"""Confine one snippet process: the kernel's own mechanisms, applied from inside. Standard library
only (the zygote imports it as a plain module from this directory; ``python tc_jail.py`` wraps a
command).

What :func:`confine` does, in this order, to the calling (single-threaded) process:
  * a user namespace of its own (``unshare(CLONE_NEWUSER)``): the kernel counts RLIMIT_NPROC per
    user namespace, so the process limit is this run's own, not shared with the zygote or with the
    other learners' runs of the same sandbox; in it a network namespace of its own with only a
    loopback (TCP on 127.0.0.1 works, reaches nothing and no other run); then every capability
    is dropped again;
  * resource limits: address space (relative to the current size: a process forked from a
    torch-loaded zygote already maps hundreds of MB), processes, CPU seconds, file size, no core;
  * ``PR_SET_NO_NEW_PRIVS`` and a Landlock domain: read-only access to the system and Python
    paths it is given, full access to its own run directory only (no other run's, no /tmp),
    no TCP bind/connect unless its network is its own, no abstract unix sockets and no signals
    to processes outside the domain (its supervisor, the zygote, other runs).

It refuses (raises :class:`JailError`) rather than run a snippet half-confined.

As a command: ``python tc_jail.py [--drop UID:GID] [--confine JSON] -- CMD...`` drops to UID:GID
(when root), confines (JSON as for :func:`confine`), then execs CMD. ``--drop-keep-setuid
UID:GID`` drops the same way but keeps CAP_SETUID for CMD (the zygote: see :func:`take_uid`).
"""

import ctypes
import json
import os
import sys

# syscall numbers (the same on x86_64 and aarch64 for Landlock; unshare/capset differ per arch)
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

READ = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
MIN_ABI = 6  # below this a snippet could signal its supervisor or reach an abstract socket

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REC, MS_SLAVE = 1 << 14, 1 << 19
MS_REMOUNT, MS_BIND, MS_PRIVATE = 32, 4096, 1 << 18
PR_SET_PDEATHSIG = 1
SIOCSIFFLAGS = 0x8914
IFF_UP, IFF_LOOPBACK, IFF_RUNNING = 0x1, 0x8, 0x40
PR_SET_NO_NEW_PRIVS = 38
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

RLIMIT_DEFAULTS = {"mem": 2 << 30, "nproc": 64, "cpu": 70, "fsize": 256 << 20}
# descriptors per process (lowered, never raised): also the most files a run's uid may have in
# flight over unix sockets. Past 16,000 sockets in flight on the whole machine, with a cycle among
# them, every send makes the kernel walk them all (a kworker outside every cgroup took 81 % of a
# core for one run holding 18,000). All runs at once must stay below it together, so a class
# with more runs at once gives each fewer (run_nofile): up to 3 at 4,096, 6 at 2,500. The
# course's runs hold at most ~2,000 files each, a few hundred of them descriptors.
RUN_NOFILE = 4096
UNIX_INFLIGHT_BUDGET = 15_000


def run_nofile(jobs):
    """Descriptors per process of a run when ``jobs`` runs go at once (see :data:`RUN_NOFILE`)."""
    return max(512, min(RUN_NOFILE, UNIX_INFLIGHT_BUDGET // max(1, int(jobs))))


class JailError(Exception):
    pass


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc = None


def _lib():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    return _libc


def _check(rc, what):
    if rc < 0 or rc == -1:
        err = ctypes.get_errno()
        raise JailError(f"{what}: {os.strerror(err)} (errno {err})")
    return rc


def landlock_abi():
    """The kernel's Landlock ABI version, or 0 when Landlock is missing or disabled."""
    try:
        rc = _lib().syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    except Exception:
        return 0
    return max(0, int(rc))


def _handled_fs(abi):
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def landlock(read_paths, write_paths, dev_files=(), dev_dirs=(), tcp=False):
    """Restrict this process (and everything it starts) to reading ``read_paths`` and doing
    anything beneath ``write_paths``; ``dev_files`` may be read and written (/dev/null…),
    ``dev_dirs`` hold files it may create, read and write but not list (/dev/shm). No TCP (unless
    ``tcp``: in a network namespace of its own), no abstract unix sockets or signals outside the
    domain."""
    abi = landlock_abi()
    if abi < MIN_ABI:
        raise JailError(f"Landlock ABI {abi} < {MIN_ABI}")
    lib = _lib()
    fs = _handled_fs(abi)
    attr = _RulesetAttr(fs, 0 if tcp else NET_BIND_TCP | NET_CONNECT_TCP, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL)
    rfd = _check(lib.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0)), "landlock_create_ruleset")
    try:
        def allow(path, rights, directory=True):
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                return  # not there in this sandbox: nothing to allow
            try:
                if not directory or not os.path.isdir(path):
                    rights &= FILE_RIGHTS
                rule = _PathBeneath(rights & fs, fd)
                _check(lib.syscall(SYS_LANDLOCK_ADD_RULE, ctypes.c_int(rfd), ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH), ctypes.byref(rule), ctypes.c_uint32(0)), f"landlock_add_rule {path}")
            finally:
                os.close(fd)

        for p in read_paths:
            allow(p, READ)
        for p in dev_files:
            allow(p, FS_READ_FILE | FS_WRITE_FILE | FS_IOCTL_DEV, directory=False)
        for p in dev_dirs:
            allow(p, FS_READ_FILE | FS_WRITE_FILE | FS_MAKE_REG | FS_REMOVE_FILE | FS_TRUNCATE)
        for p in write_paths:
            allow(p, fs)
        _check(lib.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
        _check(lib.syscall(SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(rfd), ctypes.c_uint32(0)), "landlock_restrict_self")
    finally:
        os.close(rfd)


def own_user_namespace():
    """A user namespace for this process alone (RLIMIT_NPROC is counted per user namespace), its
    own uid and gid mapped to themselves (a tmpfs it mounts in it can then hold its files). Its
    capabilities in it are dropped by :func:`prepare` once its other namespaces are made."""
    uid, gid = os.geteuid(), os.getegid()
    _check(_lib().unshare(CLONE_NEWUSER), "unshare(CLONE_NEWUSER)")
    try:
        for name, text in (("uid_map", f"{uid} {uid} 1\n"), ("setgroups", "deny"), ("gid_map", f"{gid} {gid} 1\n")):
            with open(f"/proc/self/{name}", "w") as fh:
                fh.write(text)
    except OSError as exc:
        raise JailError(f"user namespace id map: {exc}") from exc


def own_ipc_and_shm(shm_size, hide=()):
    """A SysV IPC namespace and a mount namespace of this run's own, and in it a fresh
    ``/dev/shm`` of ``shm_size`` bytes: shared-memory segments and files of the run are its own,
    bounded, seen by no other run, and gone with its last process. Each directory of ``hide``
    (the zygotes' directories, with their control socket) is covered by an empty read-only tmpfs:
    Landlock does not cover ``connect()`` to a socket by path, and runs that connected to the
    zygote's socket in a loop kept it busy refusing them, slowing every learner's runs."""
    lib = _lib()
    _check(lib.unshare(CLONE_NEWIPC | CLONE_NEWNS), "unshare(CLONE_NEWIPC|CLONE_NEWNS)")
    opts = f"size={int(shm_size)},mode=1777".encode()
    _check(lib.mount(b"tmpfs", b"/dev/shm", b"tmpfs", ctypes.c_ulong(MS_NOSUID | MS_NODEV), opts), "mount /dev/shm")
    for path in hide:
        _check(lib.mount(b"tmpfs", os.fsencode(path), b"tmpfs", ctypes.c_ulong(MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC), b"size=4k,mode=0555"),
               f"mount over {path}")


def cover_other_runs(runs, own_dir):
    """In the run's own mount namespace (made by :func:`own_ipc_and_shm`): the runs' directory
    ``runs`` is covered by an empty read-only tmpfs with only ``own_dir`` (this run's
    ``tc-run-*``) bound back at its place. Every run directory is a tmpfs mount point of its own,
    and a mount point needs no permission for ``statvfs()``: a run measured how much another
    learner's run had written and how many files it held, as it went. The names of the runs in
    flight when this one starts stay in ``/proc/self/mountinfo`` (covered: no path reaches them);
    runs started later are not even listed there (this namespace no longer receives mounts)."""
    lib = _lib()
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    cwd = os.getcwd()
    fd = os.open(own_dir, os.O_PATH | os.O_DIRECTORY)
    try:
        lib.mount(None, os.fsencode(runs), None, ctypes.c_ulong(MS_PRIVATE | MS_REC), None)  # (not a mount point: nothing to stop)
        _check(lib.mount(b"tmpfs", os.fsencode(runs), b"tmpfs", ctypes.c_ulong(flags), b"size=4k,mode=0755"), f"mount over {runs}")
        os.mkdir(own_dir, 0o700)
        _check(lib.mount(f"/proc/self/fd/{fd}".encode(), os.fsencode(own_dir), None, ctypes.c_ulong(MS_BIND), None), f"bind {own_dir}")
        _check(lib.mount(None, os.fsencode(runs), None, ctypes.c_ulong(MS_REMOUNT | MS_BIND | MS_RDONLY | flags), None),
               f"read-only {runs}")
    finally:
        os.close(fd)
    os.chdir(cwd)


def _exit_like(status):
    """Leave this process with the wait status ``status`` (a signal's death, or an exit code)."""
    import signal

    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        except (OSError, ValueError, RuntimeError):
            pass
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _quiet_fds(keep):
    """Only ``keep`` and stdin/out/err (now /dev/null) stay open: a process that waits in a run's
    process chain holds none of the run's pipes or sockets."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    top = 3
    for fd in sorted(keep):
        if fd >= top:
            os.closerange(top, fd)
            top = fd + 1
    os.closerange(top, 1 << 16)


# What a run's own /proc shows beyond its own processes: an allow-list. Every other top-level entry
# is covered (a file by /dev/null, a directory by an empty read-only tmpfs): the machine's activity
# counters, which no namespace narrows (file-nr went 2051 -> 3337 while another learner's run opened
# 1,000 sockets), and files whose every read holds a lock the whole host needs — /proc/locks takes
# the machine's file-lock table for writing (8 readers made every flock and SQLite commit on the
# host 140-1,600x slower), /proc/fs/ext4/*/es_shrinker_info walks every cached inode of the root
# file system under a spinlock (host exec 10-23x slower). Kept: meminfo, stat and cpuinfo (libraries
# size their thread pools and buffers from them), sys (configuration; its counters below read
# empty), sysvipc (the run's own IPC namespace), uptime, version, filesystems, and the links (self,
# thread-self, mounts, net).
PROC_KEPT = frozenset({"meminfo", "stat", "cpuinfo", "sys", "sysvipc", "uptime", "version", "filesystems"})
MACHINE_COUNTERS = ("/proc/sys/fs/file-nr", "/proc/sys/fs/inode-nr", "/proc/sys/fs/inode-state", "/proc/sys/fs/dentry-state",
                    "/proc/sys/fs/dentry-negative", "/proc/sys/fs/aio-nr", "/proc/sys/kernel/pty/nr")


def hide_machine_wide(proc="/proc"):
    """In the run's own /proc (its mount namespace): every top-level entry that is neither a
    process's nor in :data:`PROC_KEPT` nor a link is covered, and :data:`MACHINE_COUNTERS` read
    empty (``/dev/null`` bound over each file, an empty read-only tmpfs over each directory)."""
    lib = _lib()
    ro = ctypes.c_ulong(MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    covered = []
    for name in os.listdir(proc):
        path = os.path.join(proc, name)
        if name.isdigit() or name in PROC_KEPT or os.path.islink(path):
            continue
        covered.append(path)
    for path in [*covered, *(p for p in MACHINE_COUNTERS if os.path.exists(p))]:
        if os.path.isdir(path):
            lib.mount(b"tmpfs", path.encode(), b"tmpfs", ro, b"size=4k,mode=0555")
        else:
            lib.mount(b"/dev/null", path.encode(), None, ctypes.c_ulong(MS_BIND), None)


def own_pid_namespace():
    """A PID namespace of this run's own, with a fresh read-only ``/proc`` (in the run's mount
    namespace, made by :func:`own_ipc_and_shm`): the run sees only its own processes there.

    The calling process stays outside and becomes the run's waiter: it forks the namespace's
    init (pid 1: mounts /proc, reaps orphans), which forks the process that returns from this
    function and goes on as the snippet (pid 2: signals to itself work as anywhere, unlike pid
    1's). The waiter leaves with the snippet's own wait status (its exit code, or the signal that
    killed it), or with the init's if the init died first (SIGKILL: the OOM killer's choice)."""
    import signal

    lib = _lib()
    _check(lib.unshare(CLONE_NEWPID), "unshare(CLONE_NEWPID)")
    r, w = os.pipe()
    init = os.fork()
    if init:  # the waiter, outside the namespace
        try:
            drop_capabilities()
        except JailError:
            pass
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _quiet_fds({r})
        data = b""
        while True:
            try:
                chunk = os.read(r, 64)
            except InterruptedError:
                continue
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        while True:
            try:
                _pid, status = os.waitpid(init, 0)
                break
            except InterruptedError:
                continue
            except ChildProcessError:
                status = signal.SIGKILL
                break
        try:
            status = int(data.split()[0])
        except (ValueError, IndexError):
            pass
        _exit_like(status)
    os.close(r)
    try:
        lib.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_DFL)  # pid 1 with no handler: no signal from inside reaches it
        # a fresh /proc of this namespace (read-only: the proc mount that makes it allowed is)
        if lib.mount(b"proc", b"/proc", b"proc", ctypes.c_ulong(MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC), None) == 0:
            hide_machine_wide()
        snippet = os.fork()
    except BaseException:
        os._exit(70)
    if snippet == 0:
        os.close(w)
        lib.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        return
    # the namespace's init: reap everything until the snippet's process ends, tell the waiter
    try:
        drop_capabilities()
        _quiet_fds({w})
        status = signal.SIGKILL
        while True:
            try:
                pid, st = os.waitpid(-1, 0)
            except InterruptedError:
                continue
            except ChildProcessError:
                break
            if pid == snippet:
                status = st
                break
        os.write(w, b"%d\n" % status)
    finally:
        os._exit(0)


def proc_anchor(path):
    """Root, before exec'ing bwrap: in a mount namespace of this process's own (a slave of the
    caller's), a proc file system of an empty, finished PID namespace at ``path``, bound read-only
    into the sandbox (outside every run's Landlock paths). The kernel lets an unprivileged
    namespace mount a new /proc only while one proc mount it sees is fully visible, and bwrap's
    own /proc has /proc/bus and /proc/irq covered."""
    lib = _lib()
    _check(lib.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _check(lib.mount(None, b"/", None, ctypes.c_ulong(MS_REC | MS_SLAVE), None), "mount --make-rslave /")
    pid = os.fork()
    if pid == 0:
        rc = 1
        try:
            if lib.unshare(CLONE_NEWPID) == 0:
                inner = os.fork()
                if inner == 0:
                    os._exit(0 if lib.mount(b"proc", path.encode(), b"proc", ctypes.c_ulong(MS_NOSUID | MS_NODEV | MS_NOEXEC), None) == 0 else 1)
                rc = os.waitstatus_to_exitcode(os.waitpid(inner, 0)[1])
        finally:
            os._exit(rc)
    if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0:
        raise JailError(f"mount proc on {path}")


_PRIVATE_NET = [False]


def own_network():
    """A network namespace for this process alone, with only its loopback, up (~0.6 ms): a snippet
    may use TCP on 127.0.0.1 (torch.distributed's gloo does), and reaches no other run that way,
    nor anything else."""
    import fcntl
    import socket
    import struct

    _check(_lib().unshare(CLONE_NEWNET), "unshare(CLONE_NEWNET)")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", IFF_UP | IFF_LOOPBACK | IFF_RUNNING))
    _PRIVATE_NET[0] = True


def drop_capabilities():
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    hdr = Header(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (Data * 2)()
    _check(_lib().capset(ctypes.byref(hdr), data), "capset")


def vm_size():
    """This process's virtual size in bytes (VmSize)."""
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _lowered(which, value):
    """``value``, or the current hard limit when that is lower (an unprivileged process cannot raise it)."""
    import resource

    hard = resource.getrlimit(which)[1]
    return value if hard == resource.RLIM_INFINITY or hard > value else hard


def set_limits(mem, nproc, cpu, fsize, *, relative=True, nofile=RUN_NOFILE):
    """``mem`` bytes of address space on top of what is mapped now (``relative``) or in all."""
    import resource

    base = vm_size() if relative else 0
    limits = [
        (resource.RLIMIT_AS, base + int(mem)),
        (resource.RLIMIT_NPROC, int(nproc)),
        (resource.RLIMIT_CPU, int(cpu)),
        (resource.RLIMIT_FSIZE, int(fsize)),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NOFILE, _lowered(resource.RLIMIT_NOFILE, int(nofile))),
    ]
    for which, value in limits:
        hard = value if which != resource.RLIMIT_CPU else value + 5
        try:
            resource.setrlimit(which, (value, hard))
        except (ValueError, OSError) as exc:
            raise JailError(f"setrlimit {which}: {exc}") from exc


def prepare(spec):
    """The part of :func:`confine` that needs no run directory (a warm spare does it while it
    waits for its request, off the run's clock: setting RLIMIT_CPU alone takes ~3 ms in a
    torch-sized process): the user namespace and the resource limits."""
    if spec.get("userns", True):
        own_user_namespace()
        if spec.get("netns", True):
            own_network()
        if spec.get("shm"):
            own_ipc_and_shm(spec["shm"], spec.get("hide") or ())
            if spec.get("pidns"):
                own_pid_namespace()  # returns in the snippet's process only
        if not spec.get("runs"):  # (else restrict drops them, once the run's directory is known)
            drop_capabilities()
    limits = {k: spec.get(k, v) for k, v in RLIMIT_DEFAULTS.items()}
    set_limits(limits["mem"], limits["nproc"], limits["cpu"], limits["fsize"], relative=bool(spec.get("relative", True)),
               nofile=spec.get("nofile", RUN_NOFILE))


def restrict(spec, own_dir, keeper=None):
    """The rest of :func:`confine`: the Landlock domain of this run's own directories, and the
    seccomp filter. ``keeper`` (with ``spec["keeper"]``): the socket to this run's supervisor,
    which then decides every ``flock()`` of the run (:func:`only_self_filter`)."""
    runs = spec.get("runs")
    if runs and spec.get("userns", True):  # (prepare kept the capabilities in the run's namespaces for this)
        try:
            if spec.get("shm") and os.path.dirname(os.path.normpath(own_dir)) == os.path.normpath(runs):
                cover_other_runs(runs, own_dir)
        finally:
            drop_capabilities()
    # the run directory and its private HOME and TMPDIR (siblings in the same tc-run-* directory);
    # not that directory itself: ``../x`` from the run directory is outside it, and refused
    writable = [os.path.join(own_dir, d) for d in ("run", "home", "tmp")]
    landlock(
        list(spec.get("read", ())),
        writable,
        dev_files=("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"),
        dev_dirs=("/dev/shm",),
        tcp=_PRIVATE_NET[0],
    )
    if spec.get("seccomp", True):
        if spec.get("keeper") and keeper is None:
            raise JailError("no flock keeper")  # (never a class run whose flock() reaches the host's files)
        only_self_filter(keeper, own_dir) if spec.get("keeper") else only_self_filter()
    elif keeper is not None:
        keeper.close()
    tmp = os.environ.get("TMPDIR")
    if tmp:  # torch.compile's kernel cache: the run's own (a shared one would be a channel between runs)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(tmp, "torchinductor")


# -- seccomp: the calls that act on another process by pid with only a same-uid check ---------
# prlimit64, setpriority, sched_set*, ioprio_set: the kernel lets a process change the limits and
# scheduling of any process of the same uid, and Landlock does not hook them; without run slots
# every run (and the zygote) has the sandbox's one uid (with them, a slot's runs follow one another
# on its uid: see take_uid). The filter lets them act on the caller only (pid 0 or its
# own pid); anything else gets EPERM. A tiny BPF program, written here with no library: the
# Debian binding of libseccomp exists for the system python only.
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
# name -> (x86_64, aarch64) syscall number
# (sched_setaffinity is not among them: libraries pin their own threads by thread id — onnxruntime
# does for each worker — and the run's own PID namespace, made before this filter, shows it no
# process but its own run's)
SELF_ONLY_PID = {"prlimit64": (302, 261), "sched_setparam": (142, 118), "sched_setscheduler": (144, 119),
                 "sched_setattr": (314, 274)}
SELF_ONLY_WHO = {"setpriority": (141, 140, 0), "ioprio_set": (251, 30, 1)}  # (x86_64, aarch64, the "process" value of ``which``)
# refused whole with ENOSYS, as on a kernel built without them (libraries fall back): the kernel
# keyrings are shared by every run of the one uid (a channel between learners, and a quota one run
# could use up), and io_uring is a large attack surface that no snippet of a course needs
# ... and inotify / fanotify: their instances and watches are counted per uid
# (fs.inotify.max_user_instances, 128 here): one run holding them all left every other learner's
# run without a watch. (None: no such call on that architecture.)
# ... and the kernel's native AIO (io_setup …): fs.aio-max-nr is one count for the whole machine,
# root not exempt, and one run took all 65,536 in 3 ms (every other run's and the host's io_setup
# then failed with EAGAIN; glibc's POSIX aio uses threads, not these); memfd_secret: each secret
# page is cut out of the kernel's direct map, whose large pages never come back (one run turned
# 19 GB of the host's 1 GB kernel mappings into small ones until reboot); openat2: its flags sit
# behind a pointer (O_DIRECT below), and the C library's open() does not use it; perf_event_open:
# an event opened with ``inherit`` is copied into every child the run forks, without a descriptor,
# in kernel memory charged to no group (a chain of one run's sleeping processes carried 10 x 4,000
# events: +1.6 GB of the host's unreclaimable slab in 19 s, 46 MB in the run's group, the guard
# never fired), and every context switch walks them (another learner's loop 2.46x slower).
NOT_HERE = {"add_key": (248, 217), "request_key": (249, 218), "keyctl": (250, 219),
            "io_uring_setup": (425, 425), "io_uring_enter": (426, 426), "io_uring_register": (427, 427),
            "inotify_init": (253, None), "inotify_init1": (294, 26), "fanotify_init": (300, 262),
            "io_setup": (206, 0), "io_destroy": (207, 1), "io_submit": (209, 2), "io_cancel": (210, 3),
            "io_getevents": (208, 4), "io_pgetevents": (333, 292), "memfd_secret": (447, 447), "openat2": (437, 437),
            "perf_event_open": (298, 241)}
# Extended attributes, set or removed, get EOPNOTSUPP (a file system without them answers the
# same): Landlock has no rule for them, and the kernel memory a run pinned on an inode that outlives
# it (the runs' shared directory) stayed charged to its run slot: 18 runs of one learner, each
# ending normally, left 2 GB there and every later run in that slot, anyone's, was OOM-killed.
NO_XATTR = {"setxattr": (188, 5), "lsetxattr": (189, 6), "fsetxattr": (190, 7), "removexattr": (197, 14),
            "lremovexattr": (198, 15), "fremovexattr": (199, 16), "setxattrat": (463, 463), "removexattrat": (466, 466)}
EOPNOTSUPP = 95
# Socket families: the run's network namespace covers AF_UNIX, AF_INET(6) and AF_NETLINK, not
# AF_VSOCK (one port space for the machine: a run bound the host's vsock ports) or the other
# families; socket() and socketpair() of any other family get EAFNOSUPPORT. Of netlink, only
# NETLINK_ROUTE (getifaddrs: glibc, gloo's TCP device) — other protocols get EPROTONOSUPPORT:
# NETLINK_USERSOCK lets a run's sockets send each other messages, queued in kernel memory no memory
# group is charged for (6.1 GB held by one run in 7 s; the guard counts netlink queues too now).
SOCKET_CALLS = {"socket": (41, 198), "socketpair": (53, 199)}
SOCKET_FAMILIES = (1, 2, 10)  # AF_UNIX, AF_INET, AF_INET6
AF_UNIX, AF_NETLINK, NETLINK_ROUTE = 1, 16, 0
# MPTCP (an AF_INET/AF_INET6 protocol) gets EPROTONOSUPPORT: its own queues are not in the TCP
# socket diagnostics the file guard reads (held to 63 MB by the slot's kmem.tcp when tried)
IPPROTO_MPTCP = 262
# The disk and the page cache are the machine's: posix_fadvise(DONTNEED / NOREUSE) on any readable
# file drops its cached pages for everyone (with O_DIRECT reads, one run made the host's fsync
# 200x slower and its imports 12x): that advice succeeds without effect, and open/openat with
# O_DIRECT get EINVAL (a file system without it answers the same), so a run's reads go through the
# page cache its own memory group pays for.
FADVISE = (221, 223)
FADV_DONTNEED, FADV_NOREUSE = 4, 5
OPEN, OPENAT = (2, None), (257, 56)
O_DIRECT = (0o40000, 0o200000)
F_SETFL = 4  # (fcntl(F_SETFL, O_DIRECT) turns it on for an open file: EINVAL too)
# The kernel's one rtnl_lock: in its own network namespace, without any capability, a run could take
# it in a loop (multicast group joins, SIOCGIFCONF), and another learner's DataLoader(num_workers=2)
# took 0.4-4.5 s instead of 0.05-0.12; IPv6 flow labels are one table for the whole kernel (past 3/4
# of it, every unprivileged process of the host gets ENOBUFS). setsockopt with these options and
# that ioctl get EPERM.
SETSOCKOPT, IOCTL = (54, 208), (16, 29)
IP_RTNL_OPTS = tuple(range(35, 49))  # IPPROTO_IP: IP_ADD_MEMBERSHIP … IP_MSFILTER, MCAST_JOIN_GROUP … MCAST_MSFILTER
IPV6_RTNL_OPTS = (1, 20, 21, 27, 28, 32, *range(42, 49))  # ADDRFORM, JOIN/LEAVE_GROUP, JOIN/LEAVE_ANYCAST, FLOWLABEL_MGR, MCAST_*
SIOCGIFCONF = 0x8912
# Socket options whose memory no memory group is charged for, and which nothing of the course sets:
# TCP MD5 and TCP-AO keys (963 per socket on 16,640 sockets: 2.9 GB of the host's unreclaimable
# slab, 75 MB of it in the run's group), the TLS upper layer, and SO_TIMESTAMPING (with it every
# datagram sent leaves a copy on the sender's error queue: 3.15 GB from 400 sockets in 8 s) get
# EPERM. (A timestamp asked for per message, in a control message, still works: the file guard
# counts what sockets hold, error queues included — TCP's from the socket diagnostics.)
SOL_SOCKET, IPPROTO_TCP = 1, 6
# BPF socket filters too (SO_ATTACH_FILTER, SO_ATTACH_BPF, SO_ATTACH_REUSEPORT_CBPF/EBPF), and, once
# this filter is in, seccomp filters of the run's own (prctl(PR_SET_SECCOMP), seccomp(
# SECCOMP_SET_MODE_FILTER)): their JIT images come out of the kernel's one bpf_jit_limit, charged to
# no group; 15 runs of one learner filled it (528 MB), and then every other run's confinement and
# every unprivileged process's filter on the host failed with errno 524
SOL_UNACCOUNTED_OPTS = (26, 37, 50, 51, 52, 65)  # SO_ATTACH_FILTER, SO_TIMESTAMPING_OLD, SO_ATTACH_BPF, SO_ATTACH_REUSEPORT_C/EBPF, SO_TIMESTAMPING_NEW
PRCTL, SECCOMP = (157, 167), (317, 277)
SECCOMP_SET_MODE_FILTER = 1
SIOCETHTOOL = 0x8946  # (takes the kernel's one rtnl_lock, like SIOCGIFCONF: EPERM too)
TCP_UNACCOUNTED_OPTS = (14, 31, 32, 38, 39, 40, 41, 42)  # TCP_MD5SIG, TCP_ULP, TCP_MD5SIG_EXT, TCP_AO_*
# fcntl(F_SETPIPE_SZ) past a pipe's default size gets EPERM (what the kernel answers past its
# limit): the pages of enlarged pipes count per uid (fs.pipe-user-pages-soft), and one run
# enlarging its pipes left every other run unable to enlarge one. Shrinking stays allowed.
FCNTL = (72, 25)
F_SETPIPE_SZ = 1031
# Byte-range locks (F_GETLK/F_SETLK/F_SETLKW and their OFD forms) get ENOLCK, as on a file system
# without them: the kernel keeps one list of locks per file and every close of that file by any
# process walks it under a spinlock, and the files a run may open are the host's own (20,000
# locks one run set on /dev/null made a host shell's redirections from it 1,200x slower; read
# locks on libc slowed every exec on the host). flock() stays (torch.compile's cache uses it), and
# in a class (``spec["keeper"]``) each call goes to the run's supervisor (a seccomp user
# notification), which takes the lock itself on the very same open file when that file lives on
# the run's own file system (its run directory's tmpfs) and answers ENOLCK for any
# other (the host's libc, /dev/null, the one inode shared by every eventfd and epoll file of the
# machine ...): tc_supervise.LockKeeper. F_NOTIFY (dnotify: every read of a file in the directory, by anyone,
# walks its registrations — 32,000 on the shared library directory made the host's exec 22x
# slower) and F_SETLEASE get EINVAL, as on a kernel without them.
BYTE_RANGE_LOCKS = (5, 6, 7, 36, 37, 38)
F_SETLEASE, F_NOTIFY = 1024, 1026
ENOLCK = 37
PIPE_DEFAULT_SIZE = 65536
# New namespaces: every namespace a process makes counts against its uid's
# user.max_*_namespaces in the first user namespace (one count for all runs): a run's child that
# made a user namespace of its own (full capabilities there) could unshare IPC namespaces until
# ENOSPC, and every other learner's run then failed to be confined. A run's own namespaces are
# made before this filter; after it ``unshare`` and ``setns`` get EPERM, ``clone`` with a CLONE_NEW*
# flag EPERM, and ``clone3`` (its flags are behind a pointer the filter cannot read) ENOSYS, on
# which the C library falls back to ``clone`` for threads and processes.
NO_NEW_NAMESPACES = {"unshare": (272, 97), "setns": (308, 268)}
CLONE, CLONE3 = (56, 220), (435, 435)
CLONE_NEW_FLAGS = 0x7E020000  # NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
X32_BIT = 0x40000000
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_USER_NOTIF = 0x7FC00000
SECCOMP_FILTER_FLAG_NEW_LISTENER = 1 << 3
FLOCK = (73, 32)
SYS_SECCOMP = (317, 277)
EPERM, ENOSYS, EINVAL, EAFNOSUPPORT, EPROTONOSUPPORT = 1, 38, 22, 97, 93
_LD_ABS, _JEQ, _JGE, _JGT, _JSET, _RET = 0x20, 0x15, 0x35, 0x25, 0x45, 0x06


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def _assemble(program):
    """``program``: a list of ("label",) marks and (code, k, jt, jf) instructions whose jt/jf are
    labels or 0 (next instruction). Returns the sock_filter array."""
    labels, insns = {}, []
    for item in program:
        if len(item) == 1:
            labels[item[0]] = len(insns)
        else:
            insns.append(item)
    out = (_SockFilter * len(insns))()
    for i, (code, k, jt, jf) in enumerate(insns):
        def off(target):
            n = 0 if target == 0 else labels[target] - i - 1
            if not 0 <= n <= 255:  # (a BPF jump is one byte: a longer one must be split, never wrap)
                raise JailError(f"seccomp program: jump to {target!r} is {n} instructions")
            return n
        out[i] = _SockFilter(code, off(jt), off(jf), k & 0xFFFFFFFF)
    return out


def only_self_program(own_pid, machine=None, *, keeper=False):
    """The BPF program: on the native architecture, the calls above act only on pid 0 or
    ``own_pid`` and :data:`NOT_HERE`'s are refused; a foreign architecture's calls (i386, x32)
    are refused whole. ``keeper``: ``flock`` goes to the filter's listener (the supervisor)."""
    import platform

    machine = machine or platform.machine()
    if machine not in AUDIT_ARCH:
        raise JailError(f"no seccomp table for {machine}")
    col = 0 if machine == "x86_64" else 1
    ARG0, ARG1, ARG2, ARG3 = 16, 24, 32, 40  # low 32 bits of args[0..3] (little-endian)
    prog = [(_LD_ABS, 4, 0, 0), (_JEQ, AUDIT_ARCH[machine], 0, "foreign"), (_LD_ABS, 0, 0, 0)]
    if machine == "x86_64":
        prog.append((_JGE, X32_BIT, "foreign", 0))
    if keeper:
        prog += [(_JEQ, FLOCK[col], 0, "not_flock"), (_RET, SECCOMP_RET_USER_NOTIF, 0, 0), ("not_flock",)]
    for nums in SELF_ONLY_PID.values():
        prog.append((_JEQ, nums[col], "pid0", 0))
    for name, nums in SELF_ONLY_WHO.items():
        prog.append((_JEQ, nums[col], name, 0))
    for nums in NOT_HERE.values():
        if nums[col] is not None:
            prog.append((_JEQ, nums[col], "foreign", 0))
    for nums in NO_XATTR.values():
        prog.append((_JEQ, nums[col], "nosupport", 0))
    prog.append((_JEQ, FCNTL[col], "fcntl", 0))
    for nums in SOCKET_CALLS.values():
        prog.append((_JEQ, nums[col], "socket", 0))
    prog.append((_JEQ, FADVISE[col], "fadvise", 0))
    if OPEN[col] is not None:
        prog.append((_JEQ, OPEN[col], "open", 0))
    prog.append((_JEQ, OPENAT[col], "openat", 0))
    prog.append((_JEQ, SETSOCKOPT[col], "setsockopt", 0))
    prog.append((_JEQ, IOCTL[col], "ioctl", 0))
    prog.append((_JEQ, PRCTL[col], "prctl", 0))
    prog.append((_JEQ, SECCOMP[col], "seccomp", 0))
    for nums in NO_NEW_NAMESPACES.values():
        prog.append((_JEQ, nums[col], "deny", 0))
    prog.append((_JEQ, CLONE3[col], "foreign", 0))
    prog.append((_JEQ, CLONE[col], "clone", 0))
    prog.append((_RET, SECCOMP_RET_ALLOW, 0, 0))
    prog += [("clone",), (_LD_ABS, ARG0, 0, 0), (_JSET, CLONE_NEW_FLAGS, "deny", "allow")]
    # (the kernel reads F_SETPIPE_SZ's size as 32 bits; a larger value is EINVAL there)
    prog += [("fcntl",), (_LD_ABS, ARG1, 0, 0)]
    prog += [(_JEQ, cmd, "enolck", 0) for cmd in BYTE_RANGE_LOCKS]
    prog += [(_JEQ, F_NOTIFY, "einval", 0), (_JEQ, F_SETLEASE, "einval", 0), (_JEQ, F_SETFL, "setfl", 0), (_JEQ, F_SETPIPE_SZ, 0, "allow"),
             (_LD_ABS, ARG2, 0, 0), (_JGT, PIPE_DEFAULT_SIZE, "deny", "allow"),
             ("setfl",), (_LD_ABS, ARG2, 0, 0), (_JSET, O_DIRECT[col], "einval", "allow")]
    prog += [("setsockopt",), (_LD_ABS, ARG1, 0, 0), (_JEQ, 0, "ip_opt", 0), (_JEQ, 41, "ipv6_opt", 0),
             (_JEQ, SOL_SOCKET, "sol_opt", 0), (_JEQ, IPPROTO_TCP, "tcp_opt", "allow"),
             ("sol_opt",), (_LD_ABS, ARG2, 0, 0)]
    prog += [(_JEQ, opt, "deny", 0) for opt in SOL_UNACCOUNTED_OPTS]
    prog += [(_RET, SECCOMP_RET_ALLOW, 0, 0), ("tcp_opt",), (_LD_ABS, ARG2, 0, 0)]
    prog += [(_JEQ, opt, "deny", 0) for opt in TCP_UNACCOUNTED_OPTS]
    prog += [(_RET, SECCOMP_RET_ALLOW, 0, 0),
             ("ip_opt",), (_LD_ABS, ARG2, 0, 0), (_JGE, IP_RTNL_OPTS[0], 0, "allow"), (_JGT, IP_RTNL_OPTS[-1], "allow", "deny"),
             ("ipv6_opt",), (_LD_ABS, ARG2, 0, 0)]
    prog += [(_JEQ, opt, "deny", 0) for opt in IPV6_RTNL_OPTS]
    prog += [(_RET, SECCOMP_RET_ALLOW, 0, 0)]
    prog += [("ioctl",), (_LD_ABS, ARG1, 0, 0), (_JEQ, SIOCGIFCONF, "deny", 0), (_JEQ, SIOCETHTOOL, "deny", "allow")]
    prog += [("prctl",), (_LD_ABS, ARG0, 0, 0), (_JEQ, PR_SET_SECCOMP, "deny", "allow")]
    prog += [("seccomp",), (_LD_ABS, ARG0, 0, 0), (_JEQ, SECCOMP_SET_MODE_FILTER, "deny", "allow")]
    prog += [("socket",), (_LD_ABS, ARG0, 0, 0)]
    prog += [(_JEQ, fam, "allow" if fam == AF_UNIX else "inet", 0) for fam in SOCKET_FAMILIES]
    prog += [(_JEQ, AF_NETLINK, 0, "no_family"), (_LD_ABS, ARG2, 0, 0), (_JEQ, NETLINK_ROUTE, "allow", 0),
             (_RET, SECCOMP_RET_ERRNO | EPROTONOSUPPORT, 0, 0), ("no_family",), (_RET, SECCOMP_RET_ERRNO | EAFNOSUPPORT, 0, 0),
             ("inet",), (_LD_ABS, ARG2, 0, 0), (_JEQ, IPPROTO_MPTCP, 0, "allow"), (_RET, SECCOMP_RET_ERRNO | EPROTONOSUPPORT, 0, 0)]
    prog += [("fadvise",), (_LD_ABS, ARG3, 0, 0), (_JEQ, FADV_DONTNEED, "noop", 0), (_JEQ, FADV_NOREUSE, "noop", "allow")]
    prog += [("open",), (_LD_ABS, ARG1, 0, 0), (_JSET, O_DIRECT[col], "einval", "allow")]
    prog += [("openat",), (_LD_ABS, ARG2, 0, 0), (_JSET, O_DIRECT[col], "einval", "allow")]
    prog += [("noop",), (_RET, SECCOMP_RET_ERRNO | 0, 0, 0), ("einval",), (_RET, SECCOMP_RET_ERRNO | EINVAL, 0, 0),
             ("enolck",), (_RET, SECCOMP_RET_ERRNO | ENOLCK, 0, 0)]
    prog += [("nosupport",), (_RET, SECCOMP_RET_ERRNO | EOPNOTSUPP, 0, 0)]
    for name, nums in SELF_ONLY_WHO.items():  # (BPF jumps only forward: these before pid_check)
        prog += [(name,), (_LD_ABS, ARG0, 0, 0), (_JEQ, nums[2], 0, "deny"), (_LD_ABS, ARG1, 0, 0), (_JEQ, 0, "pid_check", "pid_check")]
    prog += [("pid0",), (_LD_ABS, ARG0, 0, 0), ("pid_check",), (_JEQ, 0, "allow", 0), (_JEQ, own_pid, "allow", 0),
             ("deny",), (_RET, SECCOMP_RET_ERRNO | EPERM, 0, 0), ("allow",), (_RET, SECCOMP_RET_ALLOW, 0, 0),
             ("foreign",), (_RET, SECCOMP_RET_ERRNO | ENOSYS, 0, 0)]
    return _assemble(prog)


def only_self_filter(keeper=None, own_dir=None):
    """Install the filter on this process (after NO_NEW_PRIVS; inherited by all it starts).
    ``keeper`` (a socket to the run's supervisor): ``flock`` goes to the filter's listener, which
    is sent to the supervisor with the device of the run's own directory (``own_dir``: its own
    tmpfs; the file guard counts every lock on it as the run's) and closed here, before any code of the snippet runs: no process of the run
    ever holds it. Without a listener on the other side the call fails (ENOSYS)."""
    import platform

    insns = only_self_program(os.getpid(), keeper=keeper is not None)
    fprog = _SockFprog(len(insns), ctypes.cast(insns, ctypes.POINTER(_SockFilter)))
    if keeper is None:
        _check(_lib().prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")
        return
    import socket

    col = 0 if platform.machine() == "x86_64" else 1
    try:
        devs = [os.stat(own_dir).st_dev]
        listener = _check(_lib().syscall(SYS_SECCOMP[col], 1, SECCOMP_FILTER_FLAG_NEW_LISTENER, ctypes.byref(fprog)),
                          "seccomp(NEW_LISTENER)")  # (1: SECCOMP_SET_MODE_FILTER)
        try:
            socket.send_fds(keeper, [json.dumps({"devs": devs}).encode()], [listener])
        finally:
            os.close(listener)
    except OSError as exc:
        raise JailError(f"flock keeper: {exc}") from exc
    finally:
        keeper.close()


def confine(spec, own_dir, keeper=None):
    """Everything above, for a snippet whose ``tc-run-*`` directory is ``own_dir`` (it may write
    in ``run``, ``home`` and ``tmp`` there, nothing else). ``spec``: dict with
    ``read`` (paths), ``mem``, ``nproc``, ``cpu``, ``fsize``, ``relative`` (address-space limit on
    top of the current size: a forked child), ``userns`` (default true)."""
    prepare(spec)
    restrict(spec, own_dir, keeper)


PR_SET_KEEPCAPS = 8
PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE = 47, 2
CAP_SETUID = 7


def _capset(caps):
    """Effective, permitted and inheritable capabilities all = ``caps`` (bit numbers < 32)."""
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    bits = 0
    for cap in caps:
        bits |= 1 << cap
    hdr = Header(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (Data * 2)()
    data[0] = Data(bits, bits, bits)
    _check(_lib().capset(ctypes.byref(hdr), data), "capset")


def drop_to(uid, gid, keep_setuid=False):
    """Root only: become UID:GID with no supplementary groups. ``keep_setuid``: CAP_SETUID stays,
    as an ambient capability that the command exec'd next keeps (the zygote, which gives each run
    slot's processes the slot's own uid; bwrap's bounding set holds only CAP_SETUID and
    CAP_SETGID); every other capability is gone."""
    lib = _lib()
    if keep_setuid:
        _check(lib.prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0), "prctl(KEEPCAPS)")
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise JailError("setuid did not take")
    if keep_setuid:
        _capset([CAP_SETUID])
        _check(lib.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SETUID, 0, 0), "prctl(CAP_AMBIENT_RAISE)")
        _check(lib.prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0), "prctl(KEEPCAPS)")


def take_uid(uid, saved=None):
    """A process forked from the zygote (which holds CAP_SETUID): real and effective uid become
    ``uid`` (a run slot's own), the saved uid ``saved`` (default: ``uid`` too), and every
    capability is dropped (ambient ones with the permitted set). A saved uid that is the zygote's
    lets the zygote still signal this process (a run's supervisor); the snippet's own process
    keeps no way back. The uid change makes the process not dumpable, which would leave its
    ``/proc/self`` files to root (its own user namespace's ``uid_map`` among them): dumpable
    again, as before (only processes of its own uid may then trace it)."""
    saved = uid if saved is None else saved
    os.setresuid(uid, uid, saved)
    if os.getresuid() != (uid, uid, saved):
        raise JailError("setresuid did not take")
    drop_capabilities()
    _check(_lib().prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl(DUMPABLE)")


KEEPER_FD_ENV = "TC_LOCK_KEEPER_FD"


def _keeper_from_env():
    """A cold run: the socket to its supervisor (tc_supervise.main), inherited at the descriptor
    the environment names; the variable goes, so the snippet never sees it."""
    fd = os.environ.pop(KEEPER_FD_ENV, None)
    if fd is None:
        return None
    import socket

    return socket.socket(fileno=int(fd))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:
        sys.stderr.write("usage: tc_jail.py [--drop UID:GID] [--confine JSON] -- CMD...\n")
        return 2
    opts, cmd = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    try:
        i = 0
        while i < len(opts):
            if opts[i] in ("--drop", "--drop-keep-setuid"):
                uid, gid = (int(x) for x in opts[i + 1].split(":"))
                if os.getuid() == 0:
                    drop_to(uid, gid, keep_setuid=opts[i] == "--drop-keep-setuid")
                i += 2
            elif opts[i] == "--proc-anchor":
                proc_anchor(opts[i + 1])
                i += 2
            elif opts[i] == "--confine":
                spec = json.loads(opts[i + 1])
                confine(spec, spec.get("dir") or os.getcwd(), _keeper_from_env())
                i += 2
            else:
                raise JailError(f"unknown option {opts[i]}")
        os.execvp(cmd[0], cmd)  # (bwrap after --proc-anchor: found on PATH)
    except (JailError, OSError, ValueError) as exc:
        sys.stderr.write(f"🚫 [torchcourse] 沙箱没能建立，代码没有运行：{exc}\n")
        return 70


if __name__ == "__main__":
    sys.exit(main())
