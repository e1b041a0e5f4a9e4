"""Leitner review across simulated days, and the chapter completion rule, on the real store."""

from datetime import date, datetime, timedelta
from pathlib import Path

import pytest

from torchcourse.course import load_course
from torchcourse.progress import open_store
from torchcourse.quiz.completion import latest_attempt, passed, update_completion
from torchcourse.quiz.review import due_questions, review_states

FIXTURE = Path(__file__).parent / "fixtures" / "quizcourse"
DAY0 = date(2025, 3, 1)


def at(day: int, hour: int = 10) -> datetime:
    d = DAY0 + timedelta(days=day)
    return datetime(d.year, d.month, d.day, hour)


@pytest.fixture
def course():
    return load_course(FIXTURE)


@pytest.fixture
def store(tmp_path):
    s, notice = open_store(tmp_path / "progress.sqlite3")
    assert notice is None
    yield s
    s.close()


def due_ids(course, store, day):
    return [q.id for _, q in due_questions(course, store, today=DAY0 + timedelta(days=day))]


def test_only_questions_answered_wrong_enter_review(course, store):
    store.record_answer("01", "sum-single", "1", True, at=at(0))
    store.record_answer("01", "func-fill", "lower", False, at=at(0))
    assert due_ids(course, store, 0) == []  # wrong today: due tomorrow
    assert due_ids(course, store, 1) == ["func-fill"]
    assert due_ids(course, store, 30) == ["func-fill"]  # still due until answered


def test_boxes_follow_1_2_4_8_16_days_then_retire(course, store):
    store.record_answer("01", "func-fill", "x", False, at=at(0))
    day = 0
    for interval in (1, 2, 4, 8, 16):
        assert "func-fill" not in due_ids(course, store, day + interval - 1)
        assert "func-fill" in due_ids(course, store, day + interval)
        day += interval
        store.record_answer("01", "func-fill", "upper", True, at=at(day))
    # right in box 5: learned, never due again
    assert due_ids(course, store, day + 365) == []
    st = review_states(course, store)[("01", "func-fill")]
    assert st.box == 6 and st.due is None


def test_a_wrong_answer_sends_it_back_to_box_one(course, store):
    store.record_answer("01", "upper-multi", "0", False, at=at(0))
    store.record_answer("01", "upper-multi", "0,2", True, at=at(1))  # box 2: due day 3
    store.record_answer("01", "upper-multi", "0,2", True, at=at(3))  # box 3: due day 7
    assert due_ids(course, store, 6) == []
    store.record_answer("01", "upper-multi", "1", False, at=at(5))  # early retake, wrong: box 1
    assert due_ids(course, store, 6) == ["upper-multi"]


def test_most_overdue_first_and_unknown_questions_ignored(course, store):
    store.record_answer("01", "why-sum", "self:wrong", False, at=at(0))
    store.record_answer("01", "sum-single", "0", False, at=at(2))
    store.record_answer("01", "deleted-question", "0", False, at=at(0))  # no longer in the file
    assert due_ids(course, store, 3) == ["why-sum", "sum-single"]


def test_history_survives_rewording(course, store, tmp_path):
    import shutil

    store.record_answer("01", "sum-single", "0", False, at=at(0))
    copy = tmp_path / "course"
    shutil.copytree(FIXTURE, copy, ignore=shutil.ignore_patterns("bad"))
    cp = copy / "checkpoints" / "01.toml"
    cp.write_text(cp.read_text(encoding="utf-8").replace("的结果是多少？", "会得到什么？"), encoding="utf-8")
    reworded = load_course(copy)
    [(cid, q)] = due_questions(reworded, store, today=DAY0 + timedelta(days=1))
    assert (cid, q.id) == ("01", "sum-single") and "会得到什么" in q.prompt


def _answer_all(store, right: set[str], day: int):
    for qid in ["sum-single", "upper-multi", "func-fill", "predict-add", "predict-shout", "why-sum"]:
        store.record_answer("01", qid, "x", qid in right, at=at(day))


def test_completion_needs_all_break_points_and_80_percent(course, store):
    chapter = course.chapter("01")
    assert chapter.break_points == 2
    all6 = {"sum-single", "upper-multi", "func-fill", "predict-add", "predict-shout", "why-sum"}
    _answer_all(store, all6, 0)
    store.reach_break("01", 1)
    assert update_completion(course, store, "01") is False  # one break point still ahead
    store.reach_break("01", 2)
    # latest attempt: 4 of 6 right (67 %) -> not yet
    _answer_all(store, all6 - {"why-sum", "func-fill"}, 1)
    assert latest_attempt(course, store, "01") == (4, 6)
    assert update_completion(course, store, "01") is False
    assert store.chapter_progress("01").completed is False
    # retaking only the two missed questions: latest answers now 6 of 6
    store.record_answer("01", "why-sum", "self:right", True, at=at(2))
    store.record_answer("01", "func-fill", "upper", True, at=at(2))
    assert update_completion(course, store, "01") is True
    assert store.chapter_progress("01").completed is True
    # sticky: a later wrong answer does not take completion away
    store.record_answer("01", "sum-single", "0", False, at=at(3))
    store.record_answer("01", "func-fill", "0", False, at=at(3))
    assert update_completion(course, store, "01") is True


def test_exactly_80_percent_passes_and_unanswered_counts_wrong(course, store, tmp_path):
    assert passed(4, 5) and passed(8, 10) and not passed(3, 5) and not passed(7, 9)
    store.reach_break("01", 2)
    # 5 answered right out of 6 questions: 83 %
    _answer_all(store, {"sum-single", "upper-multi", "func-fill", "predict-add", "predict-shout"}, 0)
    assert latest_attempt(course, store, "01") == (5, 6)
    assert update_completion(course, store, "01") is True
    other, _ = open_store(tmp_path / "other.sqlite3")
    other.reach_break("01", 2)
    for qid in ["sum-single", "upper-multi", "func-fill", "predict-add"]:  # 4 of 6, two never answered
        other.record_answer("01", qid, "x", True, at=at(0))
    assert latest_attempt(course, other, "01") == (4, 6)
    assert update_completion(course, other, "01") is False
    other.close()


def test_chapter_without_checkpoint_completes_on_break_points(course, store):
    assert update_completion(course, store, "02") is False
    store.reach_break("02", 1)
    assert update_completion(course, store, "02") is True


def test_next_review_day_is_the_first_due_day_after_the_given_one(course, store):
    from torchcourse.quiz.review import next_review_day

    store.record_answer("01", "func-fill", "x", False, at=at(0))  # due on day 1
    assert next_review_day(course, store, after=DAY0) == DAY0 + timedelta(days=1)
    assert next_review_day(course, store, after=DAY0 + timedelta(days=1)) is None  # due that day: not after it
    store.record_answer("01", "func-fill", "upper", True, at=at(1))  # box 2: due on day 3
    assert next_review_day(course, store, after=DAY0 + timedelta(days=1)) == DAY0 + timedelta(days=3)


class TestASameDayFixIsToldWhereTheQuizEnds:
    def test_the_stated_rule_is_the_schedule_a_same_day_fix_gets(self, course, store):
        """Walk L11: a question missed and fixed by a retake the same day comes back two days
        later; the words every quiz end prints (app and CLI) say exactly that."""
        from torchcourse.quiz.review import review_rule

        store.record_answer("01", "func-fill", "x", False, at=at(0, 10))
        store.record_answer("01", "func-fill", "UPPER", True, at=at(0, 11))
        assert "func-fill" not in due_ids(course, store, 1)
        assert "func-fill" in due_ids(course, store, 2)
        assert "当天重做改对的，隔两天也会再问一次" in review_rule()

    def test_the_apps_summary_of_a_retake_with_every_fix_right_states_it(self):
        from types import SimpleNamespace

        from torchcourse.tui.screens.quiz_view import summary_lines

        retake = SimpleNamespace(score=2, total=2, carried=4, earlier=0, missed=[])
        lines = summary_lines(retake, 0.8, chapter_quiz=True)
        assert lines[0] == "得分：6/6（100%）"
        assert any("隔两天也会再问一次" in ln for ln in lines), lines
