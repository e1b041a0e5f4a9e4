"""The warm zygote: imports the course's preload modules (the shipped course: torch, and numpy
with it), runs nothing else, forks one child per snippet.

Started by :mod:`torchcourse.runner.warm` as ``python /path/to/zygote.py`` — as a plain script, so that
not even the ``torchcourse`` package is imported here. Standard library only. Its first stdin line:
``{"socket": SOCKET, "preload": ["torch"], "jail": SPEC or null}``.

Protocol (unix stream socket at SOCKET, one connection per snippet):
  driver → zygote: one message ``{"dir": RUN_DIR, "file": "snippet.py"}`` carrying, as
                   SCM_RIGHTS, the write end of the pipe that becomes the child's stdout+stderr.
  zygote → driver: ``{"pid": PID}\\n`` right after the fork (or the hand-over to a spare), then
                   ``{"status": WAIT_STATUS}\\n``: from a spare's supervisor itself (it got the
                   connection from the zygote) as soon as the snippet is done, else from the
                   zygote once the supervisor is reaped. A line after the first status is
                   ignored. The driver closes the connection when it is done with the result.
Start-up: one JSON line on stdout, ``{"ok": true, "torch": …}`` or ``{"ok": false, "error": …}``.
Lifeline: stdin (after that line) is a pipe from the driver; on EOF (driver gone) every child's process group is
killed and the zygote exits.

Traps avoided: no tensor op, no thread, no CUDA call before fork (libgomp / CUDA are not
fork-safe once initialised). The child reseeds torch, numpy and random from os.urandom, gets a
fresh ``__main__`` with ``__file__``, ``sys.argv`` and ``sys.path[0]``, runs like ``python file.py``
(uncaught exception → traceback + exit 1, ``sys.exit(n)`` → n, KeyboardInterrupt → SIGINT),
waits for non-daemon threads, runs atexit handlers, flushes and ``os._exit``\\ s.
"""

import os
import sys

_THIS_FILE = os.path.abspath(__file__)
SPARE_DELAY = 0.03
JAIL_OK_WORD, JAIL_FAILED_WORD = b"1", b"0"  # a snippet process's confinement, told to the zygote  # seconds of quiet after a run before the next spare is forked
# the sandbox's confinement of each snippet process (tc_jail.confine's spec), from the optional
# third argument; None outside a sandbox
_JAIL = [None]
_PREPARED = [False]  # this snippet process did tc_jail.prepare already (a spare, while it waited)
# the kernel uid this snippet process must have before any of its snippet's code runs: its run
# slot's own (root sandbox with run slots, see _take_slot_uid), else None (the zygote's uid)
_SLOT_UID = [None]
MAX_CPU = 610  # a spare's CPU-seconds limit, set before it knows its timeout (at most 600 s)


def _exit_code(exc):
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(str(code) + "\n")
    except Exception:
        pass
    return 1


def _run_main(run_dir, name):
    """Run RUN_DIR/NAME as ``python NAME`` would (after :func:`_prepare_snippet_process`); return
    the exit code."""
    import atexit
    import builtins
    import signal
    import types
    from importlib.machinery import SourceFileLoader

    path = os.path.join(run_dir, name)
    sys.argv = [name]
    sys.orig_argv = [sys.executable, name]
    if sys.path:
        sys.path[0] = run_dir
    else:
        sys.path.append(run_dir)

    main = types.ModuleType("__main__")
    main.__dict__.update(
        __file__=path,
        __cached__=None,
        __builtins__=builtins,
        __loader__=SourceFileLoader("__main__", path),
        __spec__=None,
        __package__=None,
        __annotations__={},
    )
    sys.modules["__main__"] = main

    rc = 0
    sigint = False
    try:
        with open(path, "rb") as fh:
            source = fh.read()
        code = compile(source, path, "exec", dont_inherit=True)
        exec(code, main.__dict__)
    except SystemExit as exc:
        rc = _exit_code(exc)
    except BaseException as exc:  # noqa: BLE001 - reported exactly like the interpreter does
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == _THIS_FILE:
            tb = tb.tb_next
        exc.__traceback__ = tb
        try:
            sys.excepthook(type(exc), exc, tb)
        except BaseException:
            pass
        rc = 1
        sigint = isinstance(exc, KeyboardInterrupt)

    # Interpreter shutdown, in the interpreter's order. Torch's own per-library finalizers
    # created in the zygote (~130 ``_del_library`` calls, 20-50 ms, no output) do not run at
    # exit (see _skip_torch_finalizers_at_exit): the process is about to _exit and they only
    # unregister operators from the dispatcher.
    try:
        import threading

        threading._shutdown()
    except BaseException:
        pass
    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except BaseException:
            rc = 120 if rc == 0 else rc
    if sigint:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return rc



def _skip_torch_finalizers_at_exit():
    """In the zygote, before any fork: torch's per-library finalizers stay registered (a library
    freed during a snippet still unregisters its operators) but are not run at exit. Marking them
    here costs nothing per run; detaching them in each snippet process wrote to ~130 objects
    shared with the zygote (copy-on-write faults, ~2 ms per run)."""
    import weakref

    for ref, info in list(weakref.finalize._registry.items()):
        if getattr(info.func, "__name__", "") == "_del_library" and getattr(info.func, "__module__", "").startswith("torch"):
            ref.atexit = False


def _prepare_snippet_process():
    """What a snippet process does before it knows its snippet (a spare's, while it waits for the
    request): stdin from /dev/null, and fresh random streams, exactly like a brand-new
    interpreter."""
    import random
    import tempfile  # noqa: F401 - _snippet_main resets its tempdir

    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    random.seed()
    if "numpy.random" in sys.modules:
        sys.modules["numpy.random"].seed()
    torch = sys.modules.get("torch")
    if torch is not None:
        # CPU generator only: torch.seed() would also queue a lazy CUDA call (and format a stack
        # trace, ~20 ms). GPU snippets always run cold.
        torch.default_generator.seed()


def _take_faults_ahead():
    """A spare's snippet process, while it waits: take now the copy-on-write faults (~5 us each
    here) that parsing the request and the exit's pass over weakref finalizers (~150 pages) would
    take on the run's clock. Reads and reference-count round trips only: nothing changes."""
    import json
    import weakref

    json.loads('{"dir": "/", "file": "snippet.py", "timeout": 1.0, "HOME": "/", "TMPDIR": "/"}')
    list(weakref.finalize._registry.items())


def _snippet_main(req, outfd, done_fd=None, jail_fd=None, keeper=None):
    """In the snippet's process (after tc_supervise.child_setup and _prepare_snippet_process):
    run it like ``python file``.
    ``done_fd``: tell the supervisor the exit code and close the output, then sleep until the
    supervisor's SIGKILL, which comes once the driver has the status: tearing down this
    torch-sized process takes tens of ms of CPU that nobody needs to wait for, and done at once
    it competed with the status's way to the driver and the driver's wrap-up.
    ``jail_fd`` (a sandbox): where the confinement's outcome is told, before any of the
    snippet's code runs (see :func:`_confine`); ``keeper``: the socket to the supervisor's
    tc_supervise.LockKeeper (closed by the confinement)."""
    rc = 70
    try:
        os.dup2(outfd, 1)
        os.dup2(outfd, 2)
        os.close(outfd)
        os.chdir(req["dir"])
        os.environ["PWD"] = req["dir"]  # (as a shell's `python snippet.py` there: not the zygote's directory)
        for key in ("HOME", "TMPDIR"):
            if req.get(key):
                os.environ[key] = req[key]
        if _JAIL[0] is not None:
            _confine(req, jail_fd, keeper)
        import tempfile

        tempfile.tempdir = None  # computed again from the new TMPDIR
        rc = _run_main(req["dir"], req.get("file", "snippet.py"))
        if done_fd is not None:
            try:
                os.close(1)
                os.close(2)
                os.write(done_fd, b"%d\n" % (rc & 0xFF))
            except OSError:
                pass
            else:
                _wait_for_kill()
    finally:
        os._exit(rc)


def _jail_word(fd, word):
    """Tell the zygote how the confinement went, on the pipe only it reads, and close the pipe:
    the snippet's own code never holds it, so no output or exit code of a snippet can pass for a
    confinement that failed."""
    if fd is None:
        return
    try:
        os.write(fd, word)
    except OSError:
        pass
    try:
        os.close(fd)
    except OSError:
        pass


def _confine(req, jail_fd=None, keeper=None):
    """In a sandbox: this snippet process may touch only its own ``tc-run-*`` directory, with the
    sandbox's limits (its CPU seconds from the request's timeout). Never runs the snippet
    half-confined: on failure it says why, tells the zygote on ``jail_fd`` and exits 70."""
    import tc_jail

    spec = dict(_JAIL[0])
    spec["cpu"] = int(float(req.get("timeout", 60.0))) + 10
    own = req.get("cleanup") or os.path.dirname(req["dir"])
    try:
        uid = _SLOT_UID[0]
        if uid is not None and os.getresuid() != (uid, uid, uid):
            raise tc_jail.JailError(f"the run slot's uid {uid} was not taken")
        if not _PREPARED[0]:
            tc_jail.prepare(spec)
        if uid is not None:
            _wait_until_given(own, uid)
        tc_jail.restrict(spec, own, keeper if spec.get("keeper") else None)
    except Exception as exc:  # noqa: BLE001
        try:
            os.write(2, ("🚫 [torchcourse] 沙箱没能建立，代码没有运行：%s\n" % exc).encode())
        except OSError:
            pass
        _jail_word(jail_fd, JAIL_FAILED_WORD)
        os._exit(70)
    _jail_word(jail_fd, JAIL_OK_WORD)


def _wait_until_given(own, uid, within=2.0):
    """Until the driver has made the run's directory its slot uid's alone (``Sandbox.give_run``,
    done once the zygote has said which slot the run took, while this process gets its request):
    no code of the snippet runs while another run's uid may still pass through its directory.
    After ``within`` seconds (a driver that never gets to it) the run goes on as before."""
    import time

    end = time.monotonic() + within
    while True:
        try:
            if os.stat(own).st_uid == uid:
                return
        except OSError:
            return
        if time.monotonic() > end:
            return
        time.sleep(0.0005)


def _prepare_jail():
    """A spare's snippet process in a sandbox, while it waits: its user namespace and limits now
    (the CPU limit is the largest timeout's; the supervisor's timeout is the run's own)."""
    import tc_jail

    try:
        tc_jail.prepare({**_JAIL[0], "cpu": MAX_CPU})
    except Exception:  # noqa: BLE001 - _confine tries again once the request is in, and refuses
        return
    _PREPARED[0] = True


def _outside_peer(conn):
    """True when the connecting process is outside this PID namespace (the driver): the kernel
    reports its pid as 0 here. A snippet inside the sandbox that found the socket is refused."""
    import socket
    import struct

    try:
        pid, _uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    except OSError:
        return False
    return pid == 0


def _wait_for_kill():
    """Block until SIGKILL (from the supervisor, or PDEATHSIG when the supervisor is gone)."""
    import select
    import signal

    signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    while True:
        select.select([], [], [], 3600.0)


def _join_slot(fds):
    """The run's first process (before it forks anything or runs any code) moves into its run
    slot's cgroups (``fds``: those groups' ``cgroup.procs``, opened by root outside the sandbox:
    memory, and cpu on cgroup v1): all processes of the run are then born there, the OOM killer
    picks among them only, and they share one slot's CPU weight however many sessions they make.
    The move waits for an RCU grace period (5-15 ms): a spare makes it while it waits."""
    for fd in fds or ():
        try:
            os.write(fd, b"0")
        except OSError:
            pass  # (the run is still within the sandbox's own group)
        try:
            os.close(fd)
        except OSError:
            pass


def _take_slot_uid(uid, saved=None, jail_fd=None):
    """Become the run slot's own kernel uid ``uid`` and drop every capability (the zygote keeps
    CAP_SETUID for this alone). The kernel keeps several counts per uid whatever the user
    namespace (files in flight over unix sockets, queued signals, epoll watches, pipe pages): with
    a uid of its own, a run that uses one up uses up its own. The supervisor keeps the zygote's
    uid as its saved uid (``saved``), so the zygote can still signal it; the snippet process keeps
    none. On failure the zygote is told the confinement failed (``jail_fd``) and the process
    exits: no snippet runs with the zygote's uid or capability. ``uid`` None: the process keeps
    the zygote's uid, and drops the zygote's capability if it holds one."""
    holds_setuid = bool((_JAIL[0] or {}).get("uids"))  # (the zygote was given uids to hand out)
    if uid is None and not holds_setuid:
        return
    try:
        import tc_jail

        if uid is None:
            tc_jail.drop_capabilities()
        else:
            tc_jail.take_uid(uid, saved)
    except BaseException:
        _jail_word(jail_fd, JAIL_FAILED_WORD)
        os._exit(70)


def _keep_locks(keeper, slot_fd):
    """In a supervisor, once its snippet process is forked: the lock keeper's side of ``keeper``
    (a pair from tc_supervise.keeper_pair, or (None, None) outside a class); on cgroup v1 the
    supervisor joins the run slot's CPU group first (``slot_fd``: memory, cpu — never the memory
    group), so the keeper's work is the run's CPU."""
    import tc_supervise

    if keeper[0] is None:
        return
    keeper[1].close()
    if slot_fd and len(slot_fd) > 1:
        tc_supervise.join_cpu_group(slot_fd[1])
    tc_supervise.LockKeeper(keeper[0])


def _close_all(fds):
    for fd in fds or ():
        try:
            os.close(fd)
        except OSError:
            pass


def _become_supervisor(to_close) -> None:
    """First steps of a freshly forked supervisor (per-run or spare): its own process group, so
    the driver can always kill it as a group; no zygote signal plumbing; the zygote's sockets
    and pipes closed."""
    import signal

    os.setsid()
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for obj in to_close:
        try:
            obj.close() if hasattr(obj, "close") else os.close(obj)
        except OSError:
            pass


def _spare(sock, child_sock, to_close, slot_fd=None, jail_fd=None, uid=None):
    """A supervisor forked ahead of the next request, with its snippet process forked too.

    Both forks of a torch-sized process (~6 ms each), the supervisor's set-up and the snippet
    process's (stdin, reseeding) happen while nobody waits. The zygote hands the request (JSON +
    the output pipe's write end) straight to the waiting snippet process over ``child_sock``, then
    (JSON + the driver's connection) to the supervisor over ``sock``; the supervisor supervises
    exactly like :func:`_child`, sends the status to the driver itself and then a word to the
    zygote over ``sock`` (see tc_supervise.Supervisor.run). EOF on either socket (the zygote is
    gone or retires the spare) ends both."""
    import socket

    import tc_supervise

    try:
        _become_supervisor(to_close)
    except BaseException:
        os._exit(70)
    _take_slot_uid(uid, os.getuid(), jail_fd)
    try:
        sup = tc_supervise.Supervisor()
        done_r, done_w = os.pipe()
        keeper = tc_supervise.keeper_pair() if (_JAIL[0] or {}).get("keeper") else (None, None)
        pid = os.fork()
    except BaseException:
        os._exit(70)
    if pid == 0:
        try:
            _take_slot_uid(uid, None, jail_fd)  # (first: a change of uid clears the parent-death signal)
            _SLOT_UID[0] = uid
            tc_supervise.child_setup()
            sock.close()
            os.close(done_r)
            if keeper[0] is not None:
                keeper[0].close()
            _join_slot(slot_fd)
            _prepare_snippet_process()
            if _JAIL[0] is not None:
                _prepare_jail()
            _take_faults_ahead()
            msg, fds, _flags, _addr = socket.recv_fds(child_sock, 65536, 1)
            child_sock.close()
            if not msg or len(fds) != 1:
                os._exit(0)
            import json

            req = json.loads(msg.decode("utf-8"))
        except BaseException:
            os._exit(70)
        _snippet_main(req, fds[0], done_w, jail_fd, keeper[1])
    try:  # the status goes to the driver as soon as the snippet says it is done, then a word to the zygote
        _keep_locks(keeper, slot_fd)
        _close_all(slot_fd)
        if jail_fd is not None:
            os.close(jail_fd)
        child_sock.close()
        os.close(done_w)
        sup.run(pid, request=sock, done_fd=done_r, report=lambda status: sock.sendall(b"%d\n" % status))
    finally:
        os._exit(70)


def _child(req, outfd, to_close, slot_fd=None, jail_fd=None, uid=None):
    """The forked process: a supervisor (tc_supervise) whose own child runs the snippet."""
    import tc_supervise

    try:
        _become_supervisor(to_close)
    except BaseException:
        os._exit(70)
    _take_slot_uid(uid, os.getuid(), jail_fd)

    def start():
        keeper = tc_supervise.keeper_pair() if (_JAIL[0] or {}).get("keeper") else (None, None)
        pid = os.fork()
        if pid == 0:
            try:
                _take_slot_uid(uid, None, jail_fd)  # (first: a change of uid clears the parent-death signal)
                _SLOT_UID[0] = uid
                tc_supervise.child_setup()
                if keeper[0] is not None:
                    keeper[0].close()
                _join_slot(slot_fd)
                _prepare_snippet_process()
            except BaseException:
                os._exit(70)
            _snippet_main(req, outfd, jail_fd=jail_fd, keeper=keeper[1])  # runs the snippet and never returns
        _keep_locks(keeper, slot_fd)
        os.close(outfd)
        _close_all(slot_fd)
        if jail_fd is not None:
            os.close(jail_fd)
        return pid

    try:
        tc_supervise.supervise(start, timeout=float(req.get("timeout", 600.0)))
    finally:
        os._exit(70)


def _read_config():
    """The driver's one JSON line on stdin (read byte by byte: nothing after it is consumed, the
    pipe stays the lifeline). Not argv: every run's pid 1 and snippet inherit this process's
    argv, readable in their ``/proc/1/cmdline`` — the socket's path, the slots' uids, the limits."""
    import json

    buf = bytearray()
    while not buf.endswith(b"\n"):
        chunk = os.read(0, 1)
        if not chunk:
            break
        buf += chunk
    return json.loads(buf.decode("utf-8")) if buf.strip() else {}


def main(argv=None):
    config = _read_config()
    sock_path = config["socket"]
    import json
    import select
    import signal
    import socket

    # the modules to import once (course.toml ``preload``; the shipped course: torch)
    preload = config.get("preload", ["torch"])
    _JAIL[0] = config.get("jail")
    hello = {"ok": True, "pid": os.getpid(), "python": sys.version, "preload": preload}
    import importlib

    for name in preload:
        try:
            module = importlib.import_module(name)  # the whole point: pay for this once
        except BaseException as exc:  # noqa: BLE001
            hello = {"ok": False, "no_torch": isinstance(exc, ImportError), "missing": name, "error": f"{type(exc).__name__}: {exc}"}
            break
        if name == "torch":
            hello["torch"] = module.__version__
            hello["cuda"] = module.version.cuda  # build info only; no CUDA call here
            try:
                import numpy  # noqa: F401 - torch's snippets use it often; optional
            except ImportError:
                pass

    if not hello["ok"]:
        os.write(1, (json.dumps(hello) + "\n").encode())
        return 0

    _skip_torch_finalizers_at_exit()
    import tc_supervise  # noqa: F401 - imported before any fork (this script's directory)

    if _JAIL[0] is not None:
        import ctypes  # noqa: F401 - tc_jail's, imported before any fork
        import resource  # noqa: F401
        import struct  # noqa: F401

        import tc_jail

        tc_jail._lib()  # ctypes' libc handle, made once here, not in every snippet process
        tc_jail.landlock_abi()

    hello["modules"] = sorted({name.split(".", 1)[0] for name in sys.modules})
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock_path)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    os.write(1, (json.dumps(hello) + "\n").encode())
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)

    children = {}  # pid -> connection waiting for the status
    dirs = {}  # pid -> the tc-run-* directory to remove if the driver goes away mid-run
    spare = []  # [(pid, socket, child socket)]: a supervisor + snippet process forked ahead of the next request
    early = {}  # socket -> pid: a spare-run supervisor that sends the status before its exit
    need_spare = [False]  # forked once nothing happened for SPARE_DELAY: never beside a driver's wrap-up
    # the run slots' memory cgroups (the open cgroup.procs of each, from the driver): a run takes a
    # free slot (its spare, while it waits) and gives it back once its supervisor is reaped
    slot_fds = [list(fds) if isinstance(fds, list) else [fds] for fds in (_JAIL[0] or {}).get("slots") or []]
    # the longest free first; never one that a run of the zygote this one replaced still holds
    free_slots = [i for i in range(len(slot_fds)) if i not in set((_JAIL[0] or {}).get("busy") or ())]
    slot_of = {}  # supervisor pid -> its slot
    # each run slot's own kernel uid, and one more for a run that finds no slot free (a root
    # sandbox: this process keeps CAP_SETUID for handing them out, see _take_slot_uid)
    slot_uids = list((_JAIL[0] or {}).get("uids") or [])
    # supervisor pid -> the read end of its snippet process's confinement pipe (a sandbox): the
    # word on it, not the run's output or exit code, says whether confinement failed
    jail_of = {}

    def new_jail():
        return os.pipe() if _JAIL[0] is not None else (None, None)

    def jail_failed(pid):
        fd = jail_of.pop(pid, None)
        if fd is None:
            return False
        try:
            os.set_blocking(fd, False)
            word = os.read(fd, 8)
        except OSError:
            word = b""
        finally:
            os.close(fd)
        return word[:1] == JAIL_FAILED_WORD

    def take_slot():
        """(slot, its fd, the other slots' fds to close in the child, its uid)."""
        slot = free_slots.pop(0) if free_slots else None
        if slot is not None:
            uid = slot_uids[slot] if slot < len(slot_uids) else None
        else:  # (no slot free: the uid after the slots', never this process's own)
            uid = slot_uids[len(slot_fds)] if len(slot_uids) > len(slot_fds) else None
        return slot, (slot_fds[slot] if slot is not None else None), [fd for i, fds in enumerate(slot_fds) if i != slot for fd in fds], uid

    def make_spare():
        if slot_fds and not free_slots:
            return  # every slot busy: the next reap makes the spare
        slot, slot_fd, others, uid = take_slot()
        ours, its = socket.socketpair()
        child_ours, child_its = socket.socketpair()
        jail_r, jail_w = new_jail()
        pid = os.fork()
        if pid == 0:
            ours.close()
            child_ours.close()
            theirs = [*jail_of.values()] + ([jail_r] if jail_r is not None else [])
            _spare(its, child_its, [listener, wake_r, wake_w, *children.values(), *(x for _p, *socks in spare for x in socks), *early, *others, *theirs, *waiting_fds()], slot_fd, jail_w, uid)
        its.close()
        child_its.close()
        if jail_r is not None:
            os.close(jail_w)
            jail_of[pid] = jail_r
        spare.append((pid, ours, child_ours))
        if slot is not None:
            slot_of[pid] = slot
        rehearse()

    def rehearse():
        """The request's way through this process, once, on a socket pair of its own, right after
        a fork: every page it writes is shared with the new spare, and the first write to each
        costs a copy-on-write fault (~100 of them, 0.4-0.5 ms before the snippet could start)."""
        a, b = socket.socketpair()
        r, w = os.pipe()
        try:
            socket.send_fds(a, [json.dumps({"dir": "/", "file": "snippet.py", "timeout": 1.0, "cleanup": ""}).encode()], [w])
            b.settimeout(5.0)
            msg, fds, _flags, _addr = socket.recv_fds(b, 65536, 4)
            json.loads(msg.decode("utf-8"))
            for fd in fds:
                os.close(fd)
            send(b, {"pid": 0})
        except (OSError, ValueError):
            pass
        finally:
            for obj in (a, b, r, w):
                obj.close() if hasattr(obj, "close") else os.close(obj)

    def use_spare(msg, outfd, conn):
        """Hand the request to the spare and send its pid to the driver; the pid, or None when
        there is none (or it died)."""
        while spare:
            pid, ours, child_ours = spare.pop()
            try:
                socket.send_fds(child_ours, [msg], [outfd])  # the snippet process starts now
            except OSError:
                ours.close()
                child_ours.close()
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
                continue
            child_ours.close()
            send(conn, {"pid": pid, "slot": slot_of.get(pid)})  # before the supervisor can send the status on ``conn``
            try:
                # the supervisor sends the status to the driver over ``conn`` itself, then a word
                # on ``ours``; this process keeps ``conn`` until then (if the supervisor dies
                # first, reap() sends its wait status)
                socket.send_fds(ours, [msg], [conn.fileno()])
            except OSError:
                pass  # it died: EOF on ``ours``, and reap() reports its wait status
            early[ours] = pid
            return pid
        return None

    def early_status(sock):
        """A spare's supervisor has sent the status to the driver (before it and its snippet
        process finished exiting)."""
        pid = early.pop(sock)
        try:
            data = sock.recv(64)
        except OSError:
            data = b""
        sock.close()
        if not data:
            return  # it died first: the status goes to the driver when it is reaped
        conn = children.pop(pid, None)
        dirs.pop(pid, None)
        if conn is not None:
            conn.close()
            need_spare[0] = True

    def send(conn, obj):
        try:
            conn.sendall((json.dumps(obj) + "\n").encode())
        except OSError:
            pass

    def reap():
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = children.pop(pid, None)
            dirs.pop(pid, None)
            failed = jail_failed(pid)
            if pid in slot_of:
                free_slots.append(slot_of.pop(pid))
                need_spare[0] = True
            if conn is not None:
                send(conn, {"status": status, "jail": "failed"} if failed else {"status": status})
                conn.close()
                need_spare[0] = True

    def shutdown():
        for sock in list(early):
            sock.close()
        early.clear()
        for pid, ours, child_ours in spare:  # a spare has run nothing: EOF ends it and its waiting child
            ours.close()
            child_ours.close()
            children.setdefault(pid, None)
        spare.clear()
        # each child is a supervisor: SIGTERM makes it kill its snippet's whole tree and exit
        for pid in list(children):
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass
        import shutil
        import time

        end = time.monotonic() + 2.0
        while children and time.monotonic() < end:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                time.sleep(0.01)
                continue
            conn = children.pop(pid, None)
            if conn is not None:
                shutil.rmtree(dirs.pop(pid, ""), ignore_errors=True)
        for pid in list(children):
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        for d in dirs.values():
            shutil.rmtree(d, ignore_errors=True)
        try:
            os.unlink(sock_path)
        except OSError:
            pass
        os._exit(0)

    # requests that came when no spare was ready and every run slot was taken (a run's processes
    # still leaving its slot: the service starts at most ``jobs`` at once, and the slots are
    # ``jobs`` + 2): each waits for a slot and starts once one is free — a run never goes without
    # its slot's memory group and guard
    waiting = []

    def waiting_fds():
        return [x for _m, _r, outfd, conn in waiting for x in (outfd, conn)]

    def start_run(msg, req, outfd, conn):
        """Start one request on the spare or a new fork; False when it must wait for a slot."""
        pid = use_spare(msg, outfd, conn)
        if pid is None:
            if slot_fds and not free_slots:
                return False
            slot, slot_fd, others, uid = take_slot()
            jail_r, jail_w = new_jail()
            to_close = [listener, wake_r, wake_w, *children.values(), *early, *others, *jail_of.values(), *waiting_fds()]
            if jail_r is not None:
                to_close.append(jail_r)
            pid = os.fork()
            if pid == 0:
                _child(req, outfd, [conn, *(x for x in to_close if x is not outfd)], slot_fd, jail_w, uid)
            if jail_r is not None:
                os.close(jail_w)
                jail_of[pid] = jail_r
            if slot is not None:
                slot_of[pid] = slot
            send(conn, {"pid": pid, "slot": slot})
        os.close(outfd)
        children[pid] = conn
        if req.get("cleanup"):
            dirs[pid] = req["cleanup"]
        return True

    def start_waiting():
        while waiting and start_run(*waiting[0]):
            waiting.pop(0)

    make_spare()  # the first request finds its processes forked already
    while True:
        try:
            ready, _, _ = select.select([listener, wake_r, 0, *early], [], [], SPARE_DELAY if need_spare[0] and not spare else None)
        except InterruptedError:
            continue
        if not ready:
            need_spare[0] = False
            make_spare()
            continue
        if 0 in ready:
            try:
                data = os.read(0, 1024)
            except OSError:
                data = b""
            if not data:
                shutdown()
        if wake_r in ready:
            try:
                while os.read(wake_r, 512):
                    pass
            except OSError:
                pass
            reap()
            start_waiting()
        for sock in ready:
            if sock in early:
                early_status(sock)
        if listener in ready:
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            if _JAIL[0] is not None and not _outside_peer(conn):
                conn.close()
                continue
            fds = []
            try:
                conn.settimeout(5.0)
                msg, fds, _flags, _addr = socket.recv_fds(conn, 65536, 4)
                req = json.loads(msg.decode("utf-8"))
            except (OSError, ValueError):
                for fd in fds:
                    os.close(fd)
                conn.close()
                continue
            if len(fds) != 1 or "dir" not in req:
                send(conn, {"error": "bad request"})
                conn.close()
                for fd in fds:
                    os.close(fd)
                continue
            waiting.append((msg, req, fds[0], conn))
            start_waiting()
            reap()


if __name__ == "__main__":
    sys.exit(main())
