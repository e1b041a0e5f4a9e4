"""``torchcourse check``: validate content and checkpoints, report the course's shape."""

from __future__ import annotations

from torchcourse.course.loader import chapter_minutes
from torchcourse.course.model import Course, Problem


def all_problems(course: Course) -> list[Problem]:
    """Content problems plus checkpoint problems (the quiz bank validates its own files)."""
    problems = list(course.problems)
    from torchcourse.course.links import link_problems

    problems.extend(link_problems(course))
    from torchcourse.course.appendix import appendix_problems  # the appendix's error tables


    problems.extend(appendix_problems(course))
    try:
        from torchcourse.quiz.bank import validate_checkpoints
    except ImportError:  # the quiz package is optional for another course root
        return problems
    problems.extend(validate_checkpoints(course))
    return problems


def shape(course: Course, problems: list[Problem]) -> dict:
    return {
        "id": course.id,
        "title": course.title,
        "chapters": [
            {
                "id": c.id,
                "title": c.title,
                "kind": c.kind,
                "minutes": chapter_minutes(c),
                "target_minutes": c.target_minutes,
                "snippets": len(c.snippets),
                "break_points": c.break_points,
                "available": c.available,
            }
            for c in course.chapters
        ],
        "routes": [{"id": r.id, "name": r.name, "chapters": r.chapters, "minutes": r.minutes} for r in course.routes],
        "problems": [str(p) for p in problems],
    }
