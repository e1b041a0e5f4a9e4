"""The classroom sandbox (issue 36): bwrap around the interpreter, tc_jail (own user namespace,
limits, Landlock) around each snippet process. Real bwrap, real torch, real SQLite; hostile
snippets must each end with a clear verdict and leave the next run and every other file alone.

Without a working sandbox these tests skip with the reason; in CI (CI=true) they fail instead."""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import sqlite3
import subprocess
import sys
import textwrap
import threading
import types
from pathlib import Path

import pytest

from process_support import wait_until
from torchcourse.course.model import Snippet
from torchcourse.runner.sandbox import SandboxRunner, sandbox_problem

PROBLEM = sandbox_problem()
if PROBLEM and os.environ.get("CI") == "true":
    raise RuntimeError(f"the sandbox tests cannot run in CI: {PROBLEM}")
pytestmark = pytest.mark.skipif(PROBLEM is not None, reason=f"sandbox unavailable: {PROBLEM}")


def snip(code: str, **kw) -> Snippet:
    return Snippet(id="h", chapter_id="x", code=textwrap.dedent(code), expected=kw.pop("expected", "x"), line=1, **kw)


def make_db(path: Path, secret: str) -> str:
    """A real progress-like SQLite database holding ``secret``; returns its digest."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.execute("create table if not exists notes (body text)")
    con.execute("insert into notes values (?)", (secret,))
    con.commit()
    con.close()
    return digest(path)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextlib.contextmanager
def background_run(runner, code: str, marker: str):
    """Run A: ``code`` (timeout 600 s) runs in a thread for the length of the block, which gets
    ``a.dir``, A's run space, once A has written ``marker`` in its run directory (a state, never a
    time). At the block's end A is cancelled and its thread joined: ``a.result`` is its result."""
    root = runner.sandbox.runs_root
    known = set(os.listdir(root))
    stop = threading.Event()
    out: dict = {}
    t = threading.Thread(target=lambda: out.setdefault("a", runner.run(snip(code, timeout=600), use_cache=False, cancel=stop)))
    a = types.SimpleNamespace(dir=None, result=None)

    def a_dir():
        for name in set(os.listdir(root)) - known:
            if os.path.exists(os.path.join(root, name, "run", marker)):
                return os.path.join(root, name)
        return None

    t.start()
    try:
        wait_until(lambda: a_dir() is not None, f"run A wrote {marker}")
        a.dir = a_dir()
        yield a
    finally:
        stop.set()
        t.join(60)
    assert not t.is_alive(), "run A was not stopped by its cancel"
    a.result = out["a"]


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    """A classroom root with another learner's database, hidden from the sandbox."""
    root = tmp_path_factory.mktemp("classroom")
    db = root / "learners" / "bob" / "data" / "progress.sqlite3"
    return {"root": root, "db": db, "digest": make_db(db, "bob's secret answer")}


@pytest.fixture(scope="module")
def runner(classroom):
    r = SandboxRunner(cache_dir=None, warm=True, hide=[str(classroom["root"])])
    r.start()
    yield r
    r.close()


OK = snip("import torch\nprint(torch.ones(3).sum().item())\n", expected="3.0")


def test_a_plain_snippet_runs_warm_in_the_sandbox_and_matches(runner):
    res = runner.run(OK, use_cache=False)
    assert res.status == "match", res
    assert runner.zygote().sandbox is runner.sandbox


def test_another_learners_database_is_not_even_there(runner, classroom):
    code = f"""
    import sqlite3
    try:
        print(sqlite3.connect("file:{classroom['db']}?mode=ro", uri=True).execute("select * from notes").fetchall())
    except Exception as e:
        print("refused", type(e).__name__)
    try:
        print(open({str(classroom['db'])!r}, "rb").read()[:16])
    except OSError as e:
        print("refused", type(e).__name__)
    """
    for cold in (False, True):
        res = runner.run(snip(code), cold=cold, use_cache=False)
        assert "secret" not in res.actual
        assert res.actual.count("refused") == 2, res.actual
    assert digest(classroom["db"]) == classroom["digest"]


def test_writes_outside_the_run_directory_are_refused(runner, tmp_path):
    target = tmp_path / "outside.txt"
    code = f"""
    import os
    for p in [{str(target)!r}, "../escape.txt", "/tmp/x", "/etc/passwd", "/usr/lib/x"]:
        try:
            open(p, "w").write("x")
            print("WROTE", p)
        except OSError as e:
            print("refused", type(e).__name__)
    open("mine.txt", "w").write("ok")
    open(os.path.join(os.environ["HOME"], "h"), "w").write("ok")
    import tempfile
    with tempfile.NamedTemporaryFile() as f:
        f.write(b"ok")
    print("own files ok")
    """
    for cold in (False, True):
        res = runner.run(snip(code), cold=cold, use_cache=False)
        assert "WROTE" not in res.actual, res.actual
        assert res.actual.count("refused") == 5 and "own files ok" in res.actual, res.actual
    assert not target.exists()


def test_no_network_no_abstract_socket_no_zygote_socket(runner):
    z = runner.zygote()
    code = f"""
    import json, socket
    for family, addr in [(socket.AF_INET, ("127.0.0.1", 80)), (socket.AF_INET, ("1.1.1.1", 53)), (socket.AF_INET6, ("::1", 80))]:
        s = socket.socket(family)
        try:
            s.connect(addr)
            print("CONNECTED", addr)
        except OSError as e:
            print("refused", type(e).__name__)
    u = socket.socket(socket.AF_UNIX)
    try:
        u.bind("\\0tc-probe")
        print("bound abstract")
    except OSError as e:
        print("abstract refused", e)
    z = socket.socket(socket.AF_UNIX)
    try:
        z.connect({z.sock_path!r})
        socket.send_fds(z, [json.dumps({{"dir": "/", "file": "x.py"}}).encode()], [1])
        print("ZYGOTE ANSWERED", z.recv(100))
    except OSError as e:
        print("zygote refused", type(e).__name__)
    """
    res = runner.run(snip(code), use_cache=False)
    assert "CONNECTED" not in res.actual and res.actual.count("refused") >= 4, res.actual
    assert "ZYGOTE ANSWERED b'{" not in res.actual, res.actual
    assert runner.run(OK, use_cache=False).status == "match"


def test_a_fork_bomb_is_stopped_by_the_process_limit(runner):
    code = """
    import os, time
    n = 0
    try:
        while True:
            if os.fork() == 0:
                time.sleep(30)
                os._exit(0)
            n += 1
    except OSError as e:
        print("stopped after", n, "forks:", type(e).__name__)
    """
    res = runner.run(snip(code), use_cache=False)
    assert "stopped after" in res.actual and "BlockingIOError" in res.actual, res.actual
    n = int(res.actual.split("stopped after")[1].split()[0])
    assert 0 < n < 64
    assert runner.run(OK, use_cache=False).status == "match"


def test_three_gigabytes_are_refused(runner):
    code = """
    import torch
    try:
        t = torch.empty(3 * 2**30, dtype=torch.uint8)
        t.fill_(1)
        print("ALLOCATED")
    except RuntimeError as e:
        print("refused", "can't allocate memory" in str(e))
    try:
        b = bytearray(3 << 30)
        print("ALLOCATED")
    except MemoryError:
        print("refused MemoryError")
    """
    for cold in (False, True):
        res = runner.run(snip(code), cold=cold, use_cache=False)
        assert "ALLOCATED" not in res.actual and "refused True" in res.actual and "refused MemoryError" in res.actual, res.actual


def test_two_hundred_megabytes_of_output_are_cut(runner):
    code = """
    import sys
    line = "x" * 1023 + "\\n"
    for _ in range(200 * 1024):
        sys.stdout.write(line)
    print("end")
    """
    res = runner.run(snip(code), use_cache=False)
    assert res.truncated and "截断" in res.message, res.message
    assert len(res.actual) < 1_100_000
    assert runner.run(OK, use_cache=False).status == "match"


def test_a_snippet_cannot_kill_its_parent_the_zygote_or_anyone(runner):
    z = runner.zygote()
    code = """
    import os, signal
    ok = 0
    for pid in [os.getppid(), 1] + [int(p) for p in os.listdir("/proc") if p.isdigit()]:
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, signal.SIGKILL)
            ok += 1
        except PermissionError:
            pass
        except ProcessLookupError:
            pass
    print("killed", ok)
    """
    res = runner.run(snip(code), use_cache=False)
    assert res.actual.strip() == "killed 0", res.actual
    assert z.alive() and runner.zygote() is z
    assert runner.run(OK, use_cache=False).status == "match"


@pytest.mark.parametrize("cold", [False, True], ids=["warm", "cold"])
def test_kernel_keyrings_and_io_uring_are_not_there(runner, cold):
    """Both would be shared by every run of the sandbox's one uid (keyrings: a channel between
    learners); a run sees them as a kernel built without them does: ENOSYS."""
    code = """
    import ctypes, os, platform
    NR = {"x86_64": {"add_key": 248, "keyctl": 250, "io_uring_setup": 425},
          "aarch64": {"add_key": 217, "keyctl": 219, "io_uring_setup": 425}}[platform.machine()]
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(256)
    calls = {"add_key": (NR["add_key"], b"user", b"note", b"secret", 6, -4),  # KEY_SPEC_USER_KEYRING
             "keyctl": (NR["keyctl"], 0, -4, 0),  # KEYCTL_GET_KEYRING_ID
             "io_uring_setup": (NR["io_uring_setup"], 4, params)}
    for name, args in calls.items():
        rc = libc.syscall(*args)
        print(name, rc, os.strerror(ctypes.get_errno()) if rc == -1 else "")
    """
    res = runner.run(snip(code), cold=cold, use_cache=False)
    assert res.actual.splitlines() == ["add_key -1 Function not implemented", "keyctl -1 Function not implemented",
                                       "io_uring_setup -1 Function not implemented"], res.actual


@pytest.mark.parametrize("cold", [False, True], ids=["warm", "cold"])
def test_per_uid_watches_and_pipe_pages_are_not_there(runner, cold):
    """inotify/fanotify instances and enlarged pipes' pages are counted per uid, one count for
    every run of the sandbox's uid: a run gets no inotify (ENOSYS, as on a kernel without it) and
    cannot enlarge a pipe past its default size (EPERM); shrinking one and plain pipes work."""
    code = """
    import ctypes, fcntl, os, platform
    libc = ctypes.CDLL(None, use_errno=True)
    def call(f, *a):
        rc = f(*a)
        return rc if rc != -1 else os.strerror(ctypes.get_errno())
    print("inotify_init1", call(libc.inotify_init1, 0))
    print("fanotify_init", call(libc.fanotify_init, 0, 0))
    r, w = os.pipe()
    for size in (1 << 20, 65536 * 2, 4096, 65536):
        try:
            print("F_SETPIPE_SZ", size, fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, size))
        except OSError as e:
            print("F_SETPIPE_SZ", size, e.strerror)
    """
    res = runner.run(snip(code), cold=cold, use_cache=False)
    assert res.actual.splitlines() == ["inotify_init1 Function not implemented", "fanotify_init Function not implemented",
                                       "F_SETPIPE_SZ 1048576 Operation not permitted", "F_SETPIPE_SZ 131072 Operation not permitted",
                                       "F_SETPIPE_SZ 4096 4096", "F_SETPIPE_SZ 65536 65536"], res.actual


@pytest.mark.parametrize("cold", [False, True], ids=["warm", "cold"])
def test_a_run_makes_no_namespace_of_its_own_but_threads_and_processes_work(runner, cold):
    """Every new namespace counts against the sandbox uid's one user.max_*_namespaces: a run
    that could make them could use the count up for everyone. unshare/setns/clone(CLONE_NEW*)
    get EPERM, clone3 ENOSYS (the C library falls back to clone); threads, fork and subprocess work."""
    code = """
    import ctypes, os, subprocess, sys, threading
    libc = ctypes.CDLL(None, use_errno=True)
    def err(rc):
        return "ok" if rc != -1 else os.strerror(ctypes.get_errno())
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # a fresh single-threaded child, as an attacker would use
        os.write(w, ("child newuser " + err(libc.unshare(0x10000000))).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    print(os.read(r, 200).decode())
    print("newipc", err(libc.unshare(0x08000000)))
    fd = os.open("/proc/self/ns/ipc", os.O_RDONLY)
    print("setns", err(libc.setns(fd, 0)))
    print("clone3", err(libc.syscall(435, None, 0)))
    out = []
    t = threading.Thread(target=lambda: out.append("thread ok"))
    t.start(); t.join()
    print(out[0])
    print(subprocess.run([sys.executable, "-c", "print('subprocess ok')"], capture_output=True, text=True).stdout.strip())
    """
    res = runner.run(snip(code), cold=cold, use_cache=False)
    assert res.actual.splitlines() == ["child newuser Operation not permitted", "newipc Operation not permitted",
                                       "setns Operation not permitted", "clone3 Function not implemented",
                                       "thread ok", "subprocess ok"], res.actual


def test_concurrent_runs_cannot_see_or_touch_each_other(runner):
    """Run A waits holding a file in its run directory; run B, forked from the same zygote at the
    same time, tries to read, list and overwrite it by its absolute path: all refused."""
    a_code = """
    import time
    open("secret.txt", "w").write("A's work")
    time.sleep(600)
    """
    with background_run(runner, a_code, "secret.txt") as a:
        secret = os.path.join(a.dir, "run", "secret.txt")
        b_code = f"""
        import os
        for what, f in [("read", lambda: open({secret!r}).read()), ("list", lambda: os.listdir({os.path.dirname(secret)!r})),
                        ("write", lambda: open({secret!r}, "w").write("B was here")), ("remove", lambda: os.remove({secret!r}))]:
            try:
                print("DID", what, f())
            except OSError as e:
                print(what, "refused", type(e).__name__)
        """
        res = runner.run(snip(b_code), use_cache=False)
        assert "DID" not in res.actual and res.actual.count("refused") == 4, res.actual
        assert Path(secret).read_text() == "A's work"
    assert a.result.status == "cancelled"


def test_the_zygote_killed_from_outside_is_replaced(runner):
    z = runner.zygote()
    z.proc.kill()  # the bwrap process this runner started: the sandbox dies with it
    z.proc.wait()
    res = runner.run(OK, use_cache=False)
    assert res.status == "match", res
    assert runner.zygote() is not z


def test_run_sandbox_cli_three_refusals_and_a_clean_exit(tmp_path):
    """The issue's check: a file that reads $TORCHCOURSE_HOME's database, writes outside its run
    directory and opens a socket gets three refusals; the command exits cleanly."""
    home = tmp_path / "home"
    db = home / "data" / "progress.sqlite3"
    before = make_db(db, "my progress")
    outside = tmp_path / "outside.txt"
    f = tmp_path / "hostile.py"
    f.write_text(textwrap.dedent(f"""
        import os, socket
        try:
            print(open(os.path.join(os.environ["TORCHCOURSE_HOME"], "data", "progress.sqlite3"), "rb").read(16))
        except OSError as e:
            print("REFUSED read:", e)
        try:
            open({str(outside)!r}, "w").write("x")
        except OSError as e:
            print("REFUSED write:", e)
        try:
            socket.create_connection(("93.184.216.34", 80), timeout=5)
        except OSError as e:
            print("REFUSED socket:", e)
    """), encoding="utf-8")
    env = {**os.environ, "TORCHCOURSE_HOME": str(home)}
    out = subprocess.run([sys.executable, "-m", "torchcourse", "run", "--sandbox", str(f), "--cold"], capture_output=True, text=True, env=env, timeout=300)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert text.count("REFUSED") == 3, text
    assert "Traceback" not in text and "✅ 运行结束，退出码 0" in text, text
    assert not outside.exists()
    assert digest(db) == before


def test_run_sandbox_cli_names_an_unreadable_file(tmp_path):
    out = subprocess.run([sys.executable, "-m", "torchcourse", "run", "--sandbox", str(tmp_path / "nope.py")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "nope.py" in out.stderr and "Traceback" not in out.stderr


def test_probe_names_what_to_install_when_bwrap_is_missing(tmp_path, monkeypatch):
    from torchcourse.runner import sandbox

    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on this PATH
    assert "apt-get install bubblewrap" in sandbox._probe(sys.executable)


def test_many_processes_cannot_add_up_past_the_sandbox_memory_limit():
    """RLIMIT_AS is per process: three children of 0.9 GB each (2.7 GB touched) each pass it, but
    not the sandbox's memory group (1.5 GB here): the kernel kills the largest, the verdict says
    so, and the zygote (and the next run) live on."""
    r = SandboxRunner(cache_dir=None, warm=True, total_mem=3 << 29)
    try:
        if not r.cgroups.active:
            pytest.skip("no memory cgroup can be made here (not root, or cgroup v2 without delegation)")
        # the children hold their memory until the first of them has ended (the one the group
        # killed): all three at once however slowly the machine forks, never for a fixed time
        code = """
        import os
        r, w = os.pipe()
        for i in range(3):
            if os.fork() == 0:
                os.close(w)
                x = b"\\x01" * (900 << 20)
                os.read(r, 1)  # EOF once the parent closes its end
                os._exit(0)
        os.close(r)
        codes = [os.waitstatus_to_exitcode(os.wait()[1])]
        os.close(w)
        codes += [os.waitstatus_to_exitcode(os.wait()[1]) for _ in range(2)]
        print(sorted(codes))
        """
        for cold in (False, True):
            res = r.run(snip(code), cold=cold, use_cache=False)
            assert "-9" in res.actual and "内存总上限" in res.message, (res.actual, res.message)
        z = r.zygote()
        assert r.run(OK, use_cache=False).status == "match"
        assert r.zygote() is z
    finally:
        r.close()


def test_dataloader_workers_and_multiprocessing_locks_work_in_the_sandbox(runner):
    """Chapter 08's mechanism inside the sandbox: worker processes, their locks (sem_open in
    /dev/shm) and shared-memory batches. (bwrap's own /dev/shm is root's: the first version of
    the sandbox failed every DataLoader snippet with PermissionError.)"""
    code = """
    import torch
    from torch.utils.data import DataLoader
    print([b.tolist() for b in DataLoader(torch.arange(6), batch_size=2, num_workers=2)])
    """
    res = runner.run(snip(code, expected="[[0, 1], [2, 3], [4, 5]]"), use_cache=False)
    assert res.status == "match", (res.actual, res.message)


def test_each_run_has_a_loopback_of_its_own(runner):
    """TCP on 127.0.0.1 works inside a run (torch.distributed's gloo needs it: 06:ddp-prefix
    failed in the first sandbox), but a run listening there is unreachable from a concurrent one,
    which can bind the same port itself."""
    a_code = """
    import socket, time
    s = socket.socket()
    s.bind(("127.0.0.1", 29511))
    s.listen()
    open("listening", "w").write("yes")
    time.sleep(600)
    """
    with background_run(runner, a_code, "listening") as a:
        b_code = """
        import socket
        c = socket.socket()
        try:
            c.connect(("127.0.0.1", 29511))
            print("REACHED A")
        except OSError as e:
            print("A unreachable:", type(e).__name__)
        s = socket.socket()
        s.bind(("127.0.0.1", 29511))
        s.listen()
        c = socket.create_connection(("127.0.0.1", 29511))
        print("own loopback ok")
        """
        res = runner.run(snip(b_code), use_cache=False)
        assert "A unreachable: ConnectionRefusedError" in res.actual and "own loopback ok" in res.actual, res.actual
    assert a.result.status == "cancelled"
    gloo = """
    import torch.distributed as dist, torch.nn as nn
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    print(list(nn.parallel.DistributedDataParallel(nn.Linear(3, 2)).state_dict()))
    dist.destroy_process_group()
    """
    res = runner.run(snip(gloo, expected="['module.weight', 'module.bias']"), use_cache=False)
    assert res.status == "match", (res.actual, res.message)


def test_a_hidden_path_under_a_bound_one_is_masked(tmp_path):
    """A data directory (or the users file) that happens to lie under a path the sandbox binds
    read-only (a venv next to the classroom's data, say) is masked: the rest stays readable."""
    from torchcourse.runner.sandbox import Sandbox

    shared = tmp_path / "shared"
    (shared / "data").mkdir(parents=True)
    (shared / "data" / "progress.sqlite3").write_text("secret")
    (shared / "users.toml").write_text("alice = 'token'")
    (shared / "lib.txt").write_text("public")
    os.chmod(tmp_path, 0o755)
    sb = Sandbox(hide=[str(shared / "data"), str(shared / "users.toml")])
    sb.read_paths.append(str(shared))
    r = SandboxRunner(cache_dir=None, warm=False, sandbox=sb)
    try:
        code = f"""
        for p in ["lib.txt", "data/progress.sqlite3", "users.toml"]:
            try:
                print(p, repr(open({str(shared)!r} + "/" + p).read()))
            except OSError as e:
                print(p, "refused", type(e).__name__)
        """
        res = r.run(snip(code), cold=True, use_cache=False)
        assert "lib.txt 'public'" in res.actual, res.actual
        assert "secret" not in res.actual and "token" not in res.actual, res.actual
        assert "data/progress.sqlite3 refused" in res.actual
    finally:
        r.close()


class TestLandlockFailsClosed:
    """On a kernel whose Landlock is missing or too old the jail refuses to confine a run (the
    class then says why and does not start) instead of running the snippet half-confined."""

    def test_an_old_landlock_abi_is_refused_before_anything_is_restricted(self, monkeypatch):
        from torchcourse.runner import tc_jail

        monkeypatch.setattr(tc_jail, "landlock_abi", lambda: tc_jail.MIN_ABI - 1)
        with pytest.raises(tc_jail.JailError, match=f"Landlock ABI {tc_jail.MIN_ABI - 1} < {tc_jail.MIN_ABI}"):
            tc_jail.landlock(["/usr"], [])
        monkeypatch.setattr(tc_jail, "landlock_abi", lambda: 0)  # no Landlock at all
        with pytest.raises(tc_jail.JailError):
            tc_jail.landlock(["/usr"], [])


def one_slot(name: str):
    """Cgroups with one run slot (root with a writable memory controller); skips without them
    (fails under CI, which runs as root)."""
    from torchcourse.runner.cgroups import Cgroups

    c = Cgroups(f"{name}-{os.getpid()}", total_mem=1 << 30, total_pids=64, slots=1, slot_mem=1 << 29)
    if not c.slots:
        c.close()
        if os.environ.get("CI"):
            pytest.fail("no run slot groups here (serve as root with a writable memory controller)")
        pytest.skip("no run slot groups here (needs root and a writable memory controller)")
    return c


class TestTheFileGuardStopsOnlyTheRunItWatches:
    """A run the guard stopped keeps its watch until its verdict is made, and a megabyte of output
    takes a while to judge; meanwhile its slot is free and the next run — maybe another
    learner's — is already in it. The guard killed whatever was in the group on every look until
    the verdict let go: one learner's stopped run SIGKILLed a classmate's run that took the slot.
    Once the stopped run's group has been seen empty, the guard leaves the group alone."""

    def test_the_slots_next_run_lives_while_the_stopped_run_is_judged(self):
        import subprocess

        from torchcourse.runner.fileguard import FileGuard

        c = one_slot("tc-guard-test")
        guard = FileGuard(v2=c.v2, cap=10, tick=0.02)  # a Python process maps far more than 10 files
        hold = [sys.executable, "-c", "import time; time.sleep(60)"]
        first = subprocess.Popen(hold)
        second = None
        try:
            c.enter(first.pid, c.slots[0])
            token = guard.watch(c.slots[0])
            first.wait(timeout=30)  # stopped at its cap
            assert first.returncode == -9
            second = subprocess.Popen(hold)  # the slot's next run, while the first one is still judged
            c.enter(second.pid, c.slots[0])
            looked = guard.rounds
            wait_until(lambda: guard.rounds >= looked + 10, "the guard looked ten more times")
            assert second.poll() is None, "the slot's next run was killed"
            assert guard.unwatch(token)[0] == "files"
        finally:
            guard.close()
            for proc in (first, second):
                if proc is not None and proc.poll() is None:
                    proc.kill()
                    proc.wait()
            c.close()


class TestTheFileGuardsCountCostsLittleHoweverLongTheFilesPaths:
    """A mapping's line in /proc/PID/maps carries its file's whole path, and a run can make paths of
    hundreds of kilobytes (directories nested 1,600 deep): 60,000 mappings of such a file were 24 GB
    to read per count, and the guard, busy with them, looked at no other run. The guard asks the
    kernel for the mappings without their paths (PROCMAP_QUERY); where the kernel cannot, it reads
    at most MAPS_BYTES_AT_MOST of text, and more counts as past every cap."""

    DEPTH, MAPS = 300, 200

    @pytest.fixture
    def deep_mappings(self, tmp_path):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype, libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        name = "d" * 250
        fds = [os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)]
        for _ in range(self.DEPTH):  # (each step relative to the last: the whole path is 75 KB)
            os.mkdir(name, dir_fd=fds[-1])
            fds.append(os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fds[-1]))
        fd = os.open("f", os.O_RDWR | os.O_CREAT, 0o600, dir_fd=fds[-1])
        os.write(fd, b"x" * 4096)
        maps = [libc.mmap(None, 4096, 1 if i % 2 else 5, 2, fd, 0) for i in range(self.MAPS)]
        try:
            yield
        finally:
            for m in maps:
                libc.munmap(m, 4096)
            os.close(fd)
            os.unlink("f", dir_fd=fds[-1])
            for i in range(len(fds) - 1, 0, -1):
                os.close(fds[i])
                os.rmdir(name, dir_fd=fds[i - 1])
            os.close(fds[0])

    def test_the_kernel_is_asked_without_the_paths(self, deep_mappings):
        from torchcourse.runner import fileguard

        counted = fileguard._file_mappings(os.getpid())
        if fileguard._procmap_query_works == [False]:
            pytest.skip("this kernel has no PROCMAP_QUERY (before 6.11)")
        assert self.MAPS <= counted < fileguard.RUN_FILES

    def test_past_the_text_it_reads_the_run_is_past_the_cap(self, deep_mappings, monkeypatch):
        from torchcourse.runner import fileguard

        monkeypatch.setattr(fileguard, "_procmap_query_works", [False])  # (as on a kernel without it)
        monkeypatch.setattr(fileguard, "MAPS_BYTES_AT_MOST", 4 << 20)  # (200 lines of 75 KB: 15 MB)
        assert fileguard._file_mappings(os.getpid()) > fileguard.RUN_FILES


class TestTheFileGuardSignalsOnlyTheProcessesOfItsRun:
    """The guard stops a run's processes while it counts their files, from pids it read a moment
    before; a run forking fast wraps the machine's pids every few seconds, so a pid of the list
    may by then name another process — another learner's run, or the host's. Only a process still
    in the run's group when the signal goes is signalled."""

    @staticmethod
    def state(pid: int) -> str:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]

    def test_a_listed_pid_that_is_not_in_the_group_is_left_running(self):
        import subprocess

        from torchcourse.runner.fileguard import stop_group

        c = one_slot("tc-guard-sig")
        hold = [sys.executable, "-c", "import time; time.sleep(60)"]
        run, outsider = subprocess.Popen(hold), subprocess.Popen(hold)
        try:
            c.enter(run.pid, c.slots[0])
            stopped = stop_group(c.slots[0], [run.pid, outsider.pid])
            wait_until(lambda: self.state(run.pid) == "T", "the run's process was stopped")
            assert stopped == [run.pid]
            assert self.state(outsider.pid) in ("S", "R"), self.state(outsider.pid)
        finally:
            for proc in (run, outsider):
                proc.kill()
                proc.wait()
            c.close()


class TestTheFileGuardLetsGoOfARunThatEndedWhileItCounted:
    """A round of the guard can take a while (a run with many mappings to count); a run over its
    cap that ends meanwhile is let go, and its slot may by then hold the next run — another
    learner's — which the guard must not kill for it (a learner's runs kept the guard busy and
    another learner's run was SIGKILLed with no word why, 3 of 805)."""

    def test_the_slots_next_run_lives(self, monkeypatch):
        import subprocess

        from torchcourse.runner import fileguard

        c = one_slot("tc-guard-late")
        counting, go = threading.Event(), threading.Event()
        real = fileguard.files_held

        def slow_count(pids, stop_after=None):  # (the count of a run with very many mappings)
            n = real(pids, stop_after)
            counting.set()
            go.wait(30)
            return n

        monkeypatch.setattr(fileguard, "files_held", slow_count)
        guard = fileguard.FileGuard(v2=c.v2, cap=10, tick=0.02)  # a Python process maps far more than 10 files
        hold = [sys.executable, "-c", "import time; time.sleep(60)"]
        first, second = subprocess.Popen(hold), None
        try:
            c.enter(first.pid, c.slots[0])
            token = guard.watch(c.slots[0])
            assert counting.wait(30), "the guard never counted"
            assert guard.unwatch(token) is None  # the run ended before the count came back
            first.kill()
            first.wait()
            second = subprocess.Popen(hold)  # the slot's next run
            c.enter(second.pid, c.slots[0])
            monkeypatch.setattr(fileguard, "files_held", real)
            looked = guard.rounds
            go.set()
            wait_until(lambda: guard.rounds >= looked + 1, "the guard's round ended")
            assert second.poll() is None, "the slot's next run was killed"
        finally:
            go.set()
            guard.close()
            for proc in (first, second):
                if proc is not None and proc.poll() is None:
                    proc.kill()
                    proc.wait()
            c.close()


class TestASlotIsGivenBackOnItsOwnShareOfTheCPU:
    """The kernel frees what an ended run left in its slot (the names it looked up and did not
    find: 48 MB a run) on the time of whoever asks for it. Asked by the service outside every CPU
    group, one learner's such runs cost it 0.17 s of CPU each and the host's processes ran 2x
    slower than beside plain busy runs; the asking thread is in the slot's own CPU group."""

    def test_the_reclaiming_thread_is_in_the_slots_cpu_group(self):
        c = one_slot("tc-reclaim-cpu")
        if not c.cpu_slots or c.v2:
            c.close()
            if os.environ.get("CI") and os.path.isdir("/sys/fs/cgroup/cpu"):
                pytest.fail("no CPU slot groups here (serve as root on cgroup v1)")
            pytest.skip("CPU slot groups of their own are cgroup v1's (root)")
        seen = {}

        def reclaim():
            seen["given back"] = c.reclaim(c.slots[0])
            with open("/proc/thread-self/cgroup") as fh:
                seen["cpu"] = next(line for line in fh if ":cpu," in line or ":cpu:" in line).strip().split(":", 2)[2]

        try:
            t = threading.Thread(target=reclaim)
            t.start()
            t.join(30)
            assert seen["given back"]
            assert c.cpu_slots[0].endswith(seen["cpu"]), (seen["cpu"], c.cpu_slots[0])
        finally:
            c.close()


class TestTheFileGuardCountsEveryDescriptorTable:
    """A thread made without CLONE_FILES has a descriptor table of its own, which the process's
    /proc/PID/fd does not list: the guard counts each thread's table too."""

    def test_a_threads_own_table_is_counted(self):
        import ctypes

        from torchcourse.runner.fileguard import files_held

        libc = ctypes.CDLL(None, use_errno=True)
        before = files_held([os.getpid()])
        ready, finish = threading.Event(), threading.Event()
        opened = []

        def own_table():
            assert libc.unshare(0x400) == 0  # CLONE_FILES: this thread's table is its own from here
            opened.extend(os.open("/dev/null", os.O_RDONLY) for _ in range(5000))
            ready.set()
            finish.wait(30)
            for fd in opened:
                os.close(fd)

        t = threading.Thread(target=own_table, daemon=True)
        t.start()
        try:
            assert ready.wait(30)
            assert files_held([os.getpid()]) >= before + 5000
        finally:
            finish.set()
            t.join(30)


class TestTheFileGuardCountsFilesAMappingKeepsOpen:
    """A lock lives as long as its open file, and a mapping keeps the file open with no descriptor
    left: what the guard counts of a heavily locked file (the run's descriptors of it, before) must
    count the mappings too — a run kept 40,000 locks on the host's libc by mapping each locked open
    and closing it, and every exec on the host was 9.5x slower."""

    def test_mapped_and_closed_opens_are_counted(self, tmp_path):
        import ctypes

        from torchcourse.runner.fileguard import holds_of

        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype, libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]

        path = tmp_path / "f"
        path.write_bytes(b"x" * 4096)
        st = os.stat(path)
        key = {(os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)}
        maps = []
        for _ in range(50):  # (Python's mmap keeps a descriptor of its own: the C call does not)
            fd = os.open(path, os.O_RDONLY)
            maps.append(libc.mmap(None, 4096, 1, 2, fd, 0))  # PROT_READ, MAP_PRIVATE
            os.close(fd)
        held = os.open(path, os.O_RDONLY)
        try:
            assert holds_of([os.getpid()], key) == 51
        finally:
            os.close(held)
            for m in maps:
                libc.munmap(m, 4096)


class TestTheFileGuardsCountLeavesNoKernelObjectsPerMapping:
    """Counting a run's mappings must not itself cost kernel memory per mapping: each name listed
    in /proc/PID/map_files becomes a /proc dentry, kept in the lister's (the service's) memory
    group, and a run that kept moving 96,000 mappings grew it by 1.5 GB in 30 s."""

    N = 40_000

    @staticmethod
    def dentries() -> int:
        with open("/proc/sys/fs/dentry-state") as fh:
            return int(fh.read().split()[0])

    def test_forty_thousand_mappings_are_counted_with_few_new_dentries(self, tmp_path):
        import ctypes

        from torchcourse.runner.fileguard import files_held

        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype, libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        path = tmp_path / "f"
        path.write_bytes(b"x" * 4096)
        fd = os.open(path, os.O_RDONLY)
        maps = []
        try:
            for i in range(self.N):  # (read-only and read-exec in turn: neighbours never merge into one)
                m = libc.mmap(None, 4096, 1 if i % 2 else 5, 2, fd, 0)
                assert m not in (None, ctypes.c_void_p(-1).value), ctypes.get_errno()
                maps.append(m)
            before = self.dentries()
            counted = files_held([os.getpid()])
            grown = self.dentries() - before
            assert counted >= self.N
            assert grown < self.N // 4, grown
        finally:
            os.close(fd)
            for m in maps:
                libc.munmap(m, 4096)


class TestTheFileGuardListsASharedTableOnce:
    """Threads made the usual way share their process's descriptor table: the guard lists it once,
    not once per thread (60 threads sharing 1,580 descriptors cost the service ~95,000 entries a
    count, outside every CPU group)."""

    def test_twenty_threads_do_not_multiply_the_count(self):
        from torchcourse.runner.fileguard import files_held

        # Compared with the count of the same table moments before the threads start, not with a
        # count before the 2,000 opens: the test process closes descriptors of its own meanwhile.
        fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(2000)]
        alone = files_held([os.getpid()])
        finish = threading.Event()
        threads = [threading.Thread(target=finish.wait, args=(30,), daemon=True) for _ in range(20)]
        for t in threads:
            t.start()
        try:
            counted = files_held([os.getpid()])
            assert alone >= 2000, alone
            assert abs(counted - alone) < 500, (alone, counted)
        finally:
            finish.set()
            for t in threads:
                t.join(30)
            for fd in fds:
                os.close(fd)


class TestEveryWarmRunHasASlot:
    """The slots are the runs at once (``jobs``) and two more, and a slot is free again only once its
    run's processes have all left it. A warm run that found every slot still taken ran without a
    slot's memory group and without the file guard. It waits for a free slot instead: four runs at
    once on a runner with three slots all run in one."""

    CODE = snip("""
        import time
        print(next(line for line in open("/proc/self/cgroup") if ":memory:" in line).strip().rsplit("/", 1)[-1])
        time.sleep(2)
        """, expected=None, timeout=60)

    def test_four_runs_at_once_on_three_slots(self, classroom):
        r = SandboxRunner(cache_dir=None, warm=True, hide=[str(classroom["root"])], jobs=1)
        r.start()
        try:
            if not r.cgroups.slots:
                if os.environ.get("CI"):
                    pytest.fail("no run slot groups here (serve as root with a writable memory controller)")
                pytest.skip("no run slot groups here (needs root and a writable memory controller)")
            assert len(r.cgroups.slots) == 3
            assert r.run(OK, use_cache=False).status == "match"  # the zygote is up
            results = [None] * 4

            def one(i):
                results[i] = r.run(self.CODE, use_cache=False)

            threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            groups = sorted(res.actual.strip() for res in results)
            assert all(g.startswith("slot-") for g in groups), [(res.status, res.actual, res.message) for res in results]
        finally:
            r.close()
