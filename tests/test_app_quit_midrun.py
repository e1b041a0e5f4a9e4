"""Quitting the real app while a snippet runs leaves no process behind (warm and cold)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from test_tui_pty import open_first_chapter, term_factory  # noqa: F401  (fixture)

CHAPTER = """# 01 · 慢代码

🎯 一段永远跑不完的代码。

```python {{#slow{attrs}}}
import os, time
with open({pidfile!r}, "w") as fh:
    fh.write(f"{{os.getpid()}} {{os.getppid()}}")
print("started", flush=True)
time.sleep(300)
```

```output
started
```

<!-- break: 完 -->
"""


def _course(root: Path, pidfile: Path, cold: bool) -> Path:
    root.mkdir()
    (root / "course.toml").write_text(
        'title = "退出测试课"\nchars_per_minute = 170\n'
        '[[chapters]]\nid = "01"\nfile = "01.md"\ntitle = "慢代码"\npromise = "跑不完"\n'
        '[[routes]]\nid = "A"\nname = "唯一路线"\naudience = "测试"\nchapters = ["01"]\n',
        encoding="utf-8",
    )
    (root / "01.md").write_text(CHAPTER.format(pidfile=str(pidfile), attrs=" cold" if cold else ""), encoding="utf-8")
    return root


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("cold", [False, True], ids=["warm", "cold"])
def test_quit_while_a_snippet_runs_leaves_nothing_running(tmp_path, term_factory, cold):  # noqa: F811
    pidfile = tmp_path / "pids"
    course = _course(tmp_path / "course", pidfile, cold)
    term = term_factory(["--content", str(course)], tmp_path / "home")
    open_first_chapter(term, "退出测试课", "time.sleep(300)")
    term.send("x")
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
        term.drain(0.1)
    pid, ppid = (int(x) for x in pidfile.read_text().split())
    assert _alive(pid)
    term.send("q")
    assert term.wait() == 0
    deadline = time.monotonic() + 10
    while (_alive(pid) or (not cold and _alive(ppid))) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid), "the snippet process outlived the app"
    if not cold:
        assert not _alive(ppid), "the warm runner's zygote outlived the app"
