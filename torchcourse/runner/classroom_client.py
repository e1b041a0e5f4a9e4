"""The app's side of the class's shared runner (see :mod:`torchcourse.runner.classroom` for the
service and the protocol): :class:`ClassroomClient`, with the interface of
:class:`torchcourse.runner.Runner`, and the protocol's JSON helpers. No torch, no Textual."""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import threading
from pathlib import Path
from typing import Callable

from torchcourse.paths import os_reason
from torchcourse.runner import core
from torchcourse.runner.cache import RunCache
from torchcourse.runner.execute import readable

ENV_SOCKET = "TORCHCOURSE_CLASS_RUNNER"
ENV_LEARNER = "TORCHCOURSE_LEARNER"
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
                 on_queue: Callable[[int], None] | None = None, connect_timeout: float = 10.0,
                 preload: tuple[str, ...] | None = None, recorded: dict | None = None, data: tuple[str, ...] = ()):
        self.socket_path = str(socket_path)
        self.learner = learner
        self.cache = RunCache(Path(cache_dir)) if cache_dir is not None else None
        self.on_queue = on_queue
        self.connect_timeout = connect_timeout
        self._fingerprint: dict | None = None
        self._versions: dict[str, str] = {}
        # the course's preload and [recorded] releases: the verdict is core.verdict's, the same
        # as a lone learner's Runner gives for the same output on the same release
        self.preload = tuple(core.DEFAULT_PRELOAD if preload is None else preload)
        self.recorded = dict(recorded or {})
        self.data = tuple(str(p) for p in data)  # the course's data files: part of the cache key (core.cache_env)
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
            answer = self._request({"op": "ping"})
            self._versions = {str(k): str(v) for k, v in dict(answer.get("versions") or {}).items()}
            self._fingerprint = dict(answer.get("fingerprint") or {})
        return self._fingerprint

    def installed(self) -> dict[str, str]:
        """The service's installed version of every recorded module (asked once, with the ping)."""
        if not self.recorded:
            return {}
        try:
            self.fingerprint()
        except (OSError, ValueError):
            return {}
        return {m: self._versions[m] for m in self.recorded if m in self._versions}

    def _verdict(self, snippet, res: core.RunResult, *, cached: bool) -> core.RunResult:
        """The verdict on an output that ran to its end (from the service or this cache)."""
        out = core.verdict(snippet, res.actual, res.seconds, res.returncode, res.signal, res.truncated, "exited", cached=cached,
                           recorded=self.recorded, installed=self.installed, libraries=self.preload)
        out.frames = res.frames
        if res.limit_note:  # (the sandbox's word on the limit that ended the run)
            out.limit_note = res.limit_note
            out.message = (res.limit_note + " " + out.message).strip()
        return out

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
        env = core.cache_env(fp, cold=cold or snippet.cold, preload=self.preload, data_digest=core.data_digest(self.data) if self.data else None)
        return self.cache.key(snippet.code, {**env, "classroom": 1})

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
                frames = rec.get("frames", "") if isinstance(rec.get("frames", ""), str) else ""
                raw = core.RunResult("match", actual=rec["actual"], seconds=float(rec.get("seconds", 0.0)), returncode=rec.get("returncode"),
                                     signal=rec.get("signal"), truncated=bool(rec.get("truncated")), frames=frames)
                return self._verdict(snippet, raw, cached=True)
        tell = on_queue or self.on_queue
        try:
            s = self._connect()
        except OSError as exc:
            return core.RunResult("error", expected=expected, message=MSG_UNREACHABLE.format(err=os_reason(exc)))
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
                        if res.status in ("match", "mismatch"):  # it ran to its end: judged here, as a lone Runner judges
                            if key is not None and not res.cached and not res.limit_note:
                                self.cache.put(key, {"actual": res.actual, "seconds": res.seconds, "returncode": res.returncode, "signal": res.signal, "truncated": res.truncated, "mode": "classroom", "frames": res.frames})
                            res = self._verdict(snippet, res, cached=False)
                        return res
                    elif "error" in msg:
                        return core.RunResult("error", expected=expected, message=f"💥 课堂的运行服务拒绝了这次运行：{msg['error']}")
                if not cancel_sent and ((cancel is not None and cancel.is_set()) or self._closed):
                    cancel_sent = True
                    try:
                        s.sendall(b'{"op": "cancel"}\n')
                    except OSError:
                        return core.RunResult("cancelled", expected=expected, message="⏹️ 已取消")
                ready = readable([s.fileno()], 0.05)
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


def client_from_env(cache_dir: Path | None = None, *, preload: tuple[str, ...] | None = None,
                    recorded: dict | None = None, data: tuple[str, ...] = ()) -> ClassroomClient | None:
    """The client when ``TORCHCOURSE_CLASS_RUNNER`` names the service's socket, else None."""
    sock = os.environ.get(ENV_SOCKET)
    if not sock:
        return None
    return ClassroomClient(sock, os.environ.get(ENV_LEARNER, "") or f"uid{os.getuid()}-pid{os.getpid()}", cache_dir=cache_dir,
                           preload=preload, recorded=recorded, data=data)
