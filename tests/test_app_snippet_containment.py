"""The real app in a real pseudo-terminal against hostile cold snippets: a snippet that kills its
parent does not kill the app; closing the terminal or killing the app while a busy cold snippet
runs leaves no snippet behind."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from process_support import alive, wait_until
from test_tui_pty import open_first_chapter, term_factory  # noqa: F401  (fixture)

CHAPTER = """# 01 · 坏代码

🎯 一段不守规矩的代码。

```python {{#bad cold}}
{code}
```

```output
never
```

<!-- break: 完 -->
"""


def _course(root: Path, code: str) -> Path:
    root.mkdir()
    (root / "course.toml").write_text(
        'title = "坏代码课"\nchars_per_minute = 170\n'
        '[[chapters]]\nid = "01"\nfile = "01.md"\ntitle = "坏代码"\npromise = "不守规矩"\n'
        '[[routes]]\nid = "A"\nname = "唯一路线"\naudience = "测试"\nchapters = ["01"]\n',
        encoding="utf-8",
    )
    (root / "01.md").write_text(CHAPTER.format(code=code), encoding="utf-8")
    return root


def _open_and_run(term) -> None:
    open_first_chapter(term, "坏代码课", "import os")  # both snippets here start so
    term.send("x")


def test_a_cold_snippet_killing_its_parent_does_not_kill_the_app(tmp_path, term_factory):  # noqa: F811
    course = _course(tmp_path / "course", 'import os\nprint("before", flush=True)\nos.kill(os.getppid(), 9)')
    term = term_factory(["--content", str(course)], tmp_path / "home")
    _open_and_run(term)
    term.read_until("不一致")  # the run ended with a verdict (the snippet's own parent was killed)
    assert "before" in term.text()
    assert term.proc.poll() is None, "the app died with the snippet's parent"
    term.send("q")
    assert term.wait() == 0


@pytest.mark.parametrize("how", ["terminal-closed", "sigkill"])
def test_a_busy_cold_snippet_dies_with_the_app(tmp_path, term_factory, how):  # noqa: F811
    mark = tmp_path / "pid"
    code = f'import os\nopen({str(mark)!r} + ".t", "w").write(str(os.getpid()))\nos.rename({str(mark)!r} + ".t", {str(mark)!r})\nwhile True:\n    pass'
    course = _course(tmp_path / "course", code)
    term = term_factory(["--content", str(course)], tmp_path / "home", extra_env={"TMPDIR": str(tmp_path)})
    _open_and_run(term)
    pid = None
    try:
        wait_until(mark.exists, "the snippet started", cap=300)
        pid = int(mark.read_text())
        if how == "terminal-closed":
            os.close(term.master)
            term.master = -1
        else:
            os.killpg(term.proc.pid, signal.SIGKILL)
        wait_until(lambda: term.proc.poll() is not None, "the app exited")
        wait_until(lambda: not alive(pid), "the busy snippet died with the app")
        wait_until(lambda: not list(tmp_path.glob("tc-run-*")), "the run directory was removed")
    finally:
        if pid is not None and alive(pid):
            os.kill(pid, signal.SIGKILL)
