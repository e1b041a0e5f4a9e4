"""Every progress-related command end to end, as real ``python -m torchcourse`` processes."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from torchcourse import paths
from torchcourse.course import load_course
from torchcourse.progress import open_store

REPO = Path(__file__).resolve().parents[1]


def tc(*args: str, home: Path, stdin=subprocess.DEVNULL, input: str | None = None, timeout: float = 120):
    env = dict(os.environ, TORCHCOURSE_HOME=str(home), PYTHONPATH=str(REPO), COLUMNS="120")
    env.pop("TORCHCOURSE_CONTENT", None)
    kw = {"input": input} if input is not None else {"stdin": stdin}
    return subprocess.run([sys.executable, "-m", "torchcourse", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout, **kw)


def db(home: Path) -> Path:
    return home / "data" / "progress.sqlite3"


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


@pytest.fixture(scope="module")
def course():
    return load_course(paths.shipped_content_dir())


def seed(home: Path) -> None:
    s, _ = open_store(db(home))
    s.set_route("A")
    s.reach_break("02", 1)
    s.record_answer("02", "q-a", "0", True)
    s.record_answer("02", "q-a", "1", False)
    s.record_answer("02", "q-b", "2", True)
    s.set_completed("03")
    s.record_run("03", "snip", "pass")
    s.close()


def test_locate_honours_torchcourse_home(home):
    r = tc("locate", "--json", home=home)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["data"] == str(home / "data")
    assert got["database"] == str(home / "data" / "progress.sqlite3")
    assert got["cache"] == str(home / "cache")
    r = tc("locate", home=home)
    assert str(home / "data" / "progress.sqlite3") in r.stdout


def test_check_on_the_shipped_course(home):
    r = tc("check", home=home)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "共 12 章" in r.stdout and "4 条路线：0 处问题" in r.stdout


def test_check_json_shape(home):
    r = tc("check", "--json", home=home)
    assert r.returncode == 0, r.stdout + r.stderr
    shape = json.loads(r.stdout)
    assert [c["id"] for c in shape["chapters"]] == ["00", "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "A"]
    assert shape["chapters"][-1]["kind"] == "appendix"
    routes = {r["id"]: r["chapters"] for r in shape["routes"]}
    assert routes == {
        "A": ["02", "03", "04", "A"],
        "B": ["05", "06", "07"],
        "C": ["01", "02", "09", "10"],
        "D": ["00", "01", "02", "03", "04", "05", "06", "07", "08", "09", "10"],
    }
    minutes = {c["id"]: c["minutes"] for c in shape["chapters"] if c["kind"] != "appendix"}
    for route in shape["routes"]:  # the appendix is a table to consult: no route's reading time
        assert route["minutes"] == sum(minutes.get(c, 0) for c in route["chapters"])
    assert shape["problems"] == []


def test_check_json_prints_minutes_counted_by_hand(tmp_path, home):
    """Minutes known without the loader's code: '#一' (2) + '读[第二章]再回来。' (10; the link
    target '(02)' does not count) + 'x=[1]' (5) = 17 characters at 4 a minute: round(4.25) = 4
    (with the target, 21: 5). The route adds the planned chapter's target (7): 11."""
    root = tmp_path / "c"
    root.mkdir()
    (root / "course.toml").write_text(
        'title = "手数的课"\nchars_per_minute = 4\n\n'
        '[[chapters]]\nid = "01"\nfile = "01.md"\ntitle = "一"\npromise = "p"\n\n'
        '[[chapters]]\nid = "02"\nfile = "02.md"\ntitle = "二"\npromise = "p"\nplanned = true\ntarget_minutes = 7\n\n'
        '[[routes]]\nid = "A"\nname = "全部"\naudience = "测试"\nchapters = ["01", "02"]\n',
        encoding="utf-8")
    (root / "01.md").write_text("# 一 {#one}\n\n读[第二章](02)再回来。\n\n```python\nx = [1]\n```\n\n<!-- break -->\n", encoding="utf-8")
    r = tc("--content", str(root), "check", "--json", home=home)
    shape = json.loads(r.stdout)
    assert [(c["id"], c["minutes"]) for c in shape["chapters"]] == [("01", 4), ("02", 7)], r.stderr
    assert [(x["id"], x["minutes"]) for x in shape["routes"]] == [("A", 11)]


def test_progress_on_an_empty_store(home, course):
    r = tc("progress", home=home)
    assert r.returncode == 0, r.stderr
    # the app follows route D until another is chosen: the CLI says the same (issue 13 item 4)
    assert "路线：D — 从头读到尾" in r.stdout and "默认路线" in r.stdout
    assert "连续打卡：0 天" in r.stdout
    for ch in course.chapters:
        assert ch.title in r.stdout
    assert db(home).is_file()


def test_progress_summary_uses_course_titles_and_order(home, course):
    seed(home)
    r = tc("progress", home=home)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "路线：A — 只想知道它为什么这样报错（02 → 03 → 04 → 附录 A）" in out  # the appendix, not route A
    # the app's 继续 line, in its words (one progress model, issue 49)
    assert f"继续（应用里按 c）：02 {course.chapter('02').title} · 断点 1/{course.chapter('02').break_points} 之后" in out
    assert "连续打卡：1 天" in out
    assert "测验：作答 3 次，答对 2 次；运行代码 1 次" in out
    table = out[out.index("\n\n"):]  # the chapter rows (the 继续 line above names one title too)
    positions = [table.index(ch.title) for ch in course.chapters]
    assert positions == sorted(positions)
    line02 = next(ln for ln in table.splitlines() if course.chapter("02").title in ln)
    assert f"读到一半 1/{course.chapter('02').break_points}" in line02 and "测验答过 2 题，作答 3 次，答对 2 次" in line02
    line03 = next(ln for ln in table.splitlines() if course.chapter("03").title in ln)
    assert "已完成" in line03


def test_progress_json(home, course):
    seed(home)
    r = tc("progress", "--json", home=home)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["route"]["id"] == "A" and data["route"]["chapters"] == ["02", "03", "04", "A"]
    assert data["position"] == {"chapter": "02", "part": 1}
    assert data["streak"] == 1 and data["answers"] == 3 and data["correct"] == 2
    assert [c["id"] for c in data["chapters"]] == [c.id for c in course.chapters]
    ch02 = next(c for c in data["chapters"] if c["id"] == "02")
    assert (ch02["furthest_break"], ch02["answers"], ch02["correct"], ch02["questions"]) == (1, 3, 2, 2)
    assert next(c for c in data["chapters"] if c["id"] == "03")["completed"] is True


def test_progress_keeps_chapters_the_course_no_longer_has(home):
    s, _ = open_store(db(home))
    s.reach_break("old-99", 2)
    s.close()
    r = tc("progress", home=home)
    assert r.returncode == 0
    assert "课程里已没有的章节" in r.stdout and "old-99" in r.stdout


def test_reset_chapter_with_yes(home):
    seed(home)
    r = tc("reset", "--chapter", "02", "--yes", home=home)
    assert r.returncode == 0, r.stderr
    assert "已清除第 02 章的进度" in r.stdout
    s, _ = open_store(db(home))
    assert "02" not in s.all_progress() and s.answers("02") == []
    assert s.chapter_progress("03").completed and s.get_route() == "A"
    s.close()


def test_reset_names_chapters_as_the_course_does_and_refuses_unknown_ones(home):
    seed(home)
    s, _ = open_store(db(home))
    s.reach_break("old-99", 1)  # a chapter the course no longer has
    s.close()
    r = tc("reset", "--chapter", "99", "--yes", home=home)
    assert r.returncode == 2 and "没有这一章的进度：'99'" in r.stderr and "已有的章节：00、01" in r.stderr
    r = tc("reset", "--chapter", "2", "--yes", home=home)  # the number finds chapter 02
    assert r.returncode == 0 and "已清除第 02 章的进度" in r.stdout
    r = tc("reset", "--chapter", "old-99", "--yes", home=home)
    assert r.returncode == 0, r.stderr
    s, _ = open_store(db(home))
    assert set(s.all_progress()) == {"03"} and s.answers("02") == []
    s.close()


def test_progress_names_the_appendix_position_as_an_appendix(home):
    s, _ = open_store(db(home))
    s.reach_break("A", 1)
    s.close()
    from torchcourse.course import load_course

    from torchcourse import paths

    breaks = load_course(paths.shipped_content_dir()).chapter("A").break_points  # the appendix is written now
    assert f"继续（应用里按 c）：A 附录 A 速查 · 断点 1/{breaks} 之后" in tc("progress", home=home).stdout


def test_export_to_a_missing_folder_names_the_file_and_keeps_the_store(home, tmp_path):
    seed(home)
    target = tmp_path / "no-such-dir" / "x.json"
    r = tc("export", str(target), home=home)
    assert r.returncode == 1 and f"无法写入 {target}" in r.stderr and ".tmp-" not in r.stderr
    assert "Traceback" not in r.stderr and not target.parent.exists()
    assert json.loads(tc("progress", "--json", home=home).stdout)["answers"] == 3


def test_reset_all_with_yes(home):
    seed(home)
    r = tc("reset", "--all", "--yes", home=home)
    assert r.returncode == 0, r.stderr
    s, _ = open_store(db(home))
    assert s.all_progress() == {} and s.answers() == [] and s.runs() == [] and s.get_route() is None
    s.close()


def test_reset_refuses_without_a_terminal_and_without_yes(home):
    seed(home)
    r = tc("reset", "--all", home=home, input="y\n")  # piped "y" is not a confirmation
    assert r.returncode == 1
    assert "--yes" in r.stderr and "没有清除任何东西" in r.stderr
    s, _ = open_store(db(home))
    assert len(s.answers()) == 3 and s.get_route() == "A"
    s.close()


@pytest.mark.parametrize("reply, cleared", [("y\n", True), ("n\n", False), ("\n", False)])
def test_reset_asks_on_a_terminal(home, reply, cleared):
    seed(home)
    master, slave = pty.openpty()
    try:
        os.write(master, reply.encode())
        r = tc("reset", "--chapter", "02", home=home, stdin=slave)
    finally:
        os.close(slave)
        os.close(master)
    assert "确定要清除第 02 章的进度" in r.stdout and "[y/N]" in r.stdout
    assert r.returncode == (0 if cleared else 1)
    s, _ = open_store(db(home))
    assert (s.answers("02") == []) == cleared
    s.close()


def test_export_import_round_trip_merges(tmp_path):
    h1, h2 = tmp_path / "h1", tmp_path / "h2"
    seed(h1)
    s, _ = open_store(db(h2))
    s.set_route("B")
    s.reach_break("02", 3)
    s.reach_break("06", 1)
    s.record_answer("06", "keys", "1", True)
    s.close()
    out = tmp_path / "export.json"
    r = tc("export", str(out), home=h1)
    assert r.returncode == 0, r.stderr
    assert str(out) in r.stdout
    assert json.loads(out.read_text(encoding="utf-8"))["route"] == "A"

    r = tc("import", str(out), home=h2)
    assert r.returncode == 0, r.stderr
    assert "新增答题 3 条" in r.stdout
    r = tc("import", str(out), home=h2)  # again: nothing new
    assert r.returncode == 0 and "新增答题 0 条" in r.stdout

    data = json.loads(tc("progress", "--json", home=h2).stdout)
    chapters = {c["id"]: c for c in data["chapters"]}
    assert data["route"]["id"] == "B"  # local choice kept
    assert chapters["02"]["furthest_break"] == 3  # max of 1 and 3
    assert chapters["02"]["answers"] == 3 and chapters["06"]["answers"] == 1
    assert chapters["03"]["completed"] is True
    assert data["runs"] == 1


def test_import_of_malformed_json_changes_nothing(home, tmp_path):
    seed(home)
    before = tc("progress", "--json", home=home).stdout
    bad = tmp_path / "broken.json"
    bad.write_text('{"format": "torchcourse-progress",\n "version": 1,\n "answers": [oops]}', encoding="utf-8")
    r = tc("import", str(bad), home=home)
    assert r.returncode == 1
    assert f"{bad}:3" in r.stderr and "不是有效的 JSON" in r.stderr
    assert "Traceback" not in r.stderr
    missing = tmp_path / "nope.json"
    r = tc("import", str(missing), home=home)
    assert r.returncode == 1 and str(missing) in r.stderr
    assert tc("progress", "--json", home=home).stdout == before


def test_garbage_over_the_database_is_moved_aside(home):
    seed(home)
    db(home).write_bytes(b"\x00garbage\xff" * 4096)
    for side in ("-wal", "-shm"):
        db(home).with_name(db(home).name + side).unlink(missing_ok=True)
    r = tc("progress", home=home)
    assert r.returncode == 0, r.stderr
    moved = [p for p in (home / "data").iterdir() if ".corrupt-" in p.name and not p.name.endswith(("-wal", "-shm"))]
    assert len(moved) == 1
    assert f"进度文件已损坏，已移到 {moved[0]}" in r.stderr
    assert moved[0].read_bytes() == b"\x00garbage\xff" * 4096
    assert "路线：D — 从头读到尾" in r.stdout and "默认路线" in r.stdout
    r = tc("progress", home=home)  # the fresh database is fine from now on
    assert r.returncode == 0 and "已损坏" not in r.stderr


def test_no_subcommand_without_the_tui_prints_the_summary(home):
    seed(home)
    code = "import sys; sys.modules['torchcourse.tui'] = None; from torchcourse.cli import main; raise SystemExit(main([]))"
    env = dict(os.environ, TORCHCOURSE_HOME=str(home), PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "路线：A" in r.stdout and "Traceback" not in r.stderr


def test_progress_commands_never_import_textual_or_torch(home):
    code = (
        "import sys; from torchcourse.cli import main; rc = main(['progress']); "
        "bad = [m for m in ('textual', 'torch') if m in sys.modules]; print('LOADED', bad); raise SystemExit(rc)"
    )
    env = dict(os.environ, TORCHCOURSE_HOME=str(home), PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "LOADED []" in r.stdout


# -- issue 13: one language, `-` is stdout, one answer for the route -----------------------------


def test_usage_errors_and_help_are_chinese_and_said_once(home):
    r = tc("export", home=home)
    assert r.returncode == 2
    assert r.stderr.startswith("用法：torchcourse export")
    assert "错误：缺少必需的参数：FILE" in r.stderr
    assert "usage" not in r.stderr and "error" not in r.stderr and "required" not in r.stderr
    r = tc("--help", home=home)
    assert r.returncode == 0 and "用法：" in r.stdout
    for english in ("usage", "show this help", "positional arguments", "options:", "version number"):
        assert english not in r.stdout, english


def test_import_errors_are_printed_once_in_chinese(home, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    r = tc("import", str(bad), home=home)
    assert r.returncode == 1
    assert "不是有效的 JSON" in r.stderr and "什么都没有导入" in r.stderr
    assert "not valid JSON" not in r.stderr and "nothing was imported" not in r.stderr
    assert r.stderr.count(str(bad)) == 1


def test_check_summary_is_chinese(home):
    r = tc("check", home=home)
    assert "处问题" in r.stdout.splitlines()[-1] and "problem" not in r.stdout


def test_export_dash_writes_to_stdout(home, tmp_path):
    seed(home)
    r = subprocess.run([sys.executable, "-m", "torchcourse", "export", "-"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, TORCHCOURSE_HOME=str(home), PYTHONPATH=str(REPO)), stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "-").exists()
    data = json.loads(r.stdout)
    assert data["format"] == "torchcourse-progress" and data["route"] == "A" and len(data["answers"]) == 3


def test_progress_json_names_the_default_route_as_not_chosen(home):
    data = json.loads(tc("progress", "--json", home=home).stdout)
    assert data["route"]["id"] == "D" and data["route"]["chosen"] is False
    seed(home)
    data = json.loads(tc("progress", "--json", home=home).stdout)
    assert data["route"]["id"] == "A" and data["route"]["chosen"] is True


def test_progress_counts_minutes_from_parts_read_like_the_home_screen(home, course):
    """Issue 13 item 5: reaching breaks (``n``) credits no minutes; parts read do, the same
    figure as the home's 已读约 N/M 分钟."""
    from torchcourse.progress.reading import minutes_read

    s, _ = open_store(db(home))
    s.reach_break("01", 2)  # jumped through 01
    s.mark_part_read("02", 0)
    s.close()
    # the appendix is a table to consult: no reading total counts it (issue 49)
    total = sum(ch.minutes if ch.available else int(ch.target_minutes or 0) for ch in course.chapters if ch.kind != "appendix")
    read = round(minutes_read(course.chapter("02"), {0}))
    r = tc("progress", home=home)
    assert r.returncode == 0, r.stderr
    assert f"已读约 {read}/{total} 分钟" in r.stdout and "按 n 跳到断点只记下读到哪里，不算读过" in r.stdout, r.stdout
    line02 = next(ln for ln in r.stdout.splitlines() if course.chapter("02").title in ln)
    assert f"读过 1/{len(course.chapter('02').parts)} 段" in line02, line02
    line01 = next(ln for ln in r.stdout.splitlines() if course.chapter("01").title in ln)
    assert "读过" not in line01, line01
    data = json.loads(tc("progress", "--json", home=home).stdout)
    assert data["read_minutes"] == read and data["total_minutes"] == total
    assert next(c for c in data["chapters"] if c["id"] == "01")["read_minutes"] == 0


def tc_closed_stdin(*args: str, home: Path):
    """``torchcourse ARGS <&-``: the child starts with file descriptor 0 closed."""
    env = dict(os.environ, TORCHCOURSE_HOME=str(home), PYTHONPATH=str(REPO), COLUMNS="120")
    env.pop("TORCHCOURSE_CONTENT", None)
    return subprocess.run([sys.executable, "-m", "torchcourse", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120, preexec_fn=lambda: os.close(0))


@pytest.mark.parametrize("args, says", [
    (("why", "-"), "输入是空的"),
    (("quiz", "00"), "没有作答任何题目"),
    (("reset", "--all"), "没有清除任何东西"),
    (("import", "-"), "标准输入是空的"),
])
def test_a_closed_stdin_gives_a_message_not_a_traceback(home, args, says):
    seed(home)
    r = tc_closed_stdin(*args, home=home)
    assert "Traceback" not in r.stderr and "AttributeError" not in r.stderr, r.stderr
    assert says in r.stdout + r.stderr
    assert json.loads(tc("progress", "--json", home=home).stdout)["answers"] == 3  # nothing lost


def test_import_dash_reads_stdin_the_way_export_dash_writes_stdout(tmp_path):
    h1, h2 = tmp_path / "h1", tmp_path / "h2"
    seed(h1)
    exported = tc("export", "-", home=h1)
    assert exported.returncode == 0, exported.stderr
    r = tc("import", "-", home=h2, input=exported.stdout)
    assert r.returncode == 0, r.stderr
    assert "已从 标准输入 合并进度" in r.stdout and "新增答题 3 条" in r.stdout
    assert json.loads(tc("progress", "--json", home=h2).stdout)["answers"] == 3


def test_export_never_overwrites_a_file_silently(home, tmp_path):
    seed(home)
    target = tmp_path / "mine.json"
    target.write_text("my own notes\n", encoding="utf-8")
    r = tc("export", str(target), home=home)
    assert r.returncode == 1 and "已经存在" in r.stderr and "--force" in r.stderr
    assert target.read_text(encoding="utf-8") == "my own notes\n"
    r = tc("export", str(target), "--force", home=home)
    assert r.returncode == 0, r.stderr
    assert json.loads(target.read_text(encoding="utf-8"))["route"] == "A"


@pytest.mark.parametrize("reply, overwritten", [("y\n", True), ("\n", False)])
def test_export_asks_before_overwriting_on_a_terminal(home, tmp_path, reply, overwritten):
    seed(home)
    target = tmp_path / "mine.json"
    target.write_text("keep\n", encoding="utf-8")
    master, slave = pty.openpty()
    try:
        os.write(master, reply.encode())
        r = tc("export", str(target), home=home, stdin=slave)
    finally:
        os.close(slave)
        os.close(master)
    assert "已经存在，覆盖它吗？[y/N]" in r.stdout
    assert (target.read_text(encoding="utf-8") != "keep\n") == overwritten


def test_cli_errors_read_in_chinese(home, tmp_path):
    """No English fragment of Python's own messages reaches the learner (walk L11)."""
    seed(home)
    cases = {}
    cases["missing"] = tc("import", str(tmp_path / "nope.json"), home=home)
    cases["directory"] = tc("import", str(tmp_path), home=home)
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00")
    cases["binary"] = tc("import", str(binary), home=home)
    empty = tmp_path / "empty.json"
    empty.write_text("", encoding="utf-8")
    cases["empty"] = tc("import", str(empty), home=home)
    cases["no-course"] = tc("--content", str(tmp_path / "no-course"), "check", home=home)
    bad = tmp_path / "badc"
    bad.mkdir()
    (bad / "course.toml").write_text("title = x\n", encoding="utf-8")
    cases["bad-toml"] = tc("--content", str(bad), "check", home=home)
    for name, r in cases.items():
        text = r.stdout + r.stderr
        assert r.returncode != 0, name
        for english in ("Errno", "No such file", "Is a directory", "codec", "Expecting value", "no course.toml", "course root",
                        "malformed TOML", "Invalid value", "Traceback"):
            assert english not in text, (name, english, text)
    assert "没有这个文件或目录" in cases["missing"].stderr
    assert "这是一个目录" in cases["directory"].stderr
    assert "不是 UTF-8 文本" in cases["binary"].stderr
    assert "不是有效的 JSON（第 1 行第 1 列：这里应该有一个值）" in cases["empty"].stderr
    assert "这里没有 course.toml" in cases["no-course"].stderr
    assert "course.toml:1: TOML 写法有误" in cases["bad-toml"].stdout


class TestBadArgumentsRefused:
    def test_progress_with_content_pointing_nowhere_exits_2(self, home, tmp_path):
        """Walk L5: rc 0 and 「还没有任何进度」 read like lost progress."""
        r = tc("--content", str(tmp_path / "nowhere"), "progress", home=home)
        assert r.returncode == 2 and "course.toml" in r.stderr and "还没有任何进度" not in r.stdout

    def test_verify_jobs_must_be_positive(self, home):
        """Walk L7: --jobs 0 and -3 were accepted silently."""
        for bad in ("0", "-3"):
            r = tc("verify", "--jobs", bad, "00", home=home)
            assert r.returncode == 2 and "--jobs 至少是 1" in r.stderr, r.stderr


class TestTheAppNeedsATerminal:
    """Walk L8: ``torchcourse </dev/null`` and ``torchcourse | cat`` drew to nowhere until killed."""

    def test_no_terminal_at_all_says_so_and_names_the_commands(self, home):
        r = tc(home=home, timeout=60)
        assert r.returncode == 2
        assert "全屏界面要在终端里运行" in r.stderr and "标准输入和标准输出不是终端" in r.stderr
        for command in ("torchcourse progress", "torchcourse run", "torchcourse quiz", "torchcourse why -"):
            assert command in r.stderr, command
        assert "\x1b[" not in r.stdout  # nothing drawn

    def test_a_terminal_for_keys_but_a_pipe_for_the_screen(self, home):
        main, child = pty.openpty()
        try:
            r = tc(home=home, stdin=child, timeout=60)
        finally:
            os.close(child)
            os.close(main)
        assert r.returncode == 2
        assert "但标准输出不是终端" in r.stderr and "torchcourse progress" in r.stderr


class TestSystemErrorsReadInChinese:
    """Walk L6: ``run --file nope.py`` ended in Python's English 'No such file or directory'."""

    def test_run_file_that_does_not_exist(self, home, tmp_path):
        r = tc("run", "01:anatomy", "--file", str(tmp_path / "nope.py"), home=home)
        assert r.returncode != 0
        assert "没有这个文件或目录" in r.stderr and "No such file" not in r.stderr, r.stderr

    def test_run_file_that_is_a_directory(self, home, tmp_path):
        r = tc("run", "01:anatomy", "--file", str(tmp_path), home=home)
        assert r.returncode != 0
        assert "这是一个目录" in r.stderr and "Is a directory" not in r.stderr, r.stderr

    def test_a_corrupt_progress_file_is_explained_in_chinese(self, home):
        seed(home)
        db(home).write_bytes(b"\x00garbage\xff" * 4096)
        for side in ("-wal", "-shm"):
            db(home).with_name(db(home).name + side).unlink(missing_ok=True)
        r = tc("progress", home=home)
        assert "原因：这个文件不是 SQLite 数据库" in r.stderr and "file is not a database" not in r.stderr, r.stderr

    def test_a_user_list_that_is_not_toml_is_explained_in_chinese(self, home, tmp_path):
        users = tmp_path / "badusers.toml"
        users.write_text("alice bob\n", encoding="utf-8")
        r = tc("serve", "--users", str(users), "--port", "0", home=home, timeout=60)
        assert r.returncode != 0
        assert "不是合法的 TOML" in r.stderr and "Expected" not in r.stderr and "第 1 行" in r.stderr, r.stderr

    def test_new_into_a_folder_that_cannot_be_made(self, home, tmp_path):
        blocker = tmp_path / "a-file"
        blocker.write_text("x", encoding="utf-8")
        r = tc("new", str(blocker / "course"), home=home)
        assert r.returncode != 0
        assert "写不进" in r.stderr and "Errno" not in r.stderr and "Not a directory" not in r.stderr, r.stderr

    def test_class_report_of_a_broken_export(self, home, tmp_path):
        folder = tmp_path / "exports"
        folder.mkdir()
        (folder / "a.json").write_text("{x", encoding="utf-8")
        r = tc("class", "report", "--progress-dir", str(folder), home=home)
        text = r.stdout + r.stderr
        assert "第 1 行第 2 列" in text and "Expecting" not in text, text


class TestGoneChaptersUseTheModelsWords:
    """Walk M3: ``已读完`` meant complete in ``progress`` and "quiz to take" in the app; a chapter the
    course no longer has still printed the CLI's own words."""

    def test_a_completed_gone_chapter_reads_as_complete(self, home):
        s, _ = open_store(db(home))
        s.reach_break("old-98", 2)
        s.set_completed("old-98")
        s.reach_break("old-99", 1)
        s.close()
        r = tc("progress", home=home)
        rows = {line.split()[0]: line for line in r.stdout.splitlines() if line.strip().startswith("old-")}
        assert "已完成" in rows["old-98"] and "已读完" not in rows["old-98"], rows
        assert "读到一半 1" in rows["old-99"] and "🛑" not in rows["old-99"], rows
