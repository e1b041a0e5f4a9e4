"""``torchcourse quiz CHAPTER`` as a real subprocess, answers piped in, then the store checked."""

import os
import subprocess
import sys
from pathlib import Path

from torchcourse.progress import open_store

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).parent / "fixtures" / "quizcourse"


SEED = 7


def quiz(tmp_path, chapter, stdin, content=FIXTURE, extra=("--seed", str(SEED))):
    env = {**os.environ, "TORCHCOURSE_HOME": str(tmp_path)}
    env.pop("TORCHCOURSE_CONTENT", None)
    return subprocess.run(
        [sys.executable, "-m", "torchcourse", "--content", str(content), "quiz", chapter, *extra],
        input=stdin, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300,
    )


def shown(qid, *file_indexes, seed=SEED, sep=" "):
    """What to type to pick these choices (the file's indexes from 0) when the quiz runs with
    --seed ``seed``: their numbers as shown, from 1."""
    from torchcourse.course import load_course
    from torchcourse.quiz.bank import questions_for
    from torchcourse.quiz.order import choice_order, shown_numbers

    q = next(q for q in questions_for(load_course(FIXTURE), "01") if q.id == qid)
    return sep.join(str(n) for n in shown_numbers(choice_order(seed, "01", q), file_indexes))


def stored(tmp_path, content=FIXTURE):
    from torchcourse.course.loader import course_id_of

    store, notice = open_store(tmp_path / "data" / "progress.sqlite3", course_id=course_id_of(content))
    try:
        return [(a.chapter_id, a.question_id, a.answer, a.correct) for a in store.answers()], store.chapter_progress("01")
    finally:
        store.close()


def test_whole_quiz_piped(tmp_path):
    # single right, multi right ("1,3"), fill right despite backticks and case, predict (text) wrong,
    # predict (choices) right, open self-graded wrong
    answers = [shown("sum-single", 1), shown("upper-multi", 0, 2, sep=","), "`Upper()`", "5", shown("predict-shout", 1), "n"]
    proc = quiz(tmp_path, "01", "\n".join(answers) + "\n")
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr
    assert "第 1/6 题 · 单选" in out and "第 6/6 题 · 简答" in out
    assert "`sum([1, 2, 3])` 的结果是多少？" in out
    assert "✗ 不对。正确答案：6" in out  # predict-add, guessed 5
    assert "选项从 1 数起" in out
    # the predict snippets really ran: their output, with no fallback note
    assert "实际输出：\n    6\n" in out and "实际输出：\n    HI\n" in out
    assert "书中记录" not in out and "运行失败" not in out
    assert "参考答案：\n    因为它要逐个取出元素相加。" in out
    assert "得分：4/6（67%）" in out
    assert "回看：第 01 章 §求和" in out
    assert "本章还有断点没读到（0/2）" in out
    answers, progress = stored(tmp_path)
    assert answers == [
        ("01", "sum-single", "1", True),
        ("01", "upper-multi", "0,2", True),
        ("01", "func-fill", "`Upper()`", True),
        ("01", "predict-add", "5", False),
        ("01", "predict-shout", "1", True),
        ("01", "why-sum", "self:wrong", False),
    ]
    assert progress.completed is False


def test_eof_stops_cleanly_and_keeps_what_was_answered(tmp_path):
    from torchcourse.course import load_course
    from torchcourse.quiz.bank import questions_for
    from torchcourse.quiz.order import choice_order

    proc = quiz(tmp_path, "1", "1\n2 3\n")  # "1" finds chapter 01
    assert proc.returncode == 0, proc.stderr
    assert "输入结束：已保存 2/6 题的作答。" in proc.stdout
    assert "本次得分：答了 2 题，对 %d 题" % sum(a[3] for a in stored(tmp_path)[0]) in proc.stdout
    assert "还有 4 题没答。" in proc.stdout
    assert "/6 题正确" not in proc.stdout and "0/2（" not in proc.stdout  # one denominator per line
    assert "Traceback" not in proc.stderr
    answers, _ = stored(tmp_path)
    # the numbers typed are positions as shown: stored as the file's indexes they stood for
    qs = {q.id: q for q in questions_for(load_course(FIXTURE), "01")}
    first = choice_order(SEED, "01", qs["sum-single"])[0]
    multi = sorted(choice_order(SEED, "01", qs["upper-multi"])[1:3])
    assert answers == [("01", "sum-single", str(first), first == 1), ("01", "upper-multi", ",".join(map(str, multi)), multi == [0, 2])]


def test_unknown_chapter_and_chapter_without_checkpoint(tmp_path):
    proc = quiz(tmp_path, "07", "")
    assert proc.returncode == 2  # a usage error, the same code as run/verify
    assert "没有这一章：'07'。已有的章节：01、02" in proc.stderr
    proc = quiz(tmp_path, "02", "")
    assert proc.returncode == 2
    assert "第 02 章「没有检查点的章节」没有检查点测验。" in proc.stderr


def test_completing_the_chapter_through_the_quiz(tmp_path):
    from torchcourse.course.loader import course_id_of

    store, _ = open_store(tmp_path / "data" / "progress.sqlite3", course_id=course_id_of(FIXTURE))
    store.reach_break("01", 2)
    store.close()
    answers = [shown("sum-single", 1), shown("upper-multi", 0, 2), "upper", "6", shown("predict-shout", 1), "y"]
    proc = quiz(tmp_path, "01", "\n".join(answers) + "\n")
    assert proc.returncode == 0, proc.stderr
    assert "得分：6/6（100%）" in proc.stdout
    assert "🎉 第 01 章已完成。" in proc.stdout
    _, progress = stored(tmp_path)
    assert progress.completed is True


def test_a_piped_line_that_does_not_answer_stops_the_quiz_naming_the_line(tmp_path):
    # line 5 ("9") cannot answer question 5 (3 choices): nothing after it may answer the wrong question
    answers = [shown("sum-single", 1), shown("upper-multi", 0, 2, sep=","), "`Upper()`", "5", "9", "2", "n"]
    proc = quiz(tmp_path, "01", "\n".join(answers) + "\n")
    assert proc.returncode == 1
    assert "输入第 5 行“9”回答不了第 5 题：看不懂“9”：请输入 1–3 之间的一个序号（从 1 数起）。" in proc.stdout
    assert "前面的作答已保存" in proc.stdout
    answers, _ = stored(tmp_path)
    assert [a[1] for a in answers] == ["sum-single", "upper-multi", "func-fill", "predict-add"]
    assert "第 6/6 题" not in proc.stdout


def test_a_quiz_abandoned_before_any_answer_is_not_an_attempt(tmp_path):
    proc = quiz(tmp_path, "01", "")  # stdin at its end straight away (</dev/null)
    assert proc.returncode == 0, proc.stderr
    assert "没有作答任何题目：这次不算一次测验" in proc.stdout
    assert "题正确" not in proc.stdout and "对 0 题" not in proc.stdout
    assert "输入结束" not in proc.stdout


def _orders(tmp_path):
    from torchcourse.course.loader import course_id_of

    store, _ = open_store(tmp_path / "data" / "progress.sqlite3", course_id=course_id_of(FIXTURE))
    try:
        return tuple(a.shown for a in store.answers() if a.shown is not None)
    finally:
        store.close()


def test_each_fresh_attempt_shows_its_own_order_and_the_seed_repeats_one(tmp_path):
    """Issue 33: always typing "1" must not be a strategy. Five fresh attempts without --seed
    (3 choice questions of 3 choices each: 216 possible orders per attempt) show at least two
    different orders; two runs with the same --seed show the same one, as choice_order says."""
    from torchcourse.course import load_course
    from torchcourse.quiz.bank import questions_for
    from torchcourse.quiz.order import choice_order

    seen = set()
    for i in range(5):
        d = tmp_path / f"fresh{i}"
        proc = quiz(d, "01", "1\n1\n1\n1\n1\n1\n", extra=())
        assert proc.returncode == 0, proc.stderr
        seen.add(_orders(d))
    assert len(seen) >= 2, seen
    runs = []
    for i in range(2):
        d = tmp_path / f"seeded{i}"
        proc = quiz(d, "01", "1\n1\n1\n1\n1\n1\n", extra=("--seed", "12345"))
        runs.append((proc.stdout, _orders(d)))
    assert runs[0] == runs[1]
    qs = [q for q in questions_for(load_course(FIXTURE), "01") if q.has_choices]
    assert runs[0][1] == tuple(tuple(choice_order(12345, "01", q)) for q in qs)
    # the transcript numbers the choices in that order
    sum_single = qs[0]
    listed = "\n".join(f"  {n + 1}) {sum_single.choices[i]}" for n, i in enumerate(choice_order(12345, "01", sum_single)))
    assert listed in runs[0][0]


def test_a_quiz_left_half_way_resumes_with_resume_and_counts_answers_once(tmp_path):
    first = quiz(tmp_path, "01", "\n".join([shown("sum-single", 1), shown("upper-multi", 0)]) + "\n")
    assert "输入结束：已保存 2/6 题的作答。" in first.stdout
    # piped without --resume: a new attempt from question 1 (the piped lines stay predictable);
    # one left before any answer is no attempt, so the half-done one still waits
    again = quiz(tmp_path, "01", "")
    assert "第 1/6 题" in again.stdout and "没有作答任何题目" in again.stdout
    rest = quiz(tmp_path, "01", "upper\n6\n" + shown("predict-shout", 1) + "\ny\n", extra=("--resume",))
    assert rest.returncode == 0, rest.stderr
    assert "接着上次的测验：前 2 题已作答（计入得分），从第 3 题继续。" in rest.stdout
    assert "第 1/6 题" not in rest.stdout and "第 3/6 题 · 填空" in rest.stdout
    assert "得分：5/6（83%）" in rest.stdout  # the two earlier answers (one right) counted once
    answers, _ = stored(tmp_path)
    assert [a[1] for a in answers] == ["sum-single", "upper-multi", "func-fill", "predict-add", "predict-shout", "why-sum"]
    # finished: nothing left to resume
    after = quiz(tmp_path, "01", "", extra=("--resume",))
    assert "没有做到一半的测验可以接着做" in after.stderr


def test_help_says_the_order_is_shuffled_and_how_to_fix_it(tmp_path):
    proc = quiz(tmp_path, "01", "", extra=("--help",))
    assert proc.returncode == 0
    out = " ".join(proc.stdout.split())
    assert "选项的顺序每次测验都重新打乱" in out and "--seed N" in out and "同一个 N 每次顺序相同" in out and "--resume" in out
    bad = quiz(tmp_path, "01", "", extra=("--seed", "abc"))
    assert bad.returncode == 2 and "种子应为整数" in bad.stderr and "Traceback" not in bad.stderr


def test_at_a_terminal_a_quiz_left_half_way_is_named(tmp_path):
    """At a real terminal (a pty) without --resume the learner is told where the last attempt
    stopped and how to continue; Ctrl+D then ends the quiz cleanly."""
    import pty
    import select
    import time

    quiz(tmp_path, "01", shown("sum-single", 1) + "\n")  # piped: one answer, then the end of input
    env = {**os.environ, "TORCHCOURSE_HOME": str(tmp_path)}
    env.pop("TORCHCOURSE_CONTENT", None)
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "torchcourse", "--content", str(FIXTURE), "quiz", "01"],
                            stdin=slave, stdout=slave, stderr=slave, cwd=ROOT, env=env)
    os.close(slave)
    out = b""
    try:
        deadline = time.monotonic() + 300
        while "输入序号".encode() not in out:  # the first question's prompt: waiting for a line
            assert time.monotonic() < deadline and proc.poll() is None, out.decode(errors="replace")
            if select.select([master], [], [], 1)[0]:
                out += os.read(master, 65536)
        os.write(master, b"\x04")  # Ctrl+D: end of input
        while proc.poll() is None or select.select([master], [], [], 0)[0]:
            if select.select([master], [], [], 1)[0]:
                try:
                    out += os.read(master, 65536)
                except OSError:
                    break
            assert time.monotonic() < deadline
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(master)
    text = " ".join(out.decode(errors="replace").split())
    assert "上次的测验停在第 2/6 题（已答 1 题）；要从第 2 题继续，请加 --resume。这次重新开始。" in text, text
    assert "第 1/6 题" in text and "Traceback" not in text


class TestQuizTextAsWritten:
    def test_quiz_05_shows_dunder_names_as_written(self, tmp_path):
        """Issue 49 (M5 and the expert reviews): `__init__` printed as `init`."""
        from torchcourse import paths

        r = quiz(tmp_path, "05", "", content=paths.shipped_content_dir(), extra=("--seed", "1"))
        assert "`__init__`" in r.stdout, r.stdout[:600]
        assert "`init`" not in r.stdout

    def test_check_warns_when_a_field_would_not_render_as_written(self):
        from torchcourse.quiz.text import render_problems

        assert render_problems("用 `x.view(2, 3) 试试") and render_problems("这是 *斜体* 吗")
        assert render_problems("在 `__init__` 里，**总是** 如此；Module.__init__() call") == []


class TestRetakeOnlyTheWrongOnes:
    def test_wrong_asks_only_the_questions_answered_wrong(self, tmp_path):
        """Walk M4: the retake re-asked all 17 questions, the 12 right ones too."""
        from torchcourse.course import load_course
        from torchcourse.course.loader import course_id_of
        from torchcourse.quiz.bank import questions_for

        qs = questions_for(load_course(FIXTURE), "01")
        store, _ = open_store(tmp_path / "data" / "progress.sqlite3", course_id=course_id_of(FIXTURE))
        for q in qs[1:]:
            store.record_answer("01", q.id, "x", True)
        store.record_answer("01", qs[0].id, "x", False)
        store.close()
        r = quiz(tmp_path, "01", "", extra=("--seed", str(SEED), "--wrong"))
        assert f"只重做上次答错或没答的 1 题（共 {len(qs)} 题）" in r.stderr, r.stderr
        assert "第 1/1 题" in r.stdout or "1/1" in r.stdout, r.stdout
