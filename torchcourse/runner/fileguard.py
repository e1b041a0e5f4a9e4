"""A cap on the files one sandboxed run holds at once (open descriptors and file mappings).

The kernel has one open-file table for the whole machine (``fs.file-max``; 2,466,252 on a 24 GB
machine), and no per-process or per-group limit covers all of it: RLIMIT_NOFILE counts the
descriptors of one process, while a file that is mapped and then closed stays open without one.
A run that opens, maps 4 KiB of and closes one file in a loop (58 processes × up to 65,530
mappings each, ``vm.max_map_count``) filled that table in ~10 s; each file costs ~400 bytes of
kernel memory, so ~1 GB paid for all of it, within the run's own 2 GB memory group. Meanwhile
another learner's run hung and the host's other programs could not open a file.

:class:`FileGuard` watches each running run's memory group: its kernel memory (charged there by
the kernel, cheap to read: one small file per run, every :data:`TICK` seconds). Once a run's
kernel memory has grown by :data:`KMEM_TRIGGER` since it started, the guard counts what its
processes hold — descriptors (``/proc/PID/fd``) and file-backed mappings (``/proc/PID/maps``)
— and kills every process of the run once that passes :data:`RUN_FILES`. Runs of the course hold
a few thousand (a torch process maps ~1,000 files; DataLoader workers are forks of it).

Other machine-wide kernel tables are paid for in the same kernel memory (epoll watches: one count
per uid, ``fs.epoll.max_user_watches``, ~160 bytes each; one run used them all up within its own
memory limit and another learner's ``asyncio.run()`` failed): a run whose kernel memory grows by
more than :data:`RUN_KMEM` is killed as well. Netlink sockets' queues are kernel memory no memory
group is charged for: a run's sockets, each asking its own network namespace's routing table
for a link (``RTM_GETLINK``) and never reading the answers, held 2.4 GB in 21 s (300 sockets at a
4 MiB receive buffer), and ``NETLINK_USERSOCK`` sockets sending to each other 6.1 GB in 7 s,
outside every limit of the run's. IP sockets alike: cgroup v1 charges TCP buffers to a group only
up to its ``kmem.tcp`` limit (each socket may still take a minimum past it), never the data of
connections not yet accepted (100 of them held 864 MB), and UDP and error queues not at all (a
copy of every datagram sent with ``SO_TIMESTAMPING``, ICMP errors with ``IP_RECVERR``: 1.6-3.15 GB
in one run). The bytes queued on the sockets of the run's network namespace (each run has its own:
``/proc/PID/net/netlink``, ``tcp``, ``udp`` …) are counted with its kernel memory, and a run holding
more than :data:`RUN_SOCKETS` sockets is stopped: what each socket may hold outside every group
(its options' memory, up to ``net.core.optmem_max``) is then bounded too.

A run's kernel memory is measured from the lowest it has been since the run started, not from its
start: what earlier runs left in the slot (reclaimable caches, ~400 MB of negative dentries after
a few runs that looked up missing names) can be reclaimed by the run itself, after which files
worth 300 MB looked like no growth at all. And every :data:`COUNT_EVERY` ticks the files are
counted whatever the kernel memory says. Every snippet of the course, run in the sandbox,
held at most 1,935 files and added at most 7 MB of kernel memory.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import struct
import threading

from torchcourse.runner.cgroups import _read_counters
from torchcourse.runner.tc_jail import CLONE_NEWNET, _lib

RUN_FILES = 100_000  # files (descriptors + file mappings) one run may hold at once
RUN_KMEM = 64 << 20  # kernel memory one run may add (the course's runs add at most ~7 MB)
RUN_SOCKETS = 1024  # sockets one run may hold at once, of every family, TIME_WAIT ones included (the course's: a few dozen)
# File locks: the kernel keeps one list of them per file, and every close of that file by any process
# of the machine walks it under a spinlock (``locks_remove_file``). The system files and device
# nodes a run opens are the host's own: 20,000 byte-range locks one run set on /dev/null made a
# host shell's 300 redirections from it 1,200x slower. Byte-range (POSIX, OFD) locks are refused
# by the run's seccomp filter; ``flock`` stays (torch.compile's cache takes one), and a run holding
# more than RUN_LOCKS is stopped: those whose holder is one of the run's processes; in a class every
# lock on the run's own directory's file system (its own tmpfs, the only files its flock() reaches:
# tc_supervise.LockKeeper), whoever holds it; and, once a file elsewhere carries more than
# FILE_LOCKS_AT_MOST locks of anyone's, the run's descriptors and mappings of that file (a lock stays
# with its holder's pid after that process has ended and another keeps the file open — by a
# descriptor, or by a mapping without any, or in flight on a unix socket).
RUN_LOCKS = 1024
FILE_LOCKS_AT_MOST = 1024
KMEM_TRIGGER = 12 << 20  # kernel memory a run may add before its files are counted (~30,000 files; the course adds at most ~7 MB)
KMEM_STEP = 16 << 20  # counted and within the cap: count again after this much more
TICK = 0.1  # seconds between looks (a run adds ~240,000 files a second at most: ~24,000 a tick)
COUNT_EVERY = 5  # ticks: every run's files are counted this often whatever its kernel memory did
# ticks between reads of /proc/locks: each read holds the machine's locking (every flock of the
# host waits), and in a class a run's flock() reaches only its own files, at most 2,000 calls a
# second (tc_supervise.LockKeeper): a run is seen past the cap within ~1,000 more locks
LOCKS_EVERY = 5
# the most files one run can hold before the guard stops it: its cap and what it can add before the
# guard looks again (stopped at 100,412-132,081 in the tests; ~240,000 files a second at most)
RUN_FILES_AT_MOST = 250_000


def kernel_memory(group: str, v2: bool) -> int | None:
    """Bytes of kernel memory charged to the memory group ``group`` (None: unreadable, gone)."""
    try:
        if not v2:
            with open(os.path.join(group, "memory.kmem.usage_in_bytes")) as fh:
                return int(fh.read().strip() or 0)
        stat = _read_counters(os.path.join(group, "memory.stat"))
        if not stat:
            return None
        if "kernel" in stat:
            return stat["kernel"]
        return sum(stat.get(k, 0) for k in ("slab", "kernel_stack", "pagetables", "percpu", "sock"))
    except (OSError, ValueError):
        return None


def _sockets(pid: int) -> tuple[int, int]:
    """(sockets, IP sockets) of ``pid``'s network namespace, from ``sockstat`` and ``sockstat6``:
    ``sockets: used`` counts every family, with an address or not; the IP ones are those in use
    (in the tables once they have an address: an IP socket without one holds no data) and TCP's
    connections in TIME_WAIT (``tw``, in its table too), which are counted in both."""
    every = ip = 0
    for name in ("sockstat", "sockstat6"):
        with open(f"/proc/{pid}/net/{name}", "rb") as fh:
            for line in fh:
                fields = line.split()
                if fields[:2] == [b"sockets:", b"used"]:
                    every += int(fields[2])
                elif fields and not fields[0].startswith(b"FRAG"):
                    counts = dict(zip(fields[1::2], fields[2::2]))
                    ip += int(counts.get(b"inuse", 0))
                    tw = int(counts.get(b"tw", 0))
                    ip, every = ip + tw, every + tw
    return every, ip


def _table_queued(pid: int, names) -> int:
    total = 0
    for name in names:
        try:
            fh = open(f"/proc/{pid}/net/{name}", "rb")
        except FileNotFoundError:
            continue
        with fh:
            next(fh, None)
            for line in fh:
                fields = line.split(None, 5)
                if len(fields) > 4:
                    tx, _, rx = fields[4].partition(b":")
                    total += int(tx, 16) + int(rx or b"0", 16)
    return total


SOCK_DIAG_BY_FAMILY, NETLINK_SOCK_DIAG, INET_DIAG_SKMEMINFO = 20, 4, 7
_OWN_NET: list[int] = []


def _tcp_memory(pid: int) -> int:
    """What the TCP sockets of ``pid``'s network namespace hold, from the kernel's socket
    diagnostics (``ss -m``): receive memory (error queues included), send queue, option memory and
    backlog. The tables' TCP columns are sequence counts, not memory: a send timestamp asked for
    per message (a control message, which no filter sees) leaves a copy of the data on the
    sender's error queue, and 740 such sockets held 2.8 GB that the tables did not show. Raises
    OSError when the namespace cannot be entered (not root)."""
    import ctypes
    import socket

    if not _OWN_NET:
        _OWN_NET.append(os.open("/proc/thread-self/ns/net", os.O_RDONLY))
    target = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
    try:
        if _lib().setns(target, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns")
        try:
            diag = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG)
        finally:
            if _lib().setns(_OWN_NET[0], CLONE_NEWNET) != 0:  # (this thread only: back where it was)
                raise OSError(ctypes.get_errno(), "setns back")  # (its reads name each pid: they stay right)
    finally:
        os.close(target)
    total = 0
    with diag:
        diag.settimeout(2.0)
        for family in (socket.AF_INET, socket.AF_INET6):
            req = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 1 << (INET_DIAG_SKMEMINFO - 1), 0, 0xFFFFFFFF) + bytes(48)
            diag.send(struct.pack("=IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY, 0x301, 1, 0) + req)  # REQUEST | DUMP
            done = False
            while not done:
                data = diag.recv(1 << 20)
                at = 0
                while at + 16 <= len(data):
                    length, kind = struct.unpack_from("=IH", data, at)
                    if length < 16 or kind in (2, 3):  # NLMSG_ERROR, NLMSG_DONE
                        done = True
                        break
                    attr = at + 16 + 72  # struct inet_diag_msg, then its attributes
                    while attr + 4 <= at + length:
                        alen, atype = struct.unpack_from("=HH", data, attr)
                        if alen < 4:
                            break
                        if atype == INET_DIAG_SKMEMINFO and alen >= 4 + 8 * 4:
                            rmem, _rcvbuf, wmem, _sndbuf, _fwd, queued, optmem, backlog = struct.unpack_from("=8I", data, attr + 4)
                            total += rmem + max(wmem, queued) + optmem + backlog
                        attr += (alen + 3) & ~3
                    at += (length + 3) & ~3
                if not data:
                    break
    return total


def _inet_queued(pid: int) -> int:
    """Bytes the IP sockets of ``pid``'s network namespace hold: TCP's from the socket
    diagnostics (the tables' columns when those cannot be had), UDP's and raw sockets' from
    their tables (their columns are the receive and send memory, error queues included)."""
    try:
        tcp = _tcp_memory(pid)
    except OSError:
        tcp = _table_queued(pid, ("tcp", "tcp6"))
    return tcp + _table_queued(pid, ("udp", "udp6", "udplite", "udplite6", "raw", "raw6"))


def _netlink_queued(pid: int) -> int:
    total = 0
    with open(f"/proc/{pid}/net/netlink", "rb") as fh:
        next(fh, None)  # sk Eth Pid Groups Rmem Wmem Dump Locks Drops Inode
        for line in fh:
            fields = line.split()
            total += int(fields[4]) + int(fields[5])
    return total


def network_use(pids: list[int], socket_cap: int) -> tuple[int, int]:
    """(bytes queued on the sockets, sockets) of the network namespaces ``pids`` are in, each
    namespace once: what waits on netlink sockets, and on IP sockets — received and not read
    (connections never accepted included), being sent, error queues —; the sockets counted from
    ``sockstat`` (what IP sockets hold is read only when there are some, and at most
    ``socket_cap``: a run of the course with a DataLoader has unix sockets only)."""
    seen: set[int] = set()
    queued = sockets = 0
    for pid in pids:
        try:
            ns = os.stat(f"/proc/{pid}/ns/net").st_ino
            if ns in seen:
                continue
            seen.add(ns)
            queued += _netlink_queued(pid)
            every, ip = _sockets(pid)
            sockets += every
            if 0 < ip and every <= socket_cap:
                queued += _inet_queued(pid)
        except (OSError, ValueError, IndexError, struct.error):  # (a run's namespace gone meanwhile, a short read)
            continue
    return queued, sockets


def run_usage(group: str, pids: list[int], v2: bool, socket_cap: int) -> tuple[int | None, int]:
    """(kernel memory, sockets) of the run in ``group`` (its processes ``pids``): its memory
    group's kernel memory and what its sockets hold (None: the group is unreadable, gone)."""
    charged = kernel_memory(group, v2)
    if charged is None:
        return None, 0
    queued, sockets = network_use(pids, socket_cap)
    return charged + queued, sockets


def file_locks() -> tuple[dict[int, int], dict[tuple[int, int, int], int]]:
    """The machine's file locks (``/proc/locks``, waiters included): how many each holder pid has,
    and how many each file (major, minor, inode) carries."""
    by_pid: dict[int, int] = {}
    by_file: dict[tuple[int, int, int], int] = {}
    try:
        with open("/proc/locks", "rb") as fh:
            for line in fh:
                fields = line.split()
                if len(fields) > 1 and fields[1] == b"->":
                    del fields[1]
                if len(fields) < 6:
                    continue
                try:
                    pid = int(fields[4])
                    major, minor, ino = fields[5].split(b":")
                    key = (int(major, 16), int(minor, 16), int(ino))
                except ValueError:
                    continue
                by_pid[pid] = by_pid.get(pid, 0) + 1
                by_file[key] = by_file.get(key, 0) + 1
    except OSError:
        pass
    return by_pid, by_file


def holds_of(pids, files) -> int:
    """How many descriptors and mappings of ``pids`` are of one of ``files`` ((major, minor,
    inode) each): a lock lives as long as its open file, which a mapping keeps open without any
    descriptor (a run mapped 40,000 locked opens of libc and closed their descriptors)."""
    n = 0
    for pid in pids:
        try:
            names = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            names = []
        for name in names:
            try:
                st = os.stat(f"/proc/{pid}/fd/{name}")
            except OSError:
                continue
            if (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino) in files:
                n += 1
        for vma in _file_vmas(pid):
            if vma is None:  # (maps past MAPS_BYTES_AT_MOST: past every cap)
                return n + RUN_FILES + 1
            if vma in files:
                n += 1
    return n


def group_pids(group: str) -> list[int]:
    try:
        with open(os.path.join(group, "cgroup.procs")) as fh:
            return [int(x) for x in fh.read().split()]
    except (OSError, ValueError):
        return []


def _count_dir(path: str) -> int:
    try:
        with os.scandir(path) as it:
            return sum(1 for _ in it)
    except OSError:
        return 0


class _ProcmapQuery(ctypes.Structure):
    """``struct procmap_query`` (linux/fs.h, kernel 6.11+)."""
    _fields_ = [("size", ctypes.c_uint64), ("query_flags", ctypes.c_uint64), ("query_addr", ctypes.c_uint64),
                ("vma_start", ctypes.c_uint64), ("vma_end", ctypes.c_uint64), ("vma_flags", ctypes.c_uint64),
                ("vma_page_size", ctypes.c_uint64), ("vma_offset", ctypes.c_uint64), ("inode", ctypes.c_uint64),
                ("dev_major", ctypes.c_uint32), ("dev_minor", ctypes.c_uint32), ("vma_name_size", ctypes.c_uint32),
                ("build_id_size", ctypes.c_uint32), ("vma_name_addr", ctypes.c_uint64), ("build_id_addr", ctypes.c_uint64)]


PROCMAP_QUERY = (3 << 30) | (ctypes.sizeof(_ProcmapQuery) << 16) | (ord("f") << 8) | 17  # _IOWR('f', 17, …)
_COVERING_OR_NEXT_VMA, _FILE_BACKED_VMA = 0x10, 0x20
# bytes of one process's /proc/PID/maps read as text where the kernel has no PROCMAP_QUERY: a line
# carries the mapped file's whole path, and a run can make paths of hundreds of kilobytes (a chain
# of directories 1,600 deep): 60,000 mappings of such a file were 24 GB to read per count, and the
# guard, busy with them, looked at no other run (another run held 720,000 files, 1,100 sockets)
MAPS_BYTES_AT_MOST = 32 << 20
_procmap_query_works: list[bool] = []


def _file_vmas(pid: int):
    """(major, minor, inode) of each file-backed mapping of ``pid``: asked of the kernel one
    mapping at a time without its path (``PROCMAP_QUERY`` on ``/proc/PID/maps``, kernel 6.11+:
    ~1 µs a mapping whatever the path), else parsed from ``maps`` up to :data:`MAPS_BYTES_AT_MOST`
    — past that one more than any cap (None) is yielded: no run of the course comes near.

    Not by listing ``/proc/PID/map_files``: each name listed there becomes a dentry and an inode of
    /proc kept in the lister's memory group — the service's, outside every run's limit — and a run
    moving 96,000 mappings to new addresses three times a second grew it by 51 MB a second."""
    try:
        fd = os.open(f"/proc/{pid}/maps", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if _procmap_query_works != [False]:
            q = _ProcmapQuery()
            q.size = ctypes.sizeof(q)
            ref = ctypes.byref(q)
            ioctl = _lib().ioctl
            addr = 0
            while True:
                q.query_flags = _COVERING_OR_NEXT_VMA | _FILE_BACKED_VMA
                q.query_addr = addr
                q.vma_name_size = q.build_id_size = 0
                if ioctl(fd, ctypes.c_ulong(PROCMAP_QUERY), ref) != 0:
                    err = ctypes.get_errno()
                    if err in (errno.ENOTTY, errno.EINVAL) and not _procmap_query_works:
                        _procmap_query_works.append(False)  # (an older kernel: the text below)
                        break
                    return  # ENOENT: no mapping past addr (or the process is gone)
                if not _procmap_query_works:
                    _procmap_query_works.append(True)
                yield (q.dev_major, q.dev_minor, q.inode)
                addr = q.vma_end
        read = 0
        with os.fdopen(os.dup(fd), "rb") as fh:
            for line in fh:
                read += len(line)
                if read > MAPS_BYTES_AT_MOST:
                    yield None
                    return
                fields = line.split(None, 5)
                if len(fields) < 5 or fields[4] == b"0":
                    continue
                major, _, minor = fields[3].partition(b":")
                try:
                    yield (int(major, 16), int(minor, 16), int(fields[4]))
                except ValueError:
                    continue
    finally:
        os.close(fd)


def _file_mappings(pid: int) -> int:
    """File-backed mappings of ``pid`` (:func:`_file_vmas`)."""
    n = 0
    for vma in _file_vmas(pid):
        if vma is None:
            return max(n, RUN_FILES) + 1
        n += 1
    return n


_KCMP = {"x86_64": 312, "aarch64": 272}.get(os.uname().machine)
KCMP_FILES = 2


def _same_table(pid: int, tid: int) -> bool:
    """Whether thread ``tid`` shares ``pid``'s descriptor table (kcmp(KCMP_FILES); False when the
    kernel cannot say: then its table is listed)."""
    if _KCMP is None:
        return False
    return _lib().syscall(_KCMP, pid, tid, KCMP_FILES, 0, 0) == 0


def _descriptors(pid: int) -> int:
    """The descriptors of ``pid`` and of each of its threads that has a table of its own: a thread
    made with ``clone`` without CLONE_FILES has one, which ``/proc/PID/fd`` (the leader's) does not
    show. A table the threads share is listed once (60 threads sharing 1,580 descriptors made each
    count list ~95,000 entries, in the service's process, outside every CPU group)."""
    n = _count_dir(f"/proc/{pid}/fd")
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task") if t != str(pid)]
    except (OSError, ValueError):
        return n
    for tid in tids:
        if not _same_table(pid, tid):
            n += _count_dir(f"/proc/{pid}/task/{tid}/fd")
    return n


def files_held(pids: list[int], stop_after: int | None = None) -> int:
    """Descriptors plus file mappings of ``pids`` (counting stops once past ``stop_after``)."""
    total = 0
    for pid in pids:
        total += _descriptors(pid) + _file_mappings(pid)
        if stop_after is not None and total > stop_after:
            break
    return total


def signal_members(group: str, pids, sig) -> list[int]:
    """Send ``sig`` to each of ``pids`` that is a process of ``group`` when signalled; returns those
    signalled. Each pid is held by a pidfd first and the group read after: a pid whose process
    ended and whose number went to another process meanwhile — one run forking fast wraps the
    machine's pids every few seconds — is then not in the group, and that other process (another
    learner's, the host's) is never signalled."""
    held = []
    for pid in pids:
        try:
            held.append((pid, os.pidfd_open(pid)))
        except OSError:  # (ended)
            pass
    members = set(group_pids(group)) if held else set()
    out = []
    for pid, fd in held:
        try:
            if pid in members:
                signal.pidfd_send_signal(fd, sig)
                out.append(pid)
        except OSError:
            pass
        finally:
            os.close(fd)
    return out


def stop_group(group: str, pids: list[int]) -> list[int]:
    """SIGSTOP ``pids`` and whatever else is in ``group`` (a process forked meanwhile), until a
    look finds no new one; returns every pid stopped."""
    stopped: set[int] = set()
    for _ in range(10):
        new = [p for p in pids if p not in stopped]
        if not new:
            break
        stopped.update(signal_members(group, new, signal.SIGSTOP))
        pids = group_pids(group)
    return sorted(stopped)


def kill_group(group: str) -> bool:
    """SIGKILL every process in ``group``, again while new ones appear (a run still forking);
    True once the group was seen empty (the run is gone: whatever enters later is not its).
    A killed process stays in the group until its exit is done (milliseconds for a torch-sized
    one): the group is looked at again for up to half a second — had the next look found it
    still there, the slot's next run, maybe another learner's, could have entered by then and
    been killed with it."""
    import time

    for _ in range(50):
        pids = group_pids(group)
        if not pids:
            return True
        signal_members(group, pids, signal.SIGKILL)
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        pids = group_pids(group)
        if not pids:
            return True
        signal_members(group, pids, signal.SIGKILL)
        time.sleep(0.002)
    return not group_pids(group)


class _Watch:
    __slots__ = ("group", "base", "trigger", "killed", "why", "ticks", "gone", "seen", "dev")

    def __init__(self, group: str, base: int, dev: tuple[int, int] | None = None):
        self.group = group
        self.base = base
        self.dev = dev  # (major, minor) of the run's own directory's file system (a class: its own tmpfs)
        self.trigger = KMEM_TRIGGER
        self.killed = 0  # what it held when the guard killed it (files, or bytes of kernel memory)
        self.why = ""  # "files", "kmem" or "sockets"
        self.ticks = 0
        self.gone = False  # killed and its group seen empty: the slot's next run is not this one
        self.seen: set[int] = set()  # every pid seen in its group (a lock keeps its holder's pid)


class FileGuard:
    """Watches the memory groups of the runs in flight (see the module's text). ``watch`` when a
    run starts in a group (it returns the run's token), ``unwatch(token)`` when it has ended:
    ``("files", n)``, ``("kmem", bytes)``, ``("sockets", n)`` or ``("locks", n)`` when the guard stopped it, else None."""

    def __init__(self, *, v2: bool = False, cap: int = RUN_FILES, kmem_cap: int = RUN_KMEM, socket_cap: int = RUN_SOCKETS,
                 tick: float = TICK, lock_cap: int = RUN_LOCKS):
        self.v2 = v2
        self.cap = cap
        self.lock_cap = lock_cap
        self.kmem_cap = kmem_cap
        self.socket_cap = socket_cap
        self.tick = tick
        self._watched: dict[int, _Watch] = {}
        self._tokens = 0
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._closed = False
        self.rounds = 0  # looks at every watched run so far

    def watch(self, group: str, dev: int | None = None) -> int | None:
        """``dev``: the device (``st_dev``) of the run's own directory when that is a file system of
        its own (a class): every lock on it is the run's, whoever holds it — a process that has
        ended, a descriptor in flight on a unix socket, a mapping."""
        base, _sockets = run_usage(group, group_pids(group), self.v2, self.socket_cap)
        if base is None:
            return None
        with self._lock:
            if self._closed:
                return None
            self._tokens += 1
            token = self._tokens
            self._watched[token] = _Watch(group, base, None if dev is None else (os.major(dev), os.minor(dev)))
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="tc-fileguard", daemon=True)
                self._thread.start()
            self._wake.notify()
        return token

    def unwatch(self, token: int | None) -> tuple[str, int] | None:
        if token is None:
            return None
        with self._lock:
            w = self._watched.pop(token, None)
        return (w.why, w.killed) if w and w.why else None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._watched.clear()
            self._wake.notify()

    def _current(self, w: _Watch) -> bool:
        """``w`` is still watched (call with ``_lock`` held)."""
        return any(v is w for v in self._watched.values())

    def _stop(self, w: _Watch, why: str, n: int) -> None:
        """Kill the run of ``w`` for ``why`` — if it is still watched: by the time a long round
        reaches it, its run may have ended (its verdict read) and its slot taken by another run."""
        with self._lock:
            if not self._current(w):
                return
            w.killed, w.why = n, why
        w.gone = kill_group(w.group)

    def _loop(self) -> None:
        while True:
            with self._lock:
                while not self._watched and not self._closed:
                    self._wake.wait()
                if self._closed:
                    return
                watched = list(self._watched.values())
            look_at_locks = self.rounds % LOCKS_EVERY == 0
            by_pid, by_file = file_locks() if look_at_locks else ({}, {})
            by_dev: dict[tuple[int, int], int] = {}
            for (major, minor, _ino), n in by_file.items():
                by_dev[(major, minor)] = by_dev.get((major, minor), 0) + n
            # (a heavily locked file on a run's own file system is that run's: counted by device below)
            owned = {w.dev for w in watched if w.dev is not None}
            heavy = {f for f, n in by_file.items() if n > FILE_LOCKS_AT_MOST and f[:2] not in owned}
            for w in watched:
                # (a round can take a while: a run that ended meanwhile is let go, and its slot may
                # already hold the next run — maybe another learner's — which must not pay for it)
                with self._lock:
                    if not self._current(w):
                        continue
                group = w.group
                if w.why:
                    # (a process that was still being born) — until the group has been seen empty:
                    # the slot is then free, and the next run's processes in it are not this run's
                    w.gone = w.gone or kill_group(group)
                    continue
                pids = group_pids(group)
                if len(w.seen) < 100_000:
                    w.seen.update(pids)
                locks = sum(by_pid.get(pid, 0) for pid in w.seen) if by_pid and look_at_locks else 0
                if w.dev is not None:
                    locks = max(locks, by_dev.get(w.dev, 0))
                if heavy and locks <= self.lock_cap:
                    locks = max(locks, holds_of(pids, heavy))
                if locks > self.lock_cap:
                    self._stop(w, "locks", locks)
                    continue
                now, sockets = run_usage(group, pids, self.v2, self.socket_cap)
                if now is None:
                    continue
                if sockets > self.socket_cap:
                    self._stop(w, "sockets", sockets)
                    continue
                if now < w.base:  # (reclaimed below where it started: grow from here)
                    w.trigger = max(KMEM_TRIGGER, w.trigger - (w.base - now))
                    w.base = now
                w.ticks += 1
                if now - w.base < w.trigger and w.ticks % COUNT_EVERY:
                    continue
                if now - w.base > self.kmem_cap:
                    self._stop(w, "kmem", now - w.base)
                    continue
                # grown past its trigger: its processes are stopped while they are counted (a
                # count of ~100,000 files takes a good part of a second, and 20 processes mapping
                # files add ~400,000 a second: the table held 4-5 times the cap before the kill)
                grown = now - w.base >= w.trigger
                if grown:
                    pids = stop_group(group, pids)
                n = files_held(pids, stop_after=self.cap)
                if n > self.cap:
                    self._stop(w, "files", n)
                    if w.why != "files" and grown:  # (let go meanwhile: whatever is left goes on)
                        signal_members(group, pids, signal.SIGCONT)
                    continue
                if grown:
                    signal_members(group, pids, signal.SIGCONT)
                    w.trigger = now - w.base + KMEM_STEP
            with self._lock:
                self.rounds += 1
                if self._closed:
                    return
                self._wake.wait(self.tick)
