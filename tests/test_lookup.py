"""Error lookup and full-text search on a fixture course whose outputs come from real runs.

tests/fixtures/lookupcourse: chapters 01 and 02 hold snippets whose expected outputs are real
tracebacks, a real warning and a printed error (filled by fill_outputs.py); chapter 03 is
planned; appendix A holds a 报错原文 table.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchcourse.course import load_course
from torchcourse.check import excerpt_problems, excerpt_sources
from torchcourse.course.appendix import appendix_problems
from torchcourse.lookup import error_entries, errors_in_output, lookup_error, normalize, search_text

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "lookupcourse"


@pytest.fixture(scope="module")
def course():
    c = load_course(FIXTURE)
    assert c.problems == []
    return c


def test_fixture_outputs_hold_real_tracebacks(course):
    # guards the fixture itself: the errors below must be in the expected outputs
    assert "Traceback (most recent call last):" in course.snippet("02:backward-twice").expected
    assert "UserWarning" in course.snippet("01:copy-warning").expected


def test_entries_are_the_appendix_rows(course):
    entries = error_entries(course)
    assert {e.source for e in entries} == {"appendix"}  # the lookup answers over the appendix
    assert [(e.chapter_id, e.anchor) for e in entries] == [
        ("01", "view-vs-reshape"), ("01", "shape-mismatch"), ("02", "second-backward"), ("02", "leaf-inplace"),
        ("01", "copy-construct"), ("01", "printed-error"), ("02", "non-scalar"),
    ]
    first = entries[0]
    assert first.cause == "转置后的张量内存不连续，view 不能只改说明书"
    assert first.section_title == "view 与 reshape"  # taken from the target chapter
    assert first.text.startswith("RuntimeError: view size is not compatible")
    assert first.origin.startswith("A:") and first.check == ""  # a three-column table has no 先查
    warn = entries[4]
    assert warn.text.startswith("UserWarning: To copy construct from a tensor")  # no "file.py:3:" prefix
    assert (warn.cause, warn.check, warn.section_title) == ("把张量交给了 torch.tensor", "改用 detach().clone()", "拷贝构造的警告")
    assert entries[5].text == "RuntimeError: shape '[2, 2]' is invalid for input of size 3"
    assert all(e.chapter_id != "03" for e in entries)


def test_without_an_appendix_the_snippets_errors_are_the_entries(tmp_path):
    root = tmp_path / "c"
    shutil.copytree(FIXTURE, root)
    (root / "A-lookup.md").unlink()
    toml = root / "course.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace('kind = "appendix"', 'kind = "appendix"\nplanned = true'), encoding="utf-8")
    entries = error_entries(load_course(root))
    assert entries and {e.source for e in entries} == {"snippet"}
    by_origin = {e.origin: e for e in entries}
    assert by_origin["01:copy-warning"].text.startswith("UserWarning: To copy construct")
    assert by_origin["02:non-scalar-backward"].anchor == "non-scalar"


def test_errors_in_output_takes_final_lines_and_tab_continuations():
    out = "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n    m.load()\nRuntimeError: Error(s) in loading:\n\tsize mismatch for w.\n\tMissing key(s): b.\n"
    assert errors_in_output(out) == ["RuntimeError: Error(s) in loading: size mismatch for w. Missing key(s): b."]
    assert errors_in_output("tensor([1., 2.])\nall fine\n") == []


def test_normalize_ignores_numbers_addresses_quotes_case():
    assert normalize("Tensor at 0x7F3A2B10 has 'shape' [64, 128]") == normalize('tensor at 0xdeadbeef has "shape" [2, 3]') == "tensor <q>"
    assert normalize("Tensor at 0x7F3A2B10 has no 'grad'") == "tensor no <q>"


@pytest.mark.parametrize(
    "query, origin_anchor",
    [
        ("RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x128 and 256x10)", "shape-mismatch"),
        ("shape '[4, 4]' is invalid for input of size 7", "printed-error"),
        ("retain_graph", "second-backward"),
        ("leaf variable in-place", "leaf-inplace"),
        ("就地", "leaf-inplace"),  # Chinese, matched through the cause
        ("grad can be implicitly created only for scalar outputs", "non-scalar"),
        ("UserWarning: To copy construct from a tensor, it is recommended", "copy-construct"),
        ("view size is not compatible with input tensor", "view-vs-reshape"),
    ],
)
def test_lookup_ranks_the_right_entry_first(course, query, origin_anchor):
    hits = lookup_error(course, query)
    assert hits, query
    assert hits[0].entry.anchor == origin_anchor
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))


def test_lookup_of_a_whole_pasted_traceback(course):
    pasted = (
        "Epoch 3/10\n"
        "Traceback (most recent call last):\n"
        '  File "/home/me/proj/train.py", line 88, in <module>\n'
        "    main()\n"
        '  File "/home/me/proj/train.py", line 80, in main\n'
        "    out = model(x) @ head  # 0x7ffde4c0\n"
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (32x512 and 256x10)\n"
    )
    hits = lookup_error(course, pasted)
    assert hits[0].entry.chapter_id == "01" and hits[0].entry.anchor == "shape-mismatch"
    assert hits[0].score > 0.7
    assert len(hits) == 1 or hits[1].score < hits[0].score


def test_lookup_without_a_match(course):
    assert lookup_error(course, "completely unrelated banana") == []
    assert lookup_error(course, "   ") == []


def test_search_text_is_case_insensitive_and_locates_parts_and_sections(course):
    hits = search_text(course, "RESHAPE")
    assert [(h.chapter_id, h.anchor) for h in hits][:2] == [("01", "view-vs-reshape"), ("01", "view-vs-reshape")]
    for h in hits:
        assert "reshape" in course.chapter(h.chapter_id).source.splitlines()[h.line - 1].lower()
        assert "reshape" in h.excerpt.lower()
    assert any(h.anchor == "copy-construct" for h in hits)  # the prose "Reshape" too
    [after_break] = search_text(course, "视图共享内存")
    assert (after_break.chapter_id, after_break.part) == ("01", 1)
    [zh] = search_text(course, "图在第一次反向传播")
    assert (zh.chapter_id, zh.anchor, zh.part) == ("02", "second-backward", 0)
    assert [h.chapter_id for h in search_text(course, "retain_graph")] == ["02", "A"]
    assert search_text(course, "requires_grad=True w.ones") == []  # words must share a line
    assert {h.chapter_id for h in search_text(course, "torch ones requires_grad=true")} == {"02"}
    assert len(search_text(course, "import", limit=3)) == 3
    assert search_text(course, "没有这段文字") == []


def test_appendix_problems_name_file_and_line(tmp_path):
    root = tmp_path / "c"
    shutil.copytree(FIXTURE, root)
    appendix = root / "A-lookup.md"
    text = appendix.read_text(encoding="utf-8")
    n = len(text.splitlines())
    real = "`RuntimeError: grad can be implicitly created only for scalar outputs`"
    appendix.write_text(
        text
        + f"| {real} | 原因 | 先查 | 没有链接 |\n"
        + f"| {real} | 原因 | 先查 | [09 §没有](09#nope) |\n"
        + f"| {real} | 原因 | 先查 | [02 §没有](02#no-such-anchor) |\n"
        + f"| {real} | 原因 | [02 §非标量输出](02#non-scalar) |\n"
        + "| `RuntimeError: grad can be implicitly created only for vector outputs` | 原因 | 先查 | [02 §非标量输出](02#non-scalar) |\n",
        encoding="utf-8",
    )
    course = load_course(root)
    got = [(p.file, p.line, p.message) for p in sorted(appendix_problems(course) + excerpt_problems(course), key=lambda p: p.line)]
    assert [(f, ln) for f, ln, _ in got] == [(appendix, n + k) for k in range(1, 6)]
    assert "需要一个链接" in got[0][2] and "未知章节 '09'" in got[1][2] and "#no-such-anchor" in got[2][2]
    assert "需要 4 个单元格" in got[3][2]
    assert "没有出现在任何代码块的期望输出里" in got[4][2] and "vector outputs" in got[4][2]
    assert appendix_problems(load_course(FIXTURE)) == [] and excerpt_problems(load_course(FIXTURE)) == []


def test_an_excerpt_matches_the_output_as_the_runner_normalizes_it(tmp_path):
    # the output's traceback frames, addresses and line breaks do not count; every word does
    root = tmp_path / "c"
    shutil.copytree(FIXTURE, root)
    appendix = root / "A-lookup.md"
    text = appendix.read_text(encoding="utf-8")
    rows = [
        "| `UserWarning: To copy construct from a tensor, it is recommended\tto use` | 原因 | 先查 | [01 §拷贝构造的警告](01#copy-construct) |",
        "| `RuntimeError: grad can be implicitly created only for scalar outputs` | 原因 | 先查 | [02 §非标量输出](02#non-scalar) |",
        "| `torch/autograd/__init__.py\", line 208, in _make_grads` | 原因 | 先查 | [02 §非标量输出](02#non-scalar) |",  # a frame line: collapsed to "  ..."
    ]
    appendix.write_text(text + "\n".join(rows) + "\n", encoding="utf-8")
    got = appendix_problems(load_course(root)) + excerpt_problems(load_course(root))
    n = len(text.splitlines())
    assert [p.line for p in got] == [n + 3]

    assert excerpt_sources(load_course(root), "grad can be implicitly created") == ["02:non-scalar-backward"]


_WHY_HOME = None


def why(*args: str, content: Path = FIXTURE, input: str | None = None):
    global _WHY_HOME
    import tempfile

    if _WHY_HOME is None:  # why keeps the app's course cache: a private one for these runs
        _WHY_HOME = tempfile.mkdtemp(prefix="tc-why-home-")
    env = dict(os.environ, PYTHONPATH=str(REPO), TORCHCOURSE_HOME=_WHY_HOME)
    env.pop("TORCHCOURSE_CONTENT", None)
    return subprocess.run(
        [sys.executable, "-m", "torchcourse", "--content", str(content), "why", *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120, input=input if input is not None else "",
    )


def test_why_prints_excerpt_cause_and_location():
    r = why("RuntimeError:", "Trying", "to", "backward", "through", "the", "graph", "a", "second", "time")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("1. RuntimeError: Trying to backward through the graph a second time")
    assert lines[1] == "   原因：第一次 backward 之后保存的中间结果已经释放"
    assert lines[2] == "   → 第 02 章 §第二次 backward (02#second-backward)"


def test_why_json():
    r = why("--json", "mat1 and mat2 shapes cannot be multiplied (1x2 and 3x4)")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data[0]["chapter_id"] == "01" and data[0]["anchor"] == "shape-mismatch" and data[0]["link"] == "01#shape-mismatch"
    assert 0 < data[0]["score"] <= 1


def test_why_reads_a_traceback_from_stdin():
    tb = (FIXTURE / "02-graph.md").read_text(encoding="utf-8").split("```output\n")[3].split("```")[0]
    assert "Traceback" in tb
    r = why("-", input=tb.replace("snippet.py", "/somewhere/else/run.py").replace("line 3", "line 42"))
    assert r.returncode == 0, r.stderr
    assert "→ 第 02 章 §叶子上的就地操作 (02#leaf-inplace)" in r.stdout.splitlines()[2]


def test_why_without_a_match_explains_and_exits_1():
    r = why("completely", "unrelated", "banana")
    assert r.returncode == 1
    # a course without not_covered in course.toml: a wording that names no library, no chapter 00
    assert "本课程没有讲到这条报错" in r.stderr and "PyTorch" not in r.stderr and "第 00 章" not in r.stderr
    assert "只粘贴最后一行" not in r.stderr
    assert not re.search(r"\b\d\d:\d+\b", r.stderr + r.stdout)  # no 02:335 a learner cannot use
    r = why("--json", "completely unrelated banana")
    assert r.returncode == 1 and json.loads(r.stdout) == []


def test_why_of_an_empty_text_says_it_was_empty():
    for args, stdin in (([""], ""), (["  "], ""), (["-"], "\n\n")):
        r = why(*args, input=stdin)
        assert r.returncode == 1
        assert "输入是空的" in r.stderr and r.stdout == ""


def test_why_names_chapter_and_section_never_a_file_line():
    r = why("a leaf Variable that requires grad is being used in an in-place operation.")
    assert r.returncode == 0, r.stderr
    assert "→ 第 02 章 §叶子上的就地操作 (02#leaf-inplace)" in r.stdout
    assert not re.search(r"\b\d\d:\d+\b", r.stdout)
    r = why("grad can be implicitly created only for scalar outputs")
    assert r.stdout.splitlines()[1:4] == ["   原因：对非标量调用了 backward()", "   先查：损失是不是忘了 .sum()", "   → 第 02 章 §非标量输出 (02#non-scalar)"]


def test_why_on_a_course_without_errors(tmp_path):
    (tmp_path / "course.toml").write_text(
        'title = "空"\n[[chapters]]\nid = "01"\nfile = "01.md"\ntitle = "一"\npromise = "无"\nplanned = true\n', encoding="utf-8"
    )
    r = why("RuntimeError: anything", content=tmp_path)
    assert r.returncode == 1 and "还没有可查的报错条目" in r.stderr


def test_check_reports_bad_appendix_rows(tmp_path):
    root = tmp_path / "c"
    shutil.copytree(FIXTURE, root)
    appendix = root / "A-lookup.md"
    text = appendix.read_text(encoding="utf-8")
    appendix.write_text(
        text
        + "| `RuntimeError: y` | 原因 | 先查 | [02 §非标量输出](02#non-scalar) |\n"  # no run printed it
        + "| `RuntimeError: grad can be implicitly created` | 原因 | 先查 | [02 §没有](02#no-such-anchor) |\n",
        encoding="utf-8",
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-m", "torchcourse", "--content", str(root), "check"], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 1
    n = len(text.splitlines())
    assert f"{appendix}:{n + 1}: 报错原文 'RuntimeError: y' 没有出现在任何代码块的期望输出里" in r.stdout
    # the broken 讲解 link is reported once, as a link (34 L6: it was also "link to unknown section")
    assert f"{appendix}:{n + 2}: 链接 (02#no-such-anchor)：第 02 章没有小节或代码块 #no-such-anchor" in r.stdout
    assert len([ln for ln in r.stdout.splitlines() if "no-such-anchor" in ln]) == 1
    assert f"{appendix}:{n + 2}: 报错原文" not in r.stdout


def test_why_never_imports_textual_or_torch():
    code = (
        "import sys; from torchcourse.cli import main; "
        f"rc = main(['--content', {str(FIXTURE)!r}, 'why', 'retain_graph']); "
        "print('LOADED', [m for m in ('textual', 'torch') if m in sys.modules]); raise SystemExit(rc)"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert "LOADED []" in r.stdout and "02#second-backward" in r.stdout


def test_search_shows_and_searches_text_as_the_reader_shows_it(course):
    # backticks are Markdown, not text: the line reads 「转置之后内存不再连续，view 拒绝工作。」
    [hit] = search_text(course, "连续，view 拒绝")
    assert hit.chapter_id == "01" and "`" not in hit.excerpt and "view 拒绝工作" in hit.excerpt
    # fence lines (```python {#view-error}) and break markers are not text
    assert search_text(course, "{#view-error}") == []
    assert search_text(course, "```python") == []
    assert search_text(course, "<!--") == []


def test_a_message_that_a_longer_entry_repeats_answers_the_shorter_entry():
    """Two rows where one excerpt opens the other (03's no_grad view and the multi-output view):
    the shorter message alone answers its own row; the run that prints the longer one answers the
    longer row, whichever order the rows stand in (a tie would be decided by the order)."""
    from torchcourse.course.appendix import ErrorEntry
    from torchcourse.lookup.errors import prepare

    short = "A view was created in no_grad mode and is being modified inplace with grad mode enabled"
    long = short + ". This view is the output of a function that returns multiple views"
    rows = [ErrorEntry(short, "c", "03", "view-nograd", "s", origin="A:1"),
            ErrorEntry(long, "c", "03", "multi-output-view", "s", origin="A:2"),
            # the longer row's extra words are not its own: a third row of the family has them too
            ErrorEntry("is a view and is being modified inplace. This view is the output of a function that returns"
                       " multiple views.", "c", "03", "multi-output", "s", origin="A:4"),
            ErrorEntry("RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.",
                       "c", "02", "leaf", "s", origin="A:3")]
    runs = [("03:short", f"RuntimeError: {short}."), ("03:long", f"RuntimeError: {long}. Such functions do not"
            " allow the output views to be modified inplace. You should replace the inplace operation by an"
            " out-of-place one.")]
    for order in (rows, rows[::-1]):
        index = prepare(order, outputs=runs)
        for text, anchor in [(short, "view-nograd"), (f"RuntimeError: {short}.", "view-nograd"),
                             (long, "multi-output-view"), (runs[1][1], "multi-output-view")]:
            hits = lookup_error(None, text, entries=index)
            assert hits and hits[0].entry.anchor == anchor, (text, [(h.entry.anchor, h.score) for h in hits])


class TestWhyAtATerminal:
    def test_why_dash_says_how_to_end_the_paste(self, tmp_path):
        """Walk L9: `torchcourse why -` at a terminal waited silently."""
        import os
        import pty
        import select
        import subprocess
        import sys
        import time

        main, child = pty.openpty()
        env = dict(os.environ, TORCHCOURSE_HOME=str(tmp_path))
        proc = subprocess.Popen([sys.executable, "-m", "torchcourse", "why", "-"], stdin=child, stdout=child,
                                stderr=child, env=env, close_fds=True)
        os.close(child)
        seen, deadline = b"", time.monotonic() + 60
        try:
            while "Ctrl+D".encode() not in seen and time.monotonic() < deadline:
                if select.select([main], [], [], 1)[0]:
                    seen += os.read(main, 4096)
            assert "粘贴报错原文".encode() in seen, seen
            os.write(main, b"Trying to backward through the graph a second time\n\x04")
            while proc.poll() is None and time.monotonic() < deadline:
                if select.select([main], [], [], 0.5)[0]:
                    try:
                        seen += os.read(main, 4096)
                    except OSError:
                        break
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)
            os.close(main)
class TestATypedTracebackWithoutLineBreaksIsFound:
    def test_exception_name_glued_to_the_frame_before_it(self):
        from torchcourse import paths
        from torchcourse.lookup.errors import lookup_error

        course = load_course(paths.shipped_content_dir())
        typed = ('Traceback (most recent call last):  File "x.py", line 4, in <module>    y.backward()  '
                 'File "torch/_tensor.py", line 626, in backwardRuntimeError: Trying to backward through the graph '
                 'a second time (or directly access saved tensors after they have already been freed).')
        hits = lookup_error(course, typed)
        assert hits and hits[0].entry.chapter_id == "02" and hits[0].entry.anchor == "second-backward"
