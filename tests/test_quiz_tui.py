"""QuizScreen and ReviewScreen driven by keys in a tiny test App (Pilot), with the real store and runner."""

import asyncio
import functools
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest
from textual.app import App

from torchcourse.course import load_course
from waiting import wait_for_app
from torchcourse.progress import open_store
from torchcourse.runner import Runner
from torchcourse.tui.screens.quiz import QuizOutcome, QuizScreen, ReviewScreen

from tui_support import screen_text

FIXTURE = Path(__file__).parent / "fixtures" / "quizcourse"


class QuizApp(App):
    def __init__(self, make_screen):
        super().__init__()
        self.make_screen = make_screen
        self.outcomes: list[QuizOutcome] = []

    def on_mount(self) -> None:
        self.push_screen(self.make_screen(), callback=self.outcomes.append)


def sync(coro_fn):
    """Run an async test body with asyncio.run (no pytest-asyncio needed)."""

    @functools.wraps(coro_fn)
    def wrapper(*args, **kwargs):
        asyncio.run(coro_fn(*args, **kwargs))

    return wrapper


@pytest.fixture
def course():
    return load_course(FIXTURE)


@pytest.fixture
def store(tmp_path):
    s, _ = open_store(tmp_path / "progress.sqlite3")
    yield s
    s.close()


@pytest.fixture
def runner(tmp_path):
    r = Runner(cache_dir=tmp_path / "runs", warm=False)  # the snippets import nothing: cold is fastest
    yield r
    r.close()


def text(screen, wid: str) -> str:
    widget = screen.query_one(wid)
    content = getattr(widget, "content", None)  # the choices are a renderable whose str() is their text
    return str(content if content is not None else widget.render())


def num(screen, *file_indexes) -> list[str]:
    """The keys to press for these choices (the file's indexes from 0) of the question on screen:
    their numbers in the order this attempt shows them."""
    from torchcourse.quiz.order import shown_numbers

    s = screen.session
    return [str(n) for n in shown_numbers(s.order(*s.current), file_indexes)]


async def wait_for(pilot, predicate, timeout=None):
    await wait_for_app(pilot, predicate, "the quiz screen", deadline=timeout)


@sync
async def test_whole_quiz_by_keys(course, store, runner):
    app = QuizApp(lambda: QuizScreen(course, "01", store, runner))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert "第 1/6 题 · 单选" in text(screen, "#quiz-head")
        [six] = num(screen, 1)
        await pilot.press(six)
        assert f"(•) {six}) 6" in text(screen, "#quiz-choices")
        await pilot.press("enter")
        assert "✓ 正确" in text(screen, "#quiz-verdict")
        assert "出处：第 01 章 §求和" in text(screen, "#quiz-where")
        await pilot.press("enter")
        # multi: toggle 1, 2, 3 then untoggle the wrong one with the cursor and space
        [wrong] = num(screen, 1)
        await pilot.press("1", "2", "3", *(["up"] * (3 - int(wrong))), "space")
        assert f"[ ] {wrong}) \"hi\".lower()" in text(screen, "#quiz-choices")
        assert text(screen, "#quiz-choices").count("[x]") == 2
        await pilot.press("enter", "enter")
        # fill
        assert "填空" in text(screen, "#quiz-head")
        await pilot.press(*"UPPER", "enter")
        assert "✓ 正确" in text(screen, "#quiz-verdict")
        await pilot.press("enter")
        # predict graded like fill: wrong guess, then the real run shows up
        await pilot.press("7", "enter")
        assert "✗ 不对。正确答案：6" in text(screen, "#quiz-verdict")
        await wait_for(pilot, lambda: "实际输出" in text(screen, "#quiz-run"))
        assert text(screen, "#quiz-run").rstrip().endswith("6")
        await pilot.press("enter")
        # predict graded like single
        await pilot.press(*num(screen, 1), "enter")
        await wait_for(pilot, lambda: "实际输出" in text(screen, "#quiz-run"))
        assert "HI" in text(screen, "#quiz-run")
        await pilot.press("enter")
        # open: y does nothing before the reveal; r reveals; n grades
        await pilot.press("y")
        assert not screen.query_one("#quiz-reference").display
        await pilot.press("r")
        assert screen.query_one("#quiz-reference").display
        await pilot.press("n")
        assert text(screen, "#quiz-verdict").strip() == "已记为答错"
        await wait_for(pilot, lambda: "解释：sum 遍历它的参数。" in screen_text(app))
        await pilot.press("enter")
        summary = text(screen, "#quiz-summary")
        assert "得分：4/6（67%）" in summary
        missed = screen.query_one("#quiz-missed")
        assert missed.option_count == 2
        assert "回看：第 01 章 §求和" in str(missed.get_option_at_index(0).prompt)
        # pick the second missed question: jump to its section
        await pilot.press("down", "enter")
        await pilot.pause()
    assert app.outcomes == [QuizOutcome("01", 4, 6, ("01", "sum"))]
    assert [(a.question_id, a.answer, a.correct) for a in store.answers()] == [
        ("sum-single", "1", True),
        ("upper-multi", "0,2", True),
        ("func-fill", "UPPER", True),
        ("predict-add", "7", False),
        ("predict-shout", "1", True),
        ("why-sum", "self:wrong", False),
    ]


@sync
async def test_escape_mid_quiz_keeps_answers(course, store, runner):
    app = QuizApp(lambda: QuizScreen(course, "01", store, runner))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("enter")  # nothing picked: stays on the question
        assert "第 1/6 题" in text(app.screen, "#quiz-head")
        assert store.answers() == []
        await pilot.press("1", "enter", "escape")
        await pilot.pause()
    [(qid, answer, correct)] = [(a.question_id, a.answer, a.correct) for a in store.answers()]
    assert qid == "sum-single" and correct == (answer == "1")
    assert app.outcomes == [QuizOutcome("01", int(correct), 6, None)]


@sync
async def test_chapter_without_checkpoint_says_so(course, store, runner):
    app = QuizApp(lambda: QuizScreen(course, "02", store, runner))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert "没有检查点测验" in text(app.screen, "#quiz-summary")
        await pilot.press("enter")
        await pilot.pause()
    assert app.outcomes == [QuizOutcome(None, 0, 0, None)]


@sync
async def test_review_asks_due_questions_and_stores(course, store, runner):
    today = date.today()
    three_days_ago = datetime.combine(today - timedelta(days=3), datetime.min.time()).replace(hour=12)
    store.record_answer("01", "func-fill", "lower", False, at=three_days_ago)
    store.record_answer("01", "sum-single", "1", True, at=three_days_ago)
    app = QuizApp(lambda: ReviewScreen(course, store, runner, today=today))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        head = text(app.screen, "#quiz-head")
        assert "🔁 复习" in head and "第 1/1 题 · 第 01 章 · 填空" in head
        await pilot.press(*"upper", "enter", "enter")
        assert "全部答对" in text(app.screen, "#quiz-summary")
        await pilot.press("enter")
        await pilot.pause()
    assert app.outcomes == [QuizOutcome(None, 1, 1, None)]
    assert [(a.question_id, a.correct) for a in store.answers(question_id="func-fill")] == [("func-fill", False), ("func-fill", True)]


@sync
async def test_review_with_nothing_due(course, store, runner):
    store.record_answer("01", "func-fill", "lower", False, at=datetime(2025, 3, 1, 12))
    app = QuizApp(lambda: ReviewScreen(course, store, runner, today=date(2025, 3, 1)))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert "今天没有到期的复习题。下一次有题到期是 2025-03-02。" in text(app.screen, "#quiz-summary")
        await pilot.press("escape")
        await pilot.pause()
    assert app.outcomes == [QuizOutcome(None, 0, 0, None)]


@sync
async def test_review_open_question_self_graded_right_and_review_footer(course, store, runner):
    today = date.today()
    three_days_ago = datetime.combine(today - timedelta(days=3), datetime.min.time()).replace(hour=12)
    store.record_answer("01", "why-sum", "self:wrong", False, at=three_days_ago)
    app = QuizApp(lambda: ReviewScreen(course, store, runner, today=today))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        footer = screen_text(app).splitlines()[-1]
        assert "Esc 离开复习" in footer and "离开测验" not in footer, footer
        await pilot.press("r", "y")
        await pilot.pause()
        assert text(app.screen, "#quiz-verdict").strip() == "已记为答对"  # what was recorded, not "✓ 正确"
        await wait_for(pilot, lambda: "解释：sum 遍历它的参数。" in screen_text(app))
        await pilot.press("enter", "enter")
        await pilot.pause()
    assert [(a.question_id, a.correct) for a in store.answers(question_id="why-sum")] == [("why-sum", False), ("why-sum", True)]


async def _answer_first_three(pilot, screen):
    await pilot.press(*num(screen, 1), "enter", "enter")  # single, right
    await pilot.press(*num(screen, 0), "enter", "enter")  # multi, wrong (one of two)
    await pilot.press(*"upper", "enter", "enter")  # fill, right


@sync
async def test_escape_after_some_answers_and_reopening_resumes_at_the_next(course, store, runner):
    """Issue 33: Esc after 3 of 6 answers, open the quiz again: it offers 从第 4 题继续 / 重新开始;
    continuing starts at question 4 and the three answers count once. Then the same after a
    restart of the app (nothing in memory: the stored attempt)."""
    from torchcourse.tui.screens.quiz_save import forget_left

    for fresh_process in (False, True):
        store.reset()
        app = QuizApp(lambda: QuizScreen(course, "01", store, runner))
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            first = app.screen
            order = [first.session.order(cid, q) for cid, q in first.session.items if q.has_choices]
            await _answer_first_three(pilot, first)
            assert "第 4/6 题" in text(first, "#quiz-head")
            await pilot.press("escape")
            await wait_for(pilot, lambda: len(store.answers()) == 3)
            if fresh_process:
                forget_left(store, "01")  # a new process remembers nothing but the store
            app.push_screen(QuizScreen(course, "01", store, runner), callback=app.outcomes.append)
            await wait_for(pilot, lambda: app.screen is not first and "从第 4 题继续" in screen_text(app))
            again = app.screen
            assert "重新开始" in screen_text(app) and "6 题里已答 3 题" in screen_text(app)
            await pilot.press("enter")
            await wait_for(pilot, lambda: "第 4/6 题" in text(again, "#quiz-head"))
            assert [again.session.order(cid, q) for cid, q in again.session.items if q.has_choices] == order
            await pilot.press("6", "enter", "enter")  # predict (typed), right
            await pilot.press(*num(again, 1), "enter", "enter")  # predict (choices), right
            await pilot.press("r", "y", "enter")  # open, self-graded right
            await wait_for(pilot, lambda: "得分：5/6" in text(again, "#quiz-summary"))
            assert "含上次离开前答的 3 题" in text(again, "#quiz-summary")
            await pilot.press("escape")
            await wait_for(pilot, lambda: len(store.answers()) == 6 and store.open_attempt("01") is None)
        assert [a.question_id for a in store.answers()] == [
            "sum-single", "upper-multi", "func-fill", "predict-add", "predict-shout", "why-sum"]
        assert len({a.attempt_id for a in store.answers()}) == 1


@sync
async def test_starting_again_asks_from_question_1_in_a_new_order(course, store, runner):
    from torchcourse.tui.screens.quiz_save import forget_left

    app = QuizApp(lambda: QuizScreen(course, "01", store, runner, seed=1))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await _answer_first_three(pilot, app.screen)
        await pilot.press("escape")
        await wait_for(pilot, lambda: len(store.answers()) == 3)
        app.push_screen(QuizScreen(course, "01", store, runner, seed=2), callback=app.outcomes.append)
        await wait_for(pilot, lambda: "重新开始" in screen_text(app))
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: "第 1/6 题" in text(app.screen, "#quiz-head"))
        assert app.screen.session.seed == 2 and app.screen.session.answered == 0
        await pilot.press("1", "enter")
        await wait_for(pilot, lambda: len(store.answers()) == 4)
        left = store.open_attempt("01")
        assert left.seed == 2 and len(left.answers) == 1  # the old attempt is closed
        await pilot.press("escape")
        await pilot.pause()
    forget_left(store, "01")


def test_the_quiz_screen_modules_stay_split_by_role():
    """Issue 31/33: question rendering, grading flow, persistence and the predict run live in
    modules of their own; no class over 400 lines, no module over 500."""
    import ast

    screens = Path(__file__).resolve().parent.parent / "torchcourse" / "tui" / "screens"
    files = sorted(screens.glob("quiz*.py"))
    assert {f.stem for f in files} >= {"quiz", "quiz_view", "quiz_save", "quiz_run", "quiz_ends"}
    for f in files:
        src = f.read_text(encoding="utf-8")
        assert len(src.splitlines()) <= 500, f
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.ClassDef):
                assert node.end_lineno - node.lineno + 1 <= 400, (f.name, node.name)


class TestQuizTextRenderedLikeProse:
    @sync
    async def test_choices_and_prompts_show_code_and_dunder_names_as_written(self, store, runner):
        """Walk M5: choices showed raw backticks; prompts showed `__init__` as bold `init`."""
        from torchcourse import paths

        shipped = load_course(paths.shipped_content_dir())
        app = QuizApp(lambda: QuizScreen(shipped, "05", store, runner, seed=1))
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            screen = app.screen
            await wait_for(pilot, lambda: "__init__" in screen_text(app))  # 05's first question
            await pilot.press("1", "enter")
            await wait_for(pilot, lambda: "__setattr__" in screen_text(app))  # its explanation
            await pilot.press("enter")
            await wait_for(pilot, lambda: "model.parameters()" in text(screen, "#quiz-choices"))
            assert "`" not in text(screen, "#quiz-choices"), text(screen, "#quiz-choices")

    @sync
    async def test_the_right_answer_after_a_wrong_one_shows_code_without_backticks(self, store, runner):
        """The verdict's 正确答案 line names the right choices the way the choices show them."""
        from torchcourse import paths

        shipped = load_course(paths.shipped_content_dir())
        app = QuizApp(lambda: QuizScreen(shipped, "06", store, runner, seed=1))
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            screen = app.screen
            await wait_for(pilot, lambda: "state_dict()" in screen_text(app))  # 06's first question: three right
            await pilot.press("1", "enter")  # one ticked: wrong
            await wait_for(pilot, lambda: "正确答案" in text(screen, "#quiz-verdict"))
            verdict = text(screen, "#quiz-verdict")
            assert "self.fc = nn.Linear(3, 2)" in verdict and "`" not in verdict, verdict


class TestAClickOnAChoicePicksIt:
    @sync
    async def test_click_selects_in_single_and_toggles_in_multi(self, course, store, runner):
        app = QuizApp(lambda: QuizScreen(course, "01", store, runner))
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            screen = app.screen
            choices = screen.query_one("#quiz-choices")
            [six] = num(screen, 1)
            await pilot.click("#quiz-choices", offset=(8, int(six) - 1))  # on the choice's text
            await wait_for(pilot, lambda: f"(•) {six}) 6" in text(screen, "#quiz-choices"))
            await pilot.press("enter", "enter")
            [first] = num(screen, 0)
            await pilot.click(choices, offset=(8, int(first) - 1))
            await wait_for(pilot, lambda: text(screen, "#quiz-choices").count("[x]") == 1)
            await pilot.click(choices, offset=(8, int(first) - 1))  # again: unticked
            await wait_for(pilot, lambda: text(screen, "#quiz-choices").count("[x]") == 0)


class TestRetakeOnlyTheWrongOnes:
    """Walk M4: a failed checkpoint opened again shows its score and what is missing, and offers a
    retake of only the questions answered wrong (``torchcourse quiz --wrong`` asks the same)."""

    @sync
    async def test_a_failed_checkpoint_offers_only_the_wrong_ones_and_asks_them(self, course, store, runner):
        from torchcourse.quiz.bank import questions_for

        qs = questions_for(course, "01")
        for q in qs:
            store.record_answer("01", q.id, "x", q.id == "sum-single")
        before = len(store.answers())
        app = QuizApp(lambda: QuizScreen(course, "01", store, runner))
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            screen = app.screen
            assert "上次 1/6（17%，要 80%）" in text(screen, "#quiz-head")
            assert "要再答对 4 题" in text(screen, "#quiz-summary")
            shown = screen_text(app)
            assert "只重做答错的 5 题" in shown and "重做全部 6 题" in shown
            await pilot.press("enter")  # the first choice: only the wrong ones
            await wait_for(pilot, lambda: "第 1/5 题" in text(screen, "#quiz-head"))
            assert "多选" in text(screen, "#quiz-head")  # sum-single, right last time, is not asked
            await pilot.press("1", "enter")
            await wait_for(pilot, lambda: len(store.answers()) > before or "正确" in text(screen, "#quiz-verdict")
                           or "不对" in text(screen, "#quiz-verdict"))
            await pilot.press("escape")
            await pilot.pause()
        await asyncio.sleep(0)
        latest = store.answers()[before:]
        assert [a.question_id for a in latest] == ["upper-multi"]

    @sync
    async def test_a_passed_or_untaken_checkpoint_starts_at_question_1(self, course, store, runner):
        app = QuizApp(lambda: QuizScreen(course, "01", store, runner))
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            assert "第 1/6 题" in text(app.screen, "#quiz-head")
            assert "只重做答错" not in screen_text(app)


class TestARetakeAnsweredAllRightListsNoWrongOnes:
    """Walk: a retake of only the wrong ones answered all right still said 「答错的题：选中一题按回车，
    跳到讲它的小节；Esc 返回。」 above an empty list."""

    @sync
    async def test_the_results_say_all_right_and_point_at_no_list(self, course, store, runner):
        from torchcourse.quiz.bank import questions_for

        for q in questions_for(course, "01"):
            store.record_answer("01", q.id, "x", q.id not in ("sum-single", "func-fill"))  # 4/6: not passed
        app = QuizApp(lambda: QuizScreen(course, "01", store, runner))
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            screen = app.screen
            assert "只重做答错的 2 题" in screen_text(app)
            await pilot.press("enter")  # only the wrong ones
            await wait_for(pilot, lambda: "第 1/2 题" in text(screen, "#quiz-head"))
            await pilot.press(*num(screen, 1), "enter")  # sum-single: 6
            await wait_for(pilot, lambda: "正确" in text(screen, "#quiz-verdict"))
            await pilot.press("enter")
            await wait_for(pilot, lambda: "第 2/2 题" in text(screen, "#quiz-head"))
            await pilot.press(*"upper", "enter")  # func-fill
            await wait_for(pilot, lambda: "正确" in text(screen, "#quiz-verdict"))
            await pilot.press("enter")
            await wait_for(pilot, lambda: "得分" in text(screen, "#quiz-summary"))
            summary = text(screen, "#quiz-summary")
            assert "得分：6/6（100%）" in summary
            assert "答错的题：" not in summary and "全部答对" in summary
            assert not screen.query_one("#quiz-missed").display
