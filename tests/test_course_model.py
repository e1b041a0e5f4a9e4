"""The course model, loader and checker: the shipped course, and malformed fixtures whose every
problem must name its file and line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchcourse import paths
from torchcourse.course import chapter_minutes, load_course
from torchcourse.course.chapter import minutes_for, reading_chars
from torchcourse.check import all_problems

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "tests" / "fixtures"


def line_of(path: Path, text: str, nth: int = 1) -> int:
    """1-based line of the nth line of ``path`` that equals ``text`` (stripped)."""
    hits = [i for i, ln in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1) if ln.strip() == text]
    assert len(hits) >= nth, f"{text!r} not found {nth} time(s) in {path}"
    return hits[nth - 1]


def _counted_by_the_rule(source: str) -> int:
    """The ⏱ count as content/README.md states it, written here independently of
    ``course.chapter.reading_chars``: every non-whitespace character, except HTML comments,
    fence delimiter lines, ``{#anchor}`` at a line's end, a course link's target ``(03#a)``,
    output alternatives for other releases, and proof snippets with their output blocks."""
    while "<!--" in source and "-->" in source[source.index("<!--"):]:
        start = source.index("<!--")
        source = source[:start] + source[source.index("-->", start) + 3:]
    kept = []
    in_alternative = False  # an output alternative for another release (```output {torch==…}) counts nothing
    in_proof = False  # a proof snippet (```python {#id proof}) and the output blocks after it count nothing
    after_proof = False
    for line in source.split("\n"):
        if in_alternative or in_proof:
            if line.strip() == "```":
                in_alternative = in_proof = False
            continue
        stripped = line.strip()
        if after_proof and stripped.startswith("```output"):
            in_proof = True
            continue
        if stripped:
            after_proof = False
        if stripped.startswith("```python {") and "proof" in stripped[stripped.index("{"):].replace("}", " ").split():
            in_proof = after_proof = True
            continue
        if line.lstrip().startswith("```output {"):
            in_alternative = True
            continue
        if line.lstrip().startswith(("```", "~~~")):
            continue
        end = line.rstrip()
        if end.endswith("}") and "{#" in end:
            anchor = end[end.rindex("{#") + 2:-1]
            if anchor and all(c.isascii() and (c.isalnum() or c in "_-") for c in anchor):
                line = end[: end.rindex("{#")]
        kept.append(line)
    text = "\n".join(kept)
    count, i = 0, 0
    while i < len(text):
        if text.startswith("](", i):
            close = text.find(")", i + 2)
            href = text[i + 2:close] if close != -1 else None
            chapter, _, anchor = (href or "").partition("#")
            if href is not None and chapter.isascii() and chapter.isalnum() | (chapter == "") and (
                    "#" not in href or (anchor and all(c.isascii() and (c.isalnum() or c in "_-") for c in anchor))):
                count += 1  # the ']' stays: the reader shows the link text
                i = close + 1
                continue
        if not text[i].isspace():
            count += 1
        i += 1
    return count


# -- the shipped course -------------------------------------------------------------------


@pytest.fixture(scope="module")
def shipped():
    return load_course(paths.shipped_content_dir())


def test_shipped_course_shape(shipped):
    assert [c.id for c in shipped.chapters] == ["00", "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "A"]
    assert [c.kind for c in shipped.chapters].count("appendix") == 1 and shipped.chapter("A").kind == "appendix"
    assert {r.id: r.chapters for r in shipped.routes} == {
        "A": ["02", "03", "04", "A"],
        "B": ["05", "06", "07"],
        "C": ["01", "02", "09", "10"],
        "D": ["00", "01", "02", "03", "04", "05", "06", "07", "08", "09", "10"],
    }
    for route in shipped.routes:
        # a route's time: each written chapter's minutes, each planned one's target
        # (the appendix is a table to consult, not reading: it counts in no route's minutes)
        read = [c for c in route.chapters if shipped.chapter(c).kind != "appendix"]
        assert route.minutes == sum(shipped.chapter(c).minutes if shipped.chapter(c).available else shipped.chapter(c).target_minutes
                                    for c in read)
        assert route.minutes == sum(chapter_minutes(shipped.chapter(c)) for c in read)
        assert route.name and route.audience
    assert all(c.title and c.promise for c in shipped.chapters)


def test_shipped_course_has_no_problems(shipped):
    assert [str(p) for p in all_problems(shipped)] == []


def test_shipped_written_chapters_follow_the_anatomy(shipped):
    for ch in shipped.chapters:
        if not ch.available:
            assert ch.target_minutes, ch.id  # planned chapters still carry their target
            continue
        # counted again by the rule of content/README.md ("Reading time"), not with the loader's code
        assert ch.reading_chars == _counted_by_the_rule(ch.file.read_text(encoding="utf-8")), ch.id
        assert ch.minutes == max(1, int(ch.reading_chars / shipped.chars_per_minute + 0.5)), ch.id
        if ch.kind == "chapter":
            assert ch.break_points >= 1, ch.id
            if ch.minutes > 55:
                assert ch.break_points >= 2, ch.id
            if ch.minutes >= 110:
                assert ch.break_points >= 3, ch.id
        ids = [s.id for s in ch.snippets]
        assert len(ids) == len(set(ids)), ch.id


# -- parsing rules --------------------------------------------------------------------------


def test_reading_chars_rule():
    text = "# 标题 {#anchor}\n\n一二三 abc\n<!-- break: 休息 -->\n```python {#x}\nx = 1\n```\n"
    # counted: 标题 (2, '#' too: '#'), 一二三abc (6), x=1 (3)
    assert reading_chars(text) == len("#标题") + len("一二三abc") + len("x=1")


class TestProofSnippetsAreNoReadingTime:
    """A proof snippet (``{#id proof}``) is folded under its claim: neither its code nor its output
    block(s) count towards the ⏱ badge, while an ordinary snippet's do."""

    def test_a_proof_and_its_output_do_not_count(self):
        before = "# 标题\n\n断言。\n\n"
        after = "\n后文。\n"
        proof = "```python {#p proof}\nprint(12345)\n```\n\n```output\n12345\n```\n"
        plain = proof.replace(" proof}", "}")
        assert reading_chars(before + proof + after) == len("#标题断言。后文。")
        assert reading_chars(before + plain + after) == len("#标题断言。后文。") + len("print(12345)12345")

    def test_the_loader_marks_the_snippet_as_a_proof(self, tmp_path):
        root = _two_chapter_course(
            tmp_path / "c",
            "# 一\n\n断言。\n\n```python {#p proof}\nprint(1)\n```\n\n```output\n1\n```\n\n<!-- break -->\n",
            "# 二\n\n正文。\n",
        )
        one = load_course(root).chapter("01")
        assert [(s.id, s.proof) for s in one.snippets] == [("p", True)]
        assert one.reading_chars == len("#一断言。")


def _two_chapter_course(root: Path, one: str, two: str, cpm: int = 4) -> Path:
    root.mkdir(parents=True)
    (root / "course.toml").write_text(
        f'title = "两章"\nchars_per_minute = {cpm}\n\n'
        '[[chapters]]\nid = "01"\nfile = "01.md"\ntitle = "一"\npromise = "p"\n\n'
        '[[chapters]]\nid = "02"\nfile = "02.md"\ntitle = "二"\npromise = "p"\n',
        encoding="utf-8",
    )
    (root / "01.md").write_text(one, encoding="utf-8")
    (root / "02.md").write_text(two, encoding="utf-8")
    return root


def test_reading_time_of_a_small_chapter_counted_by_hand(tmp_path):
    """Counted by hand, not with the loader's functions: '#一' (2) + '读[第二章]再回来。' (10) +
    'x=[1]' (5) = 17 characters; the link target '(02#two)' (8), the anchor, the fence lines and
    the break marker do not count. At 4 characters a minute: round(17 / 4) = 4 minutes (with the
    link target: 25 characters, 6 minutes)."""
    root = _two_chapter_course(
        tmp_path / "c",
        "# 一 {#one}\n\n读[第二章](02#two)再回来。\n\n```python\nx = [1]\n```\n\n<!-- break -->\n",
        "# 二 {#two}\n\n正文。\n",
    )
    course = load_course(root)
    one = course.chapter("01")
    assert (one.reading_chars, one.minutes) == (17, 4)
    assert (course.chapter("02").reading_chars, course.chapter("02").minutes) == (5, 1)


def test_a_link_to_a_missing_anchor_in_another_written_chapter_is_a_problem(tmp_path):
    """01 links to 02#tow: chapter 02 is written and has #two, not #tow. The problem names 01's
    file and line, the chapter and the anchor, and suggests the nearest one; the good link
    (02#two) and the same-chapter link (#one) are not problems."""
    root = _two_chapter_course(
        tmp_path / "c",
        "# 一 {#one}\n\n见[上面](#one)。\n\n读[第二章](02#two)。\n\n又见[第二章](02#tow)。\n",
        "# 二 {#two}\n\n正文。\n",
    )
    course = load_course(root)
    assert [str(p) for p in all_problems(course) if "链接 (" in p.message] == [
        f"{root / '01.md'}:7: 链接 (02#tow)：第 02 章没有小节或代码块 #tow；最接近的：#two"
    ]


def test_an_empty_chapter_file_is_reported_at_line_1(tmp_path):
    root = _two_chapter_course(tmp_path / "c", "", "# 二 {#two}\n\n正文。\n")
    problems = [str(p) for p in load_course(root).problems if p.file == root / "01.md"]
    assert f"{root / '01.md'}:1: 没有 '## ✅ 检查点' 标题（检查点）" in problems, problems
    assert f"{root / '01.md'}:1: 没有 '## ⚡ 走神救援' 标题（回顾）" in problems, problems


def test_parts_sections_and_snippets_of_a_fixture_chapter():
    course = load_course(FIX / "lookupcourse")
    ch = course.chapter("01")
    path = ch.file
    brk = line_of(path, "<!-- break -->")
    assert [(p.index, p.start_line, p.end_line) for p in ch.parts] == [(0, 1, brk), (1, brk + 1, len(ch.source.splitlines()))]
    assert ch.parts[0].break_label == "断点" and ch.parts[1].break_label is None
    assert ch.break_points == 1
    assert [s.anchor for s in ch.sections][:3] == ["视图与形状", "view-vs-reshape", "shape-mismatch"]
    snip = ch.snippet("view-error")
    assert snip.line == line_of(path, "```python {#view-error raises=RuntimeError}")
    assert snip.section == "view-vs-reshape" and snip.part == 0
    assert snip.expected.startswith("Traceback (most recent call last):")
    assert snip.key == "01:view-error" and course.snippet("01:view-error") is snip
    assert course.chapter("03").available is False and course.chapter("03").snippets == []


# -- malformed fixtures: every problem names file and line -----------------------------------


@pytest.fixture(scope="module")
def bad():
    return load_course(FIX / "badcourse")


def problems_by_message(course, needle: str):
    return [(p.file, p.line) for p in course.problems if needle in p.message]


def test_unknown_chapter_in_a_route(bad):
    toml = FIX / "badcourse" / "course.toml"
    assert problems_by_message(bad, "路线 A：未知的章节 '99'") == [(toml, line_of(toml, 'chapters = ["01", "99", "03"]'))]
    assert bad.route("A").chapters == ["01", "03"]


def test_missing_chapter_file(bad):
    toml = FIX / "badcourse" / "course.toml"
    header = line_of(toml, "[[chapters]]", nth=2)  # the entry of chapter 02
    assert problems_by_message(bad, "第 02 章：找不到文件") == [(toml, header)]
    assert bad.chapter("02").available is False
    assert problems_by_message(bad, "chapter 03") == []  # planned: no file needed


def test_runnable_snippet_without_expected_output(bad):
    md = FIX / "badcourse" / "01-bad.md"
    assert problems_by_message(bad, "代码块 #lonely 后面没有 ```output 块") == [(md, line_of(md, "```python {#lonely}"))]


def test_duplicate_snippet_id(bad):
    md = FIX / "badcourse" / "01-bad.md"
    first, second = line_of(md, "```python {#twice}"), line_of(md, "```python {#twice}", nth=2)
    assert problems_by_message(bad, "代码块 id #twice 重复了") == [(md, second)]
    assert f"第一次出现在第 {first} 行" in next(p.message for p in bad.problems if "#twice" in p.message)


def test_unknown_fence_attribute(bad):
    md = FIX / "badcourse" / "01-bad.md"
    assert problems_by_message(bad, "未知的围栏属性 'fast'") == [(md, line_of(md, "```python {#fast-one fast}"))]


def test_bad_course_has_exactly_these_problems(bad):
    assert len(bad.problems) == 7, [str(p) for p in bad.problems]  # five planted, plus no 🎯 and no ✅
    for p in bad.problems:
        assert str(p).startswith(f"{p.file}:{p.line}: ")


def test_long_chapter_without_enough_break_points():
    course = load_course(FIX / "longcourse")
    one = course.chapter("01")
    assert one.minutes > 55 and one.break_points == 1
    assert problems_by_message(course, "（> 55），却只有 1 个断点") == [(one.file, 1)]
    assert course.chapter("02").minutes > 55 and course.chapter("02").break_points == 2
    very = course.chapter("03")
    assert very.minutes >= 110 and very.break_points == 2
    assert problems_by_message(course, "（>= 110），却只有 2 个断点") == [(very.file, 1)]
    assert len(course.problems) == 2


def test_malformed_toml():
    course = load_course(FIX / "badtoml")
    toml = FIX / "badtoml" / "course.toml"
    assert [(p.file, p.line) for p in course.problems] == [(toml, line_of(toml, 'title = "少了一个引号'))]
    assert "TOML 写法有误" in course.problems[0].message
    assert course.chapters == [] and course.routes == []
    # the checker reports only that (course.toml is not mistaken for a stray checkpoint file)
    assert [(p.file, p.line) for p in all_problems(course)] == [(toml, 7)]


@pytest.mark.parametrize("name, count", [("badcourse", 7), ("longcourse", 2), ("badtoml", 1)])
def test_check_command_prints_file_line_and_fails(name, count):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run(
        [sys.executable, "-m", "torchcourse", "--content", str(FIX / name), "check"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 1
    lines = [ln for ln in r.stdout.splitlines() if ": ⚠️ " not in ln]  # warnings are not problems
    assert lines[-1].endswith(f"{count} 处问题")
    assert len(lines) == count + 1
    for ln in lines[:-1]:
        file, line, _ = ln.split(":", 2)
        assert Path(file).is_file() and int(line) >= 1


def test_chinese_paragraph_broken_across_lines_is_reported_with_its_line(tmp_path):
    from torchcourse.course import load_course

    (tmp_path / "course.toml").write_text(
        'title = "t"\n[[chapters]]\nid = "01"\nfile = "a.md"\ntitle = "x"\npromise = "y"\n'
        '[[routes]]\nid = "A"\nname = "n"\naudience = "a"\nchapters = ["01"]\n',
        encoding="utf-8",
    )
    (tmp_path / "a.md").write_text(
        "# 标题\n\nEnglish\nwrapped is fine.\n\n第一行中文\n接着写第二行。\n\n🎯 y\n\n## ✅ 检查点\n\n<!-- break -->\n\n## ⚡ 走神救援\n", encoding="utf-8"
    )
    problems = [str(p) for p in load_course(tmp_path).problems]
    assert problems == [f"{tmp_path / 'a.md'}:6: 中文段落被断成了多行（显示时两个字之间会多出一个空格）；把这几行接起来"]


def test_a_wrong_reading_time_line_names_the_courses_own_reading_speed(tmp_path):
    """'#一' (2) + '⏱9分钟' (4) + '正文。' (3) = 9 characters at 4 a minute: 2 minutes (the
    message named 170 characters a minute whatever course.toml said)."""
    root = _two_chapter_course(tmp_path / "c", "# 一\n\n⏱ 9 分钟\n\n正文。\n", "# 二 {#two}\n\n正文。\n")
    one = root / "01.md"
    assert f"{one}:3: ⏱ 行写的是 9 分钟，但算出来这一章读 2 分钟（每分钟 4 字）：阅读器显示的是算出来的时长；改正或删掉这个数字" in [
        str(p) for p in load_course(root).problems]


def test_every_shipped_chapter_reads_within_its_band(shipped):
    """The brief's band: computed minutes within ±20 % of the chapter's target (check's ⚠️ says
    which chapter is out; the shipped course has none)."""
    from torchcourse.check import minute_warnings

    assert minute_warnings(shipped) == []
