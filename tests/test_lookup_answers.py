"""The error lookup's answers and the full-text search's hits, case by case: which row a pasted
error (decorated, wrapped, typed without its type, with a debugger's header, with other numbers or
names) leads to and in what order, what the mentions show, how much of a paste is read, the
variants file, a course without an appendix, and the search screen's lines (chapter, part, line,
section and the excerpt shown). Each test asserts on what a learner sees."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchcourse.course import load_course
from torchcourse.lookup import search_text

COURSE_TOML = """title = "搜索测试课程"
chars_per_minute = 170

[[chapters]]
id = "01"
file = "01-one.md"
title = "第一章"
promise = "只为测试搜索"
target_minutes = 1

[[chapters]]
id = "02"
file = "02-two.md"
title = "第二章"
promise = "只为测试搜索"
target_minutes = 1

[[routes]]
id = "A"
name = "全部"
audience = "测试"
chapters = ["01", "02"]
"""

LONG = "开端" + "甲" * 148 + "目标词" + "乙" * 148 + "末端"  # a line of 303 characters, the query at 150

CHAPTER_ONE = f"""# 第一章

🎯 只为测试搜索

开头的段落，还没有小节。

## 第一节 {{#first}}

见 [第二节](#second) 与 `code_span` 和 **粗体字**。

> ⭐ 引用里的句子

- 列表里的句子

<!-- 注释里的秘密 --> 注释之外的字

```python {{#snip}}
print("片段输出")
```

```output
片段输出
```

<!-- break: 中场休息 -->

## 第二节 {{#second}}

{LONG}

短行里的目标词

{'丁' * 34}一字之差{'戊' * 170}

{'己' * 150}柚子{'庚' * 100}橙子{'辛' * 150}

尾巴：苹果 香蕉

## ✅ 检查点

## ⚡ 走神救援

<!-- break -->
"""

CHAPTER_TWO = """# 第二章

🎯 只为测试搜索

## 唯一一节 {#only}

第二章里的苹果和香蕉。

## ✅ 检查点

## ⚡ 走神救援

<!-- break -->
"""


def make_course(tmp_path: Path):
    root = tmp_path / "course"
    root.mkdir()
    (root / "course.toml").write_text(COURSE_TOML, encoding="utf-8")
    (root / "01-one.md").write_text(CHAPTER_ONE, encoding="utf-8")
    (root / "02-two.md").write_text(CHAPTER_TWO, encoding="utf-8")
    course = load_course(root)
    return course


def line_no(text: str, needle: str) -> int:
    return next(n for n, ln in enumerate(text.splitlines(), start=1) if needle in ln)


def test_search_results_show_lines_as_the_reader_shows_them(tmp_path):
    course = make_course(tmp_path)
    # a break point's label is what the 🛑 banner shows: it is found, shown alone
    [label] = search_text(course, "中场休息")
    assert (label.chapter_id, label.line, label.excerpt) == ("01", line_no(CHAPTER_ONE, "中场休息"), "中场休息")
    # any other comment is not text: neither found nor shown
    assert search_text(course, "注释里的秘密") == []
    [beside] = search_text(course, "注释之外")
    assert beside.excerpt == "注释之外的字"
    # a link shows its text, never its target
    [link] = search_text(course, "与 code_span")
    assert link.excerpt == "见 第二节 与 code_span 和 粗体字。"
    assert search_text(course, "(#second)") == []
    # a heading: no hashes, no {#anchor}
    heading = [h for h in search_text(course, "第一节") if h.line == line_no(CHAPTER_ONE, "## 第一节")]
    assert [(h.excerpt, h.anchor) for h in heading] == [("第一节", "first")]  # a heading's hit is in its own section
    assert search_text(course, "{#first}") == []
    # quote and list marks are not text either
    assert [h.excerpt for h in search_text(course, "引用里的句子")] == ["⭐ 引用里的句子"]
    assert [h.excerpt for h in search_text(course, "列表里的句子")] == ["列表里的句子"]
    # a fence line (```python {#snip}) is no text: "python" is found nowhere in the prose
    assert search_text(course, "python") == []
    # the snippet's code and output are text
    assert [h.line for h in search_text(course, "片段输出")] == [line_no(CHAPTER_ONE, 'print("片段输出")'),
                                                              line_no(CHAPTER_ONE, "片段输出") + 4]


def test_a_long_line_is_shown_as_a_window_around_the_hit(tmp_path):
    course = make_course(tmp_path)
    hits = search_text(course, "目标词")
    assert [h.line for h in hits] == [line_no(CHAPTER_ONE, LONG), line_no(CHAPTER_ONE, "短行里的目标词")]
    long, short = hits
    # 100 characters of the 303, starting a third of the width before the hit, cut on both sides
    start = 150 - 100 // 3
    assert long.excerpt == "…" + LONG[start:start + 100] + "…"
    assert short.excerpt == "短行里的目标词"  # a short line is shown whole
    # a hit near the start of a long line: no leading "…"; near its end: no trailing one
    [head] = search_text(course, "开端")
    assert head.excerpt == LONG[:100] + "…"
    [tail] = search_text(course, "末端")
    assert tail.excerpt == "…" + LONG[-100:]


def test_a_line_of_exactly_the_width_is_shown_whole(tmp_path):
    course = make_course(tmp_path)
    exact = "丙" * 97 + "恰好的"  # 100 characters
    md = course.root / "01-one.md"
    md.write_text(CHAPTER_ONE.replace("短行里的目标词", exact), encoding="utf-8")
    course = load_course(course.root)
    [hit] = search_text(course, "恰好的")
    assert hit.excerpt == exact


def test_hits_name_their_part_and_section(tmp_path):
    course = make_course(tmp_path)
    [intro] = search_text(course, "开头的段落")
    assert (intro.part, intro.anchor) == (0, "第一章")  # before the first ## section: the title's
    [first] = search_text(course, "列表里的句子")
    assert (first.part, first.anchor) == (0, "first")
    [second] = search_text(course, "短行里的目标词")
    assert (second.part, second.anchor) == (1, "second")  # after the break point
    # every word of the query on one line, in any order: one hit per chapter that has them
    both = search_text(course, "香蕉 苹果")
    assert [(h.chapter_id, h.anchor) for h in both] == [("01", "second"), ("02", "only")]
    assert both[0].excerpt == "尾巴：苹果 香蕉"
    # the limit counts hits over the whole course, in course order
    assert [(h.chapter_id) for h in search_text(course, "香蕉 苹果", limit=1)] == ["01"]
    assert search_text(course, "  ") == []


def test_the_window_marks_even_one_hidden_character(tmp_path):
    course = make_course(tmp_path)
    line = "丁" * 34 + "一字之差" + "戊" * 170
    [hit] = search_text(course, "一字之差")  # the window starts at character 1: one is hidden
    assert hit.excerpt == "…" + line[1:101] + "…"


def test_a_hit_on_every_word_is_shown_around_the_first_word(tmp_path):
    course = make_course(tmp_path)
    line = "己" * 150 + "柚子" + "庚" * 100 + "橙子" + "辛" * 150
    [hit] = search_text(course, "柚子 橙子")
    assert hit.excerpt == "…" + line[150 - 33:150 - 33 + 100] + "…"
    [hit] = search_text(course, "橙子 柚子")  # the first word of the query, wherever it stands
    start = 150 + 2 + 100 - 33
    assert hit.excerpt == "…" + line[start:start + 100] + "…"


def test_at_most_fifty_hits_by_default(tmp_path):
    course = make_course(tmp_path)
    md = course.root / "02-two.md"
    md.write_text(CHAPTER_TWO.replace("第二章里的苹果和香蕉。", "\n\n".join(f"第 {i} 行重复的话" for i in range(60))), encoding="utf-8")
    course = load_course(course.root)
    hits = search_text(course, "重复的话")
    assert len(hits) == 50 and hits[-1].excerpt == "第 49 行重复的话"


def test_a_line_before_any_heading_has_no_section_even_after_a_hit_in_one(tmp_path):
    course = make_course(tmp_path)
    (course.root / "02-two.md").write_text("卷首：尾巴之前\n\n" + CHAPTER_TWO, encoding="utf-8")
    course = load_course(course.root)
    hits = search_text(course, "尾巴")
    assert [(h.chapter_id, h.line, h.anchor) for h in hits] == [("01", line_no(CHAPTER_ONE, "尾巴"), "second"), ("02", 1, None)]


def test_an_error_excerpt_from_a_snippet_is_at_most_400_characters():
    from torchcourse.lookup import errors_in_output

    [text] = errors_in_output("RuntimeError: " + "x" * 500 + "\n")
    assert text == ("RuntimeError: " + "x" * 500)[:400]
    [text] = errors_in_output("RuntimeError:\n" + "".join(f"  line {i} of the message below\n" for i in range(40)))
    assert len(text) < 400 + 40 and text.startswith("RuntimeError: line 0 of the message below line 1")


def test_only_the_last_20000_characters_of_a_paste_are_read():
    from torchcourse.lookup.errors import MAX_PASTE, messages_of

    head = "ValueError: alpha\n"
    text = head + "." * (MAX_PASTE - len(head) + 1)  # one character too many: the V is cut off
    assert len(text) == 20_001
    assert "valueerror" not in [m.type for m in messages_of(text)]
    assert "valueerror" in [m.type for m in messages_of(head + "." * (MAX_PASTE - len(head)))]  # exactly 20000: read


# ---------------------------------------------------------------------------------------
# The lookup as the learner sees it: the section a pasted error leads to (where_label, the
# line `torchcourse why` and the app print), whether it is an answer or only "相近，不确定",
# and the other wording it was recognised by (A-variants.toml).

import shutil

from torchcourse.lookup import error_entries, errors_in_output, lookup_error, where_label

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "lookupcourse"
SHAPES_ROW = "RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"
SHAPES_WHERE = "→ 第 01 章 §形状对不上 (01#shape-mismatch)"
# the addmv wording of a shape mismatch (torch/lib/libtorch_cpu.so holds "size mismatch, got input (")
ADDMV = "RuntimeError: size mismatch, got input (2), mat (2x3), vec (4)"
GOOD_VARIANT = f'[[variant]]\nrow = "{SHAPES_ROW}"\ntext = "size mismatch, got input ("\nsource = "torch/lib/libtorch_cpu.so"\n'


def fixture_copy(tmp_path: Path, variants: str | None = None) -> Path:
    root = tmp_path / "lookupcourse"
    shutil.copytree(FIXTURE, root)
    if variants is not None:
        (root / "A-variants.toml").write_text(variants, encoding="utf-8")
    return root


def answers(course, text: str) -> list[tuple[str, bool, str]]:
    """What the learner is shown for TEXT: (where, an answer rather than a near match, the other wording)."""
    return [(where_label(course, h.entry), h.sure, h.wording) for h in lookup_error(course, text)]


def links(course, text: str) -> list[tuple[str, bool]]:
    """The answers' links (``04#no-grad``), each with whether it is an answer rather than a near match."""
    return [(h.entry.link, h.sure) for h in lookup_error(course, text)]


def test_a_wording_of_the_variants_file_leads_to_its_row_and_says_so(tmp_path):
    assert answers(load_course(fixture_copy(tmp_path / "without")), ADDMV) == []  # no row has these words
    course = load_course(fixture_copy(tmp_path / "with", GOOD_VARIANT))
    assert answers(course, ADDMV) == [(SHAPES_WHERE, True, "size mismatch, got input (")]
    # the row's own message is still found by its own words
    assert answers(course, "RuntimeError: mat1 and mat2 shapes cannot be multiplied (7x3 and 4x5)") == [(SHAPES_WHERE, True, "")]


BAD_VARIANT_FILES = {
    "not TOML": GOOD_VARIANT + "[[variant]\nrow = 3\n",
    "variant is a number": "variant = 3\n",
    "a table that is no array": f'[variant]\nrow = "{SHAPES_ROW}"\ntext = "size mismatch, got input ("\nsource = "x"\n',
}


def test_a_broken_variants_file_leaves_the_rows_themselves_answering(tmp_path):
    for name, text in BAD_VARIANT_FILES.items():
        course = load_course(fixture_copy(tmp_path / name.replace(" ", "-"), text))
        assert answers(course, SHAPES_ROW) == [(SHAPES_WHERE, True, "")], name  # no traceback, the row answers
        assert answers(course, ADDMV) == [], name  # and no wording of the broken file is used


def test_the_good_variants_of_a_file_are_used_beside_the_bad_ones(tmp_path):
    text = (
        "[[variant]]\nrow = \"x\"\ntext = 3\nsource = \"s\"\n"  # text is no string
        "[[variant]]\nrow = \"x\"\ntext = \"no source\"\n"  # a field missing
        "[[variant]]\nrow = \"x\"\ntext = \"   \"\nsource = \"s\"\n"  # an empty text
        + GOOD_VARIANT.replace("source =", "note = \"an unknown key: reported by check, the wording still counts\"\nsource =")
    )
    course = load_course(fixture_copy(tmp_path, text))
    assert answers(course, ADDMV) == [(SHAPES_WHERE, True, "size mismatch, got input (")]
    assert answers(course, "RuntimeError: no source") == []


def test_variants_written_as_an_inline_array_are_used(tmp_path):
    # no "[[variant]]" line to count: `variant = [{…}]` is the same TOML
    text = f'variant = [{{row = "{SHAPES_ROW}", text = "size mismatch, got input (", source = "torch/lib/libtorch_cpu.so"}}, 3]\n'
    course = load_course(fixture_copy(tmp_path, text))
    assert answers(course, ADDMV) == [(SHAPES_WHERE, True, "size mismatch, got input (")]


def test_a_variants_file_is_read_only_beside_an_appendix(tmp_path):
    root = fixture_copy(tmp_path, GOOD_VARIANT)
    (root / "A-lookup.md").unlink()
    toml = root / "course.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace('kind = "appendix"', 'kind = "appendix"\nplanned = true'), encoding="utf-8")
    course = load_course(root)
    # the entries are the snippets' own errors; the variants' rows are appendix rows: unused
    assert answers(course, ADDMV) == []
    assert answers(course, SHAPES_ROW) == [(SHAPES_WHERE, True, "")]


# ---------------------------------------------------------------------------------------
# A course without an appendix: its snippets' errors, each pointing at the snippet's section


def no_appendix_course(tmp_path: Path, edit=None):
    root = fixture_copy(tmp_path)
    (root / "A-lookup.md").unlink()
    toml = root / "course.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace('kind = "appendix"', 'kind = "appendix"\nplanned = true'), encoding="utf-8")
    if edit:
        edit(root)
    return load_course(root)


def test_without_an_appendix_each_error_leads_to_its_snippets_section(tmp_path):
    course = no_appendix_course(tmp_path)
    assert {e.source for e in error_entries(course)} == {"snippet"}
    assert answers(course, SHAPES_ROW) == [(SHAPES_WHERE, True, "")]
    assert answers(course, "RuntimeError: view size is not compatible with input tensor's size and stride") == [
        ("→ 第 01 章 §view 与 reshape (01#view-vs-reshape)", True, "")]


def test_without_an_appendix_a_snippet_before_any_section_leads_to_the_chapters_opening(tmp_path):
    def drop_heading(root):
        md = root / "02-graph.md"
        md.write_text(md.read_text(encoding="utf-8").replace("## 第二次 backward {#second-backward}\n", ""), encoding="utf-8")

    course = no_appendix_course(tmp_path, drop_heading)
    assert answers(course, "RuntimeError: Trying to backward through the graph a second time") == [
        ("→ 第 02 章 §计算图 (02#计算图)", True, "")]


def test_without_an_appendix_one_error_printed_twice_in_a_section_is_one_answer(tmp_path):
    def print_twice(root):
        md = root / "02-graph.md"
        text = md.read_text(encoding="utf-8")
        start = text.index("```python {#non-scalar-backward")
        end = text.index("## 叶子上的就地操作")
        again = text[start:end].replace("{#non-scalar-backward", "{#non-scalar-again")
        md.write_text(text[:end] + again + text[end:], encoding="utf-8")

    course = no_appendix_course(tmp_path, print_twice)
    assert [e.origin for e in error_entries(course) if e.anchor == "non-scalar"] == ["02:non-scalar-backward"]
    assert answers(course, "RuntimeError: grad can be implicitly created only for scalar outputs") == [
        ("→ 第 02 章 §非标量输出 (02#non-scalar)", True, "")]


# ---------------------------------------------------------------------------------------
# The errors a snippet's output shows (a course without an appendix answers from them)


def test_a_printed_error_does_not_take_the_lines_after_it():
    # a message of its own ends at its line: what follows is other output, indented or not
    assert errors_in_output("ValueError: bad value\n  indented output\nplain output\n") == ["ValueError: bad value"]


def test_an_empty_message_takes_the_line_below_it_and_not_a_traceback():
    assert errors_in_output("RuntimeError:\nthe message on its own line\nanother line\n") == [
        "RuntimeError: the message on its own line"]
    out = "RuntimeError:\nTraceback (most recent call last):\n  File \"x.py\", line 1, in <module>\nValueError: inner\n"
    assert errors_in_output(out) == ["RuntimeError", "ValueError: inner"]
    # the line taken into a message is not a second error of its own
    assert errors_in_output("RuntimeError:\nValueError: the real message\n") == ["RuntimeError: ValueError: the real message"]


def test_the_error_right_after_a_tab_continued_message_is_found():
    out = "RuntimeError: Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: \"w\".\nValueError: second\n"
    assert errors_in_output(out) == ['RuntimeError: Error(s) in loading state_dict for Net: Missing key(s) in state_dict: "w".',
                                     "ValueError: second"]


# ---------------------------------------------------------------------------------------
# A paste as it comes out of a terminal, a chat or a web page: the same answer as the plain text

SHAPES_TB = ("Traceback (most recent call last):\n  File \"train.py\", line 4, in <module>\n    a @ b\n"
             "RuntimeError: mat1 and mat2 shapes cannot be multiplied (32x512 and 256x10)\n")


@pytest.fixture(scope="module")
def fixture_course():
    return load_course(FIXTURE)


@pytest.mark.parametrize("paste", [
    pytest.param(SHAPES_TB.replace("RuntimeError: mat1", "\x1b[31;1mRuntimeError\x1b[0m: \x1b[1mmat1"), id="ansi-colours"),
    pytest.param(SHAPES_TB.replace("\n", "\r\n"), id="crlf"),
    pytest.param(SHAPES_TB.replace("RuntimeError: mat1", "epoch 1:  50%|█████     | 1/2\repoch 1: 100%|██████████| 2/2\rRuntimeError: mat1"),
                 id="progress-bar-redrawn"),
    pytest.param(SHAPES_TB.replace("RuntimeError: ", "RuntimeError：").replace(" (32x512 and 256x10)", "（32x512 and 256x10）"),
                 id="full-width"),
    pytest.param(SHAPES_TB.replace("RuntimeError: mat1 and mat2", "**RuntimeError**: **mat1** and **mat2**"), id="markdown-bold"),
    pytest.param("".join(f"[rank0]: {ln}\n" for ln in SHAPES_TB.splitlines()), id="torchrun-rank-prefix"),
    pytest.param("".join(f"│ {ln:<90} │\n" for ln in SHAPES_TB.splitlines()), id="rich-box"),
])
def test_a_decorated_paste_gets_the_plain_texts_answer(fixture_course, paste):
    assert answers(fixture_course, paste) == answers(fixture_course, SHAPES_TB) == [(SHAPES_WHERE, True, "")]


@pytest.fixture(scope="module")
def real_course():
    return load_course(Path(__file__).resolve().parents[1] / "content")


GETATTR = "AttributeError: 'Net' object has no attribute 'fcc'"
MULTI_VIEW = "is a view and is being modified inplace. This view is the output of a function that returns multiple views."


@pytest.mark.parametrize("plain, paste", [
    pytest.param(GETATTR, GETATTR.replace(": ", "："), id="full-width-colon"),
    pytest.param(GETATTR, "**AttributeError**: 'Net' object has no attribute 'fcc'", id="markdown-bold-type"),
    pytest.param(MULTI_VIEW, "Epoch 1:  50%|█████     | 1/2 loss 0.3\r" + MULTI_VIEW, id="progress-bar-redrawn"),
    pytest.param(MULTI_VIEW, '[rank0]: Traceback (most recent call last):\n[rank0]:   File "train.py", line 3, in <module>\n[rank0]: '
                 + MULTI_VIEW, id="torchrun-rank-prefix"),
])
def test_a_decorated_paste_gets_the_plain_texts_answers_in_the_course(real_course, plain, paste):
    plain_answers = answers(real_course, plain)
    assert plain_answers and all(sure for _, sure, _ in plain_answers)
    assert answers(real_course, paste) == plain_answers


# ---------------------------------------------------------------------------------------
# Which of a paste's errors is answered first, and what counts as one message

LEAF_TB = ('Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n    w.add_(1)\n'
           "RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.\n")
LEAF_WHERE = "→ 第 02 章 §叶子上的就地操作 (02#leaf-inplace)"


def test_of_two_errors_the_one_that_ended_the_run_is_answered_first(fixture_course):
    # a caught error printed first, then the traceback that ended the run
    assert [w for w, _, _ in answers(fixture_course, SHAPES_ROW + "\n" + LEAF_TB)] == [LEAF_WHERE, SHAPES_WHERE]


CORRUPT_WHERE = "→ 附录 A §文件不是完整的 checkpoint (A#corrupt-file)"


def test_a_debuggers_header_names_the_type_of_the_message_below_it(real_course):
    # VS Code: "发生异常: UnpicklingError" on a line of its own, the message on the next
    paste = "发生异常: UnpicklingError\ninvalid load key, 'v'.\n  File \"/home/me/load.py\", line 3, in <module>\n    torch.load(\"ckpt.pt\")\n"
    assert answers(real_course, paste) == [(CORRUPT_WHERE, True, "")]
    # the same three words without their type are only a near match
    assert answers(real_course, "invalid load key, 'v'.") == [(CORRUPT_WHERE, False, "")]


STATE_DICT_HEAD = "RuntimeError: Error(s) in loading state_dict for Net:\n"


@pytest.mark.parametrize("listed, where", [
    ('\tMissing key(s) in state_dict: "fc.weight", "fc.bias".\n', "→ 第 06 章 §少了 key，多了 key (06#missing-unexpected)"),
    ('\tUnexpected key(s) in state_dict: "module.fc.weight", "module.fc.bias".\n', "→ 第 06 章 §module. 前缀 (06#module-prefix)"),
    ("\tsize mismatch for fc.weight: copying a param with shape torch.Size([10, 4]) from checkpoint, the shape in current"
     " model is torch.Size([3, 4]).\n", "→ 第 06 章 §形状对不上：size mismatch (06#size-mismatch)"),
])
@pytest.mark.parametrize("gap", ["", "\n"], ids=["tab-listed", "after-a-blank-line"])
def test_the_keys_listed_below_a_load_state_dict_error_decide_its_section(real_course, listed, where, gap):
    assert answers(real_course, STATE_DICT_HEAD + gap + listed) == [(where, True, "")]


def test_a_query_in_chinese_is_matched_by_the_causes_word_pairs(fixture_course):
    # "修改了": of its two pairs, "修改" is in the leaf row's cause (…就地修改): half of them, a near match
    assert answers(fixture_course, "修改了") == [(LEAF_WHERE, False, "")]
    # a character standing alone is a word of its own: "叶子" is one of three words here, too few
    assert answers(fixture_course, "叶子 改 了") == []
    assert answers(fixture_course, "叶子张量") == [(LEAF_WHERE, False, "")]


@pytest.mark.parametrize("message", [
    "a leaf Variable that requires grad is being used in an in-place operation.",
    "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed).",
])
def test_a_message_without_its_type_wrapped_over_two_lines_gets_the_one_lines_answers(real_course, message):
    words = message.split()
    wrapped = " ".join(words[: len(words) // 2]) + "\n" + " ".join(words[len(words) // 2:])
    assert answers(real_course, wrapped) == answers(real_course, message) != []


COMPILE_WHERE = "→ 第 10 章 §编译过的模型怎么存：_orig_mod. 前缀 (10#compile-state-dict)"
PREFIX_WHERE = "→ 第 06 章 §module. 前缀 (06#module-prefix)"
KEYS_WHERE = "→ 第 06 章 §少了 key，多了 key (06#missing-unexpected)"


@pytest.mark.parametrize("prefix, where", [("_orig_mod", COMPILE_WHERE), ("module", PREFIX_WHERE)])
def test_the_prefix_the_unexpected_keys_add_decides_between_compile_and_dataparallel(real_course, prefix, where):
    listed = (f'\tMissing key(s) in state_dict: "fc.weight", "fc.bias". \n'
              f'\tUnexpected key(s) in state_dict: "{prefix}.fc.weight", "{prefix}.fc.bias".\n')
    assert answers(real_course, STATE_DICT_HEAD + listed) == [(where, True, ""), (KEYS_WHERE, True, "")]
    assert answers(real_course, STATE_DICT_HEAD + listed.split("\n", 1)[1]) == [(where, True, "")]


def test_an_appendix_of_a_single_row_answers(tmp_path):
    root = fixture_copy(tmp_path, GOOD_VARIANT)
    appendix = root / "A-lookup.md"
    lines = appendix.read_text(encoding="utf-8").splitlines(keepends=True)
    appendix.write_text("".join(ln for ln in lines if not ln.startswith("| `") or "mat1 and mat2" in ln), encoding="utf-8")
    course = load_course(root)
    assert len(error_entries(course)) == 1
    assert answers(course, ADDMV) == [(SHAPES_WHERE, True, "size mismatch, got input (")]


@pytest.mark.parametrize("model", ["ResNetClassifier", "MyTinyNet"])
def test_the_models_class_name_in_a_load_state_dict_error_does_not_change_the_answers(real_course, model):
    for listed in ['\tMissing key(s) in state_dict: "fc.weight", "fc.bias". \n\tUnexpected key(s) in state_dict: "module.fc.weight", "module.fc.bias".\n',
                   "\tsize mismatch for fc.weight: copying a param with shape torch.Size([10, 4]) from checkpoint, the shape in"
                   " current model is torch.Size([3, 4]).\n"]:
        assert answers(real_course, STATE_DICT_HEAD.replace("Net", model) + listed) == answers(real_course, STATE_DICT_HEAD + listed)


def test_the_same_error_with_other_numbers_gets_the_same_answer(real_course):
    for text in ["RuntimeError: mat1 and mat2 must have the same dtype, but got Double and Float",
                 "RuntimeError: The size of tensor a (4) must match the size of tensor b (7) at non-singleton dimension 0"]:
        other = re.sub(r"\d+", lambda m: str(int(m.group(0)) * 7 + 13), text)
        assert answers(real_course, other) == answers(real_course, text) != []


@pytest.mark.parametrize("opening, where", [
    ("UserWarning: Got pickle error when", "→ 第 08 章 §pickle 不了的 collate_fn 与数据集 (08#pickle)"),
    ("UserWarning: Error detected in SinBackward0.", "→ 第 03 章 §异常检测：从提示走到前向那一行 (03#anomaly)"),
])
def test_a_warnings_opening_with_its_type_is_the_answer(real_course, opening, where):
    # the type that both the paste and the row name counts for the paste: without it, a near match
    assert answers(real_course, opening) == [(where, True, "")]



@pytest.mark.parametrize("text, typed", [
    ("RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn",
     "RuntimeError: element 0 of tensors doesn't require grad and doesn't have a grad_fn"),
    ("RuntimeError: cannot register a hook on a tensor that doesn't require gradient",
     "RuntimeError: can't register a hook on a tensor that does not require gradient"),
    ("ValueError: loaded state dict contains a parameter group that doesn't match the size of optimizer's group",
     "ValueError: loaded state dict contains a parameter group that does not match the size of optimizer's group"),
])
def test_a_message_typed_with_or_without_contractions_gets_the_same_answers(real_course, text, typed):
    assert answers(real_course, typed) == answers(real_course, text) != []


def test_a_path_in_the_message_does_not_change_the_answers(real_course):
    text = "A view was created in no_grad mode and is being modified inplace with grad mode enabled"
    assert answers(real_course, text + " /home/me/proj/runs/ckpt.pt") == answers(real_course, text) != []


def test_a_type_at_most_two_rows_have_is_an_answer_by_itself_a_common_one_is_not(real_course):
    from torchcourse.course.appendix import ErrorEntry
    from torchcourse.lookup.errors import prepare

    rows = [ErrorEntry("GradcheckError: Jacobian mismatch for output 0 with respect to input 0", "c", "09", "jacobian", "s", origin="A:1"),
            ErrorEntry("GradcheckError: Backward is not reentrant", "c", "09", "reentrant", "s", origin="A:2"),
            ErrorEntry("RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.", "c", "02", "leaf", "s", origin="A:3")]
    index = prepare(rows)
    # two rows of the type: both are answers, whatever the words
    assert [(h.entry.anchor, h.sure) for h in lookup_error(None, "GradcheckError: something else entirely", entries=index)] == [
        ("jacobian", True), ("reentrant", True)]
    # the course has three TracerWarning rows: the type alone says nothing
    assert answers(real_course, "TracerWarning: banana apple orange") == []
    # the entries may be given as a list as well
    assert [(h.entry.anchor, h.sure) for h in lookup_error(None, "GradcheckError: something else entirely", entries=rows)] == [
        ("jacobian", True), ("reentrant", True)]


JIT_WHERE = "→ 第 10 章 §torch.jit.script 与弃用警告 (10#jit-script)"


@pytest.mark.parametrize("paste", [
    "发生异常: NotSupportedError\nthis function cannot be compiled",
    '发生异常: NotSupportedError\nkeyword-only arguments with defaults are not supported here\n  File "/home/me/export.py", line 3, in <module>\n'
    "    torch.jit.script(f)\n",
    'Exception has occurred: NotSupportedError\nkeyword-only arguments with defaults are not supported here\n  File "/home/me/export.py", line 3, in <module>\n',
])
def test_a_debuggers_header_gives_its_type_to_the_message_below(real_course, paste):
    # torch.jit's NotSupportedError is the type of one row only: named in the header, it is the answer
    assert answers(real_course, paste) == [(JIT_WHERE, True, "")]


VIEW_ROW = ("RuntimeError: view size is not compatible with input tensor's size and stride (at least one dimension spans across"
            " two contiguous subspaces). Use .reshape(...) instead.")
VIEW_WHERE = "→ 第 01 章 §view 与 reshape (01#view-vs-reshape)"
TWICE_TB = ('Traceback (most recent call last):\n  File "train.py", line 12, in <module>\n    loss.backward()\n'
            "RuntimeError: Trying to backward through the graph a second time (or directly access saved tensors after they"
            " have already been freed). Saved intermediate values of the graph are freed when you call .backward() or"
            " autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you"
            " need to access saved tensors after calling backward.\n")
TWICE_WHERE = "→ 第 02 章 §第二次 backward (02#second-backward)"
COPY_WARNING = ("train.py:3: UserWarning: To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone()"
                " or sourceTensor.detach().clone().requires_grad_(True), rather than torch.tensor(sourceTensor).\n")
COPY_WHERE = "→ 第 01 章 §拷贝构造的警告 (01#copy-construct)"


def test_of_two_full_messages_the_one_that_ended_the_run_comes_first(fixture_course):
    # both rows match whole: the exception that ended the run decides the order, not the rows' order
    assert [w for w, _, _ in answers(fixture_course, VIEW_ROW + "\n" + TWICE_TB)] == [TWICE_WHERE, VIEW_WHERE]
    # a warning printed after it does not end the run
    assert [w for w, _, _ in answers(fixture_course, TWICE_TB + COPY_WARNING)] == [TWICE_WHERE, COPY_WHERE]


# ---------------------------------------------------------------------------------------
# No row: where the chapters say the same words (the app's list and `why`'s "正文里有几处出现了同样的话")

from torchcourse.lookup import mentions

MENTION_CHAPTER = """# 第一章

🎯 只为测试搜索

## 对非标量反向 {#non-scalar}

对一个向量直接 backward()，PyTorch 会说：grad can be implicitly created only for scalar outputs。

```python {#peek}
print("grad can be implicitly created only for scalar outputs")
```

```output
grad can be implicitly created only for scalar outputs
```

## 另一节 {#other}

can be implicitly created only：这一节只有这半句。

## 第三节 {#third}

这里只有后四个词：be implicitly created only 而已。

## ✅ 检查点

## ⚡ 走神救援

<!-- break -->
"""

NON_SCALAR = "RuntimeError: grad can be implicitly created only for scalar outputs"


def mention_course(tmp_path: Path, chapter: str = MENTION_CHAPTER):
    tmp_path.mkdir(parents=True, exist_ok=True)
    course = make_course(tmp_path)
    (course.root / "01-one.md").write_text(chapter, encoding="utf-8")
    return load_course(course.root)


def shown(hits) -> list[tuple[str, str | None, int]]:
    return [(h.chapter_id, h.anchor, h.line) for h in hits]


PROSE = ("01", "non-scalar", line_no(MENTION_CHAPTER, "对一个向量"))
HALF = ("01", "other", line_no(MENTION_CHAPTER, "这半句"))


def test_a_message_without_a_row_is_shown_where_the_chapters_say_it_prose_and_output_not_code(tmp_path):
    course = mention_course(tmp_path)
    # one hit per section: the prose line (the output below it is the same section); the code line never
    assert shown(mentions(course, NON_SCALAR)) == [PROSE, HALF]
    assert shown(mentions(course, NON_SCALAR, limit=1)) == [PROSE]
    # without the prose line: the output line, never the code line above it
    course = mention_course(tmp_path / "2", MENTION_CHAPTER.replace("PyTorch 会说：grad can be implicitly created only for scalar outputs", "PyTorch 会报错"))
    assert shown(mentions(course, NON_SCALAR)) == [("01", "non-scalar", line_no(MENTION_CHAPTER, "```output") + 1), HALF]


def test_mentions_need_a_run_of_five_words_of_the_message_three_of_them_not_stop_words(tmp_path):
    course = mention_course(tmp_path)
    assert shown(mentions(course, "RuntimeError: can be implicitly created only")) == [PROSE, HALF]  # five words, three not stop words
    assert mentions(course, "RuntimeError: be implicitly created only") == []  # four words
    assert mentions(course, "RuntimeError: can be implicitly for only") == []  # not a run of the text
    # the run may start anywhere in the message
    assert shown(mentions(course, "RuntimeError: apples can be implicitly created only")) == [PROSE, HALF]
    assert shown(mentions(course, "RuntimeError: apples pears plums kiwis melons can be implicitly created only")) == [PROSE, HALF]
    assert mentions(course, "   ") == [] and mentions(course, "\n") == []


def test_a_users_dotted_name_before_a_colon_is_no_error_and_hides_nothing(fixture_course):
    # "ultralytics.nn.tasks.DetectionModel: …" is the user's class, not an exception: the next line is read
    paste = "ultralytics.nn.tasks.DetectionModel: building\n" + SHAPES_ROW + "\n"
    assert answers(fixture_course, paste) == [(SHAPES_WHERE, True, "")]


def test_at_most_ten_answers_by_default(real_course):
    # a keyword many rows have: near matches, ten of them (the app and `why --json` list what they get)
    assert len(lookup_error(real_course, "tensor")) == 10
    assert len(lookup_error(real_course, "tensor", limit=50)) > 10


# ---------------------------------------------------------------------------------------
# How far one message reaches: its continuation lines, and the untyped lines read around it

FILLER = "~ ~ ~"  # a line with no word in it


@pytest.mark.parametrize("before, shown_hits", [(7, [PROSE, HALF]), (8, [])], ids=["eighth-line", "ninth-line"])
def test_a_message_takes_at_most_eight_lines_below_it(tmp_path, before, shown_hits):
    # the words on the eighth line below the type are still the message's: on the ninth they are not
    course = mention_course(tmp_path)
    paste = "RuntimeError: " + "".join(f"\n{FILLER}" for _ in range(before)) + "\ngrad can be implicitly created only for scalar outputs\n"
    assert shown(mentions(course, paste)) == shown_hits


@pytest.mark.parametrize("chars, shown_hits", [(799, [PROSE, HALF]), (800, [])], ids=["799-chars-above", "800-chars-above"])
def test_a_message_takes_no_more_lines_once_it_has_800_characters_below_it(tmp_path, chars, shown_hits):
    course = mention_course(tmp_path)
    lines = ["~" * 200] * 3 + ["~" * (chars - 600)]
    paste = "RuntimeError: \n" + "\n".join(lines) + "\ngrad can be implicitly created only for scalar outputs\n"
    assert shown(mentions(course, paste)) == shown_hits


def test_an_empty_message_takes_its_text_from_below_a_blank_line(tmp_path):
    course = mention_course(tmp_path)
    assert shown(mentions(course, "RuntimeError:\n\ngrad can be implicitly created only for scalar outputs\n")) == [PROSE, HALF]
    # a message of its own ends at a blank line
    assert mentions(course, "RuntimeError: ~\n\ngrad can be implicitly created only for scalar outputs\n") == []


LEAF_LINE = "a leaf Variable that requires grad is being used in an in-place operation."


@pytest.mark.parametrize("fillers, expected", [(19, [(LEAF_WHERE, True, "")]), (20, [])], ids=["20-lines", "21-lines"])
def test_of_untyped_lines_the_last_twenty_are_read(fixture_course, fillers, expected):
    paste = LEAF_LINE + "\n" + "\n".join([FILLER] * fillers) + "\n"
    assert answers(fixture_course, paste) == expected


@pytest.mark.parametrize("fillers, expected", [(11, [(LEAF_WHERE, True, "")]), (12, [])], ids=["12-lines", "13-lines"])
def test_beside_a_typed_message_the_last_twelve_untyped_lines_are_read(fixture_course, fillers, expected):
    # the message pasted apart from its type, above other output and an error of no row
    paste = LEAF_LINE + "\n" + "\n".join([FILLER] * fillers) + "\nFooError: ~\n"
    assert answers(fixture_course, paste) == expected


@pytest.mark.parametrize("line, expected", [("mat1 and mat2 shapes", []), ("mat1 and mat2 shapes.", [(SHAPES_WHERE, True, "")])],
                         ids=["20-chars", "21-chars"])
def test_beside_a_typed_message_an_untyped_line_needs_more_than_twenty_characters(fixture_course, line, expected):
    assert answers(fixture_course, line + "\nFooError: ~\n") == expected


# ---------------------------------------------------------------------------------------
# Real reports and half-typed messages on the course's own appendix: which answer comes first,
# and whether it is an answer or a near match

from test_lookup_reports import load_reports  # noqa: E402  (tests/data/real_reports.txt)

REPORTS = {r["name"]: r for r in load_reports()}
ANOMALY_WHERE = "→ 第 03 章 §异常检测：从提示走到前向那一行 (03#anomaly)"
WEIGHTS_ONLY_WHERE = "→ 第 06 章 §读盘：weights_only (06#weights-only)"
DYNAMO_WHERE = "→ 第 10 章 §torch.compile：不交出去，就地抓图 (10#compile)"


@pytest.fixture
def own_real_course():
    # a course object of the test's own: its lookup index (built once per course object) is built
    # inside this test, so a change to how the rows are read is run by it (tools/mutation.py selects
    # the tests that execute the changed line)
    return load_course(Path(__file__).resolve().parents[1] / "content")


@pytest.mark.parametrize("name, where", [
    # the in-place error pasted with torch's own hint and the anomaly-mode warning after it
    ("inplace-asstrided-anomaly", ANOMALY_WHERE),
    # a YOLO checkpoint refused by weights_only, with "Weights only load failed." in the paste
    ("wo-numpy-reconstruct-win", WEIGHTS_ONLY_WHERE),
])
def test_a_real_report_gets_its_section_as_the_first_answer(own_real_course, name, where):
    report = REPORTS[name]
    assert where.endswith(f"({report['label']})")
    assert answers(own_real_course, report["text"])[0] == (where, True, "")


@pytest.mark.parametrize("name", ["oos-loss-japanese", "oos-loss-target-size-fcn"])
def test_a_loss_shape_error_of_no_row_gets_no_answer_not_a_row_of_another_type(fixture_course, name):
    # the fixture's one ValueError-free row of printed errors is no answer to a ValueError of a loss
    assert answers(fixture_course, REPORTS[name]["text"]) == []


def test_a_key_error_is_at_most_near_the_attribute_error_rows(real_course):
    # KeyError is not AttributeError (nor one of its aliases): the rows about attributes are near matches
    shown_ = answers(real_course, "KeyError: \"attribute 'weight'")
    assert shown_ and not any(sure for _, sure, _ in shown_)


def test_an_opening_typed_half_with_its_type_is_at_most_near_when_no_word_of_its_own_is_in_it(real_course):
    assert answers(real_course, "TypeError: cannot assign 'torch.FloatTensor' as")[0][1] is False
    assert answers(real_course, "RuntimeError: view size is not compatible") == [
        ("→ 第 01 章 §is_contiguous、view 与 reshape (01#view-vs-reshape)", False, "")]
    assert answers(real_course, "ValueError: step must") == [("→ 第 01 章 §stride：沿一维走一步，跨过几个元素 (01#stride)", False, "")]


def test_the_fixtures_only_view_row_answers_the_same_opening(fixture_course):
    assert answers(fixture_course, "RuntimeError: view size is not compatible") == [(VIEW_WHERE, True, "")]


@pytest.mark.parametrize("text", ["RuntimeError: grad can be", "RuntimeError: mat1 and mat2 shapes", "RuntimeError: shape '[2, 2]' is"])
def test_a_few_common_words_of_an_opening_answer_nothing(real_course, text):
    assert answers(real_course, text) == []


@pytest.mark.parametrize("inner", [
    "RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
    "RuntimeError: shape '[2, 2]' is invalid for input of size 3",
])
def test_dynamos_unsupported_is_answered_by_the_compile_section_whatever_it_wraps(own_real_course, inner):
    assert answers(own_real_course, "torch._dynamo.exc.Unsupported: " + inner)[0] == (DYNAMO_WHERE, True, "")


def test_a_users_dotted_class_before_a_colon_is_no_message_of_its_own(tmp_path):
    # "mynet.TinyNet: …" names the user's class, not an exception: its words are not looked up
    course = mention_course(tmp_path)
    assert shown(mentions(course, NON_SCALAR)) == [PROSE, HALF]
    assert mentions(course, "mynet.TinyNet: grad can be implicitly created only for scalar outputs") == []
    # a qualified torch type is one: torch._dynamo.exc.Unsupported
    assert shown(mentions(course, "torch._dynamo.exc.Unsupported: grad can be implicitly created only for scalar outputs")) == [PROSE, HALF]


def test_an_error_caught_in_a_worker_is_answered_by_its_own_row_and_the_workers(own_real_course):
    # "Caught RuntimeError in DataLoader worker process 0." is the worker row's message whatever the
    # type it names (the row's own run caught a ZeroDivisionError): the learner gets both sections
    report = REPORTS["stack-worker-trmisr"]
    assert answers(own_real_course, report["text"]) == [("→ 附录 A §一批里的样本长短不一 (A#collate-stack)", True, ""),
                                                        ("→ 第 08 章 §worker 里的报错 (08#worker-error)", True, "")]


def test_mentions_look_up_the_error_that_ended_the_run_not_a_warning_printed_after_it(tmp_path):
    course = mention_course(tmp_path)
    assert shown(mentions(course, NON_SCALAR + "\nUserWarning: ~\n")) == [PROSE, HALF]


def test_a_debuggers_header_takes_the_message_below_it_not_the_line_above(tmp_path):
    course = mention_course(tmp_path)
    paste = "~\n发生异常: RuntimeError\ngrad can be implicitly created only for scalar outputs\n"
    assert shown(mentions(course, paste)) == [PROSE, HALF]


SAME_COUNTER_WHERE = "→ 第 03 章 §只改了没被用到的那一半，也不行 (03#same-counter)"


@pytest.mark.parametrize("paste", [
    "which is output 0 of AsStridedBackward0, is at version 1; expected version 0 instead",
    "RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: "
    "[torch.FloatTensor [3]], which is output 0 of AsStridedBackward0, is at version 1; expected version 0 instead.",
])
def test_the_asstrided_node_of_a_version_error_names_the_view_section(own_real_course, paste):
    # AsStridedBackward0 is the node of a view's base: the op is the point, unlike ExpBackward0's
    assert answers(own_real_course, paste)[0] == (SAME_COUNTER_WHERE, True, "")


def test_a_few_words_typed_with_a_contraction_are_near_the_same_section(real_course):
    # "isn't" is read as "is not": the keywords still name the leaves section (a near match)
    assert answers(real_course, "isn't a leaf") == answers(real_course, "is not a leaf") != []
    assert answers(real_course, "isn't a leaf")[0] == ("→ 第 02 章 §叶子与非叶子 (02#leaves)", False, "")


def test_a_runtime_error_is_not_answered_by_a_warnings_row_at_full_weight(own_real_course):
    # the report holds the in-place RuntimeError and the anomaly mode's UserWarning; the error's type
    # is not the warning rows' type, so they count less: two answers, the hint's section and the view's
    report = REPORTS["inplace-asstrided-anomaly"]
    assert answers(own_real_course, report["text"]) == [(ANOMALY_WHERE, True, ""), (SAME_COUNTER_WHERE, True, "")]


@pytest.mark.parametrize("paste", [
    'RuntimeError: Error(s) in loading state_dict for Sequential:\n\tUnexpected key(s) in state_dict: "0.weight", "0.bias".',
    'Unexpected key(s) in state_dict: "2.weight"',
])
def test_unexpected_keys_of_numbered_layers_have_no_prefix_and_are_nearest_the_keys_section(real_course, paste):
    # "0.weight": a Sequential's layer number is no prefix (module., _orig_mod.) of the keys
    assert answers(real_course, paste)[0] == (KEYS_WHERE, False, "")


def code_then_prose_chapter(code_lines: int) -> str:
    """MENTION_CHAPTER with the message only in CODE_LINES code lines of its first section and in
    one prose line of the second (its other prose and output lines say something else)."""
    line = 'print("grad can be implicitly created only for scalar outputs")'
    return (MENTION_CHAPTER.replace(line, "\n".join([line] * code_lines))
            .replace("PyTorch 会说：grad can be implicitly created only for scalar outputs", "PyTorch 会报错")
            .replace("grad can be implicitly created only for scalar outputs\n```\n\n## 另一节", "(略)\n```\n\n## 另一节")
            .replace("can be implicitly created only：这一节只有这半句。", "grad can be implicitly created only for scalar outputs：这一节。"))


def test_mentions_read_twenty_search_hits_of_a_phrase(tmp_path):
    # twenty code lines hold the words before the one prose line: the prose line is the 21st hit, not read
    assert mentions(mention_course(tmp_path / "a", code_then_prose_chapter(20)), NON_SCALAR) == []
    # with one code line fewer it is the 20th hit, and shown
    assert [a for _, a, _ in shown(mentions(mention_course(tmp_path / "b", code_then_prose_chapter(19)), NON_SCALAR))] == ["other"]


def test_a_rare_type_with_half_its_message_is_the_answer(real_course):
    # FailOnRecompileLimitHit is one row's type: with some of that row's words it is its answer
    assert answers(real_course, "torch._dynamo.exc.FailOnRecompileLimitHit: Hard failure") == [
        ("→ 第 10 章 §守卫与重新编译 (10#recompile)", True, "")]


@pytest.mark.parametrize("length, answered", [(2000, True), (2001, False)])
def test_whether_an_untyped_paste_is_a_few_keywords_is_read_from_its_last_2000_characters(real_course, length, answered):
    # "xq" is a fourth word only inside the last 2000 characters: then the paste is an error message
    # (scored as one) rather than three keywords (answered only by a row that has them all)
    body = " implicitly created scalar"
    paste = "xq " + "~" * (length - 3 - len(body)) + body
    assert len(paste) == length
    assert bool(answers(real_course, paste)) is answered


@pytest.mark.parametrize("half", ["Specify retain_graph=True if you need to backward",
                                  ".backward() or autograd.grad(). Specify retain_graph=True if you need"])
def test_the_second_half_of_the_second_backward_message_is_its_answer(real_course, half):
    # five words of the message, from its end: the entry holds them all, and that is the answer
    assert [(w, sure) for w, sure, _ in answers(real_course, half)] == [("→ 第 02 章 §第二次 backward() (02#second-backward)", True)]


def test_keys_that_both_lists_prefix_alike_are_no_prefix_problem_up_to_the_pastes_last_character(real_course):
    # module. on the missing and the unexpected keys alike: the model is wrapped on both sides; the
    # paste ends with the last key's closing quote (no period, no newline), which is still read
    paste = ('RuntimeError: Error(s) in loading state_dict for DataParallel:\n\tMissing key(s) in state_dict: "module.fc.weight". '
             '\n\tUnexpected key(s) in state_dict: "module.conv.weight"')
    assert answers(real_course, paste) == [(KEYS_WHERE, True, "")]


def test_a_course_of_four_hundred_rows_with_a_variant_answers_the_row_that_matches():
    # past 400 rows the match's row was read by its face's number, and a
    # variant adds a face, so every row after it was answered one row off (or an IndexError)
    from torchcourse.course.appendix import ErrorEntry
    from torchcourse.lookup.errors import Variant, prepare

    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
    rows = [ErrorEntry(f"RuntimeError: gizmo {words[k % 10]} {words[k // 10 % 10]} {words[k // 100 % 10]} misfired",
                       "c", "02", f"row{k}", "s", origin=f"A:{k + 1}") for k in range(420)]
    variants = [Variant(rows[0].text, "RuntimeError: the gizmo alpha alpha alpha misfired again", "torch/x.py")]
    index = prepare(rows, variants)
    for k in (1, 250, 419):
        hits = lookup_error(None, rows[k].text, entries=index)
        assert hits and hits[0].entry.anchor == f"row{k}" and hits[0].sure, (k, [(h.entry.anchor, h.sure) for h in hits[:3]])


def test_a_row_of_an_interrupt_type_answers_that_type_with_another_message(own_real_course):
    # ERROR_LINE_RE reads "…Interrupt" types too; the fallback pattern does not (it wants …Error,
    # …Exception or …Warning). A row "KeyboardInterrupt: …" is the only one of its type, so a
    # paste that ends in that type is its answer even when its message is another one
    from torchcourse.course.appendix import ErrorEntry
    from torchcourse.lookup.errors import prepare

    row = ErrorEntry("KeyboardInterrupt: the worker was interrupted while collating a batch", "c", "08", "ctrl-c", "s",
                     origin="A:999")
    index = prepare(list(error_entries(own_real_course)) + [row])
    paste = 'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\nKeyboardInterrupt: stopped by the user'
    hits = lookup_error(None, paste, entries=index)
    assert [(h.entry.anchor, h.sure) for h in hits] == [("ctrl-c", True)]


NO_GRAD_MSG = "element 0 of tensors does not require grad and does not have a grad_fn"
SAVED_MSG = "one of the variables needed for gradient computation has been modified by an inplace operation"


@pytest.mark.parametrize("first, last, first_answer", [
    pytest.param(SAVED_MSG, NO_GRAD_MSG, "04#no-grad", id="no-grad-last"),
    pytest.param(NO_GRAD_MSG, SAVED_MSG, "03#saved-modified", id="saved-modified-last"),
])
def test_of_two_messages_pasted_without_their_types_the_last_lines_row_comes_first(real_course, first, last, first_answer):
    # lines without a type are printed errors; the last one is the likelier error of the run
    shown = links(real_course, first + "\n" + last)
    assert shown[:1] == [(first_answer, True)] and len(shown) == 2 and all(sure for _, sure in shown)


def test_what_lies_before_a_pastes_last_20000_characters_does_not_count(fixture_course):
    from torchcourse.lookup.errors import MAX_PASTE

    question = ("叶子张量\n" * 5000)[-MAX_PASTE:]  # a question in Chinese only, 20 000 characters
    assert answers(fixture_course, question) == [(LEAF_WHERE, False, "")]
    # English words before those 20 000 characters would make it no Chinese-only question: they are not read
    assert answers(fixture_course, "see the log below\n" + question) == [(LEAF_WHERE, False, "")]


FRUIT = ["apples", "pears", "plums", "kiwis", "melons", "grapes", "limes", "figs", "dates", "mangos", "lemons", "cherries",
         "peaches", "olives", "guavas"]


def test_mentions_read_the_first_fourteen_runs_of_five_words_of_a_message(tmp_path):
    course = mention_course(tmp_path)
    # thirteen words no chapter has, then the five the chapter says: the run starts at word 14, the 14th run
    assert shown(mentions(course, "RuntimeError: " + " ".join(FRUIT[:13]) + " can be implicitly created only")) == [PROSE, HALF]
    # one word more and the run is the 15th: past what is read, nothing is shown
    assert mentions(course, "RuntimeError: " + " ".join(FRUIT[:14]) + " can be implicitly created only") == []


def test_dynamos_unsupported_over_an_error_of_a_row_answers_both_compile_first(own_real_course):
    # the rare type puts the compile section first; the wrapped message's own row is an answer beside it
    paste = ("torch._dynamo.exc.Unsupported: Data-dependent branching\n"
             "element 0 of tensors does not require grad and does not have a grad_fn")
    no_grad = where_label(own_real_course, next(e for e in error_entries(own_real_course) if e.anchor == "no-grad"))
    assert answers(own_real_course, paste) == [(DYNAMO_WHERE, True, ""), (no_grad, True, "")]


def test_an_answer_by_a_rare_type_alone_is_only_just_sure(own_real_course):
    # no row's words match the message: the type alone answers, with the lowest score of an answer
    # (`why --json` prints it), not as a full match
    [hit] = lookup_error(own_real_course, "torch._dynamo.exc.Unsupported: zorbly frobnicated the quux")
    assert where_label(own_real_course, hit.entry) == DYNAMO_WHERE and hit.sure
    assert hit.score < 0.7


def test_the_no_grad_view_message_wrapped_without_its_type_names_no_multi_output_section(own_real_course):
    # the message says nothing of a function that returns several views: 03#multi-output-view is no answer
    # (a course of the test's own: the words' weights are computed in this test)
    words = ("A view was created in no_grad mode and its base or another view of its base has been modified inplace "
             "with grad mode enabled").split()
    paste = " ".join(words[:12]) + "\n" + " ".join(words[12:])
    assert links(own_real_course, paste) == [("04#no-grad-views", True), ("03#view-nograd", True)]


def test_missing_keys_that_start_with_module_lead_to_the_prefix_section_first(own_real_course):
    # the checkpoint was saved without DataParallel, the model is wrapped: the prefix is the cause
    paste = 'RuntimeError: Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "module.fc.weight".'
    assert links(own_real_course, paste) == [("06#module-prefix", True), ("06#missing-unexpected", True)]


def test_a_few_words_that_are_only_names_and_numbers_get_no_answer(real_course):
    # the second line of a guard failure alone: no row's words, only a name, numbers and an operator
    assert links(real_course, "input.size()[0] == 3") == []
    # its first line is its row's answer
    assert links(real_course, "AssertionError: Guard failed:\ninput.size()[0] == 3") == [("10#torch-export", True)]


def test_a_debuggers_header_below_a_frame_line_still_gives_its_type(real_course):
    # VS Code shows the frame, then the header, then the message: the line above does not matter
    paste = '  File "/home/me/export.py", line 3, in <module>\n发生异常: NotSupportedError\nthis function cannot be compiled'
    assert answers(real_course, paste) == [(JIT_WHERE, True, "")]


def test_a_debuggers_header_on_the_pastes_last_line_is_no_message(real_course):
    # nothing below it to read: no answer, and no traceback of the lookup itself
    assert lookup_error(real_course, "loss.backward()\n发生异常: RuntimeError") == []
    assert lookup_error(real_course, "发生异常: RuntimeError") == []


@pytest.mark.parametrize("paste, expected", [
    pytest.param("发生异常: RuntimeError\nsomething happened here\nRuntimeError: " + NO_GRAD_MSG, [("04#no-grad", True)],
                 id="a-typed-error-below-its-message"),
    pytest.param("发生异常: RuntimeError\n" + NO_GRAD_MSG + "\nRuntimeError: " + SAVED_MSG,
                 [("03#saved-modified", True), ("04#no-grad", True)], id="its-message-then-a-typed-error"),
])
def test_a_debuggers_header_takes_one_line_and_the_line_after_it_is_read(real_course, paste, expected):
    assert links(real_course, paste) == expected


@pytest.mark.parametrize("others, answered", [(11, True), (12, False)])
def test_of_many_typed_errors_the_last_twelve_are_read(real_course, others, answered):
    # a log of repeated errors: the first one is read only while it is among the last twelve
    paste = "RuntimeError: " + NO_GRAD_MSG + "\n" + "".join(f"ValueError: zork number {k} failed\n" for k in range(others))
    assert links(real_course, paste) == ([("04#no-grad", True)] if answered else [])


def test_the_scores_why_json_prints_have_at_most_four_decimals(real_course):
    # near matches of a few keywords: scores below 1, as `torchcourse why --json` prints them
    hits = lookup_error(real_course, "tensor")
    assert len(hits) >= 3 and any(h.score < 1 for h in hits)
    assert [h.score for h in hits] == [round(h.score, 4) for h in hits]
    assert any(h.score != round(h.score, 3) for h in hits)  # and four, not fewer


def test_mentions_show_three_sections_at_most_by_default(tmp_path):
    more = "".join(f"\n## 再一节 {k} {{#more{k}}}\n\ngrad can be implicitly created only：第 {k} 处。\n" for k in range(2))
    course = mention_course(tmp_path, MENTION_CHAPTER.replace("## ✅ 检查点", more + "\n## ✅ 检查点"))
    # the first run of five words ("grad can be implicitly created") is in three sections; "other" has only the next run
    assert [a for _, a, _ in shown(mentions(course, NON_SCALAR))] == ["non-scalar", "more0", "more1"]
    assert [a for _, a, _ in shown(mentions(course, NON_SCALAR, limit=9))] == ["non-scalar", "more0", "more1", "other"]


def _general_and_specific_index(added: str):
    """Two rows, the second the first's message with ADDED words after it (printed by fewer runs:
    the more specific), among thirty unrelated rows."""
    from torchcourse.course.appendix import ErrorEntry
    from torchcourse.lookup.errors import prepare

    general = ("RuntimeError: the gizmo load failed badly while reading the archive header of the saved checkpoint file "
               "during startup on worker process seven.")
    specific = general + " " + added
    parts = ["sprocket", "flange", "grommet", "widget", "cog", "lever", "spindle", "ratchet"]
    rows = [ErrorEntry(general, "c", "01", "general", "s", origin="A:1"), ErrorEntry(specific, "c", "01", "specific", "s", origin="A:2")]
    rows += [ErrorEntry(f"RuntimeError: {parts[k % 8]} {parts[k // 8 % 8]} jammed number {k}", "c", "02", f"o{k}", "s",
                        origin=f"A:{k + 3}") for k in range(30)]
    outputs = [("01:both", "Traceback\n" + specific + "\n"), ("01:general-only", "Traceback\n" + general + "\n")]
    return general, prepare(rows, outputs=outputs)


@pytest.mark.parametrize("added, pasted, first", [
    pytest.param("zulu yankee", ["zulu"], "specific", id="half-of-two-words"),
    pytest.param("alpha bravo charlie delta echo foxtrot golf", ["alpha"], "general", id="one-of-seven"),
    pytest.param("alpha bravo charlie delta echo foxtrot golf", ["alpha", "bravo", "charlie"], "general", id="three-of-seven"),
    pytest.param("alpha bravo charlie delta echo foxtrot golf", ["alpha", "bravo", "charlie", "delta"], "specific",
                 id="four-of-seven"),
])
def test_the_more_general_of_two_answers_gives_way_when_the_paste_holds_half_of_what_the_other_adds(added, pasted, first):
    general, index = _general_and_specific_index(added)
    hits = lookup_error(None, general + " " + " ".join(pasted), entries=index)
    assert [(h.entry.anchor, h.sure) for h in hits][0] == (first, True)
    assert sorted(h.entry.anchor for h in hits) == ["general", "specific"]
    # the general message alone is the general row's answer
    assert [h.entry.anchor for h in lookup_error(None, general, entries=index)] == ["general"]


@pytest.mark.parametrize("noise, expected", [(392, [("04#no-grad", False)]), (396, [])])
def test_a_message_is_read_up_to_its_400th_word(real_course, noise, expected):
    # NOISE words no row has, then the no-grad message (ten words once masked): 392 leave eight of
    # them inside the first 400, a near match; 396 leave four, too few for any answer
    fill = " ".join("zork" + chr(97 + k % 26) for k in range(noise))
    assert links(real_course, f"RuntimeError: {fill} {NO_GRAD_MSG}") == expected


@pytest.mark.parametrize("name", ["DataLoader", "torch.utils.data.DataLoader"])
def test_a_torch_class_the_rows_name_keeps_its_name_inside_a_dotted_path(real_course, name):
    # a user's own class in a dotted path is masked; torch's DataLoader is one of the words the rows say
    assert links(real_course, f"{name} worker exited unexpectedly") == [("08#spawn", True)]


def variant_problems_of(tmp_path: Path, text: str) -> list[tuple[int, str]]:
    """What `torchcourse check` says about an A-variants.toml of TEXT: (line, the message's opening)."""
    from torchcourse.check import variant_problems

    root = fixture_copy(tmp_path, text)
    return [(p.line, re.split(r"[:：]| \(|（", p.message)[0]) for p in variant_problems(load_course(root))
            if p.file.name == "A-variants.toml"]


def test_check_names_each_bad_variant_at_its_own_line(tmp_path):
    text = (
        'note = "a key of its own"\n'  # line 1
        "\n" + GOOD_VARIANT  # lines 3-6: no problem
        + "\n[[variant]]\nrow = \"x\"\ntext = \"no source\"\n"  # line 8: a field missing
        + "\n[[variant]]\n" + f'row = "{SHAPES_ROW}"\ntext = "size mismatch, got input ("\nsource = "torch/x.py"\nsee = "y"\n'  # line 12
        + "\n[[variant]]\nrow = \"no such row\"\ntext = \"quite another wording\"\nsource = \"somewhere\"\n"  # line 18
        + "\n[[variant]]\n" + f'row = "{SHAPES_ROW}"\ntext = "mat1 and mat2 shapes"\nsource = "torch/x.py"\n'  # line 23
    )
    assert variant_problems_of(tmp_path, text) == [
        (1, "未知的顶层键"),
        (8, "[[variant]] 需要 source"),
        (12, "[[variant]] 有未知的键"),
        (18, "row 'no such row' 不是 A-lookup.md 里任何一行的 报错原文"),
        (18, "source 'somewhere' 必须是 torch/<path>"),
        (23, "text 已经是这一行自己的 报错原文 的一部分"),
    ]


@pytest.mark.parametrize("text, expected", [
    pytest.param("[[variant]]\nrow = 3\n[[variant\n", [(3, "不是合法的 TOML")], id="not-toml-at-its-line"),
    pytest.param("variant = 3\n", [(1, "这里应该是 [[variant]] 表")], id="no-array"),
    pytest.param("variant = [3]\n", [(1, "[[variant]] 必须是一个表")], id="an-item-no-table"),
    pytest.param("\n\n[[variant]]\nrow = \"x\"\n", [(3, "[[variant]] 需要 text, source")], id="second-field-missing"),
])
def test_check_names_a_broken_variants_file_at_its_line(tmp_path, text, expected):
    assert variant_problems_of(tmp_path, text) == expected


class TestMissingKeysAloneAreNotAWholeCheckpointDict:
    """Walk: 「Missing key(s) in state_dict: "bias".」 alone was answered 「这里传进去的是整个 checkpoint
    字典」, the row of a load that also lists Unexpected keys ("epoch", "model")."""

    @staticmethod
    def answered(course, paste: str) -> list[tuple[str, bool, str]]:
        """(link, sure, the row's excerpt) of each answer."""
        return [(h.entry.link, h.sure, " ".join(h.entry.text.split())) for h in lookup_error(course, paste)]

    @pytest.mark.parametrize("paste", [
        pytest.param(None, id="the-run-a-bias-less-file-loaded-gives"),
        pytest.param('RuntimeError: Error(s) in loading state_dict for Linear: Missing key(s) in state_dict: "bias".',
                     id="the-walks-one-line-paste"),
    ])
    def test_missing_keys_alone_get_the_row_quoting_them_alone(self, own_real_course, paste):
        run = own_real_course.snippet("A:missing-only").expected
        [(link, sure, excerpt)] = self.answered(own_real_course, paste or run)
        assert (link, sure) == ("06#missing-unexpected", True)
        assert excerpt in " ".join(run.split())  # the row quoting this run, not the whole-checkpoint row

    def test_a_whole_checkpoint_dict_still_gets_its_own_row(self, own_real_course):
        run = own_real_course.snippet("06:whole-ckpt-keys").expected
        [(link, sure, excerpt)] = self.answered(own_real_course, run)
        assert (link, sure) == ("06#missing-unexpected", True)
        assert excerpt in " ".join(run.split()) and "Unexpected" in excerpt
