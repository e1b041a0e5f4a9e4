"""Quitting the real app while a snippet runs leaves no process behind (warm and cold)."""

from __future__ import annotations

from pathlib import Path

import pytest

from process_support import alive as _alive, wait_until
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


def _started_pids(term, pidfile: Path) -> tuple[int, int]:
    """Wait (reading the screen meanwhile, so the app never blocks on a full terminal) until the
    snippet has written its pid and its parent's; both are then running."""
    wait_until(lambda: term.drain(0.1) or (pidfile.exists() and len(pidfile.read_text().split()) == 2), "the snippet started")
    pid, ppid = (int(x) for x in pidfile.read_text().split())
    assert _alive(pid)
    return pid, ppid


@pytest.mark.parametrize("cold", [False, True], ids=["warm", "cold"])
def test_quit_while_a_snippet_runs_leaves_nothing_running(tmp_path, term_factory, cold):  # noqa: F811
    pidfile = tmp_path / "pids"
    course = _course(tmp_path / "course", pidfile, cold)
    term = term_factory(["--content", str(course)], tmp_path / "home")
    open_first_chapter(term, "退出测试课", "time.sleep(300)")
    term.send("x")
    pid, ppid = _started_pids(term, pidfile)
    term.send("q")
    assert term.wait() == 0
    wait_until(lambda: not _alive(pid), "the snippet process ended with the app", cap=60)
    if not cold:
        wait_until(lambda: not _alive(ppid), "the warm runner's zygote ended with the app", cap=60)
