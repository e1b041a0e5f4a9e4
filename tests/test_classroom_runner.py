"""One warm runner for the whole class (issue 36): the service (a real subprocess with its real
sandboxed zygote), its fair queue, cancel, and the client the app uses. Hostile runs of one
learner must each end with a clear verdict while the service keeps serving another learner, and
nothing of that learner's data changes. Every wait is for a state (bounded only as a safety net).

Without a working sandbox these tests skip with the reason; in CI (CI=true) they fail instead."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from torchcourse.course.model import Snippet
from torchcourse.runner.classroom import ClassroomClient, FairQueue, Job
from torchcourse.runner.classroom_client import _snippet_to_json
from torchcourse.runner.sandbox import sandbox_problem

PROBLEM = sandbox_problem()
if PROBLEM and os.environ.get("CI") == "true":
    raise RuntimeError(f"the classroom runner tests cannot run in CI: {PROBLEM}")
needs_sandbox = pytest.mark.skipif(PROBLEM is not None, reason=f"sandbox unavailable: {PROBLEM}")

ROOT = Path(__file__).resolve().parent.parent


def snip(code: str, **kw) -> Snippet:
    return Snippet(id=kw.pop("id", "h"), chapter_id="x", code=textwrap.dedent(code), expected=kw.pop("expected", "x"), line=1, **kw)


OK = snip("import torch\nprint(torch.ones(3).sum().item())\n", expected="3.0")
BLOCK = snip("import time\nprint('started', flush=True)\ntime.sleep(600)\n", timeout=600)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Service:
    def __init__(self, tmp: Path, jobs: int, hide: list[str], extra: tuple[str, ...] = ()):
        self.sock = str(tmp / "class.sock")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "torchcourse.runner.classroom", "--socket", self.sock, "--jobs", str(jobs), "--lifeline", *[a for h in hide for a in ("--hide", h)], *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, text=True,
        )
        line = self.proc.stdout.readline()
        assert line, self.proc.stderr.read()
        assert json.loads(line) == {"ok": True, "socket": self.sock, "jobs": jobs}

    def client(self, learner: str, **kw) -> ClassroomClient:
        return ClassroomClient(self.sock, learner, **kw)

    def children(self) -> list[int]:
        out = []
        for tid in os.listdir(f"/proc/{self.proc.pid}/task"):
            try:
                with open(f"/proc/{self.proc.pid}/task/{tid}/children") as fh:
                    out += [int(c) for c in fh.read().split()]
            except OSError:  # a thread that ended meanwhile
                continue
        return out

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    root = tmp_path_factory.mktemp("classroom")
    db = root / "learners" / "bob" / "data" / "progress.sqlite3"
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)
    con.execute("create table notes (body text)")
    con.execute("insert into notes values ('bob secret')")
    con.commit()
    con.close()
    return {"root": root, "db": db, "digest": digest(db)}


@pytest.fixture(scope="module")
def service(tmp_path_factory, classroom):
    if PROBLEM:
        pytest.skip(f"sandbox unavailable: {PROBLEM}")
    svc = Service(tmp_path_factory.mktemp("svc"), jobs=2, hide=[str(classroom["root"])])
    yield svc
    svc.stop()


@pytest.fixture()
def single(tmp_path):
    """A service that runs one snippet at a time: the queue is visible."""
    if PROBLEM:
        pytest.skip(f"sandbox unavailable: {PROBLEM}")
    svc = Service(tmp_path, jobs=1, hide=[])
    yield svc
    svc.stop()


class Recorder:
    """on_queue callbacks of several runs, with waits for states."""

    def __init__(self):
        self.cv = threading.Condition()
        self.places: dict[str, list[int]] = {}
        self.started: list[str] = []

    def cb(self, name: str):
        def on_queue(pos: int) -> None:
            with self.cv:
                self.places.setdefault(name, []).append(pos)
                if pos == 0:
                    self.started.append(name)
                self.cv.notify_all()
        return on_queue

    def last(self, name: str):
        return (self.places.get(name) or [None])[-1]

    def wait(self, pred, what: str, cap: float = 180.0) -> None:
        with self.cv:
            assert self.cv.wait_for(pred, cap), f"never happened: {what}; places {self.places}"


def run_in_thread(client, snippet, results: dict, name: str, **kw) -> threading.Thread:
    t = threading.Thread(target=lambda: results.__setitem__(name, client.run(snippet, **kw)), name=f"run-{name}")
    t.start()
    return t


# -- the fair queue alone (no processes) ------------------------------------------------------

class TestALearnersRunsStartAtAPace:
    """Every warm run costs the zygote a fork of a torch-sized process and its teardown, outside
    any run's CPU group: one learner sending empty runs back to back (45-58 a second) made every
    other learner's runs ~2x slower. A learner starts at most START_RATE runs a second after a
    burst of START_BURST; another learner's run is not held back by it."""

    def test_a_burst_then_the_rate_and_others_go_first(self):
        now = [0.0]
        q = FairQueue(clock=lambda: now[0])
        for _ in range(40):
            q.put(Job("eve", None, False, None))
        started = 0
        while q.take() is not None:
            started += 1
        assert started == int(FairQueue.START_BURST)
        assert q.wait_hint() == pytest.approx(1.0 / FairQueue.START_RATE)
        bob = Job("bob", None, False, None)
        q.put(bob)
        assert q.take() is bob  # (not held back by eve's pace)
        now[0] += 1.0
        started = 0
        while q.take() is not None:
            started += 1
        assert started == int(FairQueue.START_RATE)


def test_fair_queue_takes_the_learner_with_fewest_running_first():
    q = FairQueue()
    jobs = [Job("alice", None, False, None) for _ in range(3)] + [Job("bob", None, False, None)]
    for j in jobs:
        q.put(j)
    assert q.order({"alice": 1}) == [jobs[3], jobs[0], jobs[1], jobs[2]]
    assert q.take({"alice": 1}) is jobs[3]
    assert q.take({"alice": 1}) is jobs[0]
    assert q.remove(jobs[2]) and not q.remove(jobs[2])
    assert q.order() == [jobs[1]] and len(q) == 1


def test_fair_queue_round_robin_between_equally_busy_learners():
    q = FairQueue()
    a = [Job("alice", None, False, None) for _ in range(3)]
    b = [Job("bob", None, False, None) for _ in range(2)]
    for j in a + b:
        q.put(j)
    assert q.order() == [a[0], b[0], a[1], b[1], a[2]]


# -- the service ------------------------------------------------------------------------------

@needs_sandbox
def test_hostile_runs_of_one_learner_leave_the_service_and_the_other_learner_alone(service, classroom, tmp_path):
    alice, bob = service.client("alice"), service.client("bob")
    outside = tmp_path / "outside.txt"
    hostile = {
        "read-db": (f"""
            try:
                print(open({str(classroom['db'])!r}, "rb").read()[:32])
            except OSError as e:
                print("refused", type(e).__name__)
            """, lambda r: "refused" in r.actual and "secret" not in r.actual),
        "write-outside": (f"""
            try:
                open({str(outside)!r}, "w").write("x")
                print("WROTE")
            except OSError as e:
                print("refused", type(e).__name__)
            """, lambda r: "refused" in r.actual and "WROTE" not in r.actual),
        "socket": ("""
            import socket
            try:
                socket.create_connection(("1.1.1.1", 80), timeout=5)
                print("CONNECTED")
            except OSError as e:
                print("refused", type(e).__name__)
            """, lambda r: "refused" in r.actual),
        "fork-bomb": ("""
            import os, time
            while True:
                if os.fork() == 0:
                    time.sleep(60)
                    os._exit(0)
            """, lambda r: r.raised == "BlockingIOError" and "BlockingIOError" in r.actual),
        "3gb": ("""
            import torch
            t = torch.empty(3 * 2**30, dtype=torch.uint8)
            print("ALLOCATED")
            """, lambda r: r.raised == "RuntimeError" and "can't allocate memory" in r.actual and "ALLOCATED" not in r.actual),
        "200mb": ("""
            import sys
            line = "y" * 1023 + "\\n"
            for _ in range(200 * 1024):
                sys.stdout.write(line)
            """, lambda r: r.truncated and "截断" in r.message),
        "kill-parent": ("""
            import os, signal
            os.kill(os.getppid(), signal.SIGKILL)
            """, lambda r: r.raised == "PermissionError"),
    }
    for name, (code, verdict) in hostile.items():
        res = alice.run(snip(code), use_cache=False)
        assert verdict(res), (name, res)
        assert service.proc.poll() is None, name
        after = bob.run(OK, use_cache=False)
        assert after.status == "match", (name, after)
    assert not outside.exists()
    assert digest(classroom["db"]) == classroom["digest"]


@needs_sandbox
def test_the_service_replaces_a_zygote_killed_from_outside(service):
    bob = service.client("bob")
    assert bob.run(OK, use_cache=False).status == "match"
    bwrap = [p for p in service.children() if "bwrap" in Path(f"/proc/{p}/cmdline").read_text()]
    assert len(bwrap) == 1
    os.kill(bwrap[0], 9)  # the sandbox (and its zygote) dies with it
    res = bob.run(OK, use_cache=False)
    assert res.status == "match", res
    assert service.proc.poll() is None


@needs_sandbox
def test_one_learners_many_runs_do_not_starve_another(single):
    rec = Recorder()
    alice, bob = single.client("alice"), single.client("bob")
    results: dict = {}
    stop = threading.Event()
    threads = [run_in_thread(alice, BLOCK, results, "a0", use_cache=False, cancel=stop, on_queue=rec.cb("a0"))]
    rec.wait(lambda: rec.last("a0") == 0, "alice's first run runs")
    quick = snip("print('x')\n")
    for i in (1, 2, 3):
        threads.append(run_in_thread(alice, quick, results, f"a{i}", use_cache=False, on_queue=rec.cb(f"a{i}")))
        rec.wait(lambda i=i: rec.last(f"a{i}") == i, f"alice's run {i} is {i}-th in line")
    threads.append(run_in_thread(bob, quick, results, "b", use_cache=False, on_queue=rec.cb("b")))
    # bob has nothing running: his one run goes before alice's three waiting ones
    rec.wait(lambda: rec.last("b") == 1 and [rec.last(f"a{i}") for i in (1, 2, 3)] == [2, 3, 4], "bob first in line")
    stop.set()  # cancel alice's running one
    for t in threads:
        t.join(180)
    assert results["a0"].status == "cancelled"
    assert [results[k].status for k in ("b", "a1", "a2", "a3")] == ["match"] * 4
    assert rec.started == ["a0", "b", "a1", "a2", "a3"]


@needs_sandbox
def test_a_queued_run_can_be_cancelled_and_never_starts(single):
    rec = Recorder()
    alice, bob = single.client("alice"), single.client("bob")
    results: dict = {}
    stop_a, stop_b = threading.Event(), threading.Event()
    ta = run_in_thread(alice, BLOCK, results, "a", use_cache=False, cancel=stop_a, on_queue=rec.cb("a"))
    rec.wait(lambda: rec.last("a") == 0, "alice runs")
    tb = run_in_thread(bob, OK, results, "b", use_cache=False, cancel=stop_b, on_queue=rec.cb("b"))
    rec.wait(lambda: rec.last("b") == 1, "bob waits, first in line")
    assert bob.status()["queued"] == {"bob": 1}
    stop_b.set()
    tb.join(60)
    assert results["b"].status == "cancelled" and "已取消" in results["b"].message
    assert 0 not in rec.places["b"]
    assert bob.status() == {"running": ["alice"], "queued": {}, "jobs": 1}
    stop_a.set()
    ta.join(60)
    assert results["a"].status == "cancelled"
    assert bob.run(OK, use_cache=False).status == "match"


@needs_sandbox
def test_a_client_that_goes_away_cancels_its_running_run(single):
    rec = Recorder()
    alice = single.client("alice")
    results: dict = {}
    t = run_in_thread(alice, BLOCK, results, "a", use_cache=False, on_queue=rec.cb("a"))
    rec.wait(lambda: rec.last("a") == 0, "alice runs")
    alice.close()  # the app closes (a closed tab)
    t.join(60)
    assert results["a"].status == "cancelled"
    deadline = time.monotonic() + 60
    while alice.status()["running"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert single.client("bob").status()["running"] == []


@needs_sandbox
def test_the_output_cache_is_each_learners_own(service, tmp_path):
    code = snip("print('cached?')\n", expected="cached?")
    alice = service.client("alice", cache_dir=tmp_path / "alice")
    bob = service.client("bob", cache_dir=tmp_path / "bob")
    first = alice.run(code)
    assert first.status == "match" and not first.cached
    assert alice.run(code).cached
    assert list((tmp_path / "alice").rglob("*.json")) and not (tmp_path / "bob").exists()
    assert not bob.run(code).cached


@needs_sandbox
def test_files_without_end_fill_the_run_space_not_the_disk(tmp_path):
    """As root the service keeps every run directory on a tmpfs of --run-space MB, in a mount
    namespace of its own: a run writing files without end gets ENOSPC there; the next run works."""
    if os.geteuid() != 0:
        pytest.skip("the run space is a tmpfs only when the service runs as root (else the runs are on disk)")
    svc = Service(tmp_path, jobs=1, hide=[], extra=("--run-space", "120"))
    try:
        alice = svc.client("alice")
        code = """
        n = 0
        try:
            while True:
                with open(f"f{n}", "wb") as f:
                    f.write(b"z" * (20 << 20))
                n += 1
        except OSError as e:
            print("stopped after", n, "files:", e.strerror)
        """
        res = alice.run(snip(code), use_cache=False)
        assert "No space left on device" in res.actual, res.actual
        assert int(res.actual.split("after")[1].split()[0]) <= 6
        with open("/proc/self/mounts") as fh:
            assert "tc-sandbox" not in fh.read()  # the tmpfs is the service's alone
        assert svc.client("bob").run(snip("open('a', 'w').write('ok')\nprint(open('a').read())\n", expected="ok"), use_cache=False).status == "match"
    finally:
        svc.stop()


@needs_sandbox
def test_what_a_killed_service_leaves_is_swept_by_the_next_sandbox(tmp_path):
    """SIGKILL gives the service no clean-up: its sandbox directory (and, as root, its cgroups)
    stay, until the next sandbox starts and removes those of dead processes."""
    import glob

    from torchcourse.runner.sandbox import SandboxRunner

    svc = Service(tmp_path, jobs=1, hide=[])
    assert svc.client("alice").run(OK, use_cache=False).status == "match"
    mine = lambda: glob.glob(f"/tmp/tc-sandbox-{svc.proc.pid}-*") + glob.glob(f"/sys/fs/cgroup/*/**/tc-sandbox-{svc.proc.pid}-*", recursive=True)
    left = mine()
    assert left
    svc.proc.kill()  # its bwrap dies with it (--die-with-parent)
    svc.proc.wait()
    r = SandboxRunner(cache_dir=None, warm=False)
    try:
        deadline = time.monotonic() + 60
        while mine() and time.monotonic() < deadline:  # a cgroup is busy until its last process is reaped
            r.close()
            r = SandboxRunner(cache_dir=None, warm=False)
        assert mine() == []
    finally:
        r.close()


def test_an_unreachable_service_is_a_clear_error(tmp_path):
    res = ClassroomClient(str(tmp_path / "nobody.sock"), "alice").run(OK)
    assert res.status == "error" and "连不上课堂的运行服务" in res.message


def test_the_service_refuses_to_start_without_a_sandbox(tmp_path):
    out = subprocess.run([sys.executable, "-m", "torchcourse.runner.classroom", "--socket", str(tmp_path / "s.sock")],
                         capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PATH": str(tmp_path)}, timeout=120)
    assert out.returncode == 2
    assert "沙箱用不了" in out.stderr and "apt-get install bubblewrap" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "s.sock").exists()


def test_the_app_uses_the_class_runner_when_the_environment_names_it(monkeypatch, tmp_path):
    from torchcourse.tui.lazyrunner import default_runner_factory

    monkeypatch.setenv("TORCHCOURSE_HOME", str(tmp_path / "alice-home"))
    monkeypatch.setenv("TORCHCOURSE_CLASS_RUNNER", str(tmp_path / "class.sock"))
    monkeypatch.setenv("TORCHCOURSE_LEARNER", "alice")
    r = default_runner_factory("torchcourse")
    assert isinstance(r, ClassroomClient) and r.learner == "alice" and r.warm
    assert str(r.cache.root).startswith(str(tmp_path / "alice-home"))
    monkeypatch.delenv("TORCHCOURSE_CLASS_RUNNER")
    from torchcourse.runner import Runner

    other = default_runner_factory("torchcourse")
    try:
        assert isinstance(other, Runner)
    finally:
        other.close()


class TestHiddenPathsUnderAMountedPath:
    """The operator's files the class service is told to hide stay hidden even when they lie
    under a path the sandbox mounts read-only (here: the interpreter's own prefix, which every
    run needs). A service that dropped its ``--hide`` list would let a snippet read them."""

    @needs_sandbox
    def test_a_hidden_file_inside_the_interpreters_prefix_cannot_be_read(self, tmp_path):
        import secrets as _secrets
        import shutil

        inside = Path(sys.prefix) / f"tc-hidden-{_secrets.token_hex(4)}"
        inside.mkdir()
        secret = inside / "class.toml"
        secret.write_text('alice = "a-token-nobody-may-read"\n', encoding="utf-8")
        svc = Service(tmp_path, jobs=1, hide=[str(inside)])
        try:
            probe = snip(f"""
                import os
                print("exists", os.path.exists({str(secret)!r}))
                try:
                    print(open({str(secret)!r}).read())
                except OSError as e:
                    print("refused", type(e).__name__)
                print("prefix", os.path.isdir({str(Path(sys.prefix) / 'lib')!r}))
                """)
            result = svc.client("mallory").run(probe, use_cache=False)
            assert "a-token-nobody-may-read" not in result.actual, result.actual
            assert "prefix True" in result.actual  # the mount itself is there: the hiding did it
        finally:
            svc.stop()
            shutil.rmtree(inside, ignore_errors=True)


@needs_sandbox
class TestTheClassJudgesAsALoneLearner:
    """Issue 47: the class's client judges a run with the course's recorded releases and the
    per-release alternatives, by the same function as a lone learner's Runner (the installed torch
    is not the fixture course's reference release 2.12.0)."""

    RECORDED = {"torch": ("2.12.0", "2.13.0")}

    def _snippets(self):
        from torchcourse.course.releases import OutputAlternative
        from torchcourse.runner.cache import torch_version

        here = torch_version(sys.executable).split("+")[0]
        alt = OutputAlternative("torch", f"=={here}", "2\n", 1)
        return here, [snip("print(2)\n", id="alt", expected="1", alternatives=(alt,)),
                      snip("print(1 + 1)\n", id="noalt", expected="1")]

    def test_the_installed_releases_alternative_and_the_release_note(self, service, tmp_path):
        from torchcourse.runner import Runner

        here, snippets = self._snippets()
        if here == self.RECORDED["torch"][0]:
            pytest.skip("the installed torch is the fixture's reference release")
        client = service.client("carol", cache_dir=tmp_path / "carol", recorded=self.RECORDED)
        lone = Runner(cache_dir=None, warm=False, recorded=self.RECORDED)
        try:
            for s in snippets:
                fresh, cached, alone = client.run(s), client.run(s), lone.run(s)
                assert cached.cached and not fresh.cached
                for r in (fresh, cached, alone):
                    assert (r.status, r.expected, r.recorded_as, r.release_note, r.message) == \
                        (alone.status, alone.expected, alone.recorded_as, alone.release_note, alone.message), (s.id, r, alone)
            assert alone.status == "mismatch" and f"书里这段是在 torch 2.12.0 上记录的，你装的是 {here}" in alone.release_note
            first = client.run(snippets[0])
            assert first.status == "match" and first.recorded_as == f"torch=={here}"
        finally:
            lone.close()


class TestTheLearnersAppMakesTheDiff:
    """The service (one process for the whole class, outside every run's CPU group) sends a
    mismatch without its diff; the learner's app judges the output again and makes the diff, so a
    megabyte of output costs the service no diff (10 ms a run, twice the bytes to send)."""

    CODE = snip("for i in range(3):\n    print(i)\n", expected="0\n1\n3")

    def test_the_service_sends_no_diff_and_the_learner_sees_one(self, service):
        import socket

        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(service.sock)
            request = {"op": "run", "learner": "dora", "cold": False, "snippet": _snippet_to_json(self.CODE)}
            s.sendall((json.dumps(request) + "\n").encode())
            data = b""
            while chunk := s.recv(1 << 16):
                data += chunk
        sent = [json.loads(line)["result"] for line in data.decode().splitlines() if '"result"' in line][0]
        assert (sent["status"], sent["actual"], sent["diff"]) == ("mismatch", "0\n1\n2", "")
        seen = service.client("dora").run(self.CODE)
        assert seen.status == "mismatch"
        assert "-3" in seen.diff.splitlines() and "+2" in seen.diff.splitlines()


@needs_sandbox
class TestTheClassCacheKeysAsALoneLearners:
    def test_an_edited_data_file_is_never_answered_from_the_cache(self, service, tmp_path):
        """core.cache_env keys both: the course's data files are part of the class's key too."""
        data = tmp_path / "heights.csv"
        data.write_text("1,2\n", encoding="utf-8")
        code = snip("print('data?')\n", expected="data?")
        client = service.client("dora", cache_dir=tmp_path / "dora", data=(str(data),))
        assert not client.run(code).cached and client.run(code).cached
        data.write_text("1,2,3\n", encoding="utf-8")
        assert not client.run(code).cached
