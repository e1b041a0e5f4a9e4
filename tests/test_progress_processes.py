"""The progress store under real processes: concurrent writers, SIGKILL mid-write, a read-only directory."""

from __future__ import annotations

import ctypes
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from torchcourse.progress import open_store

REPO = Path(__file__).resolve().parents[1]

WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from torchcourse.progress import open_store

    db, name, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    store, notice = open_store(Path(db))
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.001)
    for i in range(count):
        store.record_answer("02", f"{name}-{i}", str(i), i % 2 == 0)
        store.reach_break(name, 1 + i)
        store.record_run("02", f"{name}-{i}", "pass")
        print(i, flush=True)  # printed only after the commit returned
    store.close()
    """
)


def _env() -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("TORCHCOURSE_CONTENT", None)
    return env


def _spawn(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, *args], cwd=REPO, env=_env(), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw,
    )


def test_two_processes_writing_at_once_lose_nothing(tmp_path):
    db = tmp_path / "data" / "progress.sqlite3"
    go = tmp_path / "go"
    n = 150
    procs = [_spawn(str(db), name, str(n), str(go)) for name in ("p1", "p2")]
    for p in procs:
        line = p.stdout.readline().strip()
        if line != "ready":
            p.wait(timeout=60)
            pytest.fail(f"a writer died while opening the new database (exit {p.returncode}):\n{p.stderr.read()}")
    go.touch()
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, err
        assert "Traceback" not in err
    store, notice = open_store(db)
    assert notice is None
    qids = sorted(a.question_id for a in store.answers())
    assert qids == sorted(f"{name}-{i}" for name in ("p1", "p2") for i in range(n))
    assert len(store.runs()) == 2 * n
    assert store.chapter_progress("p1").furthest_break == n
    assert store.chapter_progress("p2").furthest_break == n
    assert sum(store.activity().values()) == 3 * 2 * n
    store.close()


def test_sigkill_mid_write_keeps_every_committed_row(tmp_path):
    db = tmp_path / "data" / "progress.sqlite3"
    go = tmp_path / "go"
    go.touch()
    proc = _spawn(str(db), "k", "1000000", str(go))
    assert proc.stdout.readline().strip() == "ready"
    committed = -1
    deadline = time.monotonic() + 120
    while committed < 200 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        committed = int(line)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert committed >= 200, proc.stderr.read()

    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()
    store, notice = open_store(db)
    assert notice is None  # not mistaken for a corrupt file
    got = {int(a.question_id.split("-")[1]) for a in store.answers()}
    assert set(range(committed + 1)) <= got  # nothing committed is lost
    assert got == set(range(len(got)))  # and no hole: whole transactions only
    assert store.chapter_progress("k").furthest_break >= committed + 1
    store.close()


def _drop_dac_override() -> None:
    """Run the child as root without the capability that ignores file permissions."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@pytest.mark.parametrize("existing", [False, True], ids=["new", "existing-db"])
def test_read_only_data_directory_gives_a_clear_message(tmp_path, existing):
    home = tmp_path / "home"
    data = home / "data"
    data.mkdir(parents=True)
    if existing:
        s, _ = open_store(data / "progress.sqlite3")
        s.reach_break("01", 1)
        s.close()
    before = sorted(p.name for p in data.iterdir())
    data.chmod(0o555)
    try:
        env = dict(_env(), TORCHCOURSE_HOME=str(home))
        r = subprocess.run(
            [sys.executable, "-m", "torchcourse", "progress"], cwd=REPO, env=env, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=120,
            preexec_fn=_drop_dac_override if os.geteuid() == 0 else None,
        )
    finally:
        data.chmod(0o755)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert f"无法写入进度目录 {data}" in r.stderr
    assert "TORCHCOURSE_HOME" in r.stderr
    assert sorted(p.name for p in data.iterdir()) == before  # nothing moved, nothing lost


def test_unreadable_database_file_is_moved_aside(tmp_path):
    home = tmp_path / "home"
    db = home / "data" / "progress.sqlite3"
    s, _ = open_store(db)
    s.set_route("A")
    s.close()
    db.chmod(0)
    env = dict(_env(), TORCHCOURSE_HOME=str(home))
    r = subprocess.run(
        [sys.executable, "-m", "torchcourse", "progress"], cwd=REPO, env=env, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=120,
        preexec_fn=_drop_dac_override if os.geteuid() == 0 else None,
    )
    assert r.returncode == 0, r.stderr
    [moved] = [p for p in db.parent.iterdir() if ".corrupt-" in p.name]
    assert f"进度文件无法读取，已移到 {moved}" in r.stderr
    moved.chmod(0o600)
    conn = sqlite3.connect(moved)  # the old file is intact, its rows still there
    assert conn.execute("SELECT value FROM settings WHERE key = 'route'").fetchone() == ("A",)
    conn.close()
    assert "默认路线" in r.stdout  # the route chosen in the unreadable file is not this store's


OPENER = "import sys\nfrom pathlib import Path\nfrom torchcourse.progress import open_store\nstore, notice = open_store(Path(sys.argv[1]))\nprint('ready', notice)\nstore.close()\n"


def test_many_processes_creating_the_database_at_once_all_open_it(tmp_path):
    """First start of several torchcourse processes at once: none fails, none calls the file broken."""
    for round_ in range(4):
        db = tmp_path / f"r{round_}" / "data" / "progress.sqlite3"
        procs = [
            subprocess.Popen([sys.executable, "-c", OPENER, str(db)], cwd=REPO, env=_env(), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(6)
        ]
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert (p.returncode, out.strip()) == (0, "ready None"), err
        assert sorted(x.name for x in db.parent.iterdir() if "corrupt" in x.name) == []
