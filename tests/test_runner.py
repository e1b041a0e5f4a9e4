"""The runner on real processes: bad input, limits, cleanup, cache, warm/cold faithfulness."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from process_support import alive, wait_dead, wait_until
from torchcourse.course.model import Snippet
from torchcourse.runner import Runner

ROOT = Path(__file__).resolve().parent.parent


def snip(code: str, expected: str | None = "", **kw) -> Snippet:
    return Snippet(id=kw.pop("id", "t"), chapter_id="99", code=textwrap.dedent(code), expected=expected, line=1, **kw)


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    r = Runner(cache_dir=tmp_path_factory.mktemp("cache"), warm=True)
    yield r
    r.close()


MODES = [pytest.param(False, id="warm"), pytest.param(True, id="cold")]


# -- bad input (each one in both modes) ------------------------------------------------

@pytest.mark.parametrize("cold", MODES)
def test_sleep_forever_times_out_and_leaves_nothing(runner, cold):
    code = """
        import os, subprocess, time
        child = subprocess.Popen(["sleep", "1000"])
        print(os.getpid(), child.pid, flush=True)
        while True:
            time.sleep(1)
    """
    res = runner.run(snip(code, timeout=1.5), cold=cold, use_cache=False)  # returns at all: it was stopped
    assert res.status == "timeout"
    assert "超时" in res.message and "1.5" in res.message
    pids = [int(x) for x in res.actual.split()]
    assert len(pids) == 2
    for pid in pids:
        assert wait_dead(pid), f"process {pid} survived the timeout"


@pytest.mark.parametrize("cold", MODES)
def test_a_run_past_the_line_cap_is_cut_after_its_last_line_and_stopped(runner, cold):
    # (judging costs Python work per line, in a class the service's: a megabyte of empty lines
    # cost it 0.35 s a run)
    code = """
        import sys, time
        sys.stdout.write("Traceback (most recent call last):\\n" + "\\n" * 30000)
        sys.stdout.write("line %d\\n" % 1)
        sys.stdout.flush()
        time.sleep(60)
        print("THE END")
    """
    res = runner.run(snip(code, timeout=120), cold=cold, use_cache=False)
    assert res.truncated and res.message == "✂️ 输出超过 1 MB 或 20,000 行，已截断并停止运行", res.message
    assert "THE END" not in res.actual and "line 1" not in res.actual
    assert res.returncode != 0


@pytest.mark.parametrize("cold", MODES)
def test_a_run_past_the_output_cap_is_cut_and_stopped(runner, cold):
    code = """
        import sys, time
        block = "x" * 1023 + "\\n"
        for _ in range(2 * 1024):
            sys.stdout.write(block)
        sys.stdout.flush()
        time.sleep(60)
        print("THE END")
    """
    res = runner.run(snip(code, timeout=120), cold=cold, use_cache=False)
    assert res.truncated
    assert res.status == "mismatch"
    assert res.actual.endswith("输出超过 1 MB 或 20,000 行：运行已停止，后面的部分已截断。")
    assert res.message == "✂️ 输出超过 1 MB 或 20,000 行，已截断并停止运行"
    assert "THE END" not in res.actual
    assert 900_000 < len(res.actual.encode()) < 1_100_000
    assert res.returncode != 0  # stopped, not run to its end (a minute later, exit code 0)


@pytest.mark.parametrize("cold", MODES)
def test_sys_exit_code_is_reported(runner, cold):
    # the exit status is compared like an exception: undeclared, the matching output fails (34 L5)
    res = runner.run(snip("import sys\nprint('bye')\nsys.exit(3)\n", expected="bye"), cold=cold, use_cache=False)
    assert res.status == "mismatch" and res.returncode == 3 and res.signal is None
    assert "运行以退出码 3 结束，代码块却没有声明 exit=3" in res.message and "退出码 3" in res.message
    res = runner.run(snip("import sys\nprint('bye')\nsys.exit(3)\n", expected="bye", exit_code=3), cold=cold, use_cache=False)
    assert res.status == "match" and "退出码 3" in res.message
    res = runner.run(snip("print('bye')\n", expected="bye", exit_code=3), cold=cold, use_cache=False)
    assert res.status == "mismatch" and "声明了 exit=3，运行的退出码却是 0" in res.message


@pytest.mark.parametrize("cold", MODES)
def test_sys_exit_with_message(runner, cold):
    res = runner.run(snip("import sys\nsys.exit('再见')\n"), cold=cold, use_cache=False)
    assert res.actual == "再见" and res.returncode == 1


@pytest.mark.parametrize("cold", MODES)
def test_killed_by_signal_is_reported(runner, cold):
    res = runner.run(snip("import os, signal\nprint('before', flush=True)\nos.kill(os.getpid(), signal.SIGTERM)\nprint('after')\n"), cold=cold, use_cache=False)
    assert res.signal == 15 and res.returncode is None
    assert "SIGTERM" in res.message
    assert res.actual == "before"


@pytest.mark.parametrize("cold", MODES)
def test_written_files_vanish_with_the_temp_dir(runner, cold, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = """
        import os
        with open("out.txt", "w") as fh:
            fh.write("data")
        os.mkdir("sub")
        print(os.getcwd().replace("/", "|"))
        print(sorted(os.listdir(".")))
    """
    res = runner.run(snip(code), cold=cold, use_cache=False)
    where, listing = res.actual.split("\n")
    assert listing == "['out.txt', 'snippet.py', 'sub']"
    run_dir = where.replace("|", "/")
    assert run_dir != str(tmp_path)
    assert not os.path.exists(run_dir)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("cold", MODES)
def test_stdin_gives_eof(runner, cold):
    res = runner.run(snip("import sys\nprint(repr(sys.stdin.read()))\nprint(repr(input.__name__))\ntry:\n    input()\nexcept EOFError:\n    print('EOF')\n"), cold=cold, use_cache=False)
    assert res.actual == "''\n'input'\nEOF"


@pytest.mark.parametrize("cold", MODES)
def test_syntax_error_reported_like_python(runner, cold):
    res = runner.run(snip("x = 1\ndef f(:\n    pass\n"), cold=cold, use_cache=False)
    assert res.returncode == 1 and res.raised == "SyntaxError"
    assert res.actual.split("\n") == ['  File "snippet.py", line 2', "    def f(:", "          ^", "SyntaxError: invalid syntax"]


@pytest.mark.parametrize("cold", MODES)
def test_uncaught_exception_traceback_and_exit_1(runner, cold):
    code = "print('start')\ndef f():\n    raise ValueError('坏了')\nf()\n"
    expected = "start\nTraceback (most recent call last):\n  ...\nValueError: 坏了"
    res = runner.run(snip(code, expected=expected, raises="ValueError"), cold=cold, use_cache=False)
    assert res.status == "match", res.diff
    assert res.returncode == 1 and res.raised == "ValueError"
    undeclared = runner.run(snip(code, expected=expected), cold=cold, use_cache=False)
    assert undeclared.status == "mismatch" and "没有声明 raises=ValueError" in undeclared.message


@pytest.mark.parametrize("cold", MODES)
def test_undecodable_bytes_are_replaced(runner, cold):
    res = runner.run(snip("import sys\nsys.stdout.buffer.write(b'ok \\xff\\xfe end\\n')\n"), cold=cold, use_cache=False)
    assert res.actual == "ok \ufffd\ufffd end"


@pytest.mark.parametrize("cold", MODES)
def test_dataloader_workers_leave_no_process(runner, cold):
    code = """
        import os
        import torch
        from torch.utils.data import DataLoader, Dataset

        class Pids(Dataset):
            def __len__(self):
                return 4
            def __getitem__(self, i):
                return os.getpid()

        it = iter(DataLoader(Pids(), batch_size=1, num_workers=2, persistent_workers=True))
        pids = sorted({int(next(it)) for _ in range(4)})
        print(len(pids))
        print(*pids)
        os._exit(0)  # abandon the workers without shutting them down
    """
    res = runner.run(snip(code), cold=cold, use_cache=False)
    first, second = res.actual.split("\n")
    assert first == "2"
    for pid in map(int, second.split()):
        assert wait_dead(pid), f"DataLoader worker {pid} survived"


# -- cancel and close ------------------------------------------------------------------

def pid_writer(pidfile: Path, then: str = "time.sleep(100)") -> str:
    """A snippet that writes its pid to ``pidfile`` (whole: written aside, then renamed) and then runs ``then``."""
    return (f"import os, time\nopen({str(pidfile)!r} + '.tmp', 'w').write(str(os.getpid()))\n"
            f"os.rename({str(pidfile)!r} + '.tmp', {str(pidfile)!r})\n{then}\n")


def test_cancel_kills_promptly(runner, tmp_path):
    pidfile = tmp_path / "snippet.pid"
    cancel = threading.Event()
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("r", runner.run(snip(pid_writer(pidfile)), use_cache=False, cancel=cancel)))
    t.start()
    wait_until(pidfile.exists, "the snippet process started")  # a state, not a time
    pid = int(pidfile.read_text())
    assert alive(pid)
    cancel.set()
    t.join(30)  # the snippet sleeps 100 s: returning at all means it was killed
    assert not t.is_alive()
    res = out["r"]
    assert res.status == "cancelled"
    assert wait_dead(pid)


def test_close_kills_zygote_and_running_children(tmp_path):
    pidfile = tmp_path / "snippet.pid"
    r = Runner(cache_dir=None, warm=True)
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("r", r.run(snip(pid_writer(pidfile)), use_cache=False)))
    t.start()
    wait_until(pidfile.exists, "the snippet started")
    zygote_pid = r.zygote().proc.pid  # the zygote the snippet was forked from (started by this run)
    child = int(pidfile.read_text())
    assert alive(child) and alive(zygote_pid)
    r.close()
    t.join(10)
    assert not t.is_alive()
    assert wait_dead(child) and wait_dead(zygote_pid)


def test_zygote_dies_with_its_driver(tmp_path):
    """A driver killed with SIGKILL (no atexit) leaves no zygote and no snippet behind: both are
    this test's own processes, known by the pids they wrote, and the driver is killed only once
    the snippet is known to be running (its pid file exists), not after a sleep."""
    pidfile = tmp_path / "snippet.pid"
    code = pid_writer(pidfile)
    script = textwrap.dedent(
        f"""
        import sys, threading
        sys.path.insert(0, {str(ROOT)!r})
        from torchcourse.runner import Runner
        from torchcourse.course.model import Snippet
        r = Runner(warm=True)
        z = r.zygote()
        print(z.proc.pid, flush=True)
        r.run(Snippet(id="s", chapter_id="c", code={code!r}, expected="", line=1, timeout=100))
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    snippet_pid = None
    try:
        zygote_pid = int(proc.stdout.readline())
        wait_until(lambda: pidfile.exists() or proc.poll() is not None, "the snippet started")
        assert proc.poll() is None, "the driver ended before its snippet started"
        snippet_pid = int(pidfile.read_text())
        assert alive(snippet_pid) and alive(zygote_pid)
        proc.kill()
        proc.wait()
        assert wait_dead(zygote_pid, 30), "the zygote survived its driver"
        assert wait_dead(snippet_pid, 30), "the snippet survived its driver"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if snippet_pid is not None and alive(snippet_pid):
            os.kill(snippet_pid, 9)


# -- faithfulness ----------------------------------------------------------------------

FAITHFUL = {
    "main-module": "import sys, os\nprint(__name__, __spec__, __package__, sorted(globals()))\nprint(sys.argv, __file__, sys.path[0], os.getcwd())\n",
    "env": "import os\nprint([os.environ.get(k) for k in ('PYTHONHASHSEED','NO_COLOR','TERM','COLUMNS','LC_ALL','TZ')])\nprint(hash('abc'))\n",
    "interleave": "import sys\nprint('out1')\nprint('err1', file=sys.stderr)\nprint('out2')\nsys.stderr.write('err2\\n')\n",
    "warning": "import torch\nimport torch.nn.functional as F\nprint(F.softmax(torch.ones(2)))\n",
    "thread-joined": "import threading, time\ndef f():\n    time.sleep(0.2)\n    print('thread')\nthreading.Thread(target=f).start()\nprint('main')\n",
    "atexit": "import atexit\natexit.register(print, 'atexit ran')\nprint('body')\n",
    "seeded": "import torch\ntorch.manual_seed(0)\nprint(torch.rand(3))\nprint(torch.randn(2, 2))\n",
    "threads": "import torch\nprint(torch.get_num_threads())\nx = torch.randn(64, 64)\nprint((x @ x.t()).shape)\n",
    "keyboard-interrupt": "raise KeyboardInterrupt\n",
    "chained": "try:\n    {}['k']\nexcept KeyError:\n    raise RuntimeError('wrapped')\n",
    "big-tensor": "import torch\nprint(torch.arange(3000).reshape(30, 100))\n",
}


@pytest.mark.parametrize("name", sorted(FAITHFUL))
def test_warm_equals_cold(runner, name):
    s = snip(FAITHFUL[name])
    warm = runner.run(s, use_cache=False)
    cold = runner.run(s, cold=True, use_cache=False)
    assert (warm.actual, warm.returncode, warm.signal) == (cold.actual, cold.returncode, cold.signal)


def test_keyboard_interrupt_exits_by_sigint(runner):
    res = runner.run(snip(FAITHFUL["keyboard-interrupt"]), use_cache=False)
    assert res.signal == 2 and res.actual.endswith("KeyboardInterrupt")


@pytest.fixture(scope="module")
def numpy_preloaded_runner():
    """A warm runner whose zygote has imported numpy.random as well as torch (a course.toml
    ``preload`` may list it; the default preload does not import numpy.random, and a stream the
    zygote never made is fresh in every child anyway)."""
    r = Runner(cache_dir=None, warm=True, preload=("torch", "numpy.random"))
    yield r
    r.close()


@pytest.mark.parametrize("source", ["torch.rand(4).tolist()", "random.random()", "np.random.rand(4).tolist()"])
def test_each_random_stream_differs_between_warm_runs(numpy_preloaded_runner, source):
    """Each generator on its own, compared across two warm runs of the same unseeded snippet (a
    fresh ``python file.py`` draws new numbers each time): a warm child that skips reseeding one of
    torch's or numpy's streams prints the same line twice (zygote._prepare_snippet_process; checked
    by deleting each reseed). Python's ``random`` reseeds itself in every forked child
    (``os.register_at_fork``), so deleting its ``random.seed()`` changes nothing this can see."""
    runner = numpy_preloaded_runner
    s = snip(f"import random, torch, numpy as np\nprint({source})\n")
    first, second = (runner.run(s, use_cache=False) for _ in range(2))
    assert first.returncode == 0 and second.returncode == 0, (first.actual, second.actual)
    assert first.actual != second.actual, f"two warm runs of an unseeded {source} printed the same: {first.actual}"


def test_driver_never_imports_torch(tmp_path):
    code = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from torchcourse.runner import Runner
        from torchcourse.course.model import Snippet
        r = Runner(cache_dir=None)
        res = r.run(Snippet(id="s", chapter_id="c", code="import torch\\nprint(torch.ones(2))", expected="tensor([1., 1.])", line=1))
        r.close()
        print(res.status, "torch" in sys.modules, "numpy" in sys.modules)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["match", "False", "False"], out.stderr


# -- skipping ---------------------------------------------------------------------------

def test_norun_and_gpu_are_skipped_without_running(runner, tmp_path):
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').write('x')\n"
    r1 = runner.run(snip(code, norun=True))
    assert r1.status == "skipped" and "未实跑" in r1.message
    if not runner.gpu_available():
        r2 = runner.run(snip(code, gpu=True))
        assert r2.status == "skipped" and r2.message == "🗓️ 未实跑 — 需要 GPU"
    assert not marker.exists()


# -- cache -------------------------------------------------------------------------------

def test_cache_keyed_on_code_not_expected(tmp_path):
    r = Runner(cache_dir=tmp_path / "c", warm=True)
    try:
        code = "import random\nprint(random.random())\n"
        first = r.run(snip(code))
        assert not first.cached
        second = r.run(snip(code, expected=first.actual))
        assert second.cached and second.status == "match" and second.actual == first.actual
        third = r.run(snip(code, expected="something else"))
        assert third.cached and third.status == "mismatch"
        fresh = r.run(snip(code), use_cache=False)
        assert not fresh.cached and fresh.actual != first.actual
        other = r.run(snip(code + "# changed\n"))
        assert not other.cached
        files = list((tmp_path / "c").rglob("*.json"))
        assert len(files) == 2
    finally:
        r.close()


def test_cold_request_is_never_answered_by_a_warm_cache_entry(tmp_path):
    r = Runner(cache_dir=tmp_path / "c", warm=True)
    try:
        code = "import random\nprint(random.random())\n"
        warm = r.run(snip(code))
        cold = r.run(snip(code), cold=True)
        assert not cold.cached and cold.actual != warm.actual
        assert r.run(snip(code), cold=True).cached
        assert r.run(snip(code)).actual == warm.actual
    finally:
        r.close()


def test_cache_entry_is_not_served_after_a_torch_upgrade(tmp_path, monkeypatch):
    """The installed torch changes (here: a newer torch's metadata first on the path, as an upgrade
    leaves it): the next run is a miss and runs again, never the output recorded on the old torch."""
    from torchcourse.runner import cache

    r = Runner(cache_dir=tmp_path / "c", warm=True)
    try:
        code = "import random\nprint(random.random())\n"
        old = r.run(snip(code))
        assert not old.cached and r.run(snip(code)).cached
        site = tmp_path / "site"
        (site / "torch-99.0.0.dist-info").mkdir(parents=True)
        (site / "torch-99.0.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 99.0.0+cpu\n")
        monkeypatch.syspath_prepend(str(site))
        cache.torch_version.cache_clear()
        assert cache.torch_version(sys.executable) == "99.0.0+cpu"
        new = r.run(snip(code))
        assert not new.cached, "served the output cached on the old torch"
        assert new.actual != old.actual
        assert len(list((tmp_path / "c").rglob("*.json"))) == 2
    finally:
        r.close()
        cache.torch_version.cache_clear()


@pytest.mark.parametrize("change", [
    pytest.param(None, id="not-json"),
    pytest.param({"actual": 3}, id="actual-not-text"),
    pytest.param({"seconds": -1.0}, id="negative-seconds"),
    pytest.param({"seconds": float("nan")}, id="nan-seconds"),
    pytest.param({"seconds": True}, id="bool-seconds"),
    pytest.param({"returncode": 1 << 31}, id="returncode-2**31"),
    pytest.param({"returncode": -(1 << 31) - 1}, id="returncode-below-int32"),
    pytest.param({"returncode": True}, id="bool-returncode"),
    pytest.param({"signal": "9"}, id="signal-text"),
    pytest.param({"truncated": "yes"}, id="truncated-text"),
])
def test_a_damaged_cache_record_is_a_miss_never_an_error(runner, change, request):
    """A cache file hand-edited or damaged into something put() never writes: the snippet runs
    again and its real output is shown (and the record rewritten)."""
    import json

    code = f"import random\nprint(random.random())  # {request.node.name}\n"
    before = set(runner.cache.root.rglob("*.json"))
    first = runner.run(snip(code))
    (path,) = set(runner.cache.root.rglob("*.json")) - before
    record = json.loads(path.read_text(encoding="utf-8"))
    if change is None:
        path.write_text("{not json", encoding="utf-8")
    else:
        path.write_text(json.dumps({**record, **change, "actual": change.get("actual", "from the damaged record")}), encoding="utf-8")
    again = runner.run(snip(code))
    assert not again.cached and again.status == "mismatch" and again.actual not in (first.actual, "from the damaged record")
    assert runner.run(snip(code)).actual == again.actual  # rewritten: served from the cache now


@pytest.mark.parametrize("returncode", [(1 << 31) - 1, -(1 << 31), None])
def test_a_cache_record_at_the_int32_edges_is_served(runner, returncode, request):
    import json

    code = f"print('x')  # {request.node.name}\n"
    before = set(runner.cache.root.rglob("*.json"))
    runner.run(snip(code))
    (path,) = set(runner.cache.root.rglob("*.json")) - before
    record = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**record, "returncode": returncode, "actual": "from the record"}), encoding="utf-8")
    res = runner.run(snip(code))
    assert res.cached and res.actual == "from the record" and res.returncode == returncode


def test_timeouts_are_never_cached(tmp_path):
    r = Runner(cache_dir=tmp_path / "c", warm=True)
    try:
        s = snip("import time\ntime.sleep(30)\n", timeout=0.5)
        assert r.run(s).status == "timeout"
        assert r.run(s).status == "timeout"
        assert not list((tmp_path / "c").rglob("*.json"))
    finally:
        r.close()


# -- missing torch -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def torchless_python(tmp_path_factory):
    venv = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    assert subprocess.run([str(py), "-c", "import torch"], capture_output=True).returncode != 0
    return str(py)


def test_the_torch_version_of_another_interpreter_is_asked_of_it(tmp_path):
    """A snippet interpreter other than the driver's (here the same venv under another of its
    names): its torch version is read by running it, and keys the cache like the driver's own."""
    from importlib.metadata import version

    from torchcourse.runner import cache

    other = next(str(p) for p in Path(sys.executable).parent.glob("python3*") if str(p) != sys.executable)
    assert cache.torch_version(other) == version("torch") == cache.torch_version(sys.executable)
    assert cache.fingerprint(other, False)["torch"] == version("torch")


def test_a_driver_without_torch_fingerprints_it_as_none(torchless_python):
    """The driver's own interpreter has no torch: the cache fingerprint says 'none' and no GPU
    is guessed (never a crash on a missing version)."""
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
            "from torchcourse.runner.cache import fingerprint, gpu_possible, torch_version\n"
            "print(torch_version(sys.executable), gpu_possible(sys.executable), fingerprint(sys.executable, False)['torch'])")
    out = subprocess.run([torchless_python, "-c", code], capture_output=True, text=True, timeout=120)
    assert (out.returncode, out.stdout.split()) == (0, ["none", "False", "none"]), out.stderr


@pytest.mark.parametrize("cold", MODES)
def test_missing_torch_is_an_error_not_a_crash(torchless_python, cold):
    r = Runner(cache_dir=None, warm=True, python=torchless_python)
    try:
        res = r.run(snip("import torch\nprint(torch.ones(1))\n"), cold=cold)
        assert res.status == "error"
        assert "pip install torch==2.13.0" in res.message
    finally:
        r.close()


def test_exit_codes_match_a_real_interpreter(runner):
    """Direct check against `python file.py` for a few exit paths."""
    cases = ["import sys; sys.exit(None)", "import sys; sys.exit(True)", "import sys; sys.exit(256 + 7)", "1/0"]
    for code in cases:
        res = runner.run(snip(code), use_cache=False)
        real = subprocess.run([sys.executable, "-c", code], capture_output=True)
        assert res.returncode == real.returncode, code


def test_output_order_is_real_order(runner):
    code = "import sys\nfor i in range(50):\n    print('o', i)\n    print('e', i, file=sys.stderr)\n"
    res = runner.run(snip(code), use_cache=False)
    lines = res.actual.split("\n")
    assert lines[:4] == ["o 0", "e 0", "o 1", "e 1"] and len(lines) == 100
    assert re.fullmatch(r"e 49", lines[-1])


def test_a_dead_zygote_is_replaced(tmp_path):
    r = Runner(cache_dir=None, warm=True)
    try:
        assert r.run(snip("print(1)", expected="1"), use_cache=False).status == "match"
        old = r.zygote().proc  # the zygote the first run used
        old.kill()
        old.wait()
        assert r.run(snip("print(2)", expected="2"), use_cache=False).status == "match"
        assert r.zygote().proc.pid != old.pid
    finally:
        r.close()


def test_a_zygote_dying_unnoticed_is_replaced_transparently(tmp_path):
    r = Runner(cache_dir=None, warm=True)
    try:
        assert r.run(snip("print(1)", expected="1"), use_cache=False).status == "match"
        z = r.zygote()  # the zygote the first run used
        os.kill(z.proc.pid, 9)
        assert wait_dead(z.proc.pid, 30)  # dead (a zombie: nobody has reaped it), the runner not told
        res = r.run(snip("print(2)", expected="2"), use_cache=False)
        assert res.status == "match", res.message
    finally:
        r.close()
    after = r.run(snip("print(3)", expected="3"), use_cache=False)
    assert after.status == "error"
