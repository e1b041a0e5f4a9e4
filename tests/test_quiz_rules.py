"""The quiz's rules at their edges: how a typed answer is read and graded (quotes, backticks,
full-width picks, ten choices), each kind's Chinese name and answer indexes, checkpoint files'
problems at their lines (keys, ids, kinds, sections, choices, predict questions), review days and
order, the choices' shuffle, and the tells ``check`` warns about. Each asserts on what a learner or
an author sees."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchcourse.course import load_course
from torchcourse.quiz.bank import Question, load_checkpoint
from torchcourse.quiz.grading import correct_answer_text, grade, normalize, parse_choices

FIXTURE = Path(__file__).parent / "fixtures" / "quizcourse"


def q(kind, **kw):
    kw.setdefault("prompt", "题目")
    kw.setdefault("explain", "解释")
    return Question(id="q", kind=kind, **kw)


# ----------------------------------------------------------------------------- grading


def test_an_answer_of_only_quotes_is_empty_and_unbalanced_backticks_go():
    assert normalize('""') == "" and normalize("“”") == "" and normalize("''") == ""
    assert normalize("\"''\"") == ""
    fill = q("fill", accept=["x.stride()"])
    # ``x.stride()` (two backticks before, one after) is the answer in code marks
    assert grade(fill, "``x.stride()`").correct
    assert grade(fill, "`x.stride()``").correct
    assert not grade(fill, '""').correct


def test_wrong_response_types_are_refused_not_graded():
    with pytest.raises(TypeError, match="graded by the learner"):
        grade(q("open", reference="参考"), "yes")
    with pytest.raises(TypeError, match="takes the typed text"):
        grade(q("fill", accept=["x"]), 3)


def test_full_width_picks_are_read_as_typed_on_a_chinese_keyboard():
    assert parse_choices("２", 4, multiple=False) == [1]
    assert parse_choices("Ｂ", 4, multiple=False) == [1]
    assert parse_choices("１，３", 4, multiple=True) == [0, 2]
    single = q("single", choices=["a", "b", "c"], answer=2)
    g = grade(single, "３")
    assert g.correct and g.answer == "2"


def test_ten_choices_number_ten_is_one_pick_and_n_plus_one_is_out_of_range():
    # with 10 choices "10" is choice ten, not 1 and 0
    assert parse_choices("10", 10, multiple=True) == [9]
    assert parse_choices("10", 10, multiple=False) == [9]
    assert parse_choices("5", 4, multiple=False) is None
    assert parse_choices("4", 4, multiple=False) == [3]
    assert parse_choices("E", 4, multiple=False) is None
    multi = q("multi", choices=list("abcdefghij"), answer=[9])
    assert grade(multi, "10").correct


def test_the_right_answer_of_an_open_question_is_its_reference():
    assert correct_answer_text(q("open", reference="因为它要逐个取出元素相加。")) == "因为它要逐个取出元素相加。"
    assert correct_answer_text(q("fill", accept=["upper", "upper()"])) == "upper"


# ----------------------------------------------------------------------------- the question model


def test_each_kind_has_its_chinese_name_and_its_answer_indexes():
    assert [q(k).kind_name for k in ("single", "multi", "fill", "predict", "open")] == ["单选", "多选", "填空", "预测输出", "简答"]
    assert q("single", choices=["a", "b"], answer=1).answer_indexes == [1]
    assert q("single", choices=["a", "b"], answer=0).answer_indexes == [0]
    assert q("multi", choices=["a", "b", "c"], answer=[0, 2]).answer_indexes == [0, 2]
    assert q("fill", accept=["x"]).answer_indexes == []
    course = load_course(FIXTURE)
    chapter = course.chapter("01")
    cp = load_checkpoint(chapter.checkpoint, chapter)
    assert [x.key for x in cp.questions][:2] == ["01:sum-single", "01:upper-multi"]


# ----------------------------------------------------------------------------- checkpoint problems


def _chapter():
    course = load_course(FIXTURE)
    return course.chapter("01")


def problems_of(tmp_path, text, name="01.toml", chapter=True, **kw):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    cp = load_checkpoint(path, _chapter() if chapter else None, **kw)
    return cp, [(p.line, p.message) for p in cp.problems]


GOOD = '''[[questions]]
id = "{id}"
kind = "single"
prompt = "?"
choices = ["5", "6"]
explain = "!"
section = "sum"
answer = {answer}
'''


def test_a_bad_key_on_the_first_or_last_line_of_its_question_is_reported_there(tmp_path):
    text = 'chapter = "01"\n\n' + GOOD.format(id="first", answer=7) + GOOD.format(id="second", answer=9)
    _, msgs = problems_of(tmp_path, text)
    lines = text.splitlines()
    first_answer = lines.index("answer = 7") + 1
    second_answer = lines.index("answer = 9") + 1
    assert second_answer == len(lines)  # the file's last line
    assert lines[first_answer] == "[[questions]]"  # right before the next question's header
    assert (first_answer, "题目 'first'：answer 7 超出范围：共 2 个选项，序号是 0..1") in msgs
    assert (second_answer, "题目 'second'：answer 9 超出范围：共 2 个选项，序号是 0..1") in msgs


def test_a_bad_id_right_below_its_header_is_reported_at_its_line(tmp_path):
    text = 'chapter = "01"\n\n' + GOOD.format(id="bad id!", answer=0)
    _, msgs = problems_of(tmp_path, text)
    assert msgs == [(4, "题目 id 'bad id!' 只能用字母、数字、'-' 和 '_'")]


def test_a_misplaced_top_level_key_on_line_one_is_reported_on_line_one(tmp_path):
    text = 'section = "sum"\nchapter = "01"\n\n' + GOOD.format(id="ok", answer=0)
    _, msgs = problems_of(tmp_path, text)
    assert msgs == [(1, "未知的顶层键 'section'（已知的：chapter, [[questions]]）")]


def test_a_key_written_quoted_is_reported_at_its_question(tmp_path):
    # the next question starts with its answer: the search for the key stops at its header
    text = ('chapter = "01"\n\n' + GOOD.format(id="quoted", answer=0).replace("answer = 0", '"answer" = 9')
            + "[[questions]]\nanswer = 0\n" + GOOD.format(id="next", answer=0).split("\n", 1)[1].replace("answer = 0\n", ""))
    _, msgs = problems_of(tmp_path, text)
    assert msgs == [(3, "题目 'quoted'：answer 9 超出范围：共 2 个选项，序号是 0..1")]


def test_malformed_toml_at_the_end_of_a_one_line_file_is_line_one(tmp_path):
    _, msgs = problems_of(tmp_path, 'chapter =')
    assert len(msgs) == 1 and msgs[0][0] == 1 and msgs[0][1].startswith("TOML 写法有误：")


def test_a_missing_file_is_one_problem_at_line_one(tmp_path):
    cp = load_checkpoint(tmp_path / "nowhere.toml", _chapter())
    assert [(p.line, p.message) for p in cp.problems] == [(1, "找不到检查点文件")]
    assert cp.questions == []


def test_the_chapter_id_comes_from_the_chapter_then_the_argument_then_the_file_name(tmp_path):
    text = 'chapter = "01"\n\n' + GOOD.format(id="ok", answer=1)
    # a file named otherwise, used by chapter 01: no mismatch
    cp, msgs = problems_of(tmp_path, text, name="quiz-one.toml")
    assert msgs == [] and [x.chapter_id for x in cp.questions] == ["01"]
    cp, msgs = problems_of(tmp_path, text, name="quiz-two.toml", chapter=False, chapter_id="01")
    assert msgs == [] and [x.chapter_id for x in cp.questions] == ["01"]
    cp, msgs = problems_of(tmp_path, text, name="07.toml", chapter=False)
    assert msgs == [(1, "chapter = '01' 和使用这个文件的章节 '07' 对不上")]
    # a str path is a path
    cp = load_checkpoint(str(tmp_path / "quiz-one.toml"), _chapter())
    assert cp.problems == [] and cp.path == tmp_path / "quiz-one.toml"


def test_a_file_without_questions_or_with_questions_of_the_wrong_shape(tmp_path):
    _, msgs = problems_of(tmp_path, 'chapter = "01"\n')
    assert msgs == [(1, "这个文件里没有 [[questions]]")]
    _, msgs = problems_of(tmp_path, 'chapter = "01"\nquestions = []\n')
    assert msgs == [(1, "这个文件里没有 [[questions]]")]
    _, msgs = problems_of(tmp_path, 'chapter = "01"\n\nquestions = 3\n')
    assert msgs == [(3, "questions 必须是表的数组：每道题写成一个 [[questions]]")]
    _, msgs = problems_of(tmp_path, 'questions = 3\nchapter = "01"\n')
    assert msgs == [(1, "questions 必须是表的数组：每道题写成一个 [[questions]]")]
    _, msgs = problems_of(tmp_path, 'chapter = "01"\n\nquestions = ["a"]\n')
    assert msgs == [(3, "questions 必须是表的数组：每道题写成一个 [[questions]]")]
    cp, msgs = problems_of(tmp_path, GOOD.format(id="ok", answer=0))
    assert msgs == [(1, '缺少顶层的 chapter = "01"（这个文件属于哪一章）')] and [x.id for x in cp.questions] == ["ok"]


def test_unreadable_and_undecodable_files_are_one_problem_each(tmp_path):
    (tmp_path / "dir.toml").mkdir()
    cp = load_checkpoint(tmp_path / "dir.toml", _chapter())
    [(line, message)] = [(p.line, p.message) for p in cp.problems]
    assert line == 1 and message.startswith("读不了检查点文件：") and "dir.toml" in message
    path = tmp_path / "01.toml"
    path.write_bytes(('chapter = "01"\n\n' + GOOD.format(id="ok", answer=0)).encode("utf-8").replace(b'prompt = "?"', b'prompt = "\xff"'))
    cp = load_checkpoint(path, _chapter())
    [(line, message)] = [(p.line, p.message) for p in cp.problems]
    assert line == 6 and message.startswith("不是合法的 UTF-8（第 ") and message.endswith("列的字节 0xff）；把文件存成 UTF-8")
    assert cp.questions == []


def test_questions_written_inline_are_reported_at_line_one(tmp_path):
    text = 'questions = [{ id = "x", kind = "essay", prompt = "?", explain = "!", section = "sum" }]\nchapter = "01"\n'
    cp, msgs = problems_of(tmp_path, text)
    assert msgs == [(1, "题目 'x'：未知的题型 'essay'（只能是 single | multi | fill | predict | open）")]
    assert cp.questions == []


QUESTION = '''[[questions]]
{id}kind = "single"
prompt = {prompt}
choices = ["5", "6"]
answer = 1
explain = {explain}
{section}
'''


def question(id='id = "q"\n', prompt='"?"', explain='"!"', section='section = "sum"'):
    return QUESTION.format(id=id, prompt=prompt, explain=explain, section=section)


def test_a_question_without_a_usable_id_is_named_by_its_number(tmp_path):
    for n, bad_id in enumerate(["", 'id = ""\n', "id = 3\n"]):
        text = 'chapter = "01"\n\n' + question(id='id = "first"\n') + "\n" + question(id=bad_id)
        cp, msgs = problems_of(tmp_path, text, name=f"01-{n}.toml", chapter_id="01", chapter=False)
        header = text.splitlines().index("[[questions]]", 3) + 1
        assert msgs == [(header, '第 2 题没有 id（起一个稳定的名字，如 id = "stride-after-t"）')], bad_id
        assert [x.id for x in cp.questions] == ["first"]


def test_each_text_field_is_one_problem_when_missing_blank_or_not_text(tmp_path):
    text = 'chapter = "01"\n\n' + question(explain='"   "') + question(id='id = "p"\n', prompt="3") + question(id='id = "s"\n', section="")
    cp, msgs = problems_of(tmp_path, text)
    lines = text.splitlines()
    assert msgs == [
        (lines.index('explain = "   "') + 1, "题目 'q'：explain 必须是非空的文字"),
        (lines.index("prompt = 3") + 1, "题目 'p'：prompt 必须是非空的文字"),
        (lines.index('id = "s"') , "题目 's'：缺少 section"),
    ]
    assert [x.id for x in cp.questions] == ["q", "s"]  # no prompt: unusable; the others load
    text = 'chapter = "01"\n\n' + question().replace('explain = "!"\n', "")
    _, msgs = problems_of(tmp_path, text)
    assert msgs == [(3, "题目 'q'：缺少 explain")]


def test_an_unknown_kind_is_one_problem_and_the_question_is_left_out(tmp_path):
    text = 'chapter = "01"\n\n' + question().replace('kind = "single"', 'kind = "essay"')
    cp, msgs = problems_of(tmp_path, text)
    assert msgs == [(5, "题目 'q'：未知的题型 'essay'（只能是 single | multi | fill | predict | open）")]
    assert cp.questions == []


def chapter_with_sections(tmp_path, anchors):
    root = tmp_path / "c"
    (root / "checkpoints").mkdir(parents=True)
    (root / "course.toml").write_text((FIXTURE / "course.toml").read_text(encoding="utf-8"), encoding="utf-8")
    (root / "02-none.md").write_text((FIXTURE / "02-none.md").read_text(encoding="utf-8"), encoding="utf-8")
    sections = "".join(f"## 节 {a} {{#{a}}}\n\n正文。\n\n" for a in anchors)
    (root / "01-mini.md").write_text(f"# 迷你章节\n\n🎯 只为测试检查点而存在\n\n{sections}## ✅ 检查点 {{#checkpoint}}\n\n<!-- break -->\n\n## ⚡ 走神救援 {{#recap}}\n\n回顾。\n",
                                     encoding="utf-8")
    (root / "checkpoints" / "01.toml").write_text('chapter = "01"\n\n' + question(section='section = "zzz"'), encoding="utf-8")
    return load_course(root).chapter("01")


def test_an_unknown_section_names_the_three_nearest_anchors(tmp_path):
    chapter = chapter_with_sections(tmp_path, ["view-a", "view-b", "view-c", "view-d"])
    path = chapter.checkpoint
    path.write_text('chapter = "01"\n\n' + question(section='section = "view-x"'), encoding="utf-8")
    [p] = load_checkpoint(path, chapter).problems
    assert (p.line, p.message) == (10, "题目 'q'：section 'view-x' 不是第 01 章（01-mini.md）的锚点；最接近的：view-d, view-c, view-b")


def test_an_unknown_section_with_nothing_near_lists_the_first_twelve_anchors(tmp_path):
    names = ["alpha", "bravo", "delta", "gamma", "kilo", "lima", "mike", "oscar", "papa"]
    chapter = chapter_with_sections(tmp_path / "nine", names)  # + the title, checkpoint and recap: 12 anchors
    [p] = load_checkpoint(chapter.checkpoint, chapter).problems
    assert p.message == ("题目 'q'：section 'zzz' 不是第 01 章（01-mini.md）的锚点；现有锚点："
                         "迷你章节, alpha, bravo, delta, gamma, kilo, lima, mike, oscar, papa, checkpoint, recap")
    chapter = chapter_with_sections(tmp_path / "ten", names + ["romeo"])  # 13 anchors
    [p] = load_checkpoint(chapter.checkpoint, chapter).problems
    assert p.message.endswith("现有锚点：迷你章节, alpha, bravo, delta, gamma, kilo, lima, mike, oscar, papa, romeo, checkpoint …")


BASE = 'prompt = "?"\nexplain = "!"\nsection = "sum"\n'
CASES = [
    # (kind and keys, the key whose line the problem names or None for the header, message, question kept)
    ('kind = "single"\nanswer = 0\n', None, "题目 'q'：缺少 choices", False),
    ('kind = "single"\nchoices = "5, 6"\nanswer = 0\n', "choices", "题目 'q'：choices 必须是非空字符串的列表", False),
    ('kind = "single"\nchoices = ["5", " "]\nanswer = 0\n', "choices", "题目 'q'：choices 必须是非空字符串的列表", False),
    ('kind = "single"\nchoices = ["5", 6]\nanswer = 0\n', "choices", "题目 'q'：choices 必须是非空字符串的列表", False),
    ('kind = "single"\nchoices = ["5"]\nanswer = 0\n', "choices", "题目 'q'：至少要 2 个选项，这里只有 1 个", False),
    ('kind = "single"\nchoices = ["5", "5"]\nanswer = 0\n', "choices", "题目 'q'：有两个选项的文字相同", True),
    ('kind = "single"\nchoices = ["5", "6"]\n', None, "题目 'q'：缺少 answer", False),
    ('kind = "single"\nchoices = ["5", "6"]\nanswer = true\n', "answer", "题目 'q'：answer 必须是选项的序号（从 0 数起），这里是 True", False),
    ('kind = "single"\nchoices = ["5", "6"]\nanswer = "1"\n', "answer", "题目 'q'：answer 必须是选项的序号（从 0 数起），这里是 '1'", False),
    ('kind = "single"\nchoices = ["5", "6"]\nanswer = -1\n', "answer", "题目 'q'：answer -1 超出范围：共 2 个选项，序号是 0..1", False),
    ('kind = "multi"\nchoices = ["5", "6"]\nanswer = 1\n', "answer", "题目 'q'：multi 题的 answer 是非空的序号列表（从 0 数起），如 [0, 2]", False),
    ('kind = "multi"\nchoices = ["5", "6"]\nanswer = []\n', "answer", "题目 'q'：multi 题的 answer 是非空的序号列表（从 0 数起），如 [0, 2]", False),
    ('kind = "multi"\nchoices = ["5", "6"]\nanswer = [0, 2]\n', "answer", "题目 'q'：answer 2 超出范围：共 2 个选项，序号是 0..1", False),
    ('kind = "multi"\nchoices = ["5", "6"]\nanswer = [1, 1]\n', "answer", "题目 'q'：answer 把同一个序号写了两次", False),
    ('kind = "fill"\naccept = []\n', "accept", "题目 'q'：accept 必须是非空的可接受答案列表", False),
    ('kind = "fill"\naccept = ["x", " "]\n', "accept", "题目 'q'：accept 里序号 1 的答案（' '）只有空格：每个可接受的答案都要有文字", False),
    ('kind = "fill"\n', None, "题目 'q'：accept 必须是非空的可接受答案列表", False),
    ('kind = "predict"\nsnippet = "add"\n', None, "题目 'q'：predict 题要写 choices + answer，或者 accept", False),
    ('kind = "predict"\nsnippet = "add"\nchoices = ["6", "7"]\nanswer = 0\naccept = ["6"]\n', "accept", "题目 'q'：choices + answer 和 accept 只能写一种，不能都写", True),
    ('kind = "predict"\naccept = ["6"]\n', None, "题目 'q'：缺少 snippet", False),
    ('kind = "predict"\nsnippet = "nope"\naccept = ["6"]\n', "snippet", "题目 'q'：snippet 'nope' 不是第 01 章（01-mini.md）的代码块", True),
    ('kind = "open"\n', None, "题目 'q'：缺少 reference", False),
]


def test_each_malformed_choice_answer_accept_or_reference_is_one_problem_at_its_line(tmp_path):
    for n, (keys, key, message, kept) in enumerate(CASES):
        text = 'chapter = "01"\n\n[[questions]]\nid = "q"\n' + keys + BASE
        lines = text.splitlines()
        line = 3 if key is None else next(i for i, ln in enumerate(lines, 1) if ln.startswith(key + " ="))
        cp, msgs = problems_of(tmp_path, text, name=f"01-{n}.toml", chapter_id="01")
        assert msgs == [(line, message)], (keys, msgs)
        assert [x.id for x in cp.questions] == (["q"] if kept else []), keys


def test_a_predict_question_on_a_snippet_that_does_not_run_here(tmp_path):
    course = load_course(FIXTURE)
    chapter = course.chapter("01")
    for flag in ("norun", "gpu"):
        setattr(chapter.snippet("add"), flag, True)
        text = 'chapter = "01"\n\n[[questions]]\nid = "q"\nkind = "predict"\nsnippet = "add"\naccept = ["6"]\n' + BASE
        path = tmp_path / f"01-{flag}.toml"
        path.write_text(text, encoding="utf-8")
        cp = load_checkpoint(path, chapter)
        assert [(p.line, p.message) for p in cp.problems] == [
            (6, f"题目 'q'：snippet 'add' 标了 {flag}；predict 题要用在这里能运行的代码块")]
        setattr(chapter.snippet("add"), flag, False)


def test_a_question_without_explain_still_loads_with_an_empty_explanation(tmp_path):
    cp, _ = problems_of(tmp_path, 'chapter = "01"\n\n' + question().replace('explain = "!"\n', ""))
    assert [(x.id, x.explain) for x in cp.questions] == [("q", "")]


def test_problems_come_in_line_order(tmp_path):
    text = 'chapter = "01"\n\n[[questions]]\nid = "q"\nsection = "nowhere"\nkind = "single"\nprompt = 3\nchoices = ["5", "6"]\nanswer = 1\nexplain = "!"\n'
    _, msgs = problems_of(tmp_path, text)
    assert [line for line, _ in msgs] == [5, 7]


def test_a_missing_checkpoint_file_is_a_checkpoint_with_its_problem(tmp_path):
    import shutil

    from torchcourse.quiz.bank import checkpoint_for

    root = tmp_path / "c"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("bad"))
    (root / "checkpoints" / "01.toml").unlink()
    cp = checkpoint_for(load_course(root), "01")
    assert [(p.line, p.message) for p in cp.problems] == [(1, "找不到检查点文件")] and cp.questions == []


def test_a_course_without_chapters_reports_no_stray_checkpoint(tmp_path):
    from torchcourse.quiz.bank import validate_checkpoints

    root = tmp_path / "c"
    (root / "checkpoints").mkdir(parents=True)
    (root / "course.toml").write_text('title = "坏掉的\n', encoding="utf-8")
    (root / "checkpoints" / "01.toml").write_text('chapter = "01"\n', encoding="utf-8")
    course = load_course(root)
    assert course.chapters == [] and validate_checkpoints(course) == []


def test_the_predict_key_rules_one_by_one():
    from torchcourse.quiz.bank import predict_key_contradiction as why

    assert why(["5", "6"], 0, "6\n") == "答案是选项 0（'5'），可代码块的期望输出里整行打印出来的是选项 1: '6'，不是答案"
    assert why(["5", "6"], 1, "6\n") is None
    never = "写成了打印输出的样子，可代码块的期望输出里从没打印过它"
    for key, output in [("tensor([1.])", "x\n"), ("Parameter containing", "x\n"), ("torch.Size([2])", "x\n"), ("True", "False\n"),
                        ("None", "x\n"), ("-1.5", "2.5\n"), ("12", "3\n")]:
        assert why([key, "别的"], 0, output) == f"答案是选项 0（{key!r}），{never}", key
    for key, output in [("tensor([1.])", "tensor([1.])\n"), ("1.2.3", "x\n"), ("tensor 的形状", "x\n"), ("大约 3", "x\n"), ("1.5", "a 1.5 b\n")]:
        assert why([key, "别的"], 0, output) is None, key


def test_the_predict_accept_message_shows_what_the_snippet_prints():
    from torchcourse.quiz.bank import predict_accept_contradiction as why

    tail = "照真实输出填写的读者会被判错"
    assert why(["True"], "False\n") == f"accept 'True' 写成了打印输出的样子，可代码块的期望输出里从没打印过它（它打印的是 False）：{tail}"
    assert why(["True"], "a\nb\n") == f"accept 'True' 写成了打印输出的样子，可代码块的期望输出里从没打印过它（它打印了 2 行，第一行是 'a'）：{tail}"
    assert why(["True"], "\n") == f"accept 'True' 写成了打印输出的样子，可代码块的期望输出里从没打印过它（它什么也没打印）：{tail}"


# ----------------------------------------------------------------------------- review and order


def test_answer_days_are_local_days_of_the_instant():
    from datetime import datetime, timedelta, timezone

    from torchcourse.quiz.review import local_day, replay

    instant = datetime(2026, 3, 18, 12, 0, tzinfo=timezone.utc)
    east, west = instant.astimezone(timezone(timedelta(hours=13))), instant.astimezone(timezone(timedelta(hours=-11)))
    assert east.date() != west.date()  # written in two zones, one instant
    assert local_day(east) == local_day(west) == instant.astimezone().date()
    naive = datetime(2026, 3, 18, 23, 59)
    assert local_day(naive) == naive.date()
    st = replay("01", "q", [])
    assert (st.box, st.last_day, st.due) == (0, None, None)


def test_review_defaults_to_today(tmp_path):
    from datetime import date, datetime, timedelta

    from torchcourse.progress import open_store
    from torchcourse.quiz.review import due_questions, next_review_day

    course = load_course(FIXTURE)
    store, _ = open_store(tmp_path / "p.sqlite3")
    try:
        store.record_answer("01", "sum-single", "0", False, at=datetime.now() - timedelta(days=3))  # box 1: due two days ago
        store.record_answer("01", "func-fill", "x", False, at=datetime.now())  # due tomorrow
        assert [q.id for _, q in due_questions(course, store)] == ["sum-single"]
        assert next_review_day(course, store) == date.today() + timedelta(days=1)
    finally:
        store.close()


def test_choice_orders_shuffle_two_choices_too_and_seeds_fit_32_bits():
    from torchcourse.quiz.order import choice_order, new_seed, shown_numbers

    two = q("single", choices=["a", "b"], answer=0)
    assert {tuple(choice_order(seed, "01", two)) for seed in range(40)} == {(0, 1), (1, 0)}
    assert choice_order(5, "01", q("fill", accept=["x"])) == []
    assert all(0 <= new_seed() < 2**31 for _ in range(200))
    assert shown_numbers(None, [2, 0]) == [1, 3] and shown_numbers([], [1]) == [2]
    assert shown_numbers([2, 0, 1], [0, 1]) == [2, 3]


def test_questions_due_the_same_day_come_in_course_order_not_by_chapter_id(tmp_path):
    import shutil
    from datetime import date, datetime

    from torchcourse.progress import open_store
    from torchcourse.quiz.review import due_questions

    root = tmp_path / "c"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("bad"))
    toml = (root / "course.toml").read_text(encoding="utf-8")
    one, two = toml.split("[[chapters]]")[1:3]
    two = two.split("[[routes]]")[0]
    toml = toml.replace("[[chapters]]" + one, "").replace("[[chapters]]" + two, "[[chapters]]" + two.rstrip() + '\ncheckpoint = "02.toml"\n\n[[chapters]]' + one)
    (root / "course.toml").write_text(toml, encoding="utf-8")
    (root / "checkpoints" / "02.toml").write_text((root / "checkpoints" / "01.toml").read_text(encoding="utf-8").replace('chapter = "01"', 'chapter = "02"'), encoding="utf-8")
    course = load_course(root)
    assert [c.id for c in course.chapters] == ["02", "01"]
    store, _ = open_store(tmp_path / "p.sqlite3")
    try:
        when = datetime(2026, 3, 1, 10)
        store.record_answer("01", "sum-single", "0", False, at=when)
        store.record_answer("02", "sum-single", "0", False, at=when)
        assert [(cid, q.id) for cid, q in due_questions(course, store, today=date(2026, 3, 5))] == [("02", "sum-single"), ("01", "sum-single")]
    finally:
        store.close()


# ----------------------------------------------------------------------------- tells


def test_the_echo_tell_names_the_prompt_words_only_the_key_repeats():
    from torchcourse.quiz.tells import echoed_by_key

    def echo(prompt, choices):
        return echoed_by_key(q("single", prompt=prompt, choices=choices, answer=0))

    assert echo("梯度累加会怎样？", ["梯度累加了", "清零", "报错"]) == ["梯度累加"]  # a run of exactly four characters
    assert echo("为什么计算图被释放了？", ["因为计算图被释放", "因为内存不够", "因为张量太大"]) == ["图被释放", "计算图被"]
    assert echo("what does view do with retain_graph and no_grad and detach_ here",
                ["view retain_graph no_grad detach_", "b", "c"]) == ["retain_graph", "detach_", "no_grad", "view"]
    assert echo("what does view do", ["view", "a view"]) == []  # another choice has it too


def test_the_length_tell_needs_keys_and_other_choices():
    from torchcourse.quiz.tells import longest_is_key

    assert longest_is_key(q("single", choices=["短", "长长长长"], answer=1))
    assert not longest_is_key(q("single", choices=["短", "长长长长"], answer=None))  # no key
    assert not longest_is_key(q("multi", choices=["短", "长长长长"], answer=[0, 1]))  # no other choice


def tells_course(tmp_path, questions: str):
    import shutil

    root = tmp_path / "c"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("bad"))
    (root / "checkpoints" / "01.toml").write_text('chapter = "01"\n\n' + questions, encoding="utf-8")
    return load_course(root)


def single(qid, choices, answer, prompt="?"):
    return (f'[[questions]]\nid = "{qid}"\nkind = "single"\nprompt = "{prompt}"\nchoices = {choices}\nanswer = {answer}\n'
            'explain = "!"\nsection = "sum"\n\n')


def test_the_length_warning_is_for_more_than_a_quarter_and_the_echo_shows_three_words(tmp_path):
    from torchcourse.quiz.tells import quiz_warnings

    plain = '["甲一", "乙二", "丙三"]'
    quarter = single("a", '["短", "长长长长"]', 1) + "".join(single(x, plain, 0) for x in "bcd")
    assert [w for w in quiz_warnings(tells_course(tmp_path / "one", quarter)) if "唯一最长" in w] == []
    half = single("a", '["短", "长长长长"]', 1) + single("b", '["短", "长长长长"]', 1) + "".join(single(x, plain, 0) for x in "cd")
    [w] = [w for w in quiz_warnings(tells_course(tmp_path / "two", half)) if "唯一最长" in w]
    assert "的 4 道选择题里有 2 道的答案是唯一最长的选项" in w and w.endswith("：a、b。改写选项，让长短不再泄露答案")
    echo = single("e", '["view retain_graph no_grad detach_", "b", "c"]', 0, prompt="what does view do with retain_graph and no_grad and detach_ here")
    [w] = [w for w in quiz_warnings(tells_course(tmp_path / "echo", echo)) if "只有答案重复" in w]
    assert "只有答案重复了题干里的 「retain_graph」、「detach_」、「no_grad」，" in w


def test_accept_may_be_one_string_and_a_snippet_without_output_is_not_compared(tmp_path):
    cp, msgs = problems_of(tmp_path, 'chapter = "01"\n\n[[questions]]\nid = "q"\nkind = "fill"\naccept = "upper"\n' + BASE)
    assert msgs == [] and cp.questions[0].accept == ["upper"]
    course = load_course(FIXTURE)
    chapter = course.chapter("01")
    chapter.snippet("add").expected = None  # its output block missing (the chapter's own problem)
    path = tmp_path / "01-p.toml"
    path.write_text('chapter = "01"\n\n[[questions]]\nid = "q"\nkind = "predict"\nsnippet = "add"\naccept = ["True"]\n' + BASE, encoding="utf-8")
    cp = load_checkpoint(path, chapter)
    assert cp.problems == [] and [x.id for x in cp.questions] == ["q"]


def test_a_literal_key_with_chinese_at_either_end_of_the_range_is_prose():
    from torchcourse.quiz.bank import predict_key_contradiction as why

    assert why(["tensor(一)", "别的"], 0, "x\n") is None  # U+4E00
    assert why(["tensor(\u9fff)", "别的"], 0, "x\n") is None  # U+9FFF


def test_the_echo_tell_takes_only_runs_of_four_chinese_characters():
    """A run of three CJK characters the prompt and the key share (计算图 between two words) is
    no echo: a run shorter than four characters makes no gram, and the last gram of a longer run
    is four characters like the others (never a three-character tail)."""
    from torchcourse.quiz.tells import echoed_by_key

    def echo(prompt, choices):
        return echoed_by_key(q("single", prompt=prompt, choices=choices, answer=0))

    assert echo("x 计算图 y", ["x 计算图 y", "b", "c"]) == []
    assert echo("它把计算图释放", ["图释放 z", "清零", "报错"]) == []  # the prompt's last three characters
    assert echo("它把计算图释放", ["图释放了", "清零", "报错"]) == []  # no four-character run of the prompt
    assert echo("它把计算图释放", ["算图释放", "清零", "报错"]) == ["算图释放"]  # the prompt's last four: an echo
