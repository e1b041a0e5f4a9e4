"""Broken course files are problems with file:line, never a traceback: wrong field types, invalid
UTF-8, a BOM, unknown keys, an unclosed fence, paths outside the root."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_support import tc
from torchcourse.course import load_course


CHAPTER = """# 测试章

🎯 p

```python {#hello}
print("你好")
```

```output
你好
```

## ✅ 检查点

<!-- break -->

## ⚡ 走神救援
"""

GOOD_ENTRY = '[[chapters]]\nid = "01"\nfile = "01.md"\ntitle = "T"\npromise = "p"\n'


def make(root: Path, toml: bytes | str, chapter: str = CHAPTER) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "course.toml").write_bytes(toml if isinstance(toml, bytes) else toml.encode("utf-8"))
    (root / "01.md").write_text(chapter, encoding="utf-8")
    return root




BAD = {
    "chapters-ints": ('title = "t"\nchapters = [1, 2]\n', 2, "chapters 必须是 [[chapters]] 表"),
    "routes-string": ('title = "t"\nroutes = "D"\n' + GOOD_ENTRY, 2, "routes 必须是 [[routes]] 表"),
    "invalid-utf8": (b'title = "t"\n# \xff\xfe broken\n' + GOOD_ENTRY.encode(), 2, "不是合法的 UTF-8"),
    "target-minutes-text": ('title = "t"\n' + GOOD_ENTRY + '\n[[chapters]]\nid = "02"\nfile = "02.md"\ntitle = "U"\npromise = "q"\nplanned = true\ntarget_minutes = "abc"\n', 14, "target_minutes 必须是正的分钟数"),
    "unknown-key": ('title = "t"\n' + GOOD_ENTRY + 'plannd = true\n', 7, "章节条目里有未知的键 'plannd'（是不是想写 planned？）"),
    "title-not-string": ('title = 3\n' + GOOD_ENTRY, 1, "title 必须是字符串"),
    "id-not-string": ('title = "t"\n[[chapters]]\nid = 1\nfile = "01.md"\ntitle = "T"\npromise = "p"\n', 3, "id 必须是字符串"),
    "route-chapters-string": ('title = "t"\n' + GOOD_ENTRY + '[[routes]]\nid = "A"\nname = "n"\naudience = "a"\nchapters = "01"\n', 11, "chapters 必须是章节 id（字符串）的列表"),
    "outside-relative": ('title = "t"\n[[chapters]]\nid = "01"\nfile = "../../../../../../../etc/passwd"\ntitle = "T"\npromise = "p"\n', 4, "在课程根目录"),
    "outside-absolute": ('title = "t"\n[[chapters]]\nid = "01"\nfile = "/etc/passwd"\ntitle = "T"\npromise = "p"\n', 4, "在课程根目录"),
    "checkpoint-outside": ('title = "t"\n' + GOOD_ENTRY + 'checkpoint = "../../../../../etc/passwd"\n', 7, "在检查点文件夹"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_broken_course_toml_is_a_problem_with_file_and_line(tmp_path, name):
    toml, line, message = BAD[name]
    root = make(tmp_path / "c", toml)
    course = load_course(root)  # what the app and every command do first: must not raise
    found = [p for p in course.problems if message in p.message]
    assert found, [str(p) for p in course.problems]
    assert (found[0].file, found[0].line) == (root / "course.toml", line), str(found[0])
    assert all(Path(c.file).resolve().is_relative_to(root.resolve()) for c in course.chapters)
    out = tc("--content", str(root), "check", home=tmp_path / "h")
    assert out.returncode == 1 and "Traceback" not in out.stderr + out.stdout, out.stderr
    assert f"course.toml:{line}:" in out.stdout + out.stderr
    out = tc("--content", str(root), "check", "--json", home=tmp_path / "h")
    assert "Traceback" not in out.stderr, out.stderr
    json.loads(out.stdout)
    out = tc("--content", str(root), "verify", "--json", home=tmp_path / "h")
    assert "Traceback" not in out.stderr, out.stderr


def test_a_utf8_bom_is_accepted(tmp_path):
    root = make(tmp_path / "c", b"\xef\xbb\xbf" + ('title = "t"\n' + GOOD_ENTRY).encode())
    course = load_course(root)
    assert course.title == "t" and [c.id for c in course.chapters] == ["01"]
    assert not [p for p in course.problems if "course.toml" in str(p.file)]


def test_an_unclosed_fence_names_the_fence_line(tmp_path):
    chapter = CHAPTER.replace("你好\n```\n\n## ✅", "你好\n\n## ✅", 1)  # the output block (line 9) never closes
    root = make(tmp_path / "c", 'title = "t"\n' + GOOD_ENTRY, chapter)
    course = load_course(root)
    msgs = [(p.line, p.message) for p in course.problems]
    assert any(line == 9 and "一直没有关闭" in m for line, m in msgs), msgs
    assert not any("这一章没有断点" in m for _, m in msgs), msgs
