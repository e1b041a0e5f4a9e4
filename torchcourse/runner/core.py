"""The Runner: run a snippet warm (forked from the zygote) or cold, normalize, compare, cache."""

from __future__ import annotations

import atexit
import errno
import os
import shutil
import tempfile
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path

from torchcourse.course.model import Snippet
from torchcourse.runner import execute
from torchcourse.course.releases import applicable, off_reference, release_note
from torchcourse.runner.cache import RunCache, fingerprint, gpu_possible, module_versions
from torchcourse.runner.normalize import TRACEBACK_HEADER, compare, exception_matches, normalize, raised_exception, unified_diff

DEFAULT_TIMEOUT = 60.0
DEFAULT_PRELOAD = ("torch",)
STATUSES = ("match", "mismatch", "error", "timeout", "skipped", "cancelled")
TORCH_PIN = "2.13.0"
MSG_NO_TORCH = f"🚫 运行器找不到 torch：请先安装 `pip install torch=={TORCH_PIN}`，再重试。"
MSG_GPU = "🗓️ 未实跑 — 需要 GPU"
MSG_NORUN = "🗓️ 未实跑 — 这段代码只供阅读"
MSG_ALONE = "提示：每段代码都单独写进一个空文件、在新进程里运行，前面代码块定义的名字在这里并不存在"
MSG_EMPTY_DIR = "提示：每段代码都在一个新建的空目录里运行，前面代码块写下的文件和模块在这里并不存在（要用的文件请在同一段代码里先写出来）"


def missing_module_message(module: str | None) -> str:
    """What a learner reads when the warm runner cannot import a module the course preloads."""
    if not module or module == "torch":
        return MSG_NO_TORCH
    return (f"🚫 运行器找不到 {module}（课程的 course.toml 在 preload 里要预先导入它）：先确认这个名字没有拼错"
            f"（作者运行 torchcourse check 会检查 preload 的每个名字），确实是这门课要用的库再安装它，然后重试。")


def bad_attrs_message(snippet: Snippet) -> str:
    """Why a snippet with misspelled fence attributes is not run (the check names the fix)."""
    from torchcourse.course.chapter import suggest_attr

    parts = []
    for tok in snippet.bad_attrs:
        guess = suggest_attr(tok)
        parts.append(f"{tok!r}" + (f"（是不是 {guess}？）" if guess else ""))
    return "🚫 代码块的属性写错了：" + "、".join(parts) + "。改正之前不运行它（torchcourse check 会指出行号）"


def raise_problem(snippet: Snippet, raised: str | None) -> str:
    """Empty when the run ended as the snippet declares (``raises=X`` or no exception)."""
    if snippet.raises:
        if raised is None:
            return f"💥 代码块声明了 raises={snippet.raises}，运行却没有抛出异常"
        if not exception_matches(snippet.raises, raised):
            return f"💥 代码块声明了 raises={snippet.raises}，运行抛出的却是 {raised}"
        return ""
    if raised is None:
        return ""
    msg = f"💥 运行抛出了 {raised}，代码块却没有声明 raises={raised.rsplit('.', 1)[-1]}"
    if raised.rsplit(".", 1)[-1] in ("NameError", "UnboundLocalError", "ImportError"):
        msg += "。" + MSG_ALONE
    elif raised.rsplit(".", 1)[-1] in ("FileNotFoundError", "ModuleNotFoundError"):
        msg += "。" + MSG_EMPTY_DIR
    return msg


def exit_problem(snippet: Snippet, raised: str | None, returncode: int | None) -> str:
    """Empty when the exit status is the one the snippet declares (``exit=N``; 0 by default).
    An uncaught exception's status 1 belongs to ``raises=`` (see :func:`raise_problem`); a run
    killed by a signal has no status here."""
    if raised is not None or returncode is None:
        return ""
    want = snippet.exit_code or 0
    if returncode == want:
        return ""
    if snippet.exit_code is None:
        return f"↩️ 运行以退出码 {returncode} 结束，代码块却没有声明 exit={returncode}（sys.exit(n) 的退出码要在围栏里写明）"
    return f"↩️ 代码块声明了 exit={snippet.exit_code}，运行的退出码却是 {returncode}"


@dataclass
class RunResult:
    status: str  # one of STATUSES
    actual: str = ""  # normalized real output
    expected: str | None = None  # the expected block as written (None when there is none)
    diff: str = ""  # unified diff expected → actual, on mismatch
    seconds: float = 0.0  # the snippet's own wall time
    returncode: int | None = None
    signal: int | None = None
    truncated: bool = False
    message: str = ""  # short Chinese explanation (skipped / timeout / error / exit code)
    cached: bool = False
    raised: str | None = None  # class name of the uncaught exception the run ended with
    raise_problem: str = ""  # set when ``raised`` disagrees with ``raises=``, or the exit status with ``exit=N``
    frames: str = ""  # the real output with its traceback frames (``actual`` shows them as ``  ...``); "" when the same
    # the recorded release ``expected`` is the output of, when it is an alternative block
    # (``torch==2.15.0``); "" for the reference block
    recorded_as: str = ""
    # set on a mismatch on a release the output was not recorded on (releases.release_note)
    release_note: str = ""
    reference_match: bool | None = None  # did the actual output match the reference block too
    # the sandbox's word on which of its limits ended the run (memory, open files): the start of
    # ``message``, kept apart so that a verdict made again elsewhere (the class's client) keeps it
    limit_note: str = ""

    @property
    def ok(self) -> bool:
        return self.status in ("match", "skipped")


def _exit_message(returncode: int | None, sig: int | None) -> str:
    if sig is not None:
        import signal as _signal

        try:
            name = _signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"⚡ 进程被信号 {name}（{sig}）终止"
    if returncode:
        return f"↩️ 退出码 {returncode}"
    return ""


def effective_timeout(snippet: Snippet) -> float:
    """The snippet's timeout= when it is a finite positive number (at most MAX_TIMEOUT), else the
    default: a nan or inf timeout would never stop a snippet."""
    import math

    from torchcourse.course.chapter import MAX_TIMEOUT

    try:
        t = float(snippet.timeout) if snippet.timeout is not None else DEFAULT_TIMEOUT
    except (TypeError, ValueError):
        return DEFAULT_TIMEOUT
    if not math.isfinite(t) or t <= 0:
        return DEFAULT_TIMEOUT
    return min(t, MAX_TIMEOUT)


def _new_base(root: str | None = None) -> str:
    """A new empty ``tc-run-*`` directory in ``root`` (default: the temporary directory), as
    tempfile.mkdtemp makes it (mode 0700, a name nobody guesses) for ~0.07 ms instead of ~0.25 ms."""
    tmp = root or tempfile.gettempdir()
    for _ in range(100):
        path = os.path.join(tmp, "tc-run-" + os.urandom(6).hex())
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(errno.EEXIST, "no unused temporary directory name", tmp)


def _write_snippet(run_dir: str, code: str) -> None:
    """RUN_DIR/snippet.py holding ``code`` (UTF-8), without a text-mode file object (~0.08 ms less)."""
    data = memoryview(code.encode("utf-8"))
    fd = os.open(os.path.join(run_dir, execute.SNIPPET_FILE), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    try:
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)


def _reset_run_dir(run_dir: str, code: str, data: tuple[str, ...] = ()) -> None:
    """Empty the run directory (and HOME/TMPDIR beside it) and write the snippet (and the
    course's data files) again."""
    base = os.path.dirname(run_dir)
    for name in os.listdir(base):
        shutil.rmtree(os.path.join(base, name), ignore_errors=True)
    os.mkdir(run_dir)
    _write_snippet(run_dir, code)
    _copy_data(run_dir, data)


def _copy_data(run_dir: str, data: tuple[str, ...]) -> None:
    """The course's data files (course.toml ``data``) beside snippet.py, by their base names."""
    for path in data:
        shutil.copyfile(path, os.path.join(run_dir, os.path.basename(path)))


def _shadows(run_dir: str, preloaded: set[str]) -> bool:
    """True when the run directory holds a module or package named like one already imported.
    A symbolic link counts by its name alone: its target (perhaps a path outside the sandbox, seen
    from here as root) is never looked at, so the answer says nothing about where it points."""
    try:
        with os.scandir(run_dir) as it:
            entries = [(e.name, e.is_symlink() or e.is_dir(follow_symlinks=False)) for e in it]
    except OSError:
        return False
    for name, dir_like in entries:
        if dir_like:
            mod = name
        elif name.endswith((".py", ".pyc", ".so")):
            mod = name.split(".", 1)[0]
        else:
            continue
        if mod != "snippet" and mod in preloaded:
            return True
    return False


_live_runners: "weakref.WeakSet[Runner]" = weakref.WeakSet()

# Run directories are removed by a background thread, off the run's critical path: on some file
# systems each rmdir of a directory a process just used takes ~4 ms (16 ms for base, run, home,
# tmp), most of a warm run. Runner.close() and interpreter exit wait until all are gone.
_removals: list[str] = []
_removals_cv = threading.Condition()
_remover: threading.Thread | None = None


def _remove_later(path: str) -> None:
    """Make ``path`` vanish now (one rename, ~0.1 ms) and remove it in the background."""
    global _remover
    gone = os.path.join(os.path.dirname(path), ".tc-done-" + os.path.basename(path))
    try:
        os.rename(path, gone)
    except OSError:
        shutil.rmtree(path, ignore_errors=True)
        return
    path = gone
    with _removals_cv:
        _removals.append(path)
        if _remover is None or not _remover.is_alive():
            _remover = threading.Thread(target=_remove_loop, name="tc-run-cleanup", daemon=True)
            _remover.start()
        _removals_cv.notify_all()


def _remove_loop() -> None:
    while True:
        with _removals_cv:
            while not _removals:
                _removals_cv.wait()
            path = _removals[0]
        shutil.rmtree(path, ignore_errors=True)
        with _removals_cv:
            _removals.remove(path)
            _removals_cv.notify_all()


def drain_removals(timeout: float = 10.0) -> None:
    """Wait until every run directory handed to the background thread is removed."""
    with _removals_cv:
        _removals_cv.wait_for(lambda: not _removals, timeout)
        left = list(_removals)
    for path in left:  # the thread is stuck: remove them here
        shutil.rmtree(path, ignore_errors=True)


@atexit.register
def _close_all() -> None:
    for r in list(_live_runners):
        r.close()
    drain_removals()


class Runner:
    """Runs snippets. Thread-safe; one per app. See the package docstring for the contract."""

    # whether a mismatch's result carries its diff: a class's service (one process for everyone,
    # outside every run's CPU group) leaves it out — each learner's app judges the output again
    # and makes the diff in its own CPU group (a 1 MB output's diff cost the service 10 ms a run)
    diffs = True

    def __init__(self, cache_dir: Path | None = None, warm: bool = True, *, python: str | None = None,
                 preload: tuple[str, ...] | list[str] | None = None, hash_seed: str | None = None,
                 data: tuple[str, ...] | list[str] = (), recorded: dict[str, tuple[str, ...]] | None = None):
        self.python = python or execute.default_python()
        # the course's data files (course.toml ``data``, absolute paths): copied into every run
        # directory, so a snippet can read heights.csv; their contents are part of the cache key
        self.data = tuple(str(p) for p in data)
        # course.toml [recorded]: the releases outputs are recorded on (reference first); the
        # verdict picks the alternative for the installed release and names the release otherwise
        self.recorded = dict(recorded or {})
        import sys as _sys

        self._other_python = None if os.path.abspath(self.python) == os.path.abspath(_sys.executable) else self.python
        self.warm = warm
        # what the zygote imports before forking (course.toml ``preload``; default torch)
        self.preload = tuple(DEFAULT_PRELOAD if preload is None else preload)
        # PYTHONHASHSEED of every run (zygote and cold alike): verify --accept's second pass uses
        # another one, so that an output depending on set order or hash() is caught
        self.hash_seed = hash_seed
        self.cache = RunCache(Path(cache_dir)) if cache_dir is not None else None
        self._lock = threading.Lock()
        self._zygote = None
        self._retired: list = []  # replaced zygotes still finishing their runs in flight
        self._closed = False
        self._groups: set[int] = set()
        self._groups_lock = threading.Lock()
        self._in_flight = 0  # runs whose tc-run-* directory is not yet handed to the remover
        self._in_flight_cv = threading.Condition()
        self._gpu: bool | None = None
        self._runs_root: str | None = None  # where tc-run-* directories go (None: the temporary directory)
        _live_runners.add(self)

    # -- environment -------------------------------------------------------------------
    def gpu_available(self) -> bool:
        """``torch.cuda.is_available()`` in the snippet interpreter (probed once, cold)."""
        if self._gpu is None:
            if not gpu_possible(self.python):
                self._gpu = False
            else:
                import subprocess

                try:
                    out = subprocess.run([self.python, "-c", "import torch;print(torch.cuda.is_available())"], capture_output=True, text=True, timeout=120, env=execute.snippet_env())
                    self._gpu = out.stdout.strip() == "True"
                except (OSError, subprocess.SubprocessError):
                    self._gpu = False
        return self._gpu

    def _env_overrides(self) -> dict[str, str]:
        return {"PYTHONHASHSEED": self.hash_seed} if self.hash_seed is not None else {}

    def _data_digest(self) -> str:
        return data_digest(self.data)

    def fingerprint(self) -> dict:
        return fingerprint(self.python, gpu_possible(self.python), self.preload)

    def installed(self) -> dict[str, str]:
        """The installed version of every module the course records releases of, for the snippet
        interpreter (asked once; no import of the module)."""
        if not self.recorded:
            return {}
        return module_versions(self.python, tuple(self.recorded))

    # -- zygote ------------------------------------------------------------------------
    def zygote(self, *, stale=None):
        """The warm zygote, started on first use (raises ZygoteError when it cannot start)."""
        from torchcourse.runner.warm import ZygoteError

        with self._lock:
            if self._closed:
                raise ZygoteError("runner is closed")
            if self._zygote is None or self._zygote is stale or not self._zygote.alive():
                if self._zygote is not None:
                    # closed at once when idle, else once the runs in flight on it have ended
                    self._zygote.retire()
                    self._retired = [old for old in self._retired if old.alive()] + [self._zygote]
                self._zygote = self._new_zygote()
            return self._zygote

    def _release(self, base: str) -> None:
        """After a run, before its ``tc-run-*`` directory is removed (a sandbox unmounts its space)."""

    def _new_zygote(self):
        from torchcourse.runner.warm import Zygote

        return Zygote(self.python, preload=self.preload, env=self._env_overrides())

    def _run_cold(self, run_dir: str, *, timeout: float, cancel, cleanup_dir: str) -> execute.RawRun:
        return execute.run_cold(run_dir, python=self.python, timeout=timeout, cancel=cancel, on_start=self._track, on_end=self._untrack, cleanup_dir=cleanup_dir, env=self._env_overrides())

    def _prepare(self, base: str) -> None:
        """Called once the run directory (``base/run`` with the snippet) is written, before the run."""

    def start(self) -> None:
        """Start the zygote now (optional; run() starts it on demand)."""
        if self.warm:
            try:
                self.zygote()
            except Exception:
                pass

    def close(self, wait: float = execute.ESCALATE_AFTER + 1.0) -> None:
        """Kill the zygote and every snippet process still running, then wait (up to ``wait``
        seconds) until their runs have ended and their run directories are removed. Idempotent.

        The wait matters to a caller that ends the process right after (the app when its terminal
        is gone): a supervisor stopped by SIGTERM leaves its run directory to the run's own thread."""
        with self._lock:
            self._closed = True
            z, self._zygote = self._zygote, None
            retired, self._retired = self._retired, []
        for old in retired:
            old.close()
        with self._groups_lock:
            groups = list(self._groups)
        for g in groups:
            execute.stop_supervisor(g)  # each supervisor kills its snippet's tree and exits
        if z is not None:
            z.close()
        with self._in_flight_cv:
            self._in_flight_cv.wait_for(lambda: self._in_flight == 0, wait)
        drain_removals()

    def _track(self, pgid: int) -> None:
        with self._groups_lock:
            self._groups.add(pgid)
        if self._closed:
            execute.kill_group(pgid)

    def _untrack(self, pgid: int) -> None:
        with self._groups_lock:
            self._groups.discard(pgid)

    # -- running -----------------------------------------------------------------------
    def run(self, snippet: Snippet, *, cold: bool = False, use_cache: bool = True, cancel: threading.Event | None = None) -> RunResult:
        held: list = []  # a warm run's connection, closed once the result is made (Zygote.run)
        try:
            return self._run(snippet, cold=cold, use_cache=use_cache, cancel=cancel, held=held)
        finally:
            for sock in held:
                sock.close()

    def _run(self, snippet: Snippet, *, cold: bool, use_cache: bool, cancel: threading.Event | None, held: list) -> RunResult:
        expected = snippet.expected
        if snippet.norun:
            return RunResult("skipped", expected=expected, message=MSG_NORUN)
        if snippet.gpu and not self.gpu_available():
            return RunResult("skipped", expected=expected, message=MSG_GPU)
        if cancel is not None and cancel.is_set():
            return RunResult("cancelled", expected=expected, message="⏹️ 已取消")
        if snippet.bad_attrs:
            return RunResult("error", expected=expected, message=bad_attrs_message(snippet))
        use_cold = cold or snippet.cold or snippet.gpu or not self.warm
        key = None
        if self.cache is not None and use_cache:
            # the mode is part of the key: `verify --cold` must never be answered by a warm run
            key = self.cache.key(snippet.code, cache_env(self.fingerprint(), cold=use_cold, preload=self.preload, hash_seed=self.hash_seed,
                                                         data_digest=self._data_digest() if self.data else None))
            rec = self.cache.get(key)
            if rec is not None:
                res = self._verdict(snippet, rec["actual"], float(rec.get("seconds", 0.0)), rec.get("returncode"), rec.get("signal"), bool(rec.get("truncated")), "exited", cached=True)
                res.frames = rec.get("frames", "") if isinstance(rec.get("frames", ""), str) else ""
                return res
        timeout = effective_timeout(snippet)
        base = _new_base(self._runs_root)
        with self._in_flight_cv:
            self._in_flight += 1
        run_dir = os.path.join(base, "run")  # the snippet's cwd; base/home and base/tmp beside it
        try:
            os.mkdir(run_dir)
            _write_snippet(run_dir, snippet.code)
            _copy_data(run_dir, self.data)
            self._prepare(base)
            if use_cold:
                raw = self._run_cold(run_dir, timeout=timeout, cancel=cancel, cleanup_dir=base)
            else:
                from torchcourse.runner.warm import ZygoteError

                try:
                    z = self.zygote()
                    try:
                        raw = z.run(run_dir, timeout=timeout, cancel=cancel, on_start=self._track, on_end=self._untrack, cleanup_dir=base, held=held)
                    except ZygoteError as exc:
                        if exc.no_torch or not (exc.before_fork or exc.died_mid_run or exc.jail_failed) or self._closed:
                            raise
                        # the zygote died between runs, or during this run (killed by another
                        # snippet or from outside), or could no longer confine a run: this snippet
                        # is collateral, run it again once with a new zygote in a fresh directory
                        _reset_run_dir(run_dir, snippet.code, self.data)
                        self._prepare(base)
                        z = self.zygote(stale=z)
                        raw = z.run(run_dir, timeout=timeout, cancel=cancel, on_start=self._track, on_end=self._untrack, cleanup_dir=base, held=held)
                    if raw.outcome == "exited" and _shadows(run_dir, z.preloaded()):
                        # the snippet wrote a module (json.py…) that shadows one the zygote had
                        # already imported: only a fresh interpreter gives `python file.py`'s answer
                        _reset_run_dir(run_dir, snippet.code, self.data)
                        self._prepare(base)
                        raw = self._run_cold(run_dir, timeout=timeout, cancel=cancel, cleanup_dir=base)
                except ZygoteError as exc:
                    msg = missing_module_message(exc.missing) if exc.no_torch else (str(exc) if str(exc).startswith("🚫") else f"🚫 {exc}") if exc.jail_failed else f"💥 预热运行器出错：{exc}"
                    return RunResult("error", expected=expected, message=msg)
        except OSError as exc:
            return RunResult("error", expected=expected, message=f"💥 无法运行代码片段：{exc}")
        finally:
            self._release(base)
            _remove_later(base)
            with self._in_flight_cv:
                self._in_flight -= 1
                self._in_flight_cv.notify_all()
        text = raw.output.decode("utf-8", errors="replace")
        actual = normalize(text, side="actual", run_dir=run_dir, python=self._other_python)
        frames = normalize(text, side="actual", run_dir=run_dir, frames=True, python=self._other_python) if TRACEBACK_HEADER in text else ""
        if raw.truncated:
            actual = (actual + "\n" + execute.TRUNCATION_NOTICE).lstrip("\n")
            frames = frames and (frames + "\n" + execute.TRUNCATION_NOTICE).lstrip("\n")
        frames = "" if frames == actual else frames
        if (
            raw.outcome == "exited"
            and "ModuleNotFoundError: No module named 'torch'" in actual
            and "torch" in snippet.code
        ):
            return RunResult("error", actual=actual, expected=expected, seconds=raw.seconds, returncode=raw.returncode, message=MSG_NO_TORCH)
        if key is not None and raw.outcome == "exited":
            self.cache.put(key, {"actual": actual, "seconds": raw.seconds, "returncode": raw.returncode, "signal": raw.signal, "truncated": raw.truncated, "mode": "cold" if use_cold else "warm", "frames": frames})
        res = self._verdict(snippet, actual, raw.seconds, raw.returncode, raw.signal, raw.truncated, raw.outcome, cached=False, timeout=timeout)
        res.frames = frames
        return res

    def _verdict(self, snippet: Snippet, actual: str, seconds: float, returncode, sig, truncated: bool, outcome: str, *, cached: bool, timeout: float = 0.0) -> RunResult:
        return verdict(snippet, actual, seconds, returncode, sig, truncated, outcome, cached=cached, timeout=timeout,
                       recorded=self.recorded, installed=self.installed, libraries=self.preload, diff=self.diffs)


def cache_env(fingerprint: dict, *, cold: bool, preload: tuple[str, ...], hash_seed: str | None = None,
              data_digest: str | None = None) -> dict:
    """What a cached output is keyed on besides its code, for a lone Runner and the class's client
    alike: the interpreter's fingerprint (torch and every preloaded module's version), the mode,
    the preload, the hash seed and the course's data files."""
    env = {**fingerprint, "mode": "cold" if cold else "warm"}
    if not cold and tuple(preload) != DEFAULT_PRELOAD:
        env["preload"] = list(preload)  # (the default stays out: existing keys hold)
    if hash_seed is not None:
        env["hash_seed"] = hash_seed
    if data_digest is not None:
        env["data"] = data_digest
    return env


def data_digest(data: tuple[str, ...]) -> str:
    """The data files' names and contents, hashed (read at each cached run: a file the author
    edits changes every key that could depend on it)."""
    import hashlib

    h = hashlib.sha256()
    for path in data:
        h.update(os.path.basename(path).encode("utf-8") + b"\0")
        try:
            h.update(Path(path).read_bytes())
        except OSError:
            h.update(b"\0missing")
    return h.hexdigest()[:16]


def verdict(snippet: Snippet, actual: str, seconds: float, returncode, sig, truncated: bool, outcome: str, *, cached: bool, timeout: float = 0.0,
            recorded: dict | None = None, installed=dict, libraries: tuple[str, ...] = DEFAULT_PRELOAD, diff: bool = True) -> RunResult:
    """The one verdict on a run's output, for a lone learner's Runner and the class's client alike
    (``installed()``: the snippet interpreter's version of each recorded module, asked only when
    ``recorded`` is set): the installed release's alternative when there is one, else the
    reference block, with the release note when the installed release is not the reference.
    ``diff=False``: a mismatch without its diff (whoever shows it judges again)."""
    expected = snippet.expected
    off = off_reference(recorded, installed()) if recorded else []
    alt = applicable(snippet.alternatives, installed()) if off and snippet.alternatives and expected is not None else None
    res = RunResult("match", actual=actual, expected=alt.text if alt else expected, seconds=seconds, returncode=returncode, signal=sig, truncated=truncated, cached=cached)
    if alt is not None:
        res.recorded_as = alt.label
    if outcome == "timeout":
        res.status = "timeout"
        res.message = f"⏱️ 超时：运行超过 {timeout:g} 秒，已终止（确实需要更久的代码块，作者可在围栏里写 timeout=N，最多 600）"
        return res
    if outcome == "cancelled":
        res.status = "cancelled"
        res.message = "⏹️ 已取消"
        return res
    res.message = "" if truncated else _exit_message(returncode, sig)  # (a truncated run was stopped at the cap)
    res.raised = raised_exception(actual, returncode)
    res.raise_problem = raise_problem(snippet, res.raised) or exit_problem(snippet, res.raised, returncode)
    if expected is None:
        res.status = "mismatch"
        res.diff = unified_diff("", actual) if diff else ""
        res.message = ("📭 没有期望输出块（作者需运行 verify --accept） " + res.message).strip()
    elif compare(res.expected, actual, libraries):
        res.status = "match"
    else:
        res.status = "mismatch"
        res.diff = unified_diff(res.expected, actual, libraries) if diff else ""
        if alt is None and off:
            res.release_note = release_note(*off[0])
    if expected is not None:
        res.reference_match = res.status == "match" if alt is None else compare(expected, actual, libraries)
    if res.raise_problem:
        res.status = "mismatch"
        res.message = (res.raise_problem + " " + res.message).strip()
    if truncated:
        res.message = (res.message + " ✂️ 输出超过 1 MB 或 20,000 行，已截断并停止运行").strip()
    if res.status == "mismatch" and res.release_note:
        res.message = (res.message + " " + res.release_note).strip()
    return res


def run_many(runner: Runner, snippets: list[Snippet], *, jobs: int = 2, cold: bool = False, use_cache: bool = True, on_result=None, on_start=None) -> list[RunResult]:
    """Run snippets on ``jobs`` threads; results in input order; ``on_start(i, snippet)`` before
    each run, ``on_result(i, snippet, res)`` after it."""
    from concurrent.futures import ThreadPoolExecutor

    results: list[RunResult | None] = [None] * len(snippets)
    lock = threading.Lock()
    stopped = threading.Event()

    def one(i: int) -> None:
        if on_start is not None:
            with lock:
                on_start(i, snippets[i])
        res = runner.run(snippets[i], cold=cold, use_cache=use_cache, cancel=stopped)
        results[i] = res
        if on_result is not None and not stopped.is_set():
            with lock:
                on_result(i, snippets[i], res)

    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        for f in [pool.submit(one, i) for i in range(len(snippets))]:
            f.result()
    except BaseException:
        stopped.set()
        # Ctrl+C (or SIGTERM/SIGHUP turned into it): kill the running snippets' trees first, so
        # that nothing waits for a snippet's timeout, then leave
        pool.shutdown(wait=False, cancel_futures=True)
        runner.close()
        raise
    pool.shutdown(wait=True)
    return results  # type: ignore[return-value]


__all__ = ["Runner", "RunResult", "run_many", "verdict", "DEFAULT_TIMEOUT", "STATUSES", "normalize", "compare"]
