"""One warm runner for a whole class: a service that owns one sandboxed, torch-loaded zygote and
runs every learner's snippets from it, with a concurrency cap and a fair queue, and the client
the app uses in its place (same interface as :class:`torchcourse.runner.Runner`). No torch, no
Textual here.

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
  client → ``{"op": "ping"}`` → ``{"ok": true, "jobs": N, "fingerprint": {...}}``;
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
from pathlib import Path
from typing import Callable

from torchcourse.runner import core
from torchcourse.runner.cache import RunCache

ENV_SOCKET = "TORCHCOURSE_CLASS_RUNNER"
ENV_LEARNER = "TORCHCOURSE_LEARNER"
MAX_REQUEST = 4 << 20  # bytes of one request line (a snippet's code and expected output)
SNIPPET_FIELDS = ("id", "chapter_id", "code", "expected", "line", "expected_line", "part", "section",
                  "gpu", "norun", "cold", "timeout", "raises", "bad_attrs", "exit_code")
MSG_UNREACHABLE = "💥 连不上课堂的运行服务（{err}）：请告诉老师"
MSG_LOST = "💥 课堂的运行服务中途断开了：请再运行一次，或告诉老师"


def _snippet_to_json(snippet) -> dict:
    return {f: (list(v) if isinstance((v := getattr(snippet, f, None)), tuple) else v) for f in SNIPPET_FIELDS}


def _snippet_from_json(d: dict):
    from torchcourse.course.model import Snippet

    kw = {f: d[f] for f in SNIPPET_FIELDS if f in d}
    kw["bad_attrs"] = tuple(kw.get("bad_attrs") or ())
    return Snippet(**kw)


def _result_from_json(d: dict) -> core.RunResult:
    names = {f.name for f in dataclasses.fields(core.RunResult)}
    return core.RunResult(**{k: v for k, v in d.items() if k in names})


def _send(conn: socket.socket, lock: threading.Lock, obj: dict) -> bool:
    data = (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8")
    with lock:
        try:
            conn.sendall(data)
            return True
        except OSError:
            return False


# -- the service -----------------------------------------------------------------------------

class Job:
    def __init__(self, learner: str, snippet, cold: bool, conn: socket.socket):
        self.learner = learner
        self.snippet = snippet
        self.cold = cold
        self.conn = conn
        self.lock = threading.Lock()
        self.cancel = threading.Event()
        self.state = "queued"  # queued → running → done
        self.done = threading.Event()
        self.position = -1  # last place sent


class FairQueue:
    """Waiting jobs, one FIFO per learner. The next job is the oldest of the learner with the
    fewest runs going now; among those, the one whose last run started longest ago (never:
    first). A learner with ten queued runs and one running waits behind one who has none."""

    def __init__(self) -> None:
        self.queues: dict[str, deque[Job]] = {}
        self.turn: deque[str] = deque()  # learners with waiting jobs, in arrival order
        self.last_start: dict[str, int] = {}  # learner → tick of their last started run
        self.tick = 0

    def put(self, job: Job) -> None:
        q = self.queues.setdefault(job.learner, deque())
        q.append(job)
        if job.learner not in self.turn:
            self.turn.append(job.learner)

    @staticmethod
    def _pick(turn, queues, busy: dict[str, int], last: dict[str, int]) -> str | None:
        best, best_key = None, None
        for i, learner in enumerate(turn):
            if not queues.get(learner):
                continue
            key = (busy.get(learner, 0), last.get(learner, -1), i)
            if best_key is None or key < best_key:
                best, best_key = learner, key
        return best

    def take(self, busy: dict[str, int] | None = None) -> Job | None:
        """The next job; ``busy``: learner → runs of theirs running now."""
        learner = self._pick(self.turn, self.queues, busy or {}, self.last_start)
        if learner is None:
            return None
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
    def __init__(self, socket_path: str, *, jobs: int | None = None, preload=None, hide=(), runner=None, run_space: int | None = None):
        self.socket_path = socket_path
        self.jobs = max(1, int(jobs or os.cpu_count() or 2))
        if runner is None:
            from torchcourse.runner.sandbox import SandboxRunner

            runner = SandboxRunner(cache_dir=None, warm=True, preload=preload, hide=list(hide) + [os.path.dirname(os.path.abspath(socket_path))], jobs=self.jobs, run_space=run_space)
        self.runner = runner
        self.queue = FairQueue()
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
                ready, _, _ = select.select([self.listener], [], [], 0.5)
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
        for i, job in enumerate(self.queue.order(self._busy())):
            place = i - free + 1
            if place >= 1 and job.position != place:
                job.position = place
                _send(job.conn, job.lock, {"queue": place})

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
                if job is None:
                    continue
                job.state = "running"
                job.position = 0
                self.running.append(job)
                self._announce()
            _send(job.conn, job.lock, {"queue": 0})
            try:
                res = self.runner.run(job.snippet, cold=job.cold, use_cache=False, cancel=job.cancel)
            except Exception as exc:  # noqa: BLE001 - one run's failure never ends the service
                res = core.RunResult("error", expected=job.snippet.expected, message=f"💥 运行服务出错：{type(exc).__name__}: {exc}")
            with self.cv:
                self.running.remove(job)
                self.cv.notify_all()
            self._finish(job, res)

    def _finish(self, job: Job, res: core.RunResult) -> None:
        """Send the result; the connection's own thread closes it (it waits for ``done``)."""
        _send(job.conn, job.lock, {"result": dataclasses.asdict(res)})
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
                _send(conn, lock, {"ok": True, "jobs": self.jobs, "fingerprint": self.runner.fingerprint()})
                return
            if op == "status":
                _send(conn, lock, self.status())
                return
            if op != "run":
                _send(conn, lock, {"error": f"unknown op {op!r}"})
                return
            learner = str(req.get("learner") or "")[:128]
            job = Job(learner, _snippet_from_json(req["snippet"]), bool(req.get("cold")), conn)
            job.lock = lock
            with self.cv:
                if self.stopping.is_set():
                    raise OSError("stopping")
                self.queue.put(job)
                self._announce()
                self.cv.notify()
            # until the run is done: a cancel (or the client gone) stops it
            conn.settimeout(None)
            while not job.done.is_set():
                try:
                    ready, _, _ = select.select([conn], [], [], 0.5)
                except (OSError, ValueError):
                    break
                if not ready:
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
                job.done.wait()  # the worker (or _cancel) sends the result
            try:
                conn.close()
            except OSError:
                pass


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m torchcourse.runner.classroom", description="一个班共用的预热运行器（沙箱里）")
    ap.add_argument("--socket", required=True, help="unix socket 的路径")
    ap.add_argument("--jobs", type=int, default=None, help="同时运行的代码块个数（默认：CPU 核数）")
    ap.add_argument("--preload", action="append", default=None, help="预热运行器先导入的模块（默认 torch）")
    ap.add_argument("--hide", action="append", default=[], help="沙箱里看不到的路径（用户文件、课堂的数据目录……）")
    ap.add_argument("--lifeline", action="store_true", help="标准输入关闭（启动它的进程退出）时就退出")
    ap.add_argument("--run-space", type=int, default=None, metavar="MB", help="所有运行目录合起来最多占多少 MB（以 root 运行时是一个 tmpfs；默认每个并发 1024）")
    args = ap.parse_args(argv)
    from torchcourse.runner.sandbox import private_mounts, sandbox_problem

    problem = sandbox_problem()
    if problem:
        print(f"课堂运行服务没有启动：沙箱用不了——{problem}", file=sys.stderr)
        return 2
    # (root) a mount namespace of its own, before any thread: the run directories then live on a
    # tmpfs of a bounded size that vanishes with the service, not on the server's disk
    private_mounts()
    svc = ClassroomService(args.socket, jobs=args.jobs, preload=tuple(args.preload) if args.preload else None, hide=args.hide,
                           run_space=args.run_space << 20 if args.run_space else None)
    done = threading.Event()

    def on_signal(*_):
        done.set()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    try:
        svc.listen()
    except OSError as exc:
        print(f"课堂运行服务没有启动：{args.socket}：{exc.strerror or exc}", file=sys.stderr)
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


# -- the client (what the app uses instead of a Runner) --------------------------------------

class ClassroomClient:
    """Runs snippets on the class's shared runner. Same interface as :class:`Runner` for the app:
    ``run(snippet, *, cold=False, use_cache=True, cancel=None, on_queue=None) -> RunResult``,
    ``start()``, ``close()``, ``warm`` (True), ``gpu_available()`` (False).

    ``learner``: whose run it is (the fair queue's key). ``cache_dir``: this learner's own output
    cache (e.g. ``paths.run_cache_dir(course_id)`` under their TORCHCOURSE_HOME), or None.
    ``on_queue(position)``: called from the running thread while a run waits — K ≥ 1 means it is
    K-th in line (K-1 runs wait before it), 0 that it runs now (a run that starts at once gets only
    0). Per call, ``run(..., on_queue=f)`` replaces it."""

    warm = True

    def __init__(self, socket_path: str, learner: str, *, cache_dir: Path | None = None,
                 on_queue: Callable[[int], None] | None = None, connect_timeout: float = 10.0):
        self.socket_path = str(socket_path)
        self.learner = learner
        self.cache = RunCache(Path(cache_dir)) if cache_dir is not None else None
        self.on_queue = on_queue
        self.connect_timeout = connect_timeout
        self._fingerprint: dict | None = None
        self._closed = False
        self._live: set[socket.socket] = set()
        self._live_lock = threading.Lock()

    def gpu_available(self) -> bool:
        return False

    def _connect(self) -> socket.socket:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.connect_timeout)
        try:
            s.connect(self.socket_path)
        except OSError:
            s.close()
            raise
        return s

    def _request(self, obj: dict) -> dict:
        s = self._connect()
        try:
            s.sendall((json.dumps(obj) + "\n").encode())
            buf = b""
            while b"\n" not in buf:
                chunk = s.recv(65536)
                if not chunk:
                    raise OSError("connection closed")
                buf += chunk
            return json.loads(buf.split(b"\n", 1)[0])
        finally:
            s.close()

    def fingerprint(self) -> dict:
        if self._fingerprint is None:
            self._fingerprint = dict(self._request({"op": "ping"}).get("fingerprint") or {})
        return self._fingerprint

    def start(self) -> None:
        """Check that the service answers (optional; run() connects on demand)."""
        try:
            self.fingerprint()
        except (OSError, ValueError):
            pass

    def status(self) -> dict:
        return self._request({"op": "status"})

    def close(self) -> None:
        self._closed = True
        with self._live_lock:
            live = list(self._live)
        for s in live:  # the service cancels those runs
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _cache_key(self, snippet, cold: bool) -> str | None:
        if self.cache is None:
            return None
        try:
            fp = self.fingerprint()
        except (OSError, ValueError):
            return None
        return self.cache.key(snippet.code, {**fp, "mode": "cold" if (cold or snippet.cold) else "warm", "classroom": 1})

    def run(self, snippet, *, cold: bool = False, use_cache: bool = True, cancel: threading.Event | None = None,
            on_queue: Callable[[int], None] | None = None) -> core.RunResult:
        expected = snippet.expected
        if snippet.norun:
            return core.RunResult("skipped", expected=expected, message=core.MSG_NORUN)
        if snippet.gpu:
            return core.RunResult("skipped", expected=expected, message=core.MSG_GPU)
        if cancel is not None and cancel.is_set():
            return core.RunResult("cancelled", expected=expected, message="⏹️ 已取消")
        if snippet.bad_attrs:
            return core.RunResult("error", expected=expected, message=core.bad_attrs_message(snippet))
        key = self._cache_key(snippet, cold) if use_cache else None
        if key is not None:
            rec = self.cache.get(key)
            if rec is not None:
                # Runner._verdict uses nothing of the runner: the same verdict as a fresh run's
                return core.Runner._verdict(self, snippet, rec["actual"], float(rec.get("seconds", 0.0)), rec.get("returncode"), rec.get("signal"), bool(rec.get("truncated")), "exited", cached=True)
        tell = on_queue or self.on_queue
        try:
            s = self._connect()
        except OSError as exc:
            return core.RunResult("error", expected=expected, message=MSG_UNREACHABLE.format(err=exc.strerror or exc))
        with self._live_lock:
            self._live.add(s)
        try:
            s.sendall((json.dumps({"op": "run", "learner": self.learner, "cold": bool(cold), "snippet": _snippet_to_json(snippet)}, ensure_ascii=False) + "\n").encode("utf-8"))
            s.settimeout(None)
            buf = b""
            cancel_sent = False
            while True:
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    msg = json.loads(line.decode("utf-8"))
                    if "queue" in msg and tell is not None:
                        try:
                            tell(int(msg["queue"]))
                        except Exception:  # noqa: BLE001 - the caller's callback
                            pass
                    elif "result" in msg:
                        res = _result_from_json(msg["result"])
                        if key is not None and res.status in ("match", "mismatch") and not res.cached:
                            self.cache.put(key, {"actual": res.actual, "seconds": res.seconds, "returncode": res.returncode, "signal": res.signal, "truncated": res.truncated, "mode": "classroom"})
                        return res
                    elif "error" in msg:
                        return core.RunResult("error", expected=expected, message=f"💥 课堂的运行服务拒绝了这次运行：{msg['error']}")
                if not cancel_sent and ((cancel is not None and cancel.is_set()) or self._closed):
                    cancel_sent = True
                    try:
                        s.sendall(b'{"op": "cancel"}\n')
                    except OSError:
                        return core.RunResult("cancelled", expected=expected, message="⏹️ 已取消")
                ready, _, _ = select.select([s], [], [], 0.05)
                if ready:
                    chunk = s.recv(1 << 16)
                    if not chunk:
                        if cancel_sent or self._closed:
                            return core.RunResult("cancelled", expected=expected, message="⏹️ 已取消")
                        return core.RunResult("error", expected=expected, message=MSG_LOST)
                    buf += chunk
        except (OSError, ValueError) as exc:
            if (cancel is not None and cancel.is_set()) or self._closed:
                return core.RunResult("cancelled", expected=expected, message="⏹️ 已取消")
            return core.RunResult("error", expected=expected, message=MSG_LOST + f"（{exc}）")
        finally:
            with self._live_lock:
                self._live.discard(s)
            s.close()


def client_from_env(cache_dir: Path | None = None) -> ClassroomClient | None:
    """The client when ``TORCHCOURSE_CLASS_RUNNER`` names the service's socket, else None."""
    sock = os.environ.get(ENV_SOCKET)
    if not sock:
        return None
    return ClassroomClient(sock, os.environ.get(ENV_LEARNER, "") or f"uid{os.getuid()}-pid{os.getpid()}", cache_dir=cache_dir)


if __name__ == "__main__":
    sys.exit(main())
