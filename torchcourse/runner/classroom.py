"""One warm runner for a whole class: a service that owns one sandboxed, torch-loaded zygote and
runs every learner's snippets from it, with a concurrency cap and a fair queue. The client the app
uses in its place (same interface as :class:`torchcourse.runner.Runner`) is
:class:`torchcourse.runner.classroom_client.ClassroomClient` (importable from here too). No
torch, no Textual here.

Service::

    python -m torchcourse.runner.classroom --socket PATH [--jobs N] [--preload torch] [--hide PATH]...
                                           [--lifeline] [--run-space MB]

It refuses to start (exit 2, the reason in Chinese on stderr) when the sandbox does not work here
(:func:`torchcourse.runner.sandbox.sandbox_problem`). Once it listens it prints one JSON line,
``{"ok": true, "socket": PATH, "jobs": N}``, on stdout. The socket is created mode 0600 (only the
server's user, i.e. serve and the apps it starts, can reach it; no snippet can: it is not mounted
in the sandbox). SIGTERM / SIGINT / stdin EOF (with ``--lifeline``) end it and its zygote.

Scheduling: at most ``jobs`` runs at once (default: the number of cores); waiting runs are kept
in one queue per learner and started round-robin across learners, so one learner's ten runs do not
starve another's one. Every waiting run is told its place whenever it changes.

Protocol (unix stream socket, one connection per run, JSON lines):
  client → ``{"op": "run", "learner": NAME, "cold": bool, "snippet": {Snippet fields}}``
  service → ``{"queue": K}`` (K ≥ 1: K-th in line, K-1 runs wait before it; 0: it runs now), any
            number of times, then ``{"result": {RunResult fields}}`` and the connection closes.
  client → ``{"op": "cancel"}`` (or closing the connection): a waiting run leaves the queue, a
            running one is stopped (its process tree killed); the result is ``cancelled``.
  client → ``{"op": "ping"}`` → ``{"ok": true, "jobs": N, "fingerprint": {...}, "versions": {module: version}}``;
  the client judges every run itself (:func:`torchcourse.runner.core.verdict`, as a lone
  learner's Runner does) from the result's output and the course's recorded releases (the
  service's result carries no diff: the learner's app makes it, in its own CPU group);
  ``{"op": "status"}`` → ``{"running": [learner…], "queued": {learner: n}}``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import select
import signal
import socket
import sys
import threading
from collections import deque

from torchcourse.paths import os_reason
from torchcourse.runner import core
from torchcourse.runner.execute import readable
from torchcourse.runner.classroom_client import (  # noqa: F401 - the client's names, also importable from here
    ENV_LEARNER,
    ENV_SOCKET,
    ClassroomClient,
    _send,
    _snippet_from_json,
    client_from_env,
)

MAX_REQUEST = 4 << 20  # bytes of one request line (a snippet's code and expected output)
# seconds a client has to take one message (a result: up to the output cap) before its connection
# is dropped; only that connection's own thread waits, never a run worker or the scheduler
SEND_TIMEOUT = 30.0
# runs one learner may have waiting at once (each holds a connection, a thread and three
# descriptors here; one app keeps up to its thread pool's size waiting, 6 on 2 cores, 32 on many)
MAX_WAITING_RUNS = 32
MSG_TOO_MANY_WAITING = "你已经有 {n} 个代码块在排队，等前面的运行完再运行这一个"


# -- the service -----------------------------------------------------------------------------

class Job:
    def __init__(self, learner: str, snippet, cold: bool, conn: socket.socket):
        self.learner = learner
        self.snippet = snippet
        self.cold = cold
        self.conn = conn
        self.cancel = threading.Event()
        self.state = "queued"  # queued → running → done
        self.done = threading.Event()
        self.position = -1  # last place sent
        # what the scheduler and the workers have for the client: the connection's own thread
        # sends it (woken through the pipe), so a client that does not read stalls only itself
        self.outbox: deque[bytes] = deque()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)

    def post(self, obj: dict) -> None:
        self.outbox.append((json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8"))
        if self.wake_w < 0:
            return
        try:
            os.write(self.wake_w, b"!")
        except OSError:  # the pipe is full (the thread is awake anyway) or closed (it has left)
            pass

    def close(self) -> None:
        fds, self.wake_r, self.wake_w = (self.wake_r, self.wake_w), -1, -1
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass


class FairQueue:
    """Waiting jobs, one FIFO per learner. The next job is the oldest of the learner with the
    fewest runs going now; among those, the one whose last run started longest ago (never:
    first). A learner with ten queued runs and one running waits behind one who has none."""

    # runs one learner may start a second (after a burst): every warm run costs the zygote a fork
    # of a torch-sized process and its teardown, outside any run's CPU group — one learner sending
    # empty runs back to back (45-58 a second) made every other learner's runs ~2x slower
    START_RATE, START_BURST = 10.0, 20.0

    def __init__(self, clock=None) -> None:
        import time

        self.queues: dict[str, deque[Job]] = {}
        self.turn: deque[str] = deque()  # learners with waiting jobs, in arrival order
        self.last_start: dict[str, int] = {}  # learner → tick of their last started run
        self.tick = 0
        self.clock = clock or time.monotonic
        self.tokens: dict[str, tuple[float, float]] = {}  # learner → (runs they may start now, when)
        # the most runs one learner may hold at once (ClassroomService: one slot fewer than the
        # service has, so that a learner who arrives finds a slot free, never one classmate in all)
        self.cap: int | None = None

    def put(self, job: Job) -> None:
        q = self.queues.setdefault(job.learner, deque())
        q.append(job)
        if job.learner not in self.turn:
            self.turn.append(job.learner)

    def _may_start(self, learner: str) -> float:
        """How many runs ``learner`` may start now (< 1: none until more time has passed)."""
        tokens, when = self.tokens.get(learner, (self.START_BURST, 0.0))
        return min(self.START_BURST, tokens + (self.clock() - when) * self.START_RATE)

    def wait_hint(self) -> float | None:
        """Seconds until a waiting learner held back by the start rate may start again (None: no
        one is held back by it)."""
        may = [self._may_start(learner) for learner in self.turn if self.queues.get(learner)]
        waits = [(1.0 - m) / self.START_RATE for m in may if m < 1.0]
        return max(0.001, min(waits)) if waits else None

    @staticmethod
    def _pick(turn, queues, busy: dict[str, int], last: dict[str, int], cap: int | None = None, may_start=None) -> str | None:
        best, best_key = None, None
        for i, learner in enumerate(turn):
            if not queues.get(learner):
                continue
            if cap is not None and busy.get(learner, 0) >= cap:
                continue
            if may_start is not None and may_start(learner) < 1.0:
                continue
            key = (busy.get(learner, 0), last.get(learner, -1), i)
            if best_key is None or key < best_key:
                best, best_key = learner, key
        return best

    def take(self, busy: dict[str, int] | None = None) -> Job | None:
        """The next job; ``busy``: learner → runs of theirs running now."""
        learner = self._pick(self.turn, self.queues, busy or {}, self.last_start, self.cap, self._may_start)
        if learner is None:
            return None
        self.tokens[learner] = (self._may_start(learner) - 1.0, self.clock())
        q = self.queues[learner]
        job = q.popleft()
        self.tick += 1
        self.last_start[learner] = self.tick
        if not q:
            self.queues.pop(learner, None)
            self.turn.remove(learner)
        return job

    def remove(self, job: Job) -> bool:
        q = self.queues.get(job.learner)
        if q is None or job not in q:
            return False
        q.remove(job)
        if not q:
            self.queues.pop(job.learner, None)
            try:
                self.turn.remove(job.learner)
            except ValueError:
                pass
        return True

    def order(self, busy: dict[str, int] | None = None) -> list[Job]:
        """Every waiting job in the order they will start (if nothing else arrives and each
        started run were still running when the next one starts)."""
        queues = {k: deque(v) for k, v in self.queues.items()}
        busy = dict(busy or {})
        last = dict(self.last_start)
        tick = self.tick
        out: list[Job] = []
        while True:
            learner = self._pick(self.turn, queues, busy, last)
            if learner is None:
                return out
            out.append(queues[learner].popleft())
            busy[learner] = busy.get(learner, 0) + 1
            tick += 1
            last[learner] = tick

    def __len__(self) -> int:
        return sum(len(q) for q in self.queues.values())


class ClassroomService:
    def __init__(self, socket_path: str, *, jobs: int | None = None, preload=None, hide=(), runner=None, run_space: int | None = None,
                 data=()):
        self.socket_path = socket_path
        self.jobs = max(1, int(jobs or os.cpu_count() or 2))
        if runner is None:
            from torchcourse.runner.sandbox import SandboxRunner

            runner = SandboxRunner(cache_dir=None, warm=True, preload=preload, hide=list(hide) + [os.path.dirname(os.path.abspath(socket_path))], jobs=self.jobs, run_space=run_space, data=data)
        self.runner = runner
        self.runner.diffs = False  # (each learner's app judges every output again, and diffs it, itself)
        self.queue = FairQueue()
        self.queue.cap = max(1, self.jobs - 1)
        self.running: list[Job] = []
        self.cv = threading.Condition()
        self.stopping = threading.Event()
        self.listener: socket.socket | None = None
        self.workers: list[threading.Thread] = []

    # -- lifecycle -----------------------------------------------------------------------
    def listen(self) -> None:
        try:
            os.unlink(self.socket_path)
        except FileNotFoundError:
            pass
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            s.bind(self.socket_path)
        finally:
            os.umask(old)
        os.chmod(self.socket_path, 0o600)
        s.listen(128)
        self.listener = s
        for i in range(self.jobs):
            t = threading.Thread(target=self._worker, name=f"tc-class-run-{i}", daemon=True)
            t.start()
            self.workers.append(t)
        threading.Thread(target=self.runner.start, name="tc-class-zygote", daemon=True).start()

    def serve_forever(self) -> None:
        assert self.listener is not None
        while not self.stopping.is_set():
            try:
                ready = readable([self.listener.fileno()], 0.5)
            except InterruptedError:
                continue
            except (OSError, ValueError):
                break
            if not ready:
                continue
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            threading.Thread(target=self._serve_conn, args=(conn,), name="tc-class-conn", daemon=True).start()

    def stop(self) -> None:
        self.stopping.set()
        with self.cv:
            waiting = self.queue.order()
            for job in waiting:
                self.queue.remove(job)
            for job in self.running:
                job.cancel.set()
            self.cv.notify_all()
        for job in waiting:
            self._finish(job, core.RunResult("cancelled", expected=job.snippet.expected, message="⏹️ 已取消（课堂的运行服务已停止）"))
        if self.listener is not None:
            try:
                self.listener.close()
            except OSError:
                pass
            try:
                os.unlink(self.socket_path)
            except OSError:
                pass
        self.runner.close()

    # -- scheduling ----------------------------------------------------------------------
    def _announce(self) -> None:
        """Tell every waiting job its place (only when it changed). Called with ``cv`` held."""
        free = max(0, self.jobs - len(self.running))  # these many start as soon as a worker wakes
        busy = self._busy()
        place = 0
        for job in self.queue.order(busy):
            if free > 0 and (self.queue.cap is None or busy.get(job.learner, 0) < self.queue.cap):
                free -= 1  # it starts now: its worker tells it so
                busy[job.learner] = busy.get(job.learner, 0) + 1
                continue
            place += 1  # it waits (for a worker, or for a run of its learner's to end)
            if job.position != place:
                job.position = place
                job.post({"queue": place})

    def _busy(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for job in self.running:
            out[job.learner] = out.get(job.learner, 0) + 1
        return out

    def _worker(self) -> None:
        while True:
            with self.cv:
                while not self.stopping.is_set() and not len(self.queue):
                    self.cv.wait()
                if self.stopping.is_set():
                    return
                job = self.queue.take(self._busy())
                if job is None:  # every waiting run's learner holds their share (or started their runs' worth for now)
                    self.cv.wait(self.queue.wait_hint())
                    continue
                job.state = "running"
                job.position = 0
                self.running.append(job)
                self._announce()
            job.post({"queue": 0})
            try:
                run_as = getattr(self.runner, "run_as", None)  # (a sandbox: the learner's runs share one run's CPU weight)
                if run_as is not None:
                    res = run_as(job.learner, job.snippet, cold=job.cold, use_cache=False, cancel=job.cancel)
                else:
                    res = self.runner.run(job.snippet, cold=job.cold, use_cache=False, cancel=job.cancel)
            except Exception as exc:  # noqa: BLE001 - one run's failure never ends the service
                res = core.RunResult("error", expected=job.snippet.expected, message=f"💥 运行服务出错：{type(exc).__name__}: {exc}")
            with self.cv:
                self.running.remove(job)
                self.cv.notify_all()
            self._finish(job, res)

    def _finish(self, job: Job, res: core.RunResult) -> None:
        """Hand over the result; the connection's own thread sends it and closes the connection."""
        job.post({"result": dataclasses.asdict(res)})
        job.state = "done"
        job.done.set()

    def _cancel(self, job: Job) -> None:
        with self.cv:
            if job.state == "queued" and self.queue.remove(job):
                self._announce()
                queued = True
            else:
                queued = False
                job.cancel.set()
        if queued:
            self._finish(job, core.RunResult("cancelled", expected=job.snippet.expected, message="⏹️ 已取消"))

    def status(self) -> dict:
        with self.cv:
            queued: dict[str, int] = {}
            for job in self.queue.order(self._busy()):
                queued[job.learner] = queued.get(job.learner, 0) + 1
            return {"running": [j.learner for j in self.running], "queued": queued, "jobs": self.jobs}

    # -- one connection ------------------------------------------------------------------
    def _serve_conn(self, conn: socket.socket) -> None:
        lock = threading.Lock()
        job = None
        try:
            buf = b""
            conn.settimeout(30)
            while b"\n" not in buf:
                chunk = conn.recv(1 << 16)
                if not chunk:
                    return
                buf += chunk
                if len(buf) > MAX_REQUEST:
                    _send(conn, lock, {"error": "request too large"})
                    return
            line, buf = buf.split(b"\n", 1)
            req = json.loads(line.decode("utf-8"))
            op = req.get("op")
            if op == "ping":
                from torchcourse.runner.cache import module_versions

                # versions: what the client's verdict picks a release's alternative by (core.verdict)
                versions = module_versions(self.runner.python, tuple(dict.fromkeys(("torch", *self.runner.preload))))
                _send(conn, lock, {"ok": True, "jobs": self.jobs, "fingerprint": self.runner.fingerprint(), "versions": versions})
                return
            if op == "status":
                _send(conn, lock, self.status())
                return
            if op != "run":
                _send(conn, lock, {"error": f"unknown op {op!r}"})
                return
            learner = str(req.get("learner") or "")[:128]
            job = Job(learner, _snippet_from_json(req["snippet"]), bool(req.get("cold")), conn)
            with self.cv:
                refused = ("课堂的运行服务正在停止" if self.stopping.is_set()
                           else MSG_TOO_MANY_WAITING.format(n=MAX_WAITING_RUNS) if len(self.queue.queues.get(learner, ())) >= MAX_WAITING_RUNS
                           else "")
                if not refused:
                    self.queue.put(job)
                    self._announce()
                    self.cv.notify()
            if refused:  # (never queued: nobody will end it, so nothing to wait for below)
                job.close()
                job = None
                _send(conn, lock, {"error": refused})
                return
            # until the run is done and its result sent: a cancel (or the client gone) stops it
            conn.settimeout(SEND_TIMEOUT)
            # poll, not select: select refuses descriptors past 1024, and each connection holds three
            poller = select.poll()
            poller.register(conn.fileno(), select.POLLIN)
            poller.register(job.wake_r, select.POLLIN)
            while True:
                done = job.done.is_set()
                if not self._flush(job, conn):
                    break  # the client does not take what it is sent: it is gone for this run
                if done:
                    break  # (the result was posted before done was set, so it went out above)
                try:
                    ready = {fd for fd, _ev in poller.poll(500)}
                except (OSError, ValueError):
                    break
                if job.wake_r in ready:
                    try:
                        os.read(job.wake_r, 4096)
                    except OSError:
                        pass
                if conn.fileno() not in ready:
                    continue
                try:
                    chunk = conn.recv(4096)
                except OSError:
                    chunk = b""
                if not chunk or b"cancel" in chunk:
                    self._cancel(job)
                    if not chunk:
                        break
        except (OSError, ValueError, KeyError, TypeError) as exc:
            if job is None:
                _send(conn, lock, {"error": f"bad request: {exc}"})
        finally:
            if job is not None and not job.done.is_set():
                self._cancel(job)
                job.done.wait()  # the worker (or _cancel) ends it; nobody is left to send it to
            if job is not None:
                job.close()
            try:
                conn.close()
            except OSError:
                pass

    @staticmethod
    def _flush(job: Job, conn: socket.socket) -> bool:
        """Send what the job's outbox holds, each message whole within SEND_TIMEOUT; False once
        one could not be (the client stopped reading, or left)."""
        while job.outbox:
            data = job.outbox.popleft()
            try:
                conn.sendall(data)
            except OSError:
                return False
        return True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m torchcourse.runner.classroom", description="一个班共用的预热运行器（沙箱里）")
    ap.add_argument("--socket", required=True, help="unix socket 的路径")
    ap.add_argument("--jobs", type=int, default=None, help="同时运行的代码块个数（默认：CPU 核数）")
    ap.add_argument("--preload", action="append", default=None, help="预热运行器先导入的模块（默认 torch）")
    ap.add_argument("--hide", action="append", default=[], help="沙箱里看不到的路径（用户文件、课堂的数据目录……）")
    ap.add_argument("--data", action="append", default=[], help="课程的数据文件（course.toml 的 data），复制进每个运行目录")
    ap.add_argument("--lifeline", action="store_true", help="标准输入关闭（启动它的进程退出）时就退出")
    ap.add_argument("--run-space", type=int, default=None, metavar="MB", help="所有运行目录合起来最多占多少 MB（以 root 运行时是一个 tmpfs；默认每个并发 1024）")
    args = ap.parse_args(argv)
    from torchcourse.runner.sandbox import private_mounts, sandbox_problem

    # a waiting run holds three descriptors here (MAX_WAITING_RUNS per learner): the soft limit
    # of many systems (1024) would refuse a class's connections long before the hard one
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 1 << 16 if hard == resource.RLIM_INFINITY else min(hard, 1 << 16)
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        except (ValueError, OSError):
            pass
    problem = sandbox_problem()
    if problem:
        print(f"课堂运行服务没有启动：沙箱用不了——{problem}", file=sys.stderr)
        return 2
    # (root) a mount namespace of its own, before any thread: the run directories then live on a
    # tmpfs of a bounded size that vanishes with the service, not on the server's disk
    private_mounts()
    svc = ClassroomService(args.socket, jobs=args.jobs, preload=tuple(args.preload) if args.preload else None, hide=args.hide,
                           run_space=args.run_space << 20 if args.run_space else None, data=tuple(args.data))
    done = threading.Event()

    def on_signal(*_):
        done.set()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    try:
        svc.listen()
    except OSError as exc:
        print(f"课堂运行服务没有启动：{args.socket}：{os_reason(exc)}", file=sys.stderr)
        svc.runner.close()
        return 2
    threading.Thread(target=svc.serve_forever, name="tc-class-accept", daemon=True).start()
    if args.lifeline:
        def watch():
            # os.read, not sys.stdin: a daemon thread blocked in the buffered reader aborts
            # the interpreter's shutdown ("could not acquire lock for <stdin>")
            try:
                while os.read(0, 1024):
                    pass
            except OSError:
                pass
            done.set()

        threading.Thread(target=watch, name="tc-class-lifeline", daemon=True).start()
    print(json.dumps({"ok": True, "socket": args.socket, "jobs": svc.jobs}), flush=True)
    while not done.wait(1.0):
        pass
    svc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
