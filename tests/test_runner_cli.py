"""`torchcourse verify / run / doctor` as real processes on a small fixture course."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cli_support import tc

ROOT = Path(__file__).resolve().parent.parent

CHAPTER = textwrap.dedent(
    """\
    # 测试章

    🎯 p

    ```python {#hello}
    print("你好")
    ```

    ```output
    你好
    ```

    Some prose that must stay exactly as it is.

    ```python {#view-error raises=RuntimeError}
    import torch
    x = torch.arange(6).reshape(2, 3).t()
    print(x.is_contiguous())
    x.view(6)
    ```
    Text glued to the fence.

    ```python {#stale}
    print(1 + 1)
    ```

    ```output
    3
    ```

    - a list item:

      ```python {#indented}
      print("in a list")
      ```

    ```python {#later norun}
    while True:
        pass
    ```

    ```python {#cuda gpu}
    import torch
    print(torch.ones(1, device="cuda"))
    ```

    ## ✅ 检查点

    <!-- break -->

    ## ⚡ 走神救援
    """
)


def make_course(root: Path, chapter: str = CHAPTER) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "course.toml").write_text(
        'title = "t"\ncheckpoints = "cp"\n\n[[chapters]]\nid = "01"\nfile = "01.md"\ntitle = "T"\npromise = "p"\n\n'
        '[[chapters]]\nid = "02"\nfile = "02.md"\ntitle = "U"\npromise = "q"\nplanned = true\n',
        encoding="utf-8",
    )
    (root / "01.md").write_text(chapter, encoding="utf-8")
    return root


@pytest.fixture()
def course(tmp_path):
    return make_course(tmp_path / "course")


def test_verify_reports_failures_and_exits_nonzero(course, tmp_path):
    out = tc("--content", str(course), "verify", home=tmp_path / "h")
    assert out.returncode == 1, out.stderr
    lines = out.stdout.strip().split("\n")
    assert lines[-1] == "一致 1 个 · 不一致 3 个 · 跳过 2 个"
    assert any(ln.startswith("[") and "01:hello" in ln for ln in lines)  # plain progress lines off a TTY
    assert "-3" in lines and "+2" in lines  # the stale snippet's diff
    assert "01:view-error" in out.stdout and "01.md:15" in out.stdout


def test_verify_json_shape(course, tmp_path):
    out = tc("--content", str(course), "verify", "01", "--json", "--jobs", "2", home=tmp_path / "h")
    data = json.loads(out.stdout)
    assert set(data) == {"results", "passed", "failed", "skipped"}
    assert (data["passed"], data["failed"], data["skipped"]) == (1, 3, 2)
    by_id = {r["id"]: r for r in data["results"]}
    assert by_id["hello"]["status"] == "match" and by_id["hello"]["chapter"] == "01"
    assert by_id["stale"]["status"] == "mismatch"
    assert by_id["later"]["status"] == "skipped" and by_id["cuda"]["status"] == "skipped"
    assert all(set(r) == {"chapter", "id", "status", "seconds"} for r in data["results"])
    assert out.returncode == 1


def test_verify_accept_rewrites_only_output_blocks(course, tmp_path):
    before = (course / "01.md").read_text(encoding="utf-8")
    out = tc("--content", str(course), "verify", "--accept", home=tmp_path / "h")
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip().split("\n")[-1] == "一致 4 个 · 不一致 0 个 · 跳过 2 个"
    after = (course / "01.md").read_text(encoding="utf-8")
    assert "```output\n2\n```" in after and "```output\n3\n```" not in after
    assert (
        "x.view(6)\n```\n\n```output\nFalse\nTraceback (most recent call last):\n  ...\n"
        "RuntimeError: view size is not compatible with input tensor's size and stride"
    ) in after
    assert "Use .reshape(...) instead.\n```\n\nText glued to the fence." in after
    assert '  ```python {#indented}\n  print("in a list")\n  ```\n\n  ```output\n  in a list\n  ```\n' in after
    # nothing else changed: removing the output blocks from both versions gives the same text
    def strip_outputs(text: str) -> list[str]:
        keep, skip = [], False
        for ln in text.split("\n"):
            if ln.strip() == "```output":
                skip = True
                continue
            if skip:
                skip = ln.strip() != "```"
                continue
            keep.append(ln)
        return [ln for ln in keep if ln.strip()]
    assert strip_outputs(after) == strip_outputs(before)
    # the accepted form is exactly what the next verify expects, warm and cold, cached or not
    for extra in ([], ["--no-cache"], ["--cold", "--no-cache"]):
        again = tc("--content", str(course), "verify", *extra, home=tmp_path / "h")
        assert again.returncode == 0, again.stdout
        assert again.stdout.strip().split("\n")[-1] == "一致 4 个 · 不一致 0 个 · 跳过 2 个"
    # and a second accept is a no-op
    tc("--content", str(course), "verify", "--accept", home=tmp_path / "h")
    assert (course / "01.md").read_text(encoding="utf-8") == after


def test_verify_unknown_and_planned_chapters_are_named(course, tmp_path):
    out = tc("--content", str(course), "verify", "07", home=tmp_path / "h")
    assert out.returncode == 2 and "没有这一章：'07'" in out.stderr
    out = tc("--content", str(course), "verify", "02", home=tmp_path / "h")
    assert out.returncode == 2 and "02.md" in out.stderr and "还没有写好" in out.stderr


def test_verify_timeout_fails(tmp_path):
    course = make_course(tmp_path / "c", "# T\n\n```python {#slow timeout=1}\nimport time\ntime.sleep(60)\n```\n\n```output\n```\n\n<!-- break -->\n")
    out = tc("--content", str(course), "verify", home=tmp_path / "h")
    assert out.returncode == 1
    assert "超时" in out.stdout
    assert out.stdout.strip().split("\n")[-1] == "一致 0 个 · 不一致 1 个 · 跳过 0 个"


def test_run_prints_expected_and_actual_stacked_on_narrow_terminals(course, tmp_path):
    out = tc("--content", str(course), "run", "01:stale", home=tmp_path / "h")
    assert out.returncode == 1
    lines = out.stdout.split("\n")
    i = next(n for n, ln in enumerate(lines) if "期望输出" in ln)
    j = next(n for n, ln in enumerate(lines) if "实际输出" in ln)
    assert lines[i + 1] == "3" and lines[j + 1] == "2" and i < j
    assert "❌ 不一致" in out.stdout and "+2" in lines


def test_run_side_by_side_on_wide_terminals(course, tmp_path):
    out = tc("--content", str(course), "run", "01:hello", home=tmp_path / "h", env={"COLUMNS": "120"})
    assert out.returncode == 0
    rows = out.stdout.split("\n")
    assert any(r.startswith("期望输出 expected") and "│ 实际输出 actual" in r for r in rows)
    assert any(r.startswith("你好") and r.endswith("│ 你好") for r in rows)
    assert "✅ 一致" in out.stdout


def test_run_bad_names(course, tmp_path):
    out = tc("--content", str(course), "run", "01:nope", home=tmp_path / "h")
    assert out.returncode == 2 and "第 01 章没有代码块 'nope'" in out.stderr and "hello" in out.stderr
    out = tc("--content", str(course), "run", "hello", home=tmp_path / "h")
    assert out.returncode == 2 and "要写成 章:代码块" in out.stderr
    out = tc("--content", str(course), "run", "99:hello", home=tmp_path / "h")
    assert out.returncode == 2 and "没有这一章：'99'。已有的章节：01、02" in out.stderr
    out = tc("--content", str(course), "run", "02:x", home=tmp_path / "h")
    assert out.returncode == 2 and "第 02 章" in out.stderr and "（02.md）还没有写好" in out.stderr
    assert "Traceback" not in out.stderr


def test_run_and_verify_take_a_chapter_number_without_its_zero(course, tmp_path):
    out = tc("--content", str(course), "run", "1:hello", home=tmp_path / "h")
    assert out.returncode == 0 and out.stdout.startswith("01:hello  (") and "✅ 一致" in out.stdout
    out = tc("--content", str(course), "verify", "1", "--json", home=tmp_path / "h")
    assert {r["chapter"] for r in json.loads(out.stdout)["results"]} == {"01"}


def test_malformed_course_toml_is_named_instead_of_unknown_chapters(tmp_path):
    root = tmp_path / "c"
    root.mkdir()
    (root / "course.toml").write_text('title = "t"\n[[chapters]\nid = "01"\n', encoding="utf-8")
    for cmd in (["run", "01:hello"], ["verify", "01"], ["quiz", "01"], ["why", "RuntimeError"]):
        out = tc("--content", str(root), *cmd, home=tmp_path / "h")
        assert out.returncode == 2, (cmd, out.stderr)
        assert f"{root / 'course.toml'}:2: TOML 写法有误" in out.stderr, (cmd, out.stderr)
        assert "unknown chapter" not in out.stderr and "未知的章节" not in out.stderr and "没有这一章" not in out.stderr and "Traceback" not in out.stderr


def test_doctor_reports_versions_paths_and_latency(tmp_path):
    out = tc("doctor", home=tmp_path / "h")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "torch       ✅ 2.13.0" in out.stdout
    assert f"缓存目录    {tmp_path / 'h' / 'cache'}" in out.stdout
    assert "CUDA" in out.stdout
    assert "预热运行器  ✅" in out.stdout and " ms" in out.stdout


def test_verify_shows_a_progress_bar_in_a_terminal(course, tmp_path):
    import pty
    import select as _select

    master, slave = pty.openpty()
    env = dict(os.environ, TORCHCOURSE_HOME=str(tmp_path / "h"), COLUMNS="100")
    proc = subprocess.Popen([sys.executable, "-m", "torchcourse", "--content", str(course), "verify"], cwd=ROOT, stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    out = b""
    while True:
        ready, _, _ = _select.select([master], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    proc.wait(30)
    os.close(master)
    text = out.decode("utf-8", "replace")
    assert "\r\x1b[2K[" in text and "█" in text and "6/6" in text
    assert text.rstrip().splitlines()[-1].strip() == "一致 1 个 · 不一致 3 个 · 跳过 2 个"
    assert proc.returncode == 1


class TestVerifyProgressFitsTheTerminal:
    """Walk L4: at 100 columns the bar and the warm runner's note took more than a row, so every
    redraw stacked a new line, and the finished bar still showed the start-up note."""

    def test_every_redraw_fits_one_row_and_the_last_shows_no_startup_note(self, course, tmp_path):
        import pty
        import re
        import select as _select

        from torchcourse.textwidth import display_width

        master, slave = pty.openpty()
        env = dict(os.environ, TORCHCOURSE_HOME=str(tmp_path / "h"), COLUMNS="60")
        proc = subprocess.Popen([sys.executable, "-m", "torchcourse", "--content", str(course), "verify", "--no-cache"],
                                cwd=ROOT, stdin=slave, stdout=slave, stderr=slave, env=env)
        os.close(slave)
        out = b""
        while True:
            ready, _, _ = _select.select([master], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        proc.wait(30)
        os.close(master)
        text = out.decode("utf-8", "replace")
        redraws = [r.split("\r\n")[0] for r in text.split("\r\x1b[2K")[1:]]
        assert redraws and any("正在启动" in r for r in redraws), text  # the note was drawn
        for r in redraws:
            assert display_width(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", r)) <= 59, r
        assert "6/6" in redraws[-1] and "正在启动" not in redraws[-1], redraws[-1]
