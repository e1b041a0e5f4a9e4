"""An author's mistakes, made one at a time on a fresh `torchcourse new` course: each is a
`file:line` problem (or a ⚠️ where it is a judgement call), never silent. Check-level mistakes
load the course in-process (what the app and `check` do first); runner-level ones run the real
`torchcourse` command."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from torchcourse import scaffold
from torchcourse.check import all_problems, all_warnings
from torchcourse.course import load_course

ROOT = Path(__file__).resolve().parent.parent


def tc(*args, home: Path, cwd: Path = ROOT):
    env = dict(os.environ, TORCHCOURSE_HOME=str(home), PYTHONPATH=str(ROOT))
    env.pop("TORCHCOURSE_CONTENT", None)
    return subprocess.run([sys.executable, "-m", "torchcourse", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=600, stdin=subprocess.DEVNULL)


@pytest.fixture
def course(tmp_path) -> Path:
    root = tmp_path / "walk"
    scaffold.create(root, "walk")
    return root


def edit(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, count), encoding="utf-8")


def line_of(path: Path, needle: str, nth: int = 1) -> int:
    hits = [i for i, ln in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if needle in ln]
    return hits[nth - 1]


def problems(root: Path) -> list[str]:
    return [str(p) for p in all_problems(load_course(root))]


def only(found: list[str], fragment: str) -> str:
    hits = [p for p in found if fragment in p]
    assert len(hits) == 1, (fragment, found)
    return hits[0]


def test_the_scaffold_passes_check_and_verify_at_once(tmp_path):
    out = tc("new", str(tmp_path / "fresh"), home=tmp_path / "h")
    assert out.returncode == 0, out.stderr
    assert 'id = "fresh-' in (tmp_path / "fresh" / "course.toml").read_text(encoding="utf-8")  # the folder's name and a random suffix
    check = tc("--content", str(tmp_path / "fresh"), "check", home=tmp_path / "h")
    assert check.returncode == 0 and check.stdout.strip().endswith("：0 处问题") and "⚠️" not in check.stdout, check.stdout
    verify = tc("--content", str(tmp_path / "fresh"), "verify", "--no-cache", home=tmp_path / "h")
    assert verify.returncode == 0 and verify.stdout.strip().splitlines()[-1] == "一致 2 个 · 不一致 0 个 · 跳过 1 个", verify.stdout + verify.stderr
    kinds = {q["kind"] for q in __import__("tomllib").loads((tmp_path / "fresh" / "checkpoints" / "01.toml").read_text(encoding="utf-8"))["questions"]}
    assert kinds == {"single", "multi", "fill", "predict", "open"}
    again = tc("new", str(tmp_path / "fresh"), home=tmp_path / "h")
    assert again.returncode == 2 and "已经存在而且不是空目录" in again.stderr


# -- course.toml -------------------------------------------------------------------------------

def test_two_routes_with_one_id_and_a_chapter_twice(course):
    toml = course / "course.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + '\n[[routes]]\nid = "A"\nname = "又一条"\naudience = "x"\nchapters = ["01", "01", "A"]\n', encoding="utf-8")
    found = problems(course)
    first, second = line_of(toml, 'id = "A"', 2), line_of(toml, 'id = "A"', 3)  # (the 1st is chapter A's)
    assert f"course.toml:{second}: 路线 id 'A' 重复了（第一次出现在第 {first} 行）" in only(found, "重复了（第一次出现在")
    loaded = load_course(course)
    assert [r.id for r in loaded.routes] == ["A"]  # the home screen's option ids stay unique: no DuplicateID
    edit(toml, 'id = "A"\nname = "又一条"', 'id = "B"\nname = "又一条"')
    twice = line_of(toml, 'chapters = ["01", "01"')
    assert f"course.toml:{twice}: 路线 B：章节 '01' 列了两次" in only(problems(course), "列了两次")
    assert load_course(course).route("B").chapters == ["01", "A"]


def test_a_route_whose_only_chapter_is_refused_says_so(course):
    toml = course / "course.toml"
    edit(toml, 'chapters = ["01", "A"]', 'chapters = ["X1"]')
    edit(toml, 'id = "A"\nfile', 'id = "X1"\nfile')
    edit(toml, 'file = "A-error-lookup.md"', 'file = 7')
    found = problems(course)
    only(found, "file 必须是字符串")
    assert only(found, "没有一章可用").startswith(f"{toml}:{line_of(toml, '[[routes]]')}:")
    assert not [p for p in found if "未知的章节" in p]  # the refused entry is named once, not again per route


def test_chapter_ids_links_cannot_address_are_refused(course):
    toml = course / "course.toml"
    for bad in ("第一章", "1.1", "ch-1"):
        text = toml.read_text(encoding="utf-8")
        toml.write_text(re.sub(r'id = "[^"]*"[^\n]*\nfile = "01-first.md"', f'id = "{bad}"\nfile = "01-first.md"', text), encoding="utf-8")
        msg = only(problems(course), "只能用 ASCII 字母和数字")
        at = line_of(toml, f'id = "{bad}"')
        assert msg.startswith(f"{toml}:{at}:") and repr(bad) in msg


def test_one_wrong_type_is_one_problem(course):
    toml = course / "course.toml"
    edit(toml, "target_minutes = 4", 'target_minutes = "12"')
    found = problems(course)
    at = line_of(toml, 'target_minutes = "12"')
    assert found == [f"{toml}:{at}: 第 01 章：target_minutes 必须是正的分钟数，这里是 '12'"], found


def test_invalid_utf8_is_reported_at_its_line_once(course):
    chapter = course / "01-first.md"
    raw = chapter.read_bytes().replace("## 会报错的代码块".encode(), "## 会报错的代码块".encode() + b" \xff", 1)
    chapter.write_bytes(raw)
    found = problems(course)
    # one problem at the real line (not line 1 with a byte offset), and no "not written yet" cascade
    at = _raw_line(raw, b"\xff")
    assert found == [f"{chapter}:{at}: 不是合法的 UTF-8（第 12 列的字节 0xff）；把文件存成 UTF-8"], found
    quiz = course / "checkpoints" / "01.toml"
    qraw = quiz.read_bytes().replace(b'id = "fence-attrs"', b'id = "fence-attrs" # \xfe', 1)
    quiz.write_bytes(qraw)
    at = _raw_line(qraw, b"\xfe")
    assert only(problems(course), "01.toml").startswith(f"{quiz}:{at}: 不是合法的 UTF-8（第 22 列的字节 0xfe）")


def _raw_line(raw: bytes, needle: bytes) -> int:
    return raw[: raw.index(needle)].count(b"\n") + 1


def test_a_byte_order_mark_is_accepted_in_every_toml(course):
    for path in (course / "course.toml", course / "checkpoints" / "01.toml"):
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert problems(course) == []


# -- chapters ----------------------------------------------------------------------------------

def test_a_section_anchor_equal_to_a_snippet_id_elsewhere(course):
    chapter = course / "01-first.md"
    edit(chapter, "## 🔗 和后面的关系 {#links}", "## 🔗 和后面的关系 {#sum}")
    assert only(problems(course), "那个代码块不在这个小节里").startswith(f"{chapter}:{line_of(chapter, '{#sum}', 2)}: 小节锚点 #sum 也是第 {line_of(chapter, '{#sum}')} 行那个代码块的 id")


def test_two_sections_with_one_title_and_no_anchor(course):
    chapter = course / "01-first.md"
    edit(chapter, "## 代码块和它的输出 {#snippets}", "## 例子")
    edit(chapter, "## 会报错的代码块 {#errors}", "## 例子")
    edit(course / "checkpoints" / "01.toml", 'section = "snippets"', 'section = "例子"', 2)
    edit(course / "checkpoints" / "01.toml", 'section = "errors"', 'section = "例子"', 3)
    edit(chapter, "(#errors)", "(#例子)") if "(#errors)" in chapter.read_text(encoding="utf-8") else None
    edit(course / "A-error-lookup.md", "01#errors", "01#snippets")
    found = problems(course)
    assert only(found, "两个都没有锚点").startswith(f"{chapter}:{line_of(chapter, '## 例子', 2)}: 小节标题 '例子' 和第 {line_of(chapter, '## 例子')} 行的重复了")


@pytest.mark.parametrize("lang", ["py", "python3"])
def test_a_python_alias_fence_with_an_id_is_refused_with_the_reason(course, lang):
    chapter = course / "01-first.md"
    edit(chapter, "```python {#sum}", f"```{lang} {{#sum}}")
    msg = only(problems(course), "只有 ```python 围栏才是代码块")
    assert msg.startswith(f"{chapter}:{line_of(chapter, '{#sum}')}: ```{lang} {{#sum}}")


def test_an_output_block_of_only_the_wildcard(course):
    chapter = course / "01-first.md"
    edit(chapter, "```output\n[1, 2, 3] 6\n```", "```output\n...\n```")
    assert only(problems(course), "只有通配符").startswith(f"{chapter}:{line_of(chapter, '```output')}: #sum 的 ```output 块只有通配符 '...'")


def test_an_appendix_without_break_points_can_never_be_completed(course):
    appendix = course / "A-error-lookup.md"
    edit(appendix, "\n<!-- break -->\n", "\n")
    msg = only(problems(course), "读者永远读不完它")
    assert msg.startswith(f"{appendix}:") and "附录 A没有断点" in msg


def test_a_checkpoint_heading_without_a_quiz_is_a_warning(course):
    edit(course / "course.toml", 'checkpoint = "01.toml"\n', "")
    (course / "checkpoints" / "01.toml").unlink()
    loaded = load_course(course)
    assert all_problems(loaded) == []
    chapter = course / "01-first.md"
    assert any(w.startswith(f"{chapter}:{line_of(chapter, '## ✅')}: ⚠️ 「## ✅ 检查点」指向检查点测验，但 course.toml 没给第 01 章 checkpoint") for w in all_warnings(loaded))


def test_an_absolute_path_in_a_snippet_is_a_warning(course):
    chapter = course / "01-first.md"
    edit(chapter, 'numbers = [3, 1, 2]\n', 'numbers = [3, 1, 2]\nopen("/tmp/walk-shared.txt", "w").write("x")\n')
    warnings = all_warnings(load_course(course))
    assert any(w.startswith(f"{chapter}:{line_of(chapter, 'walk-shared')}: ⚠️ 代码块 #sum 用了绝对路径 '/tmp/walk-shared.txt'") for w in warnings), warnings


# -- the appendix ------------------------------------------------------------------------------

def test_appendix_header_backticks_and_duplicate_rows(course):
    appendix = course / "A-error-lookup.md"
    row = "| `ValueError: invalid literal for int() with base 10` | 字符串不是十进制数字 | 打印要转换的字符串 | [01 §会报错的代码块](01#errors) |"
    edit(appendix, row, row + "\n" + row.replace("`ValueError: invalid literal for int() with base 10`", "ValueError: invalid literal for int() with base 10"))
    found = problems(course)
    assert only(found, "没有放在反引号里").startswith(f"{appendix}:{line_of(appendix, '| ValueError')}:")
    assert only(found, "已经是 第").startswith(f"{appendix}:{line_of(appendix, '| ValueError')}:")
    edit(appendix, "| 报错原文 | 原因 | 先查 | 讲解 |", "| 报错 | 原因 | 先查 | 讲解 |")
    found = problems(course)
    assert only(found, "反查会忽略这整张表").startswith(f"{appendix}:{line_of(appendix, '| 报错 |')}: 表头 '| 报错 | 原因 | 先查 | 讲解 |'")


def test_a_broken_appendix_link_is_reported_once(course):
    edit(course / "A-error-lookup.md", "01#errors", "01#no-such")
    found = [p for p in problems(course) if "no-such" in p]
    assert len(found) == 1, found


# -- the runner: what accept writes ------------------------------------------------------------

def add_snippets(course: Path, *blocks: str) -> Path:
    chapter = course / "01-first.md"
    edit(chapter, "<!-- break: 代码块讲完 -->", "\n\n".join(blocks) + "\n\n<!-- break: 代码块讲完 -->")
    return chapter


def test_accept_refuses_hash_order_exit_codes_and_huge_outputs(course, tmp_path):
    chapter = add_snippets(
        course,
        '```python {#fruit}\nprint({"apple", "banana", "cherry", "durian", "elder"})\n```',
        '```python {#bye}\nimport sys\nprint("bye")\nsys.exit(3)\n```',
        '```python {#bye-declared exit=3}\nimport sys\nprint("bye")\nsys.exit(3)\n```',
        '```python {#flood}\nfor i in range(150_000):\n    print(i)\n```',
    )
    before = chapter.read_text(encoding="utf-8")
    out = tc("--content", str(course), "verify", "--accept", home=tmp_path / "h")
    after = chapter.read_text(encoding="utf-8")
    assert out.returncode == 1
    assert "01:fruit" in out.stderr and "PYTHONHASHSEED=1" in out.stderr and "两次运行的输出不同" in out.stderr
    assert "01:bye（" in out.stderr and "运行以退出码 3 结束，代码块却没有声明 exit=3" in out.stderr
    assert "01:flood" in out.stderr and "不能写入" in out.stderr
    assert len(after) - len(before) < 200  # only the declared exit's "bye" was written
    assert "```python {#bye-declared exit=3}\nimport sys\nprint(\"bye\")\nsys.exit(3)\n```\n\n```output\nbye\n```" in after
    assert "{'apple'" not in after and "149999" not in after
    assert "❌ 不一致 01:bye-declared" not in out.stdout and "📝 待写入 01:bye-declared" in out.stdout  # L1


def test_accept_one_snippet_rewrites_one_block(course, tmp_path):
    chapter = course / "01-first.md"
    edit(chapter, "```output\n[1, 2, 3] 6\n```", "```output\nwrong\n```")
    edit(chapter, "ValueError: invalid literal for int() with base 10: '三'", "ValueError: stale")
    out = tc("--content", str(course), "verify", "--accept", "01:sum", home=tmp_path / "h")
    assert out.returncode == 0, out.stdout + out.stderr
    text = chapter.read_text(encoding="utf-8")
    assert "```output\n[1, 2, 3] 6\n```" in text and "ValueError: stale" in text  # the other block is untouched
    assert out.stdout.strip().splitlines()[-1] == "一致 1 个 · 不一致 0 个 · 跳过 0 个"
    assert "写入了 1 个 output 块" in out.stdout
    one = tc("--content", str(course), "verify", "01:bad-int", home=tmp_path / "h")
    assert one.returncode == 1 and one.stdout.strip().splitlines()[-1] == "一致 0 个 · 不一致 1 个 · 跳过 0 个"


def test_verify_of_the_whole_course_fails_on_a_missing_chapter_file(course, tmp_path):
    (course / "A-error-lookup.md").unlink()
    out = tc("--content", str(course), "verify", home=tmp_path / "h")
    assert out.returncode == 1
    assert "附录 A（" in out.stdout and "读不出来" in out.stdout
    assert out.stdout.strip().splitlines()[-1].endswith("不一致 1 个 · 跳过 1 个")


def test_the_lookups_not_covered_answer_names_nothing_the_course_lacks(course, tmp_path):
    out = tc("--content", str(course), "why", "KeyError: 'foo'", home=tmp_path / "h")
    assert out.returncode == 1
    assert "本课程没有讲到这条报错" in out.stderr and "PyTorch" not in out.stderr and "第 00 章" not in out.stderr
    toml = course / "course.toml"
    toml.write_text('not_covered = "去看 NumPy 的文档。"\n' + toml.read_text(encoding="utf-8"), encoding="utf-8")
    out = tc("--content", str(course), "why", "KeyError: 'foo'", home=tmp_path / "h")
    assert out.stderr.strip() == "去看 NumPy 的文档。"


# -- preload -----------------------------------------------------------------------------------

def test_a_numpy_course_never_imports_torch(tmp_path):
    """preload = ["numpy"]: the zygote imports numpy and not torch (its hello and its mapped
    libraries say so), and neither a warm nor a cold snippet process has torch loaded."""
    from torchcourse.course.model import Snippet
    from torchcourse.runner import Runner

    probe = ("import os, sys\nimport numpy\n"
             "maps = open(f'/proc/{os.getpid()}/maps').read()\n"
             "print('torch' in sys.modules, 'libtorch' in maps, 'numpy' in sys.modules)\n")
    snip = Snippet(id="probe", chapter_id="01", code=probe, expected="False False True", line=1)
    runner = Runner(cache_dir=None, warm=True, preload=("numpy",))
    try:
        zygote = runner.zygote()
        assert "numpy" in zygote.preloaded() and "torch" not in zygote.preloaded()
        with open(f"/proc/{zygote.proc.pid}/maps") as fh:
            maps = fh.read()
        assert "libtorch" not in maps and "numpy" in maps
        for cold in (False, True):
            res = runner.run(snip, cold=cold, use_cache=False)
            assert res.status == "match", (cold, res.actual)
    finally:
        runner.close()
    torch_runner = Runner(cache_dir=None, warm=True)  # the default (the shipped course) still has torch
    try:
        assert "torch" in torch_runner.zygote().preloaded()
    finally:
        torch_runner.close()


def test_preload_is_read_from_course_toml_and_checked(course, tmp_path):
    assert load_course(course).preload == ()
    edit(course / "course.toml", "preload = []", 'preload = ["numpy"]')
    assert load_course(course).preload == ("numpy",)
    out = tc("--content", str(course), "verify", "--no-cache", home=tmp_path / "h")
    assert out.returncode == 0 and "import numpy 一次" in out.stdout, out.stdout + out.stderr
    edit(course / "course.toml", 'preload = ["numpy"]', 'preload = "numpy"')
    assert only(problems(course), "preload 必须是预热运行器先导入的模块名列表").startswith(f"{course / 'course.toml'}:{line_of(course / 'course.toml', 'preload =')}:")
    edit(course / "course.toml", 'preload = "numpy"', 'preload = ["no_such_module_tc"]')
    doctor = tc("--content", str(course), "doctor", home=tmp_path / "h")
    assert doctor.returncode == 1 and "no_such_module_tc ❌ 未安装" in doctor.stdout and "torch " not in doctor.stdout, doctor.stdout
    run = tc("--content", str(course), "run", "01:sum", home=tmp_path / "h")
    assert "运行器找不到 no_such_module_tc" in run.stdout, run.stdout
    data = json.loads(tc("--content", str(course), "check", "--json", home=tmp_path / "h").stdout)
    assert [p for p in data["problems"] if "preload 模块 'no_such_module_tc' 在这里导入不了" in p] == data["problems"] != []


def test_the_reader_names_the_time_limit_and_an_undeclared_exit_status():
    """L16: the app's verdict says the limit; an exit-status mismatch says why (its diff is empty)."""
    from torchcourse.course.model import Snippet
    from torchcourse.runner import Runner
    from torchcourse.tui.widgets.snippet import verdict_text

    runner = Runner(cache_dir=None, warm=False, preload=())
    try:
        slow = runner.run(Snippet(id="s", chapter_id="01", code="import time\ntime.sleep(30)\n", expected="", line=1, timeout=1.0))
        bye = runner.run(Snippet(id="b", chapter_id="01", code="import sys\nprint('bye')\nsys.exit(3)\n", expected="bye", line=1))
    finally:
        runner.close()
    assert slow.status == "timeout" and "运行超过 1 秒" in verdict_text(slow)
    assert bye.status == "mismatch" and "运行以退出码 3 结束，代码块却没有声明 exit=3" in verdict_text(bye)


def test_a_broken_link_suggests_only_near_anchors(course):
    chapter = course / "01-first.md"
    edit(chapter, "[这一节](#errors)", "[这一节](#erors) [那一节](#no-copy)")
    found = problems(course)
    assert "最接近的：#errors" in only(found, "#erors")
    assert "nearest" not in only(found, "#no-copy")  # no far-fetched guess (L6)


def test_the_app_starts_with_two_routes_of_one_id_and_a_route_with_nothing_to_read(course, tmp_path):
    """H1: two [[routes]] with id "A" crashed the home screen (DuplicateID); a route whose only
    chapter was refused said 🎉 当前路线已全部读完."""
    from test_tui_pty import Terminal

    toml = course / "course.toml"
    edit(toml, '[[routes]]\nid = "A"', '[[routes]]\nid = "D"\nname = "空路线"\naudience = "x"\nchapters = ["X1"]\n\n[[routes]]\nid = "A"')
    toml.write_text(toml.read_text(encoding="utf-8") + '\n[[routes]]\nid = "A"\nname = "重名路线"\naudience = "x"\nchapters = ["01"]\n', encoding="utf-8")
    toml.write_text(toml.read_text(encoding="utf-8") + '\n[[chapters]]\nid = "X1"\nfile = 3\ntitle = "坏"\npromise = "坏"\n', encoding="utf-8")
    term = Terminal(["--content", str(course)], tmp_path / "home")
    try:
        term.read_until("我的课程")
        term.read_until("空路线")  # the default route D is the one with nothing usable
        term.drain()
        assert "DuplicateID" not in term.text() and "重名路线" not in term.text()
        term.send("c")
        term.read_until("当前路线没有一章能读")
        assert "全部读完" not in term.text()
        assert term.proc.poll() is None
    finally:
        term.close()


def test_a_quiz_snippet_or_key_typo_gets_a_did_you_mean(course):
    quiz = course / "checkpoints" / "01.toml"
    edit(quiz, 'snippet = "sum"', 'snippet = "summ"')
    edit(quiz, 'accept = ["raises", "raises="]', 'acept = ["raises", "raises="]')
    found = problems(course)
    assert only(found, "snippet 'summ' 不是第 01 章").endswith("是不是想写 'sum'？")
    assert only(found, "未知的键 'acept'").endswith("是不是想写 'accept'？")


def test_reload_chapter_reads_the_saved_file_in_place(course):
    """The preview loop's model side: the same chapter object gets the new text and blocks, and
    its problems on the course are replaced."""
    from torchcourse.course.loader import chapter_stamp, reload_chapter

    loaded = load_course(course)
    chapter = loaded.chapter("01")
    stamp = chapter_stamp(chapter)
    edit(course / "01-first.md", "print(sorted(numbers), sum(numbers))", "print(sorted(numbers), sum(numbers), 'new')")
    edit(course / "01-first.md", "## 会报错的代码块 {#errors}", "## 会报错的代码块 {#sum}")
    os.utime(course / "01-first.md", ns=(stamp[1] + 10**9, stamp[1] + 10**9))
    assert chapter_stamp(chapter) != stamp
    found = reload_chapter(loaded, "01")
    assert loaded.chapter("01") is chapter and "'new'" in chapter.snippet("sum").code
    assert [p.message for p in found if "那个代码块不在这个小节里" in p.message]
    assert [p for p in loaded.problems if "那个代码块不在这个小节里" in p.message] == [p for p in found if "那个代码块不在这个小节里" in p.message]


def test_a_file_another_snippet_wrote_gets_the_empty_directory_hint(course, tmp_path):
    """12a / L12: reading a file that a previous snippet wrote (relative path) fails with a hint."""
    add_snippets(course,
                 '```python {#save}\nopen("data.txt", "w").write("1 2 3")\nprint("saved")\n```',
                 '```python {#load}\nprint(open("data.txt").read())\n```')
    out = tc("--content", str(course), "verify", "--accept", home=tmp_path / "h")
    assert "01:load" in out.stderr and "FileNotFoundError" in out.stderr
    assert "前面代码块写下的文件和模块在这里并不存在" in out.stderr


# -- the preview loop --------------------------------------------------------------------------

def test_moved_line_follows_lines_inserted_above():
    from torchcourse.tui.reader.preview import moved_line

    old = "a\nb\nc\nd\n"
    assert moved_line(old, "x\ny\na\nb\nc\nd\n", 3) == 5  # two lines inserted above
    assert moved_line(old, "a\nc\nd\n", 3) == 2  # one deleted above
    assert moved_line(old, "a\nb\nC\nd\n", 3) == 3  # the line itself rewritten: the same place


def test_the_reader_offers_to_reload_a_changed_chapter_and_keeps_the_reading_line(tmp_path):
    """M10 preview loop: the app shows chapter 01; the author saves the file with two lines inserted
    at the top and a changed snippet; the reader offers a reload, R reopens it at the same line."""
    import asyncio
    import shutil

    from tui_support import FIXTURE, build_app, open_loaded_reader, open_reader, screen_text, wait_for

    root = tmp_path / "c"
    shutil.copytree(FIXTURE, root)
    app, store = build_app(tmp_path / "p.sqlite3", course_root=root)
    chapter_file = root / "01-box.md"

    async def body():
        async with app.run_test(size=(100, 30), notifications=True) as pilot:
            await pilot.pause()
            screen = await open_reader(pilot, "01")
            await screen.jump_to_line(24)  # '## 说明书 {#shape}'
            await pilot.pause()
            await wait_for(pilot, lambda: screen.current_place() is not None and screen.current_place()[1] == 24, what="line 24 at the top")
            text = chapter_file.read_text(encoding="utf-8")
            stamp = chapter_file.stat().st_mtime_ns
            chapter_file.write_text(text.replace("## 一块内存 {#memory}\n", "## 一块内存 {#memory}\n\n新写的一段。\n", 1)
                                    .replace('print("盒子:", box)', 'print("新盒子:", box)'), encoding="utf-8")
            os.utime(chapter_file, ns=(stamp + 10**9, stamp + 10**9))
            await wait_for(pilot, lambda: "按 Shift+R 重新载入" in screen_text(app), what="the offer to reload")
            await pilot.press("R")
            # the old reader shows chapter 01 too: wait until R has replaced it (pilot.press returns
            # when the process looks idle, not when the key was handled; on a loaded machine it may not be)
            await wait_for(pilot, lambda: app.screen is not screen, what="the reader replaced by R")
            new = await open_loaded_reader(pilot, app, "01")
            assert new is not screen
            await wait_for(pilot, lambda: new.current_place() is not None and new.current_place()[1] == 26, what="the same line, moved by 2")
            assert "新盒子" in new.chapter.snippet("hello").code
            await wait_for(pilot, lambda: "已重新载入" in screen_text(app), what="the reload notice")
            await pilot.press("R")
            await wait_for(pilot, lambda: "没有改过，不用重新载入" in screen_text(app), what="nothing to reload")

    asyncio.run(body())
