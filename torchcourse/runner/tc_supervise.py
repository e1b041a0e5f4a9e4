"""A small supervisor between the driver and one snippet process. Standard library only.

Used two ways:
  * cold runs: ``python tc_supervise.py TIMEOUT RUN_DIR -- python snippet.py`` started by the
    driver with stdin a pipe (the lifeline) and the snippet's output pipe as stdout/stderr;
  * warm runs: the zygote forks, and the forked process calls :func:`supervise` with a function
    that runs the snippet in a second fork.

What it does:
  * becomes a child subreaper (``PR_SET_CHILD_SUBREAPER``), so every process the snippet starts,
    even one that escaped into a new session (``start_new_session=True``) or was double-forked,
    stays in its process tree and is found by walking ``/proc/*/stat`` parent pids;
  * starts the snippet in its own session with ``PR_SET_PDEATHSIG`` = SIGKILL, so a snippet that
    kills its parent (``os.kill(os.getppid(), 9)``) kills the supervisor and itself, never the
    driver;
  * enforces the timeout itself (plus a grace), so a busy loop never outlives a dead driver;
  * on lifeline EOF (the driver is gone, whatever killed it), on SIGTERM/SIGHUP/SIGINT, or once
    the snippet has exited, kills every descendant and reaps it;
  * when the driver is gone, removes the run directory;
  * exits with the snippet's own status (a snippet killed by signal N kills the supervisor with N).

It is not a sandbox: the snippet runs with the learner's own permissions.
"""

import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
GRACE = 2.0  # seconds past the timeout before the supervisor stops the snippet itself
_WAKE_FDS: list[int] = []  # the supervisor's signal wake-up pipe, closed in the snippet's process
_SUPERVISOR_PID = [0]


def _prctl(option, value):
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except Exception:  # pragma: no cover - not Linux
        return False


def set_pdeathsig(sig=signal.SIGKILL):
    return _prctl(PR_SET_PDEATHSIG, int(sig))


def _parents():
    """{pid: ppid} for every process visible in /proc."""
    out = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        try:
            rest = data[data.rindex(b")") + 2 :].split()
            out[int(name)] = int(rest[1])
        except (ValueError, IndexError):
            continue
    return out


def _children(pid):
    """Children of ``pid`` from /proc/PID/task/TID/children (every thread's); None when the
    kernel has no such file (CONFIG_PROC_CHILDREN) — then the caller scans all of /proc."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []  # gone meanwhile
    out = []
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                out.extend(int(c) for c in fh.read().split())
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"):
                return None
        except (OSError, ValueError):
            continue
    return out


def descendants(root):
    """Every living descendant of ``root`` (by parent pid), not ``root`` itself.

    Walks down from ``root`` (a few reads: the supervisor is a subreaper, so even a process that
    escaped into its own session is still below it) instead of reading every process's
    /proc/PID/stat (~3-15 ms on a desktop, on every run's critical path)."""
    found, todo = [], [root]
    while todo:
        kids = _children(todo.pop())
        if kids is None:
            return _descendants_by_scan(root)
        for c in kids:
            if c not in found:
                found.append(c)
                todo.append(c)
    return found


def _descendants_by_scan(root):
    parents = _parents()
    children = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), ()):
            found.append(c)
            todo.append(c)
    return found


def _zombie(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
        return data[data.rindex(b")") + 2 : data.rindex(b")") + 3] in (b"Z", b"X")
    except (OSError, ValueError):
        return True  # gone


def _nspid(pid):
    """``pid``'s ids from this PID namespace inwards (``NSpid:`` of its status)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"NSpid:"):
                    return [int(x) for x in line.split()[1:]]
    except (OSError, ValueError):
        pass
    return []


def _chain(pid):
    """``pid`` and, when it made a PID namespace of the run's own (tc_jail.own_pid_namespace),
    that namespace's init (pid 1 there) and the snippet's process (pid 2 there)."""
    out, cur = [pid], pid
    depth = len(_nspid(pid))
    for want in (1, 2):
        nxt = []
        for c in _children(cur) or []:
            ids = _nspid(c)
            if len(ids) == depth + 1 and ids[-1] == want:
                nxt.append(c)
        if len(nxt) != 1:
            break
        cur = nxt[0]
        out.append(cur)
    return out


def kill_tree(root=None, keep=None):
    """SIGKILL every descendant of ``root`` (default: this process) until none is left; reap
    the ones that are our children. Returns the wait status of ``watch`` pids seen reaped.
    ``keep``: a process left alone (the snippet process, already in ``_exit``; with its run's own
    PID namespace, the chain down to the snippet's process); zombies below it (reaped once it is
    gone) do not count."""
    root = os.getpid() if root is None else root
    reaped = {}
    spared = _chain(keep) if keep is not None else ()
    for _ in range(1000):
        pids = descendants(root)
        if keep is not None:
            pids = [p for p in pids if p not in spared and not _zombie(p)]
        if not pids:
            break
        sigkill_each(pids)
        reaped.update(_reap_all(block=False))
        time.sleep(0.005)
    reaped.update(_reap_all(block=False))
    return reaped


def signal_each(pids, sig) -> None:
    """Send ``sig`` to each of ``pids`` (one that has ended meanwhile is skipped)."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def sigkill_each(pids) -> None:
    signal_each(pids, signal.SIGKILL)


def _reap_all(block):
    out = {}
    while True:
        try:
            pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return out
        except InterruptedError:
            continue
        if pid == 0:
            return out
        out[pid] = status
        block = False


def _exit_like(status):
    """Leave this process with the same wait status as the snippet had."""
    sys.stdout.flush() if sys.stdout else None
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        except Exception:
            pass
        try:
            signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        except (OSError, ValueError, RuntimeError):
            pass
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def supervise(start_child, *, timeout, lifeline_fd=None, run_dir=None, done_fd=None, report=None):
    """Start the snippet with ``start_child()`` (returns its pid; it must call
    :func:`child_setup` first thing in the child) and supervise it; never returns."""
    sup = Supervisor()
    sup.run(start_child(), timeout=timeout, lifeline_fd=lifeline_fd, run_dir=run_dir, done_fd=done_fd, report=report)


class Supervisor:
    """One snippet's supervision. Created before the snippet process is forked (a warm spare
    creates it while waiting for its request): child subreaper, signal handlers, wake-up pipe."""

    def __init__(self):
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        self.why = None
        self.wake_r, wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(wake_w, False)
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(s, self._on_signal)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(wake_w)
        _SUPERVISOR_PID[0] = os.getpid()
        _WAKE_FDS[:] = [self.wake_r, wake_w]

    def _on_signal(self, signum, _frame):
        self.why = self.why or "signal"

    def _drain_wake(self):
        try:
            while os.read(self.wake_r, 512):
                pass
        except OSError:
            pass

    def run(self, pid, *, timeout=None, lifeline_fd=None, run_dir=None, done_fd=None, report=None, request=None):
        """Supervise the snippet process ``pid``; never returns.

        ``request`` (a warm spare): the zygote's socket, on which the request arrives (JSON with
        the ``timeout``, and the driver's connection) while this loop already runs, its code paths
        warm; the timeout counts from then. EOF on it before a request (the spare is retired) ends
        the spare; after it (the zygote died) the tree is killed and no status is sent: the driver
        sees its connection close and runs the snippet again.

        ``done_fd``/``report`` (warm spare runs): the snippet process writes its exit code to
        ``done_fd`` (its output already closed), then sleeps. Every other process of the tree is
        killed, ``{"status": N}`` goes to the driver and ``report(wait_status)`` is called (the
        zygote's word) at once; once the driver has closed its connection (it has the status),
        the snippet process is killed: the teardown of its torch-sized address space (tens of ms
        of CPU) neither delays the status nor competes with the driver's wrap-up. This supervisor
        exits with that status (without a driver's connection it reports nothing itself: the
        zygote sends that exit status once it reaps it)."""
        import select

        deadline = None if request is not None else time.monotonic() + max(0.0, float(timeout)) + GRACE
        status = None
        early = None
        wake_r = self.wake_r
        reply = None  # the driver's connection, sent with a spare's request
        if request is not None:
            import json
            import socket

            descendants(os.getpid())  # the code path that runs once the snippet is done, warmed
        while status is None and self.why is None and early is None:
            for p, st in _reap_all(block=False).items():
                if p == pid:
                    status = st
            if status is not None:
                break
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                self.why = "timeout"
                break
            rlist = [wake_r] + ([lifeline_fd] if lifeline_fd is not None else []) + ([done_fd] if done_fd is not None else []) + ([request] if request is not None else [])
            try:
                ready, _, _ = select.select(rlist, [], [], None if left is None else min(left, 1.0))
            except InterruptedError:
                continue
            if request is not None and request in ready:
                if deadline is not None:  # nothing else comes on it: the zygote is gone
                    self.why = "zygote-gone"
                    break
                msg, fds = b"", []
                try:
                    msg, fds, _flags, _addr = socket.recv_fds(request, 65536, 1)
                    timeout = float(json.loads(msg.decode("utf-8")).get("timeout", 600.0))
                except (OSError, ValueError, TypeError, AttributeError):
                    timeout = None
                reply = fds[0] if fds else None
                if timeout is None:  # retired (EOF) or garbled: the waiting snippet process goes too
                    self.why = "retired" if not msg else "bad-request"
                    break
                deadline = time.monotonic() + max(0.0, timeout) + GRACE
            if wake_r in ready:
                self._drain_wake()
            if lifeline_fd is not None and lifeline_fd in ready:
                try:
                    data = os.read(lifeline_fd, 512)
                except OSError:
                    data = b""
                if not data:
                    self.why = "driver-gone"
            if done_fd is not None and done_fd in ready:
                try:
                    data = os.read(done_fd, 64)
                    early = (int(data.split()[0]) & 0xFF) << 8  # the wait status of exit(code)
                except (OSError, ValueError, IndexError):
                    done_fd = None  # no word from the snippet (a signal ended it): wait for its exit
        if self.why in ("retired", "bad-request"):
            kill_tree()
            os._exit(0 if self.why == "retired" else 70)
        if early is not None and status is None and reply is not None:
            kill_tree(keep=pid)
            for send in (lambda: os.write(reply, b'{"status": %d}\n' % early), lambda: report and report(early)):
                try:
                    send()
                except OSError:
                    pass
            try:  # EOF once the driver has read the status and closed its end
                select.select([reply], [], [], 1.0)
            except (OSError, ValueError):
                pass
        reaped = kill_tree()
        if status is None:
            status = reaped.get(pid) if early is None else early
        if status is None:
            try:
                _p, status = os.waitpid(pid, 0)
            except ChildProcessError:
                status = signal.SIGKILL  # raw status of a SIGKILLed process
        if self.why == "driver-gone" and run_dir:
            import shutil

            shutil.rmtree(run_dir, ignore_errors=True)
        _exit_like(status)


class LockKeeper:
    """The supervisor's side of a run's ``flock()`` calls in a class (tc_jail: the seccomp filter
    sends each one here as a user notification, and the run's first process sends this keeper
    the filter's listener). A lock on a file of the run's own file system (its run directory's
    tmpfs: the device it was told) is taken by this keeper on that very open file
    (``pidfd_getfd``: the same open file description, so the lock is the run's, released when the
    run's last descriptor of it closes); any other file gets ENOLCK, as on a file system without
    locks. The kernel keeps one list of locks per file and walks it on every close of that file
    by any process: the run can grow only lists that only it walks. A blocking request waits here
    (looked at again every 20 ms while the caller waits), never in the kernel. A warm run's
    supervisor joins the run slot's CPU group (:func:`join_cpu_group`): this thread's work is the
    run's CPU. It answers at most :data:`RATE` calls a second (then the run's callers wait), and
    holds at most :data:`MAX_WAITING` waiting requests (then ENOLCK)."""

    RATE, BURST, MAX_WAITING, LOOK_AGAIN = 2000.0, 400.0, 32, 0.02
    RECV, SEND, ID_VALID = 0xC0502100, 0xC0182101, 0x40082102  # SECCOMP_IOCTL_NOTIF_*
    PIDFD_OPEN, PIDFD_GETFD, PIDFD_THREAD = 434, 438, os.O_EXCL  # (the same on x86_64 and aarch64)

    def __init__(self, sock):
        import threading

        self.sock = sock
        self.thread = threading.Thread(target=self._serve, name="tc-lock-keeper", daemon=True)
        self.thread.start()

    def _serve(self):
        import ctypes
        import json
        import select
        import socket

        try:
            msg, fds, _flags, _addr = socket.recv_fds(self.sock, 4096, 1)
        except OSError:
            return
        finally:
            self.sock.close()
        if not fds:
            return  # (the run's confinement failed, or was made without a keeper)
        listener = fds[0]
        try:
            self.devs = {int(d) for d in json.loads(msg.decode("ascii"))["devs"]}
        except (ValueError, KeyError, TypeError):
            self.devs = set()
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.waiting = {}  # notification id -> (our descriptor of the file, op)
        tokens, last = self.BURST, time.monotonic()
        looked = last
        poller = select.poll()
        poller.register(listener, select.POLLIN)
        try:
            while True:
                try:
                    events = poller.poll(int(self.LOOK_AGAIN * 1000) if self.waiting else None)
                except InterruptedError:
                    continue
                gone = False
                for _fd, ev in events:
                    if ev & select.POLLIN:
                        now = time.monotonic()
                        tokens = min(self.BURST, tokens + (now - last) * self.RATE)
                        last = now
                        if tokens < 1.0:
                            time.sleep((1.0 - tokens) / self.RATE)
                            continue
                        tokens -= 1.0
                        self._take(listener)
                    elif ev & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                        gone = True  # every process of the run has exited
                if self.waiting and time.monotonic() - looked >= self.LOOK_AGAIN:
                    self._look_again(listener)
                    looked = time.monotonic()
                if gone:
                    break
        finally:
            for f, _op in self.waiting.values():
                os.close(f)
            os.close(listener)

    def _valid(self, listener, nid):
        import ctypes

        return self.libc.ioctl(listener, self.ID_VALID, ctypes.byref(ctypes.c_uint64(nid))) == 0

    def _answer(self, listener, nid, error):
        import ctypes
        import struct

        resp = ctypes.create_string_buffer(struct.pack("QqiI", nid, 0, -error if error else 0, 0), 24)
        return self.libc.ioctl(listener, self.SEND, resp) == 0  # (False: the caller is gone, or a signal ended its wait)

    def _pidfd(self, tid):
        """A pidfd of the caller: the notification names the calling thread (torch.compile takes
        its cache lock from a worker thread)."""
        import ctypes

        fd = self.libc.syscall(self.PIDFD_OPEN, ctypes.c_int(tid), ctypes.c_uint(self.PIDFD_THREAD))
        if fd >= 0:
            return fd
        try:  # (a kernel before 6.9: no PIDFD_THREAD; the thread group's leader)
            with open(f"/proc/{tid}/status", "rb") as fh:
                tgid = next(int(line.split()[1]) for line in fh if line.startswith(b"Tgid:"))
        except (OSError, StopIteration, ValueError, IndexError):
            return -1
        return self.libc.syscall(self.PIDFD_OPEN, ctypes.c_int(tgid), ctypes.c_uint(0))

    def _take(self, listener):
        import ctypes
        import errno
        import struct

        buf = ctypes.create_string_buffer(80)
        if self.libc.ioctl(listener, self.RECV, buf) != 0:
            return  # (the caller went away meanwhile)
        nid, pid = struct.unpack_from("QI", buf.raw, 0)
        fd, op = struct.unpack_from("i", buf.raw, 32)[0], struct.unpack_from("i", buf.raw, 40)[0]  # (args[0], args[1])
        pidfd = self._pidfd(pid)
        if pidfd < 0:
            return self._answer(listener, nid, errno.ENOLCK)
        try:
            if not self._valid(listener, nid):  # (the pid may already be another process's)
                return
            f = self.libc.syscall(self.PIDFD_GETFD, ctypes.c_int(pidfd), ctypes.c_int(fd), ctypes.c_uint(0))
            err = ctypes.get_errno()
        finally:
            os.close(pidfd)
        if f < 0:
            return self._answer(listener, nid, errno.EBADF if err == errno.EBADF else errno.ENOLCK)
        try:
            own = os.fstat(f).st_dev in self.devs
        except OSError:
            own = False
        if not own:
            os.close(f)
            return self._answer(listener, nid, errno.ENOLCK)
        self._try(listener, nid, f, op, first=True)

    def _try(self, listener, nid, f, op, first=False):
        import errno
        import fcntl

        try:
            fcntl.flock(f, op | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN) and not op & fcntl.LOCK_NB:
                if first:
                    if len(self.waiting) >= self.MAX_WAITING:
                        os.close(f)
                        return self._answer(listener, nid, errno.ENOLCK)
                    self.waiting[nid] = (f, op)
                return
            self.waiting.pop(nid, None)
            os.close(f)
            return self._answer(listener, nid, exc.errno or errno.ENOLCK)
        except (ValueError, OverflowError):
            self.waiting.pop(nid, None)
            os.close(f)
            return self._answer(listener, nid, errno.EINVAL)
        waited = self.waiting.pop(nid, None) is not None
        if not self._answer(listener, nid, 0) and waited:
            # the caller stopped waiting (a signal: its flock() failed with EINTR) just before the
            # lock came: the kernel would leave it without one. (A waiting request holds none of
            # its own: flock drops the open file's lock before it waits for another kind.)
            fcntl.flock(f, fcntl.LOCK_UN)
        os.close(f)

    def _look_again(self, listener):
        for nid, (f, op) in list(self.waiting.items()):
            if not self._valid(listener, nid):  # (the caller was killed, or a signal ended its wait)
                del self.waiting[nid]
                os.close(f)
            else:
                self._try(listener, nid, f, op)


def join_cpu_group(fd):
    """Move this (supervisor) process into the group whose ``cgroup.procs`` is open as ``fd`` (the
    run slot's CPU group, opened by root): the lock keeper's work counts in the run's share."""
    try:
        os.write(fd, b"0")
    except OSError:
        pass


def keeper_pair():
    """(the supervisor's end, the snippet process's end) of the socket the run's first process
    sends its seccomp listener on (:class:`LockKeeper`)."""
    import socket

    return socket.socketpair()


def child_setup():
    """First thing in the snippet's process: its own session, dies with the supervisor."""
    os.setsid()
    set_pdeathsig(signal.SIGKILL)
    if os.getppid() != _SUPERVISOR_PID[0]:  # the supervisor died before the line above
        os._exit(137)
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(s, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.set_wakeup_fd(-1)
    for fd in _WAKE_FDS:  # the supervisor's: a snippet filling them kept it waking, outside the run's CPU group
        try:
            os.close(fd)
        except OSError:
            pass
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def _wants_keeper(cmd):
    """The command confines a run whose flock() calls come to this supervisor (tc_jail's spec)."""
    if "--confine" not in cmd[:-1]:
        return False
    import json

    try:
        return bool(json.loads(cmd[cmd.index("--confine") + 1]).get("keeper"))
    except (ValueError, AttributeError):
        return False


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    timeout = float(argv[0])
    run_dir = argv[1]
    cmd = argv[argv.index("--") + 1 :]
    lifeline = os.dup(0)
    os.set_inheritable(lifeline, False)
    pair = keeper_pair() if _wants_keeper(cmd) else None

    def start():
        pid = os.fork()
        if pid == 0:
            try:
                child_setup()
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                os.close(null)
                if pair is not None:  # (tc_jail --confine takes it: _keeper_from_env)
                    pair[0].close()
                    os.set_inheritable(pair[1].fileno(), True)
                    os.environ["TC_LOCK_KEEPER_FD"] = str(pair[1].fileno())
                os.execv(cmd[0], cmd)
            finally:
                os._exit(127)
        if pair is not None:
            pair[1].close()
            LockKeeper(pair[0])
        return pid

    supervise(start, timeout=timeout, lifeline_fd=lifeline, run_dir=run_dir)


if __name__ == "__main__":
    main()
