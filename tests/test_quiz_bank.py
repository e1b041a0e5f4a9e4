"""Loading checkpoint files, and the validator's file:line problems on broken ones."""

from pathlib import Path

from torchcourse.course import load_course
from torchcourse.check import all_problems
from torchcourse.quiz.bank import load_checkpoint, questions_for, validate_checkpoints

FIXTURE = Path(__file__).parent / "fixtures" / "quizcourse"


def test_fixture_course_is_clean_and_loads_every_kind():
    course = load_course(FIXTURE)
    assert all_problems(course) == []
    qs = questions_for(course, "01")
    assert [x.id for x in qs] == ["sum-single", "upper-multi", "func-fill", "predict-add", "predict-shout", "why-sum"]
    assert {x.kind for x in qs} == {"single", "multi", "fill", "predict", "open"}
    multi = qs[1]
    assert multi.answer == [0, 2] and multi.line == 12
    assert qs[3].snippet == "add" and qs[3].accept == ["6"]
    assert qs[5].reference.startswith("因为")
    assert questions_for(course, "02") == []  # no checkpoint


def _problems(tmp_path=None):
    course = load_course(FIXTURE / "bad")
    return [(p.file.name, p.line, p.message) for p in validate_checkpoints(course)]


def has(problems, name, line, *words):
    for f, ln, msg in problems:
        if f == name and ln == line and all(w in msg for w in words):
            return True
    raise AssertionError(f"no problem {name}:{line} with {words}; got:\n" + "\n".join(f"{f}:{ln}: {m}" for f, ln, m in problems))


def test_each_mistake_is_reported_at_its_line():
    ps = _problems()
    has(ps, "01.toml", 13, "题目 id 'ok' 重复了", "第一次出现在第 3 行")
    has(ps, "01.toml", 23, "未知的题型 'essay'")
    has(ps, "01.toml", 33, "answer 3 超出范围", "共 3 个选项")
    has(ps, "01.toml", 42, "answer 5 超出范围")
    has(ps, "01.toml", 49, "snippet 'missing-snippet'", "不是第 01 章（")
    has(ps, "01.toml", 61, "section 'nowhere'", "的锚点")
    has(ps, "01.toml", 63, "'no-explain'", "缺少 explain")
    has(ps, "01.toml", 70, "'no-prompt'", "缺少 prompt")
    has(ps, "01.toml", 81, "未知的键 'acept'")
    has(ps, "02.toml", 6, "TOML 写法有误")
    has(ps, "03.toml", 1, "chapter = '01' 和使用这个文件的章节 '03' 对不上")
    has(ps, "99.toml", 1, "检查点文件没有被 course.toml 里的任何一章使用")
    # the correct first question produced no problem
    assert not any(f == "01.toml" and ln < 13 for f, ln, _ in ps)


def test_check_command_reports_checkpoint_problems(tmp_path):
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "torchcourse", "--content", str(FIXTURE / "bad"), "check"],
        capture_output=True, text=True, cwd=Path(__file__).parent.parent, env={**__import__("os").environ, "TORCHCOURSE_HOME": str(tmp_path)},
    )
    assert proc.returncode == 1
    assert f"{FIXTURE / 'bad' / 'checkpoints' / '01.toml'}:23: 题目 'bad-kind'：未知的题型 'essay'" in proc.stdout


def test_unusable_questions_are_left_out_but_good_ones_load():
    course = load_course(FIXTURE / "bad")
    chapter = course.chapter("01")
    cp = load_checkpoint(chapter.checkpoint, chapter)
    ids = [x.id for x in cp.questions]
    assert ids[0] == "ok" and ids.count("ok") == 1
    assert "bad-kind" not in ids and "out-of-range" not in ids and "no-prompt" not in ids


def test_predict_needs_a_runnable_snippet_and_kind_specific_keys(tmp_path):
    course = load_course(FIXTURE)
    chapter = course.chapter("01")
    path = tmp_path / "01.toml"
    path.write_text(
        'chapter = "01"\n'
        "\n"
        "[[questions]]\n"
        'id = "p"\n'
        'kind = "predict"\n'
        'snippet = "add"\n'
        'prompt = "?"\n'
        'explain = "!"\n'
        'section = "sum"\n'
        "\n"
        "[[questions]]\n"
        'id = "f"\n'
        'kind = "fill"\n'
        'prompt = "?"\n'
        'accept = ["x"]\n'
        'choices = ["a", "b"]\n'
        'explain = "!"\n'
        'section = "sum"\n',
        encoding="utf-8",
    )
    cp = load_checkpoint(path, chapter)
    msgs = [(p.line, p.message) for p in cp.problems]
    assert (3, "题目 'p'：predict 题要写 choices + answer，或者 accept") in msgs
    assert (16, "题目 'f'：fill 题不用写 choices") in msgs


def test_quiz_core_never_imports_textual_or_torch_and_the_screen_never_imports_torch():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import torchcourse.quiz, torchcourse.quiz.cli, torchcourse.quiz.review, torchcourse.quiz.completion, torchcourse.quiz.session\n"
        "assert 'textual' not in sys.modules, 'quiz core imported textual'\n"
        "assert 'torch' not in sys.modules, 'quiz core imported torch'\n"
        "import torchcourse.tui.screens.quiz\n"
        "assert 'torch' not in sys.modules, 'quiz screen imported torch'\n"
        "print('clean')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent)
    assert proc.stdout.strip() == "clean", proc.stderr


def test_checkpoint_is_parsed_once_per_course_and_an_edit_is_seen(tmp_path):
    import os
    import shutil

    root = tmp_path / "course"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("bad"))
    course = load_course(root)
    first = questions_for(course, "01")
    assert questions_for(course, "01") is first  # remembered, not read again
    path = root / "checkpoints" / "01.toml"
    path.write_text(path.read_text(encoding="utf-8").replace("的结果是多少？", "会得到什么？"), encoding="utf-8")
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # a coarse-clock filesystem
    edited = questions_for(course, "01")
    assert "会得到什么" in edited[0].prompt and "会得到什么" not in first[0].prompt
