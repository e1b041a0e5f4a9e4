"""Walk L13: quiz 00's torch-version question takes the version the README names (2.13.0) as well
as torch.__version__'s full value (2.13.0+cpu); a wrong version stays wrong."""

from __future__ import annotations

from torchcourse import paths
from torchcourse.course import load_course
from torchcourse.quiz.bank import questions_for
from torchcourse.quiz.grading import grade_text


def test_the_version_question_accepts_2_13_0_with_or_without_cpu():
    course = load_course(paths.shipped_content_dir())
    q = next(q for q in questions_for(course, "00") if q.id == "verify-torch-version")
    assert grade_text(q, "2.13.0").correct and grade_text(q, "2.13.0+cpu").correct
    assert not grade_text(q, "2.12.0").correct and not grade_text(q, "2.13.1+cpu").correct
