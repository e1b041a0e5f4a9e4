"""Tests written for the course package's mutation survivors (tools/mutation.py course; issue 38).

Each loads a small course written here and asserts on what an author or a learner sees: the
problems ``torchcourse check`` prints (file, line, message), a snippet's settings as the runner
gets them, the sections and parts the reader shows. The mutants each one kills are named in the
commit messages.
"""

from __future__ import annotations

from pathlib import Path

from torchcourse.course import load_course

COURSE_TOML = """title = "课程模型测试"
chars_per_minute = 170

[[chapters]]
id = "01"
file = "01-one.md"
title = "第一章"
promise = "只为测试课程模型"
target_minutes = 1

[[routes]]
id = "A"
name = "全部"
audience = "测试"
chapters = ["01"]
"""

HEAD = """# 第一章

🎯 只为测试课程模型

## 正文 {#body}

"""

TAIL = """
## ✅ 检查点

<!-- break -->

## ⚡ 走神救援

回顾。
"""


def load(tmp_path: Path, body: str, head: str = HEAD, tail: str = TAIL):
    """A one-chapter course whose chapter is HEAD + body + TAIL; returns (course, chapter text)."""
    root = tmp_path / "course"
    root.mkdir(exist_ok=True)
    (root / "course.toml").write_text(COURSE_TOML, encoding="utf-8")
    text = head + body + tail
    (root / "01-one.md").write_text(text, encoding="utf-8")
    return load_course(root), text


def line_of(text: str, needle: str) -> int:
    return next(n for n, ln in enumerate(text.splitlines(), start=1) if needle in ln)


def problems(course) -> list[tuple[int, str]]:
    return [(p.line, p.message) for p in course.problems]


def snippet_block(attrs: str, sid: str = "s", output: str = "1\n") -> str:
    return f"```python {{#{sid} {attrs}}}\nprint(1)\n```\n\n```output\n{output}```\n\n"


# ----------------------------------------------------------------------------- fence attributes


def test_fence_attributes_at_their_bounds_are_taken(tmp_path):
    body = (snippet_block("timeout=0.5", "half") + snippet_block("timeout=600", "max") + snippet_block("exit=1", "one")
            + snippet_block("exit=255", "most") + snippet_block("raises=torch.OutOfMemoryError", "oom")
            + snippet_block("cold", "c") + "```python {#g gpu}\nprint(1)\n```\n\n```python {#n norun}\nprint(1)\n```\n\n")
    course, _ = load(tmp_path, body)
    assert problems(course) == []
    ch = course.chapter("01")
    assert (ch.snippet("half").timeout, ch.snippet("max").timeout) == (0.5, 600.0)
    flags = {sid: (ch.snippet(sid).cold, ch.snippet(sid).gpu, ch.snippet(sid).norun) for sid in ("c", "g", "n", "half")}
    assert flags == {"c": (True, False, False), "g": (False, True, False), "n": (False, False, True), "half": (False, False, False)}
    assert (ch.snippet("one").exit_code, ch.snippet("most").exit_code) == (1, 255)
    assert ch.snippet("oom").raises == "torch.OutOfMemoryError"


def test_fence_attributes_out_of_bounds_or_malformed_are_problems_at_the_fence(tmp_path):
    cases = {
        "t2": ("timeout=1=2", "attribute timeout= needs a number of seconds above 0 and at most 600, got '1=2'"),
        "t0": ("timeout=0", "attribute timeout= needs a number of seconds above 0 and at most 600, got '0'"),
        "e0": ("exit=0", "attribute exit= needs the exit status the snippet ends with, 1 to 255 (as sys.exit(3) gives 3), got '0'"),
        "e256": ("exit=256", "attribute exit= needs the exit status the snippet ends with, 1 to 255 (as sys.exit(3) gives 3), got '256'"),
        "ex": ("exit=x", "attribute exit= needs the exit status the snippet ends with, 1 to 255 (as sys.exit(3) gives 3), got 'x'"),
        "e12": ("exit=1=2", "attribute exit= needs the exit status the snippet ends with, 1 to 255 (as sys.exit(3) gives 3), got '1=2'"),
        "r1": ("raises=1Bad", "attribute raises= needs an exception class name such as RuntimeError, got '1Bad'"),
        "r2": ("raises=A=B", "attribute raises= needs an exception class name such as RuntimeError, got 'A=B'"),
        "u1": ("label=x", "unknown fence attribute 'label=x' (known: #id, cold, gpu, norun, exit=N, timeout=N, raises=ExceptionName)"),
        "u2": ("timout=5", "unknown fence attribute 'timout=5'; did you mean 'timeout=5'? (known: #id, cold, gpu, norun, exit=N, timeout=N, raises=ExceptionName)"),
    }
    body = "".join(snippet_block(attrs, sid) for sid, (attrs, _) in cases.items())
    course, text = load(tmp_path, body)
    got = problems(course)
    assert {p.file for p in course.problems} == {course.chapter("01").file}
    for sid, (attrs, message) in cases.items():
        assert (line_of(text, "{#" + sid + " "), message) in got, (sid, got)
        snip = course.chapter("01").snippet(sid)
        assert snip.bad_attrs == (attrs,)  # the runner refuses a snippet with a bad attribute
        assert snip.exit_code is None and snip.raises is None
    assert len(got) == len(cases)


def test_a_python_fence_with_words_after_it_is_a_snippet_without_an_id(tmp_path):
    course, text = load(tmp_path, "```python extra words\nprint(1)\n```\n\n```output\n1\n```\n\n")
    assert problems(course) == [(line_of(text, "```python extra"), "python snippet without an id: write ```python {#some-id}")]
    [snip] = course.chapter("01").snippets
    assert snip.code == "print(1)\n"


def test_a_fence_info_with_leading_spaces_is_read_the_same(tmp_path):
    course, _ = load(tmp_path, "```   python {#spaced timeout=5}\nprint(1)\n```\n\n```output\n1\n```\n\n")
    assert problems(course) == []
    assert course.chapter("01").snippet("spaced").timeout == 5.0


def test_a_comment_at_the_edge_of_looking_like_a_break_is_reported(tmp_path):
    # "brisk" is as near to "break" as the rule allows (a similarity of exactly 0.6)
    # only a comment's first six letters are compared: "outbreak" is an author's note
    course, text = load(tmp_path, "一段话。\n\n<!-- brisk -->\n\n<!-- 作者的备注 -->\n\n<!-- outbreak of errors -->\n\n")
    assert problems(course) == [(line_of(text, "brisk"), "'<!-- brisk -->' looks like a break marker but is not one: write <!-- break --> or <!-- break: 标签 --> (lower-case, a colon before the label) alone on its line")]
