"""Author mode: `verify --accept` never writes a broken or unrepeatable run, declared exceptions,
misspelled attributes refused everywhere. Real `torchcourse` processes on small fixture courses."""

from __future__ import annotations

import textwrap
from pathlib import Path

from test_runner_cli import ROOT, make_course, tc


def chapter(*blocks: str) -> str:
    """A chapter with the anatomy `check` wants around the given blocks."""
    body = "\n\n".join(textwrap.dedent(b).strip("\n") for b in blocks)
    return "# T\n\n🎯 p\n\n" + body + "\n\n## ✅ 检查点\n\n<!-- break -->\n\n## ⚡ 走神救援\n\n回顾。\n"


def last_line(text: str) -> str:
    return text.strip().split("\n")[-1]


def test_an_undeclared_exception_fails_verify_even_when_the_output_matches(tmp_path):
    course = make_course(tmp_path / "c", chapter(
        """
        ```python {#boom}
        raise RuntimeError("bad")
        ```

        ```output
        Traceback (most recent call last):
          ...
        RuntimeError: bad
        ```
        """))
    out = tc("--content", str(course), "verify", home=tmp_path / "h")
    assert out.returncode == 1
    assert last_line(out.stdout) == "一致 0 个 · 不一致 1 个 · 跳过 0 个"
    assert "运行抛出了 RuntimeError，代码块却没有声明 raises=RuntimeError" in out.stdout
    # declaring it makes the same run pass
    text = (course / "01.md").read_text(encoding="utf-8").replace("{#boom}", "{#boom raises=RuntimeError}")
    (course / "01.md").write_text(text, encoding="utf-8")
    out = tc("--content", str(course), "verify", home=tmp_path / "h")
    assert out.returncode == 0 and last_line(out.stdout) == "一致 1 个 · 不一致 0 个 · 跳过 0 个"


def test_a_declared_exception_that_is_not_raised_or_is_another_fails(tmp_path):
    course = make_course(tmp_path / "c", chapter(
        """
        ```python {#quiet raises=RuntimeError}
        print("ok")
        ```

        ```output
        ok
        ```
        """,
        """
        ```python {#other raises=RuntimeError}
        raise ValueError("v")
        ```

        ```output
        Traceback (most recent call last):
          ...
        ValueError: v
        ```
        """,
        """
        ```python {#dotted raises=JSONDecodeError}
        import json
        json.loads("{")
        ```

        ```output
        Traceback (most recent call last):
          ...
        json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)
        ```
        """))
    out = tc("--content", str(course), "verify", home=tmp_path / "h")
    assert last_line(out.stdout) == "一致 1 个 · 不一致 2 个 · 跳过 0 个"
    assert "声明了 raises=RuntimeError，运行却没有抛出异常" in out.stdout
    assert "声明了 raises=RuntimeError，运行抛出的却是 ValueError" in out.stdout
    assert "❌ 不一致  01:dotted" not in out.stdout  # the last dotted component is enough


def test_accept_refuses_a_traceback_nobody_declared_and_names_the_lone_file_rule(tmp_path):
    course = make_course(tmp_path / "c", chapter(
        """
        ```python {#first}
        w = 3
        print(w)
        ```
        """,
        """
        ```python {#second}
        print(w * 2)
        ```
        """))
    out = tc("--content", str(course), "verify", "--accept", home=tmp_path / "h")
    after = (course / "01.md").read_text(encoding="utf-8")
    assert "```output\n3\n```" in after  # the good one is written
    assert "NameError" not in after  # the broken one is not
    assert "拒绝写入 1 个代码块" in out.stderr and "01:second" in out.stderr
    assert "前面代码块定义的名字在这里并不存在" in out.stderr
    assert out.returncode == 1 and last_line(out.stdout) == "一致 1 个 · 不一致 1 个 · 跳过 0 个"
    run = tc("--content", str(course), "run", "01:second", home=tmp_path / "h")
    assert "前面代码块定义的名字在这里并不存在" in run.stdout


def test_accept_refuses_a_nondeterministic_output(tmp_path):
    course = make_course(tmp_path / "c", chapter(
        """
        ```python {#noisy}
        import os
        print(os.urandom(8).hex())
        ```
        """))
    out = tc("--content", str(course), "verify", "--accept", home=tmp_path / "h")
    assert "```output" not in (course / "01.md").read_text(encoding="utf-8")
    assert "01:noisy" in out.stderr and "两次运行的输出不同" in out.stderr
    assert out.returncode == 1


def test_accept_shows_what_it_overwrote(tmp_path):
    course = make_course(tmp_path / "c", chapter(
        """
        ```python {#sum}
        print(1 + 1)
        ```

        ```output
        3
        ```
        """))
    out = tc("--content", str(course), "verify", "--accept", home=tmp_path / "h")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.split("\n")
    assert any("01:sum" in ln and "已改写" in ln for ln in lines)
    assert "    -3" in lines and "    +2" in lines
    assert "写入了 1 个 output 块" in out.stdout


def test_accept_refuses_while_check_has_problems_in_the_chapter(tmp_path):
    course = make_course(tmp_path / "c", chapter(
        """
        ## A {#same}

        ## B {#same}

        ```python {#sum}
        print(1 + 1)
        ```
        """))
    out = tc("--content", str(course), "verify", "--accept", home=tmp_path / "h")
    assert out.returncode == 1
    assert "小节锚点 'same' 重复了" in out.stderr and "先修好" in out.stderr
    assert "```output" not in (course / "01.md").read_text(encoding="utf-8")


def test_a_misspelled_attribute_is_named_and_the_snippet_is_never_run(tmp_path):
    course = make_course(tmp_path / "c", chapter(
        """
        ```python {#slow timout=5}
        print("ran")
        ```

        ```output
        ran
        ```
        """))
    check = tc("--content", str(course), "check", home=tmp_path / "h")
    assert "未知的围栏属性 'timout=5'；是不是想写 'timeout=5'？" in check.stdout + check.stderr
    for cmd in (["verify"], ["run", "01:slow"]):
        out = tc("--content", str(course), *cmd, home=tmp_path / "h")
        assert out.returncode == 1, cmd
        assert "属性写错了" in out.stdout and "timeout=5" in out.stdout, cmd
        assert "✅" not in out.stdout


def test_timeouts_must_be_finite_and_bounded(tmp_path):
    course = make_course(tmp_path / "c", chapter(*(
        f"""
        ```python {{#t{i} timeout={v}}}
        print(1)
        ```

        ```output
        1
        ```
        """ for i, v in enumerate(["nan", "inf", "0", "-3", "601"]))))
    check = tc("--content", str(course), "check", home=tmp_path / "h")
    text = check.stdout + check.stderr
    for v in ["nan", "inf", "0", "-3", "601"]:
        assert f"要写秒数：大于 0、最多 600，这里是 '{v}'" in text, v
    out = tc("--content", str(course), "verify", home=tmp_path / "h")
    assert last_line(out.stdout) == "一致 0 个 · 不一致 5 个 · 跳过 0 个"


# -- check sees what the reader will see -----------------------------------------------------

ANATOMY_HEAD = "# T\n\n🎯 p。读完这一章你会。\n\n## 一 {#one}\n\n正文。\n\n"
ANATOMY_TAIL = "## ✅ 检查点 {#checkpoint}\n\n做题。\n\n<!-- break -->\n\n## ⚡ 走神救援\n\n回顾。\n"


def check_lines(course: Path, home: Path) -> list[str]:
    out = tc("--content", str(course), "check", home=home)
    return (out.stdout + out.stderr).strip().split("\n")


def test_misspelled_break_markers_are_problems(tmp_path):
    bad = ["<!-- brake: 中场 -->", "<!-- break 中场 -->", "<!-- BREAK: 中场 -->", "<!-- break --> 还有字", "<!-- 断点 -->"]
    body = "".join(f"{b}\n\n段落 {i}。\n\n" for i, b in enumerate(bad))
    course = make_course(tmp_path / "c", ANATOMY_HEAD + body + ANATOMY_TAIL)
    lines = check_lines(course, tmp_path / "h")
    for b in bad:
        assert any(repr(b) in ln and "看起来像断点标记，但不是" in ln for ln in lines), b
    assert not any("<!-- 其他注释 -->" in ln for ln in lines)


def test_the_final_break_comes_after_the_checkpoint_and_the_anatomy_is_checked(tmp_path):
    text = "# T\n\n⏱ 20 分钟\n\n## 一 {#one}\n\n<!-- break -->\n\n## ✅ 检查点\n\n## 尾声\n"
    course = make_course(tmp_path / "c", text)
    joined = "\n".join(check_lines(course, tmp_path / "h"))
    assert "01.md:3: ⏱ 行写的是 20 分钟，但算出来这一章读 1 分钟" in joined
    assert "没有 🎯 行" in joined
    assert "01.md:7: 最后一个断点必须在 ✅ 检查点标题（第 9 行）之后" in joined
    assert "没有 '## ⚡ 走神救援' 标题" in joined
    good = make_course(tmp_path / "g", ANATOMY_HEAD + ANATOMY_TAIL)
    assert check_lines(good, tmp_path / "h")[-1].endswith("：0 处问题")
    wrong_goal = make_course(tmp_path / "w", ANATOMY_HEAD.replace("🎯 p。", "🎯 别的话。") + ANATOMY_TAIL)
    assert any("🎯 行必须以 course.toml 里这一章的 promise 开头：'p'" in ln for ln in check_lines(wrong_goal, tmp_path / "h"))


def test_links_to_unknown_chapters_sections_and_snippets_are_problems(tmp_path):
    body = (
        "见 [这里](#one)、[代码](#code)、[别章](02)、[网页](https://pytorch.org)。\n\n"
        "坏的：[a](#onne)、[b](03)、[c](02#x)、[d](01#nope)。\n\n"
        "```python {#code}\nprint(1)\n```\n\n```output\n1\n```\n\n"
    )
    course = make_course(tmp_path / "c", ANATOMY_HEAD + body + ANATOMY_TAIL)
    lines = [ln for ln in check_lines(course, tmp_path / "h") if "链接 (" in ln]
    assert len(lines) == 4, lines
    assert any("链接 (#onne)：本章没有小节或代码块 #onne；最接近的：#one" in ln for ln in lines)
    assert any("链接 (03)：没有 id 为 '03' 的章节（现有章节：01, 02）" in ln for ln in lines)
    assert any("链接 (02#x)：第 02 章还没写" in ln for ln in lines)
    assert any("链接 (01#nope)：本章没有小节或代码块 #nope" in ln for ln in lines)
    assert all(":11:" in ln for ln in lines)  # the line of the bad links


def test_a_norun_snippet_with_an_output_block_is_refused(tmp_path):
    body = "```python {#shown norun}\nprint(1)\n```\n\n```output\n1\n```\n\n"
    course = make_course(tmp_path / "c", ANATOMY_HEAD + body + ANATOMY_TAIL)
    assert any("代码块 #shown 标了 norun" in ln and "01.md:13:" in ln for ln in check_lines(course, tmp_path / "h"))


def test_a_predict_key_that_contradicts_the_output_is_a_problem(tmp_path):
    body = "```python {#two}\nimport torch\nprint(torch.ones(2) * 2)\n```\n\n```output\ntensor([2., 2.])\n```\n\n"
    course = make_course(tmp_path / "c", ANATOMY_HEAD + body + ANATOMY_TAIL)
    text = (course / "course.toml").read_text(encoding="utf-8").replace('promise = "p"\n', 'promise = "p"\ncheckpoint = "01.toml"\n', 1)
    (course / "course.toml").write_text(text, encoding="utf-8")
    (course / "cp").mkdir()
    quiz = (
        'chapter = "01"\n\n[[questions]]\nid = "q"\nkind = "predict"\nsnippet = "two"\nprompt = "打印什么？"\n'
        'choices = ["tensor([1., 1.])", "tensor([2., 2.])", "报错"]\nanswer = {key}\nexplain = "乘 2"\nsection = "one"\n'
    )
    (course / "cp" / "01.toml").write_text(quiz.format(key=0), encoding="utf-8")
    lines = check_lines(course, tmp_path / "h")
    assert any("01.toml:9: 题目 'q'：答案是选项 0（'tensor([1., 1.])'）" in ln and "选项 1: 'tensor([2., 2.])'" in ln for ln in lines), lines
    (course / "cp" / "01.toml").write_text(quiz.format(key=1), encoding="utf-8")
    assert check_lines(course, tmp_path / "h")[-1].endswith("：0 处问题")


def test_minutes_outside_twenty_percent_of_the_target_are_a_warning_not_a_problem(tmp_path):
    course = make_course(tmp_path / "c", ANATOMY_HEAD + ANATOMY_TAIL)
    toml = course / "course.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace('promise = "p"\n', 'promise = "p"\ntarget_minutes = 30\n', 1), encoding="utf-8")
    out = tc("--content", str(course), "check", home=tmp_path / "h")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "01.md: ⚠️ 第 01 章算出来读 1 分钟，短于目标 30 分钟的 ±20%（24–36）" in out.stdout
    assert out.stdout.strip().split("\n")[-1].endswith("：0 处问题")
    toml.write_text(toml.read_text(encoding="utf-8").replace("target_minutes = 30", "target_minutes = 1"), encoding="utf-8")
    assert "读 1 分钟" not in tc("--content", str(course), "check", home=tmp_path / "h").stdout


def test_a_gpu_snippets_accepted_output_records_where_it_ran(tmp_path):
    # only a machine with CUDA can produce this output; the file says which one, once
    from torchcourse.course import load_course
    from torchcourse.runner.accept import rewrite_outputs

    text = chapter(
        """
        ```python {#cuda gpu}
        import torch
        print(torch.ones(1, device="cuda"))
        ```
        """
    )
    course = make_course(tmp_path / "c", text)
    path = course / "01.md"
    snip = load_course(course).chapter("01").snippet("cuda")
    rewrite_outputs(path, [(snip, "tensor([1.], device='cuda:0')")], gpu_origin="torch 2.13.0+cu126 · NVIDIA T4 · 2026-11-30")
    written = path.read_text(encoding="utf-8")
    assert "<!-- gpu 输出记录于：torch 2.13.0+cu126 · NVIDIA T4 · 2026-11-30 -->\n```python {#cuda gpu}" in written
    again = load_course(course)
    snip = again.chapter("01").snippet("cuda")
    assert snip.expected.strip() == "tensor([1.], device='cuda:0')" and not again.problems
    rewrite_outputs(path, [(snip, "tensor([2.], device='cuda:0')")], gpu_origin="torch 2.13.0+cu126 · NVIDIA A100 · 2026-12-01")
    written = path.read_text(encoding="utf-8")
    assert written.count("gpu 输出记录于") == 1 and "NVIDIA A100" in written and "NVIDIA T4" not in written
    # a gpu snippet without an output block is fine for check (an author without a GPU leaves it empty)
    plain = make_course(tmp_path / "d", text)
    assert check_lines(plain, tmp_path / "h")[-1].endswith("：0 处问题")


class TestPartialLineBeforeATraceback:
    """H1: output without a final newline before a traceback is shown and compared, never a crash."""

    def test_run_file_shows_the_partial_line_and_the_error(self, tmp_path):
        course = make_course(tmp_path / "c", ANATOMY_HEAD + "```python {#one}\nprint(1)\n```\n\n```output\n1\n```\n\n" + ANATOMY_TAIL)
        f = tmp_path / "noeol.py"
        f.write_text('print("partial", end="")\n1/0\n', encoding="utf-8")
        out = tc("--content", str(course), "run", "01:one", "--file", str(f), home=tmp_path / "h")
        assert "Traceback" not in out.stderr and out.returncode == 1, out.stderr
        assert "partial\nTraceback (most recent call last):\n  ...\nZeroDivisionError: division by zero" in out.stdout

    def test_accept_writes_an_input_prompt_and_its_declared_eoferror(self, tmp_path):
        course = make_course(tmp_path / "c", ANATOMY_HEAD + '```python {#ask raises=EOFError}\ninput("几行？")\n```\n\n' + ANATOMY_TAIL)
        out = tc("--content", str(course), "verify", "--accept", "01:ask", home=tmp_path / "h")
        assert out.returncode == 0, out.stdout + out.stderr
        assert "```output\n几行？\nTraceback (most recent call last):\n  ...\nEOFError: EOF when reading a line\n```" in (course / "01.md").read_text(encoding="utf-8")
        out = tc("--content", str(course), "verify", "--no-cache", home=tmp_path / "h")
        assert out.returncode == 0 and last_line(out.stdout) == "一致 1 个 · 不一致 0 个 · 跳过 0 个"


class TestAcceptNeverWritesWildcards:
    """H2: a real output line ``...`` or text with ``<<...>>`` would be a wildcard once written."""

    def test_accept_refuses_both_and_names_the_snippet(self, tmp_path):
        body = ('```python {#dots}\nprint("loading")\nprint("...")\nprint("done")\n```\n\n'
                '```python {#wild}\nprint("shape: <<...>>")\n```\n\n')
        course = make_course(tmp_path / "c", ANATOMY_HEAD + body + ANATOMY_TAIL)
        before = (course / "01.md").read_text(encoding="utf-8")
        out = tc("--content", str(course), "verify", "--accept", "01", home=tmp_path / "h")
        assert (course / "01.md").read_text(encoding="utf-8") == before
        assert "01:dots（" in out.stderr and "输出第 2 行恰好是 ...：写进期望输出块它就成了通配符" in out.stderr
        assert "01:wild（" in out.stderr and "输出第 1 行含有 <<...>>" in out.stderr


class TestMachineDependentOutputWarned:
    """Outputs that the two accept runs cannot catch: the clock, a directory listing, a version."""

    BODY = ('```python {#elapsed}\nimport time\nt0 = time.perf_counter()\nprint(round(time.perf_counter() - t0))\n```\n\n```output\n0\n```\n\n'
            '```python {#listing}\nimport os\nprint(os.listdir("."))\n```\n\n```output\n[\'snippet.py\']\n```\n\n'
            '```python {#sorted-listing}\nimport os\nprint(sorted(os.listdir(".")))\n```\n\n```output\n[\'snippet.py\']\n```\n\n'
            '```python {#version}\nimport json\nprint(json.__version__)\n```\n\n```output\n2.0.9\n```\n\n'
            '```python {#fixed-date}\nimport time\nprint(time.strftime("%Y", time.gmtime(0)))\n```\n\n```output\n1970\n```\n\n'
            '```python {#sorted-glob}\nimport pathlib\nprint(sorted(p.name for p in pathlib.Path(".").glob("*.py") if p.stat()))\n```\n\n```output\n[\'snippet.py\']\n```\n\n'
            '```python {#counted}\nimport os\nprint(len(os.listdir(".")))\n```\n\n```output\n1\n```\n\n'
            '```python {#walked}\nimport os\nfor root, dirs, files in os.walk("."):\n    print(root, files)\n```\n\n```output\n. [\'snippet.py\']\n```\n\n')

    def test_check_warns_at_each_snippet(self, tmp_path):
        course = make_course(tmp_path / "c", ANATOMY_HEAD + self.BODY + ANATOMY_TAIL)
        lines = check_lines(course, tmp_path / "h")
        assert any(":9: ⚠️ 代码块 #elapsed 读了日期或时钟" in ln for ln in lines), lines
        assert any("⚠️ 代码块 #listing 列了目录" in ln for ln in lines)
        assert any("⚠️ 代码块 #version 打印了版本号" in ln for ln in lines)
        assert any("⚠️ 代码块 #walked 列了目录" in ln for ln in lines)  # a loop over the listing keeps its order
        # the listing reaches sorted( / len( in the same expression: the order is gone
        assert not any(tag in ln for ln in lines for tag in ("#sorted-listing", "#fixed-date", "#sorted-glob", "#counted")), lines

    def test_accept_says_it_when_it_writes(self, tmp_path):
        body = '```python {#listing}\nimport os\nprint(os.listdir("."))\n```\n\n'
        course = make_course(tmp_path / "c", ANATOMY_HEAD + body + ANATOMY_TAIL)
        out = tc("--content", str(course), "verify", "--accept", "01", home=tmp_path / "h")
        assert "01.md:9: ⚠️ 代码块 #listing 列了目录" in out.stdout


class TestMisspeltOutputFence:
    def test_it_is_named_at_its_own_line(self, tmp_path):
        body = "```python {#one}\nprint(1)\n```\n\n```ouput\n1\n```\n\n"
        course = make_course(tmp_path / "c", ANATOMY_HEAD + body + ANATOMY_TAIL)
        lines = check_lines(course, tmp_path / "h")
        assert any("01.md:13: 代码块 #one 后面的 ```ouput 像是拼错的 ```output 围栏" in ln for ln in lines), lines
        assert not any("后面没有 ```output 块" in ln for ln in lines)


def set_toml(course: Path, old: str, new: str) -> None:
    path = course / "course.toml"
    path.write_text(path.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")


class TestPreloadNamesAreChecked:
    """M3/L8: a preload name that is not importable is a problem at course.toml's line, with a
    guess; no course-toml typo becomes a `pip install` advice."""

    def test_a_misspelt_module_is_named_at_its_line(self, tmp_path):
        course = make_course(tmp_path / "c", ANATOMY_HEAD + ANATOMY_TAIL)
        set_toml(course, 'checkpoints = "cp"\n', 'checkpoints = "cp"\npreload = ["jsonn", "json"]\n')
        lines = check_lines(course, tmp_path / "h")
        assert any("course.toml:3: preload 模块 'jsonn' 在这里导入不了（是不是想写 'json'？）" in ln for ln in lines), lines
        assert not any("preload module 'json' " in ln for ln in lines)

    def test_the_closest_name_wins_over_an_installed_near_miss(self, tmp_path):
        site = tmp_path / "site"
        site.mkdir()
        (site / "json5.py").write_text("")  # an installed library one letter from the typo, as JupyterLab brings
        course = make_course(tmp_path / "c", ANATOMY_HEAD + ANATOMY_TAIL)
        set_toml(course, 'checkpoints = "cp"\n', 'checkpoints = "cp"\npreload = ["jsonn"]\n')
        out = tc("--content", str(course), "check", home=tmp_path / "h", env={"PYTHONPATH": f"{ROOT}:{site}"})
        assert "preload 模块 'jsonn' 在这里导入不了（是不是想写 'json'？）" in out.stdout + out.stderr

    def test_a_course_that_never_imports_torch_is_warned_about_the_default(self, tmp_path):
        course = make_course(tmp_path / "c", ANATOMY_HEAD + "```python {#one}\nprint(1)\n```\n\n```output\n1\n```\n\n" + ANATOMY_TAIL)
        lines = check_lines(course, tmp_path / "h")
        assert any("course.toml:1: ⚠️ 没有写 preload，预热运行器就先 import torch" in ln for ln in lines), lines
        set_toml(course, 'checkpoints = "cp"\n', 'checkpoints = "cp"\npreload = []\n')
        assert not any("没有写 preload" in ln for ln in check_lines(course, tmp_path / "h"))


class TestCourseIdentity:
    """M2/L7: a course's id is its own; chapters are told apart by id and file."""

    def test_new_gives_the_folder_name_and_a_random_suffix_and_names_the_guide(self, tmp_path):
        import re

        a = tc("new", str(tmp_path / "alice" / "course"), home=tmp_path / "h")
        b = tc("new", str(tmp_path / "bob" / "course"), home=tmp_path / "h")
        ids = [re.search(r'^id = "([^"]+)"', (tmp_path / who / "course" / "course.toml").read_text(encoding="utf-8"), re.M).group(1)
               for who in ("alice", "bob")]
        assert all(re.fullmatch(r"course-[0-9a-f]{6}", i) for i in ids) and ids[0] != ids[1], ids
        guide = Path(__file__).resolve().parent.parent / "content" / "README.md"
        assert f"写法见作者指南：{guide}" in a.stdout and "源码里" not in a.stdout
        assert str(guide) in tc("new", "--help", home=tmp_path / "h").stdout

    def test_a_copy_of_the_shipped_course_with_its_id_is_a_problem(self, tmp_path):
        course = make_course(tmp_path / "c", ANATOMY_HEAD + ANATOMY_TAIL)
        set_toml(course, 'title = "t"\n', 'title = "t"\nid = "torchcourse"\n')
        assert any("course.toml:2: 课程 id 'torchcourse' 是 torchcourse 自带的课程的 id" in ln
                   for ln in check_lines(course, tmp_path / "h"))

    def test_two_chapters_with_one_file_and_ids_that_differ_by_case(self, tmp_path):
        course = make_course(tmp_path / "c", ANATOMY_HEAD + ANATOMY_TAIL)
        toml = course / "course.toml"
        toml.write_text(toml.read_text(encoding="utf-8")
                        + '\n[[chapters]]\nid = "03"\nfile = "01.md"\ntitle = "T"\npromise = "p"\n'
                        + '\n[[chapters]]\nid = "a"\nfile = "a.md"\ntitle = "a"\npromise = "a"\nplanned = true\n'
                        + '\n[[chapters]]\nid = "A"\nfile = "b.md"\ntitle = "b"\npromise = "b"\nplanned = true\n', encoding="utf-8")
        lines = check_lines(course, tmp_path / "h")
        assert any("course.toml:19: 第 03 章：file '01.md' 已经是第 01 章的文件了" in ln for ln in lines), lines
        assert any("course.toml:31: 章节 id 'A' 和章节 'a' 只差大小写" in ln for ln in lines), lines


class TestCourseIdAliases:
    """An author who changes the course id lists the old one in ``aliases``: progress follows."""

    def test_progress_under_the_old_id_is_carried_over_once(self, tmp_path):
        from torchcourse.progress import open_store

        db = tmp_path / "p.sqlite3"
        old, _ = open_store(db, course_id="np-bcast")
        old.reach_break("01", 2)
        old.set_completed("01")
        old.record_answer("01", "q1", "1", True)
        old.close()
        new, notice = open_store(db, course_id="np-broadcast", aliases=("np-bcast",))
        assert new.chapter_progress("01").completed and len(new.answers("01")) == 1
        assert "原来的进度已经接过来了" in notice
        new.close()
        again, notice = open_store(db, course_id="np-broadcast", aliases=("np-bcast",))
        assert notice is None and again.chapter_progress("01").completed
        again.close()

    def test_progress_command_reads_aliases_from_course_toml(self, tmp_path):
        from torchcourse.progress import open_store

        course = make_course(tmp_path / "c", ANATOMY_HEAD + ANATOMY_TAIL)
        set_toml(course, 'title = "t"\n', 'title = "t"\nid = "old-id"\n')
        store, _ = open_store(tmp_path / "h" / "data" / "progress.sqlite3", course_id="old-id")
        store.set_completed("01")
        store.close()
        set_toml(course, 'id = "old-id"\n', 'id = "new-id"\naliases = ["old-id"]\n')
        assert check_lines(course, tmp_path / "h")[-1].endswith("：0 处问题")
        out = tc("--content", str(course), "progress", "--json", home=tmp_path / "h")
        assert out.returncode == 0, out.stderr
        import json

        assert json.loads(out.stdout)["chapters"][0]["completed"] is True, out.stdout


ROUTES_TOML = ('\n[[chapters]]\nid = "03"\nfile = "03.md"\ntitle = "V"\npromise = "p"\n'
               '\n[[chapters]]\nid = "A"\nfile = "A.md"\ntitle = "附录"\npromise = "a"\nkind = "appendix"\nplanned = true\n'
               '\n[[routes]]\nid = "full"\nname = "全部"\naudience = "所有人"\nchapters = ["01"]\n'
               '\n[[routes]]\nid = "narrow"\nname = "只看附录"\naudience = "查报错的人"\nchapters = ["A"]\n')


class TestRoutes:
    """M1: a new learner starts on the first route, or the one marked default = true; a route of
    only the appendix and a written chapter on no route are warned."""

    def make(self, tmp_path, extra=""):
        course = make_course(tmp_path / "c", ANATOMY_HEAD + ANATOMY_TAIL)
        (course / "03.md").write_text((ANATOMY_HEAD + ANATOMY_TAIL).replace("🎯 p", "🎯 p"), encoding="utf-8")
        toml = course / "course.toml"
        toml.write_text(toml.read_text(encoding="utf-8") + ROUTES_TOML + extra, encoding="utf-8")
        return course

    def test_the_first_route_is_the_default_unless_one_says_default(self, tmp_path):
        from torchcourse.course import load_course

        course = self.make(tmp_path)
        assert load_course(course).current_route(None).id == "full"
        set_toml(course, 'id = "narrow"\n', 'id = "narrow"\ndefault = true\n')
        assert load_course(course).current_route(None).id == "narrow"
        out = tc("--content", str(course), "progress", home=tmp_path / "h")
        assert "路线：narrow — 只看附录" in out.stdout, out.stdout

    def test_two_defaults_are_a_problem(self, tmp_path):
        course = self.make(tmp_path)
        set_toml(course, 'id = "full"\n', 'id = "full"\ndefault = true\n')
        set_toml(course, 'id = "narrow"\n', 'id = "narrow"\ndefault = true\n')
        assert any("路线 narrow：default = true，可路线 full 已经是默认路线了" in ln for ln in check_lines(course, tmp_path / "h"))

    def test_an_appendix_only_route_and_a_chapter_on_no_route_are_warned(self, tmp_path):
        course = self.make(tmp_path)
        lines = check_lines(course, tmp_path / "h")
        toml = (course / "course.toml").read_text(encoding="utf-8").splitlines()
        narrow = toml.index('id = "narrow"')  # 0-based line of the id: the [[routes]] line is 1-based here
        assert any(f"course.toml:{narrow}: ⚠️ 路线 narrow 只有附录" in ln for ln in lines), lines
        three = toml.index('id = "03"')
        assert any(f"course.toml:{three}: ⚠️ 第 03 章已经写好，却不在任何一条路线上" in ln for ln in lines), lines
        assert not any("第 01 章已经写好" in ln for ln in lines)


class TestFinishedChapterSurvivesANewBreak:
    """M8: a learner past a chapter's last break stays past it when the author inserts a break."""

    def test_progress_says_past_the_last_break_before_and_after_the_insert(self, tmp_path):
        import json

        from torchcourse.progress import open_store

        course = make_course(tmp_path / "c", ANATOMY_HEAD + "<!-- break: 中场 -->\n\n" + ANATOMY_TAIL)
        set_toml(course, 'title = "t"\n', 'title = "t"\nid = "brk"\n')
        store, _ = open_store(tmp_path / "h" / "data" / "progress.sqlite3", course_id="brk")
        store.reach_break("01", 1)
        store.reach_break("01", 2, final=True)
        store.close()
        out = tc("--content", str(course), "progress", home=tmp_path / "h")
        assert "继续（应用里按 c）：01 T · 断点 2/2 之后" in out.stdout, out.stdout
        text = (course / "01.md").read_text(encoding="utf-8")
        (course / "01.md").write_text(text.replace("## 一 {#one}", "<!-- break: 新加的断点 -->\n\n## 一 {#one}"), encoding="utf-8")
        out = tc("--content", str(course), "progress", home=tmp_path / "h")
        assert "继续（应用里按 c）：01 T · 断点 3/3 之后" in out.stdout, out.stdout
        row = json.loads(tc("--content", str(course), "progress", "--json", home=tmp_path / "h").stdout)["chapters"][0]
        assert (row["furthest_break"], row["break_points"]) == (3, 3)

    def test_continue_leaves_the_finished_chapter(self, tmp_path):
        from torchcourse.course import load_course
        from torchcourse.progress import open_store
        from torchcourse.tui.summary import continue_target

        course = make_course(tmp_path / "c", ANATOMY_HEAD + "<!-- break: 中场 -->\n\n" + ANATOMY_TAIL)
        store, _ = open_store(tmp_path / "p.sqlite3", course_id="brk")
        store.reach_break("01", 2, final=True)
        store.set_completed("01")
        text = (course / "01.md").read_text(encoding="utf-8")
        (course / "01.md").write_text(text.replace("## 一 {#one}", "<!-- break: 新加的断点 -->\n\n## 一 {#one}"), encoding="utf-8")
        assert continue_target(load_course(course), store) is None  # nothing left to read, not the middle of 01
        store.close()


class TestAnchorsAreAsciiOrRefusedWhereWritten:
    """M5: a non-ASCII {#anchor} is refused at its heading; a link to a derived Chinese anchor
    says how to fix it instead of "neither a course link"."""

    def test_an_explicit_non_ascii_anchor_is_refused_at_its_heading(self, tmp_path):
        course = make_course(tmp_path / "c", ANATOMY_HEAD + "## 行向量和列向量 {#café}\n\n正文。\n\n" + ANATOMY_TAIL)
        lines = check_lines(course, tmp_path / "h")
        assert any("01.md:9: 标题锚点 {#café} 只能用 ASCII 字母" in ln and "{#cafe}" in ln for ln in lines), lines

    def test_a_link_to_a_derived_chinese_anchor_names_the_heading_to_give_an_anchor(self, tmp_path):
        body = "## 广播规则：从右往左对齐\n\n正文。\n\n见[规则](#广播规则-从右往左对齐)。\n\n"
        course = make_course(tmp_path / "c", ANATOMY_HEAD + body + ANATOMY_TAIL)
        lines = check_lines(course, tmp_path / "h")
        assert any("01.md:13: 链接 (#广播规则-从右往左对齐)：链接的锚点必须是 ASCII" in ln
                   and "给第 9 行的标题加一个显式锚点" in ln for ln in lines), lines

    def test_a_title_that_differs_only_in_unicode_normalization_says_so(self, tmp_path):
        course = make_course(tmp_path / "c", (ANATOMY_HEAD + ANATOMY_TAIL).replace("# T\n", "# Tcafé\n", 1))
        set_toml(course, 'title = "T"\n', 'title = "Tcafe\\u0301"\n')
        lines = check_lines(course, tmp_path / "h")
        assert any("NFC" in ln and "01.md:1: ⚠️" in ln for ln in lines), lines


class TestBreakMarkersNeverCutABlock:
    """M6: a break marker in a list item or between table rows is a problem (not a break point);
    one shown inside a code fence stays visible in the reader."""

    def test_in_a_list_and_in_a_table(self, tmp_path):
        body = ("- 一\n- 二\n  <!-- break: 列表里的断点 -->\n- 三\n\n"
                "| a | b |\n|---|---|\n| 1 | 2 |\n<!-- break: 表格里的断点 -->\n| 3 | 4 |\n\n")
        course = make_course(tmp_path / "c", ANATOMY_HEAD + body + ANATOMY_TAIL)
        lines = check_lines(course, tmp_path / "h")
        assert any("01.md:11: 断点标记 '<!-- break: 列表里的断点 -->' 在列表项里面" in ln for ln in lines), lines
        assert any("01.md:17: 断点标记 '<!-- break: 表格里的断点 -->' 夹在表格的两行之间" in ln for ln in lines), lines
        from torchcourse.course import load_course

        assert load_course(course).chapter("01").break_points == 1

    def test_a_marker_inside_a_fence_is_shown(self):
        from torchcourse.tui.segments import display_markdown

        assert "<!-- break: 示例 -->" in display_markdown("例如：\n\n```text\n<!-- break: 示例 -->\n```\n")
        assert "break" not in display_markdown("段落。\n\n<!-- break: 真的 -->\n")


class TestIndentedParagraphIsWarned:
    def test_a_tab_indented_paragraph(self, tmp_path):
        course = make_course(tmp_path / "c", ANATOMY_HEAD + "\t上面 `b` 的形状先在左边补一个 1。\n\n" + ANATOMY_TAIL)
        assert any("01.md:9: ⚠️ 这一段以 Tab 或 4 个空格缩进开头" in ln for ln in check_lines(course, tmp_path / "h"))


class TestReferenceLinksAndImages:
    def test_a_reference_link_is_checked_by_its_definition(self, tmp_path):
        body = "见[第 01 章][v]和[别处][w]。\n\n[v]: 01#onne\n\n"
        course = make_course(tmp_path / "c", ANATOMY_HEAD + body + ANATOMY_TAIL)
        lines = check_lines(course, tmp_path / "h")
        assert any("01.md:11: 链接 (01#onne)：本章没有小节或代码块 #onne；最接近的：#one" in ln for ln in lines), lines
        assert any("01.md:9: 引用式链接 [w] 没有定义" in ln for ln in lines), lines

    def test_an_image_is_refused_as_unsupported(self, tmp_path):
        course = make_course(tmp_path / "c", ANATOMY_HEAD + "![广播示意图](img/b.png)\n\n" + ANATOMY_TAIL)
        lines = check_lines(course, tmp_path / "h")
        assert any("01.md:9: 图片 (img/b.png)：不支持图片" in ln for ln in lines), lines


class TestAppendixExcerptSelectsItsOwnRow:
    """M4: an excerpt cut down to the exception type still occurs in the output, but the lookup
    no longer answers the course's own error with its row: `check` says so at the row."""

    def test_a_bare_exception_type_is_a_problem_at_its_row(self, tmp_path):
        course = tmp_path / "fresh"
        assert tc("new", str(course), home=tmp_path / "h").returncode == 0
        assert check_lines(course, tmp_path / "h")[-1].endswith("：0 处问题")
        appendix = course / "A-error-lookup.md"
        text = appendix.read_text(encoding="utf-8")
        appendix.write_text(text.replace("`ValueError: invalid literal for int() with base 10`", "`ValueError:`"), encoding="utf-8")
        row = next(n for n, ln in enumerate(appendix.read_text(encoding="utf-8").splitlines(), 1) if ln.startswith("| `ValueError:`"))
        lines = check_lines(course, tmp_path / "h")
        assert any(f"A-error-lookup.md:{row}: 报错原文 'ValueError:' 选不中它自己这一行：01:bad-int 打印" in ln for ln in lines), lines


class TestCourseDataFiles:
    """Row 13/L3: files declared in course.toml's data are in every run directory."""

    BODY = '```python {#heights}\nwith open("heights.csv", encoding="utf-8") as f:\n    print(f.read().strip())\n```\n\n'

    def make(self, tmp_path):
        course = make_course(tmp_path / "c", ANATOMY_HEAD + self.BODY + ANATOMY_TAIL)
        (course / "heights.csv").write_text("name,cm\nA,170\n", encoding="utf-8")
        set_toml(course, 'checkpoints = "cp"\n', 'checkpoints = "cp"\npreload = []\ndata = ["heights.csv"]\n')
        return course

    def test_accept_and_verify_read_the_file_and_a_changed_file_is_not_served_from_the_cache(self, tmp_path):
        course = self.make(tmp_path)
        out = tc("--content", str(course), "verify", "--accept", "01", home=tmp_path / "h")
        assert out.returncode == 0, out.stdout + out.stderr
        assert "```output\nname,cm\nA,170\n```" in (course / "01.md").read_text(encoding="utf-8")
        (course / "heights.csv").write_text("name,cm\nA,171\n", encoding="utf-8")
        out = tc("--content", str(course), "verify", home=tmp_path / "h")
        assert out.returncode == 1 and "+A,171" in out.stdout, out.stdout

    def test_a_missing_or_outside_data_file_is_a_problem(self, tmp_path):
        course = self.make(tmp_path)
        set_toml(course, 'data = ["heights.csv"]', 'data = ["weights.csv", "../x.csv"]')
        lines = check_lines(course, tmp_path / "h")
        assert any("course.toml:4: data 文件 'weights.csv' 在 " in ln and "里不存在" in ln for ln in lines), lines
        assert any("course.toml:4: data 文件 '../x.csv' 在课程目录之外" in ln for ln in lines), lines

    def test_the_sandbox_runner_copies_them_too(self, tmp_path):
        from torchcourse.runner.core import Runner
        from torchcourse.runner.sandbox import SandboxRunner, sandbox_problem
        from torchcourse.course import load_course

        course = load_course(self.make(tmp_path))
        snip = course.chapter("01").snippet("heights")
        runners = [Runner(cache_dir=None, warm=False, preload=(), data=course.data)]
        if sandbox_problem() is None:
            runners.append(SandboxRunner(cache_dir=None, warm=False, preload=(), data=course.data))
        for runner in runners:
            try:
                res = runner.run(snip, use_cache=False)
            finally:
                runner.close()
            assert res.actual == "name,cm\nA,170", (type(runner).__name__, res.actual, res.message)


class TestImportAcrossARenamedId:
    def test_an_export_of_a_former_id_is_imported(self, tmp_path):
        from torchcourse.progress import open_store

        course = make_course(tmp_path / "c", ANATOMY_HEAD + ANATOMY_TAIL)
        set_toml(course, 'title = "t"\n', 'title = "t"\nid = "old-id"\n')
        store, _ = open_store(tmp_path / "learner.sqlite3", course_id="old-id")
        store.reach_break("01", 1, final=True)
        (tmp_path / "export.json").write_text(__import__("json").dumps(store.export_data()), encoding="utf-8")
        store.close()
        set_toml(course, 'id = "old-id"\n', 'id = "new-id"\naliases = ["old-id"]\n')
        out = tc("--content", str(course), "import", str(tmp_path / "export.json"), home=tmp_path / "h")
        assert out.returncode == 0 and "已从" in out.stdout, out.stdout + out.stderr
        out = tc("--content", str(course), "progress", home=tmp_path / "h")
        assert "断点 1/1 之后" in out.stdout, out.stdout


class TestOneErrorOneRowAcrossAppendices:
    """Row 86: two appendices quoting the same 报错原文 would list the row twice in the lookup."""

    def test_the_second_row_names_the_first_file(self, tmp_path):
        course = tmp_path / "fresh"
        assert tc("new", str(course), home=tmp_path / "h").returncode == 0
        shutil_copy = (course / "A-error-lookup.md").read_text(encoding="utf-8").replace("# 附录：报错反查", "# 附录 B")
        (course / "B-more.md").write_text(shutil_copy, encoding="utf-8")
        set_toml(course, '[[routes]]', '[[chapters]]\nid = "B"\nfile = "B-more.md"\ntitle = "附录 B"\npromise = "按报错原文找到讲它的那一节"\nkind = "appendix"\n\n[[routes]]')
        row = next(n for n, ln in enumerate(shutil_copy.splitlines(), 1) if ln.startswith("| `ValueError"))
        lines = check_lines(course, tmp_path / "h")
        assert any(f"B-more.md:{row}: 报错原文" in ln and f"已经是 A-error-lookup.md:{row} 那一行的了" in ln for ln in lines), lines


class TestACopiedCourseKeepingItsId:
    """Row 68: a course copied as a template keeps the id of a course the progress store knows."""

    def test_check_names_the_other_folder(self, tmp_path):
        import shutil

        first = make_course(tmp_path / "first", ANATOMY_HEAD + ANATOMY_TAIL)
        set_toml(first, 'title = "t"\n', 'title = "t"\nid = "np-bcast"\n')
        assert tc("--content", str(first), "progress", home=tmp_path / "h").returncode == 0  # the store learns its folder
        second = tmp_path / "second"
        shutil.copytree(first, second)
        lines = check_lines(second, tmp_path / "h")
        assert any(f"course.toml:2: 课程 id 'np-bcast' 也是 {first.resolve()} 里那门课的 id" in ln for ln in lines), lines
        assert check_lines(first, tmp_path / "h")[-1].endswith("：0 处问题")


class TestAHeadingWithoutWordsHasNoAnchor:
    def test_an_emoji_only_heading_is_warned(self, tmp_path):
        course = make_course(tmp_path / "c", ANATOMY_HEAD + "## 🧪\n\n正文。\n\n## 🔬 {#lab}\n\n正文。\n\n" + ANATOMY_TAIL)
        lines = check_lines(course, tmp_path / "h")
        assert any("01.md:9: ⚠️ 标题「🧪」里没有文字，得不到锚点" in ln for ln in lines), lines
        assert not any("「🔬」" in ln for ln in lines)


class TestARefusedChapterFileIsOneProblem:
    """L11: a chapter file outside the course root is one problem, not six."""

    def test_links_and_the_checkpoint_are_not_reported_again(self, tmp_path):
        body = "见[第 02 章](02)。\n\n"
        course = make_course(tmp_path / "c", ANATOMY_HEAD + body + ANATOMY_TAIL)
        (tmp_path / "shared").mkdir()
        (tmp_path / "shared" / "02.md").write_text(ANATOMY_HEAD + ANATOMY_TAIL, encoding="utf-8")
        set_toml(course, 'file = "02.md"\ntitle = "U"\npromise = "q"\nplanned = true\n', 'file = "../shared/02.md"\ntitle = "U"\npromise = "q"\n')
        lines = [ln for ln in check_lines(course, tmp_path / "h") if "⚠️" not in ln]
        assert len(lines) == 2 and "在课程根目录" in lines[0] and "之外，不予读取" in lines[0] and lines[1].endswith("：1 处问题"), lines
