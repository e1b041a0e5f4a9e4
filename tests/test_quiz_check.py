"""Issue 33: ``torchcourse check`` on quiz keys — a typed predict answer checked against its
snippet's real (expected) output, two choices that are both output lines, and the ⚠️ warnings
for keys that length or the prompt's wording give away. Real ``torchcourse check`` runs on a
copy of the fixture course."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchcourse.course import load_course
from torchcourse.quiz.bank import predict_accept_contradiction
from torchcourse.quiz.tells import echoed_by_key, longest_is_key, quiz_warnings

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).parent / "fixtures" / "quizcourse"

SHAPE_SNIPPET = """
## 形状 {#shape}

```python {#broadcast-shapes}
a = (2, 1, 5)
b = (4, 1)
print((a[0], b[0], a[2]))
print("done")
```

```output
(2, 4, 5)
done
```
"""


def course_copy(tmp_path, questions: str) -> Path:
    root = tmp_path / "course"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("bad"))
    md = root / "01-mini.md"
    text = md.read_text(encoding="utf-8")
    md.write_text(text.replace("## ✅ 检查点", SHAPE_SNIPPET.lstrip("\n") + "\n## ✅ 检查点"), encoding="utf-8")
    cp = root / "checkpoints" / "01.toml"
    cp.write_text(cp.read_text(encoding="utf-8") + questions, encoding="utf-8")
    return root


def check(root: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TORCHCOURSE_CONTENT"}
    return subprocess.run([sys.executable, "-m", "torchcourse", "--content", str(root), "check"],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)


def predict(qid: str, accept: str) -> str:
    return f"""
[[questions]]
id = "{qid}"
kind = "predict"
snippet = "broadcast-shapes"
prompt = "第一行打印的形状是什么？"
accept = {accept}
explain = "从右往左对齐。"
section = "shape"
"""


def line_of(root: Path, needle: str) -> int:
    lines = (root / "checkpoints" / "01.toml").read_text(encoding="utf-8").splitlines()
    return next(i + 1 for i, ln in enumerate(lines) if needle in ln)


def test_a_typed_predict_key_contradicting_the_output_fails_check_with_file_and_line(tmp_path):
    """The author walk's case: accept = ["(2, 5, 4)"] while the snippet prints (2, 4, 5)."""
    root = course_copy(tmp_path, predict("predict-shape", '["(2, 5, 4)"]'))
    proc = check(root)
    assert proc.returncode == 1, proc.stdout
    line = line_of(root, 'accept = ["(2, 5, 4)"]')
    where = f"{root / 'checkpoints' / '01.toml'}:{line}: 题目 'predict-shape'：accept '(2, 5, 4)'"
    assert where in proc.stdout, proc.stdout
    assert "从没打印过它" in proc.stdout and "1 处问题" in proc.stdout
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("accept", ['["(2, 4, 5)"]', '["（2，4，5）"]', '["(2,4,5)", "torch.Size([2, 4, 5])"]', '["2"]', '["done"]'])
def test_typed_keys_the_output_bears_out_pass(tmp_path, accept):
    """The real line (any spacing, full-width), one printed spelling of several, and answers not
    written as printed values (a count, a word) are not contradicted."""
    root = course_copy(tmp_path, predict("predict-shape", accept))
    proc = check(root)
    assert proc.returncode == 0, proc.stdout
    assert "0 处问题" in proc.stdout


def test_the_rule_on_its_own():
    assert predict_accept_contradiction(["(2, 5, 4)"], "(2, 4, 5)\n") is not None
    assert predict_accept_contradiction(["tensor([1., 2.])"], "tensor([1., 2.])\n") is None
    assert predict_accept_contradiction(["tensor([1., 3.])"], "x: tensor([1., 2.])\n") is not None
    assert predict_accept_contradiction(["True"], "flag True\n") is None
    assert predict_accept_contradiction(["True"], "Truest\n") is not None  # a word boundary, not a prefix
    assert predict_accept_contradiction(["2"], "['a', 'b']\n") is None  # a count of what it lists


def test_two_choices_that_are_both_output_lines_are_a_problem(tmp_path):
    root = course_copy(tmp_path, """
[[questions]]
id = "predict-which-line"
kind = "predict"
snippet = "broadcast-shapes"
prompt = "最后一行打印什么？"
choices = ["(2, 4, 5)", "done", "(2, 5, 4)"]
answer = 0
explain = "……"
section = "shape"
""")
    proc = check(root)
    assert proc.returncode == 1
    assert f"01.toml:{line_of(root, 'answer = 0')}: 题目 'predict-which-line'：选项 0: '(2, 4, 5)'、1: 'done' 都是代码块期望输出里的整行" in proc.stdout


def _single(qid: str, choices: list[str], answer: int, prompt: str = "哪个对？") -> str:
    listed = ", ".join(f'"{c}"' for c in choices)
    return f"""
[[questions]]
id = "{qid}"
kind = "single"
prompt = "{prompt}"
choices = [{listed}]
answer = {answer}
explain = "……"
section = "sum"
"""


def test_a_course_whose_keys_are_all_the_longest_gets_the_warning_and_still_passes(tmp_path):
    qs = "".join(_single(f"long-{i}", ["短", "也短", "最长的这一个才是答案", "不长"][:4], 2) for i in range(3))
    root = course_copy(tmp_path, qs)
    assert [longest_is_key(q) for q in course_questions(load_course(root))][-3:] == [True, True, True]
    proc = check(root)
    assert proc.returncode == 0, proc.stdout  # a warning, not a problem
    assert "0 处问题" in proc.stdout
    warning = next(ln for ln in proc.stdout.splitlines() if "唯一最长" in ln)
    assert warning.startswith(f"{root / 'checkpoints' / '01.toml'}:")
    assert "⚠️ 第 01 章的 6 道选择题里有 3 道的答案是唯一最长的选项" in warning
    assert "long-0、long-1、long-2" in warning


def test_one_longest_key_in_four_is_chance_not_a_warning(tmp_path):
    qs = _single("long", ["短", "也短", "最长的这一个才是答案", "不长"], 2)
    qs += "".join(_single(f"even-{i}", ["甲乙", "丙丁", "戊己", "庚辛"], 1) for i in range(3))
    root = course_copy(tmp_path, qs)
    assert not any("唯一最长" in w for w in quiz_warnings(load_course(root)))


def test_a_key_that_alone_repeats_the_prompt_is_flagged(tmp_path):
    root = course_copy(tmp_path, _single("echo", ["调用 retain_graph=True 再反向", "换一个优化器", "把学习率调小", "什么都不做"], 0,
                                         prompt="第二次 backward 报错，加上 retain_graph 会怎样？"))
    course = load_course(root)
    q = next(q for q in course_questions(course) if q.id == "echo")
    assert echoed_by_key(q) == ["retain_graph"]
    proc = check(root)
    assert proc.returncode == 0
    assert f"01.toml:{q.line}: ⚠️ 题目 'echo'：只有答案重复了题干里的 「retain_graph」" in proc.stdout
    # a distractor with the same word: no tell
    cp = root / "checkpoints" / "01.toml"
    cp.write_text(cp.read_text(encoding="utf-8").replace('"换一个优化器"', '"retain_graph 没用，换一个优化器"'), encoding="utf-8")
    assert not any("'echo'" in w for w in quiz_warnings(load_course(root)))


def course_questions(course):
    from torchcourse.quiz.bank import questions_for

    return questions_for(course, "01")


def test_the_shipped_course_has_no_quiz_tells_in_chapters_03_to_10():
    warnings = quiz_warnings(load_course(ROOT / "content"))
    later = [w for w in warnings if any(f"checkpoints/{n:02d}.toml" in w for n in range(3, 11))]
    assert later == []


def test_check_json_lists_the_quiz_warnings(tmp_path):
    import json

    qs = "".join(_single(f"long-{i}", ["短", "也短", "最长的这一个才是答案", "不长"], 2) for i in range(3))
    root = course_copy(tmp_path, qs)
    env = {k: v for k, v in os.environ.items() if k != "TORCHCOURSE_CONTENT"}
    proc = subprocess.run([sys.executable, "-m", "torchcourse", "--content", str(root), "check", "--json"],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    data = json.loads(proc.stdout)
    assert data["problems"] == [] and any("唯一最长" in w for w in data["warnings"])


class TestRenamedQuestionKeepsItsAnswers:
    """Row 66: a question renamed with ``was = "old-id"`` keeps its learners' answers."""

    QUIZ = ('chapter = "01"\n\n[[questions]]\nid = "{qid}"\n{was}kind = "single"\nprompt = "哪个？"\n'
            'choices = ["甲", "乙"]\nanswer = 1\nexplain = "乙。"\n')

    def make(self, tmp_path, qid, was=""):
        from test_runner_cli import make_course

        course = make_course(tmp_path / "c", "# T\n\n🎯 p\n\n## ✅ 检查点\n\n<!-- break -->\n\n## ⚡ 走神救援\n\n回顾。\n")
        toml = course / "course.toml"
        toml.write_text(toml.read_text(encoding="utf-8").replace('promise = "p"\n', 'promise = "p"\ncheckpoint = "01.toml"\n', 1), encoding="utf-8")
        (course / "cp").mkdir(exist_ok=True)
        (course / "cp" / "01.toml").write_text(self.QUIZ.format(qid=qid, was=was), encoding="utf-8")
        return course

    def test_answers_follow_the_rename_into_the_quiz(self, tmp_path):
        from torchcourse.course import load_course
        from torchcourse.progress import open_store
        from torchcourse.quiz.session import QuizSession

        store, _ = open_store(tmp_path / "p.sqlite3", course_id="q")
        store.record_answer("01", "old-name", "1", True)
        course = self.make(tmp_path, "new-name", 'was = "old-name"\n')
        QuizSession.for_chapter(load_course(course), store, "01")
        assert [a.question_id for a in store.answers("01")] == ["new-name"]
        store.close()

    def test_was_naming_another_current_question_is_a_problem(self, tmp_path):
        from torchcourse.check import all_problems
        from torchcourse.course import load_course

        course = self.make(tmp_path, "new-name", 'was = "new-name"\n')
        assert any("was 里列了这道题现在的 id" in str(p) for p in all_problems(load_course(course)))


class TestQuizChoicesThatGiveAwayOrMislead:
    """Rows 56, 61: a multi answer of every choice is ⚠️; a blank accept entry is named as blank."""

    def make(self, tmp_path, question: str):
        from test_runner_cli import make_course

        course = make_course(tmp_path / "c", "# T\n\n🎯 p\n\n## 一 {#one}\n\n正文。\n\n## ✅ 检查点\n\n<!-- break -->\n\n## ⚡ 走神救援\n\n回顾。\n")
        toml = course / "course.toml"
        toml.write_text(toml.read_text(encoding="utf-8").replace('promise = "p"\n', 'promise = "p"\ncheckpoint = "01.toml"\n', 1), encoding="utf-8")
        (course / "cp").mkdir(exist_ok=True)
        (course / "cp" / "01.toml").write_text('chapter = "01"\n\n[[questions]]\nid = "q"\n' + question + 'explain = "e"\nsection = "one"\n', encoding="utf-8")
        from cli_support import tc

        out = tc("--content", str(course), "check", home=tmp_path / "h")
        return out.stdout.splitlines()

    def test_every_choice_is_the_key(self, tmp_path):
        lines = self.make(tmp_path, 'kind = "multi"\nprompt = "哪些？"\nchoices = ["a", "b", "c"]\nanswer = [0, 1, 2]\n')
        assert any("01.toml:3: ⚠️ 题目 'q'：多选题的答案是全部选项" in ln for ln in lines), lines

    def test_a_blank_accept_entry_is_named(self, tmp_path):
        lines = self.make(tmp_path, 'kind = "fill"\nprompt = "填？"\naccept = ["", "　"]\n')
        assert any("accept 里序号 0 的答案（''）只有空格" in ln for ln in lines), lines


class TestPredictOfAnotherChaptersSnippet:
    def test_the_problem_says_where_the_snippet_lives(self, tmp_path):
        from test_runner_cli import make_course

        from torchcourse.check import all_problems
        from torchcourse.course import load_course

        text = "# T\n\n🎯 p\n\n## 一 {#one}\n\n正文。\n\nSNIP## ✅ 检查点\n\n<!-- break -->\n\n## ⚡ 走神救援\n\n回顾。\n"
        course = make_course(tmp_path / "c", text.replace("SNIP", ""))
        (course / "02.md").write_text(text.replace("SNIP", "```python {#fancy-copy}\nprint(1)\n```\n\n```output\n1\n```\n\n").replace("🎯 p", "🎯 q"), encoding="utf-8")
        toml = course / "course.toml"
        toml.write_text(toml.read_text(encoding="utf-8").replace('promise = "p"\n', 'promise = "p"\ncheckpoint = "01.toml"\n', 1).replace("planned = true\n", ""), encoding="utf-8")
        (course / "cp").mkdir(exist_ok=True)
        (course / "cp" / "01.toml").write_text('chapter = "01"\n\n[[questions]]\nid = "elsewhere"\nkind = "predict"\nsnippet = "fancy-copy"\n'
                                               'prompt = "打印什么？"\naccept = ["1"]\nexplain = "e"\nsection = "one"\n', encoding="utf-8")
        problems = [str(p) for p in all_problems(load_course(course))]
        assert any("'fancy-copy' 是第 02 章的代码块" in p for p in problems), problems
