"""Issue 33: choices are shown in a fresh order each attempt, the order is stored with the
answer, and a quiz left half-way resumes where it stopped. Real store, shipped course."""

from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
import json
import sqlite3

import pytest

from torchcourse.course import load_course
from torchcourse.progress import open_store
from torchcourse.quiz.bank import questions_for
from torchcourse.quiz.order import choice_order, new_seed, shown_numbers
from torchcourse.quiz.session import QuizSession, resumable

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).parent / "fixtures" / "quizcourse"


@pytest.fixture(scope="module")
def shipped():
    return load_course(ROOT / "content")


@pytest.fixture
def store(tmp_path):
    s, _ = open_store(tmp_path / "p.sqlite3")
    yield s
    s.close()


@pytest.mark.parametrize("chapter_id", ["01", "02", "09"])
def test_over_200_attempts_no_key_position_holds_more_than_35_percent(shipped, chapter_id):
    """Chapter 02 as written keys the second choice in 10 of 12 questions; shuffled, each
    position holds about its share of the keys."""
    qs = [q for q in questions_for(shipped, chapter_id) if q.has_choices]
    written = Counter(i for q in qs for i in q.answer_indexes)
    positions = Counter()
    for _ in range(200):
        seed = new_seed()
        for q in qs:
            positions.update(n - 1 for n in shown_numbers(choice_order(seed, chapter_id, q), q.answer_indexes))
    total = sum(positions.values())
    assert total == 200 * sum(len(q.answer_indexes) for q in qs)
    assert max(positions.values()) / total <= 0.35, positions
    if chapter_id == "02":  # the file's own order is the bias the shuffle removes
        assert max(written.values()) / sum(written.values()) > 0.5


def test_the_order_is_a_permutation_fixed_by_seed_chapter_and_question(shipped):
    q = next(q for q in questions_for(shipped, "02") if len(q.choices) >= 4)
    a = choice_order(99, "02", q)
    assert sorted(a) == list(range(len(q.choices)))
    assert choice_order(99, "02", q) == a
    assert len({tuple(choice_order(s, "02", q)) for s in range(50)}) > 10


def test_picks_are_shown_positions_and_the_store_keeps_file_indexes_and_order(store):
    course = load_course(FIXTURE)
    s = QuizSession.for_chapter(course, store, "01", seed=3)
    cid, q = s.current
    order = s.order(cid, q)
    key_pos = order.index(q.answer)  # where the key is shown
    assert s.shown_choices(cid, q)[key_pos] == q.choices[q.answer]
    r = s.answer(key_pos)
    assert r.grade.correct and r.grade.answer == str(q.answer)
    assert r.correct_text == f"{key_pos + 1}) {q.choices[q.answer]}"
    cid, multi = s.current
    morder = s.order(cid, multi)
    wrong = s.answer("1")  # typed: the first shown choice only
    assert wrong.grade.answer == str(morder[0]) and not wrong.grade.correct
    nums = "；".join(f"{n}) {multi.choices[morder[n - 1]]}" for n in shown_numbers(morder, multi.answer_indexes))
    assert wrong.correct_text == nums
    stored = store.answers()
    assert [(a.answer, a.shown) for a in stored] == [(str(q.answer), tuple(order)), (str(morder[0]), tuple(morder))]
    assert stored[0].attempt_id == stored[1].attempt_id is not None
    exported = store.export_data()["answers"]
    assert [a["shown"] for a in exported] == [order, morder]


def test_leaving_after_some_answers_resumes_at_the_next_and_counts_them_once(store):
    course = load_course(FIXTURE)
    s = QuizSession.for_chapter(course, store, "01", seed=5)
    first_order = s.order(*s.current)
    s.answer(first_order.index(1))  # right
    s.answer([0])
    s.finish()  # Esc mid-quiz: completion computed, the attempt stays open
    left = resumable(course, store, "01")
    assert (left.answered, left.total, left.next_number) == (2, 6, 3)
    again = QuizSession.for_chapter(course, store, "01", resume=left)
    assert again.index == 2 and again.answered == 2 and again.score == 1 and again.earlier == 2
    assert again.seed == 5
    again.answer("upper")
    again.answer("6")
    cid, q = again.current
    assert again.order(cid, q) == choice_order(5, cid, q)  # the resumed attempt's own order
    again.answer(again.order(cid, q).index(q.answer))
    again.answer(True)
    assert again.done and again.score == 5 and again.total == 6
    again.finish()
    assert resumable(course, store, "01") is None  # finished
    assert len(store.answers()) == 6  # each question once


def test_starting_again_closes_the_attempt_left_open(store):
    course = load_course(FIXTURE)
    s = QuizSession.for_chapter(course, store, "01", seed=1)
    s.answer(0)
    assert resumable(course, store, "01") is not None
    fresh = QuizSession.for_chapter(course, store, "01", seed=2)
    assert fresh.index == 0 and fresh.answered == 0
    fresh.answer(0)  # the first answer of the new attempt closes the old one
    left = resumable(course, store, "01")
    assert left is not None and left.attempt.seed == 2


def test_v5_database_gains_attempts_and_keeps_its_answers(tmp_path):
    from torchcourse.progress.schema import MIGRATIONS

    db = tmp_path / "v5.sqlite3"
    conn = sqlite3.connect(db, isolation_level=None)
    for v in range(5):
        MIGRATIONS[v](conn)
    conn.execute("PRAGMA user_version = 5")
    conn.execute("INSERT INTO answers (course_id, chapter_id, question_id, answer, correct, at) VALUES "
                 "('torchcourse', '01', 'q1', '2', 1, '2025-01-01T10:00:00.000000+00:00')")
    conn.close()
    s, notice = open_store(db)
    assert notice is None
    [a] = s.answers()
    assert (a.chapter_id, a.question_id, a.answer, a.correct, a.shown, a.attempt_id) == ("01", "q1", "2", True, None, None)
    assert s.open_attempt("01") is None
    aid = s.start_attempt("01", 42, at=datetime(2025, 1, 2, tzinfo=timezone.utc))
    s.record_answer("01", "q2", "0", False, shown=[2, 0, 1], attempt_id=aid)
    att = s.open_attempt("01")
    assert att.seed == 42 and [x.question_id for x in att.answers] == ["q2"] and att.answers[0].shown == (2, 0, 1)
    s.close()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 6
    conn.close()


def test_import_takes_the_shown_order_and_refuses_one_that_is_not_an_order(store, tmp_path):
    good = {"format": "torchcourse-progress", "version": 4, "answers": [
        {"chapter_id": "01", "question_id": "q", "answer": "1", "correct": True, "at": "2025-01-01T00:00:00+00:00", "shown": [1, 0]}]}
    f = tmp_path / "good.json"
    f.write_text(json.dumps(good))
    store.import_json(f)
    assert store.answers()[0].shown == (1, 0)
    bad = json.loads(json.dumps(good))
    bad["answers"][0]["shown"] = [0, 0]
    f.write_text(json.dumps(bad))
    from torchcourse.progress import StoreError

    with pytest.raises(StoreError, match=r"answers\[0\]\.shown"):
        store.import_json(f)
