"""Hostile snippets and a dying driver (issue 12): the snippet's whole process tree is tied to its
run, a snippet cannot kill the driver, warm runs answer like ``python file.py``. Real
subprocesses, real torch; every wait is for a state, bounded only as a safety net."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from process_support import alive, wait_until
from torchcourse.course.model import Snippet
from torchcourse.runner import Runner

ROOT = Path(__file__).resolve().parent.parent


def snip(code: str, **kw) -> Snippet:
    return Snippet(id="h", chapter_id="x", code=textwrap.dedent(code), expected=kw.pop("expected", "x"), line=1, **kw)


@pytest.fixture(scope="module")
def runner():
    r = Runner(cache_dir=None, warm=True)
    yield r
    r.close()


ESCAPE = """\
import subprocess, sys
p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
print(p.pid)
"""


@pytest.mark.parametrize("cold", [True, False], ids=["cold", "warm"])
def test_a_child_in_its_own_session_dies_with_the_run(runner, cold):
    res = runner.run(snip(ESCAPE), cold=cold, use_cache=False)
    assert res.actual.strip(), (res.status, res.message, res.returncode, res.signal)
    pid = int(res.actual.strip().splitlines()[-1])
    try:
        assert not alive(pid), "a start_new_session child outlived its snippet"
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("cold", [True, False], ids=["cold", "warm"])
def test_a_snippet_holds_no_pipe_of_its_supervisor_but_the_one_it_reports_on(runner, cold):
    """The supervisor's signal wake-up pipe stayed open in the snippet's process: writing into it
    kept the supervisor waking (outside the run's CPU group in a class). Only its output (1, 2)
    and, warm, the write end on which it tells its own exit code remain."""
    code = """
    import os, stat
    pipes = []
    for fd in sorted(int(f) for f in os.listdir("/proc/self/fd")):
        try:
            if fd > 2 and stat.S_ISFIFO(os.fstat(fd).st_mode):
                pipes.append(fd)
        except OSError:
            pass
    print(len(pipes))
    """
    res = runner.run(snip(code), cold=cold, use_cache=False)
    assert int(res.actual.strip()) <= (0 if cold else 1), res.actual


@pytest.mark.parametrize("cold", [True, False], ids=["cold", "warm"])
def test_each_snippet_has_its_own_empty_home_and_tmpdir(runner, cold, tmp_path):
    marker = f"tc-marker-{os.getpid()}-{tmp_path.name}"
    code = f"""\
    import os, tempfile
    from pathlib import Path
    print(sorted(os.listdir(Path.home())), sorted(os.listdir(tempfile.gettempdir())))
    (Path.home() / {marker!r}).write_text("x")
    print(Path.home().parent == Path.cwd().parent == Path(tempfile.gettempdir()).parent)
    """
    res = runner.run(snip(code), cold=cold, use_cache=False)
    assert res.actual == "[] []\nTrue", res.actual
    assert not (Path.home() / marker).exists()
    shown = runner.run(snip("import os, tempfile\nprint(os.environ['HOME'], tempfile.gettempdir())\n"), cold=cold, use_cache=False)
    assert shown.actual == "../home ../tmp"  # the same in every run and both modes


@pytest.mark.parametrize("cold", [True, False], ids=["cold", "warm"])
def test_warm_and_cold_agree_on_a_module_that_shadows_a_preloaded_one(runner, cold):
    code = """\
    with open("json.py", "w") as fh:
        fh.write("WHO = 'local json.py'\\n")
    import json
    print(getattr(json, "WHO", "the standard json"))
    """
    res = runner.run(snip(code, expected="local json.py"), cold=cold, use_cache=False)
    assert (res.status, res.actual) == ("match", "local json.py"), res.actual


def test_a_link_named_like_a_preloaded_module_is_judged_by_its_name_not_where_it_points(tmp_path):
    """(A run's directory is read as root in a class: following its links would tell a snippet
    whether a server path is a directory, by whether its run was repeated cold.)"""
    from torchcourse.runner.core import _shadows

    for target in ("/etc", "/no/such/dir", "/etc/hostname"):
        d = tmp_path / target.replace("/", "_")
        d.mkdir()
        (d / "json").symlink_to(target)
        assert _shadows(str(d), {"json"}), target
        assert not _shadows(str(d), {"torch"}), target


def test_non_finite_timeouts_fall_back_to_a_finite_one():
    from torchcourse.runner.core import DEFAULT_TIMEOUT, effective_timeout
    from torchcourse.course.chapter import MAX_TIMEOUT

    assert effective_timeout(snip("", timeout=float("nan"))) == DEFAULT_TIMEOUT
    assert effective_timeout(snip("", timeout=float("inf"))) == DEFAULT_TIMEOUT
    assert effective_timeout(snip("", timeout=-1.0)) == DEFAULT_TIMEOUT
    assert effective_timeout(snip("", timeout=10_000.0)) == MAX_TIMEOUT
    assert effective_timeout(snip("", timeout=5.0)) == 5.0


DRIVER = """\
import sys
from torchcourse.runner import Runner
from torchcourse.course.model import Snippet
r = Runner(cache_dir=None, warm=False)
res = r.run(Snippet(id="h", chapter_id="x", code=open(sys.argv[1]).read(), expected="x", line=1), cold=True, use_cache=False)
r.close()
print("DRIVER-ALIVE", res.status, res.message)
print(res.actual)
"""


def driver(tmp_path: Path, code: str, env_extra: dict | None = None) -> subprocess.Popen:
    (tmp_path / "snippet_src.py").write_text(textwrap.dedent(code))
    env = dict(os.environ, TMPDIR=str(tmp_path), **(env_extra or {}))
    return subprocess.Popen([sys.executable, "-c", DRIVER, str(tmp_path / "snippet_src.py")], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def run_dirs(tmp_path: Path) -> list[Path]:
    return list(tmp_path.glob("tc-run-*"))


def test_a_cold_snippet_cannot_kill_the_driver(tmp_path):
    p = driver(tmp_path, """\
        import os
        print("before", flush=True)
        os.kill(os.getppid(), 9)
        """)
    out, _ = p.communicate(timeout=300)
    assert p.returncode == 0, out
    assert "DRIVER-ALIVE" in out and "SIGKILL" in out and "before" in out
    assert run_dirs(tmp_path) == []


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP])
def test_a_cold_snippet_dies_with_its_driver(tmp_path, how):
    pidfile = tmp_path / "pid"
    p = driver(tmp_path, f"""\
        import os
        open({str(pidfile)!r} + ".tmp", "w").write(str(os.getpid()))
        os.rename({str(pidfile)!r} + ".tmp", {str(pidfile)!r})
        while True:
            pass
        """)
    try:
        wait_until(pidfile.exists, "the snippet started")
        pid = int(pidfile.read_text())
        os.kill(p.pid, how)
        p.wait(timeout=120)
        wait_until(lambda: not alive(pid), "the busy snippet died after its driver")
        wait_until(lambda: run_dirs(tmp_path) == [], "the run directory was removed")
    finally:
        if pidfile.exists() and alive(int(pidfile.read_text())):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
        if p.poll() is None:
            p.kill()
        p.communicate()


def test_a_warm_run_lost_with_its_zygote_is_run_again_once(tmp_path):
    """The first try kills the zygote (like a crash of the warm runner) and waits; the run is
    tried once more and answers. The zygote is this test's own runner's, known by its pid (never
    looked up by a name on a shared machine)."""
    r = Runner(cache_dir=None, warm=True)
    try:
        zygote = r.zygote().proc.pid
        flag = tmp_path / "first-try"
        code = f"""\
        import os, signal, time
        from pathlib import Path
        flag = Path({str(flag)!r})
        if not flag.exists():
            flag.write_text(str(os.getpid()))
            os.kill({zygote}, signal.SIGKILL)
            time.sleep(600)
        print("second try")
        """
        res = r.run(snip(code, expected="second try"), use_cache=False)
        assert (res.status, res.actual) == ("match", "second try"), (res.status, res.message, res.actual)
        assert not alive(zygote)
        first = int(flag.read_text())
        wait_until(lambda: not alive(first), "the first try's process died with its zygote")
        assert r.zygote().proc.pid != zygote
    finally:
        r.close()


SLEEPY = """\
# 测试章

🎯 p

```python {{#sleepy timeout=600}}
import os, time
open({mark!r} + ".tmp", "w").write(str(os.getpid()))
os.rename({mark!r} + ".tmp", {mark!r})
time.sleep(600)
```

```output
never
```

## ✅ 检查点

<!-- break -->

## ⚡ 走神救援
"""


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm", "sighup"])
@pytest.mark.parametrize("mode", ["--cold", "--no-cache"])
def test_interrupting_verify_kills_the_running_snippet_at_once(tmp_path, how, mode):
    from test_runner_cli import make_course
    from test_tui_pty import Terminal

    mark = tmp_path / "snippet.pid"
    course = make_course(tmp_path / "course", SLEEPY.format(mark=str(mark)))
    term = Terminal(["--content", str(course), "verify", mode, "--no-cache"], tmp_path / "home", extra_env={"TMPDIR": str(tmp_path)})
    try:
        wait_until(mark.exists, "the snippet started", cap=300)
        pid = int(mark.read_text())
        if how == "ctrl-c":
            term.send("\x03")
        else:
            os.kill(term.proc.pid, signal.SIGTERM if how == "sigterm" else signal.SIGHUP)
        assert term.wait(timeout=120) == 130
        text = term.text()
        assert "已中断" in text and "超时" not in text and "passed" not in text, text[-1500:]
        assert not alive(pid), "the snippet outlived the interrupted verify"
        assert run_dirs(tmp_path) == []
    finally:
        if mark.exists() and alive(int(mark.read_text())):
            os.kill(int(mark.read_text()), signal.SIGKILL)
        term.close()


@pytest.mark.parametrize("bad", [{"actual": 123}, {"actual": "x", "seconds": "fast"}, {"actual": "x", "returncode": "1"},
                                 {"actual": "x", "signal": [9]}, {"actual": "x", "truncated": "no"}, {"actual": "x", "returncode": 1 << 70}, ["actual"]])
def test_a_cache_record_of_wrong_types_is_a_miss(tmp_path, bad):
    import json

    r = Runner(cache_dir=tmp_path / "c", warm=False)
    try:
        code = "print('fresh')\n"
        assert r.run(snip(code, expected="fresh")).status == "match"
        [path] = list((tmp_path / "c").rglob("*.json"))
        path.write_text(json.dumps(bad), encoding="utf-8")
        res = r.run(snip(code, expected="fresh"))
        assert (res.status, res.cached, res.actual) == ("match", False, "fresh")
    finally:
        r.close()


def test_the_compile_cache_stays_shared_while_tmpdir_is_private(runner):
    import getpass
    import tempfile

    res = runner.run(snip("import os\nprint(os.environ['TORCHINDUCTOR_CACHE_DIR'])\n"), cold=True, use_cache=False)
    assert res.actual == os.path.join(tempfile.gettempdir(), f"torchinductor_{getpass.getuser()}")


@pytest.mark.parametrize("cold", [True, False], ids=["cold", "warm"])
def test_close_returns_once_a_running_snippets_directory_is_gone(tmp_path, monkeypatch, cold):
    """The app ends its process right after ``close()`` when its terminal is gone: by then the
    busy snippet's run directory must already be removed (nothing is left to do it later)."""
    import tempfile
    import threading

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    mark = tmp_path / "started"
    code = f"open({str(mark)!r}, 'w').close()\nwhile True:\n    pass\n"
    r = Runner(cache_dir=None, warm=True)
    t = threading.Thread(target=r.run, args=(snip(code),), kwargs={"cold": cold, "use_cache": False}, daemon=True)
    t.start()
    try:
        wait_until(mark.exists, "the snippet started", cap=300)
        assert list(tmp_path.glob("tc-run-*")), "the running snippet has its run directory"
        r.close()
        assert not list(tmp_path.glob("tc-run-*")) + list(tmp_path.glob(".tc-done-*"))
    finally:
        r.close()
        t.join(30)
