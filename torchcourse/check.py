"""The whole-course check behind ``torchcourse check`` (and the app's problem count).

It gathers the problems of every part — the content model's own (chapters, links, the appendix
table) and the quiz bank's (checkpoints) — so it lives above those parts, not inside the model.
"""

from __future__ import annotations

from torchcourse.course.appendix import appendices, appendix_problems, appendix_rows, flat, strip_code
from torchcourse.course.links import link_problems
from torchcourse.course.loader import chapter_minutes
from torchcourse.course.model import Course, Problem
from torchcourse.quiz.bank import validate_checkpoints
from torchcourse.runner.normalize import normalize


def all_problems(course: Course) -> list[Problem]:
    """Content problems (chapters, links, the appendix's error tables) plus checkpoint problems."""
    problems = list(course.problems)
    problems.extend(link_problems(course))
    problems.extend(appendix_problems(course))
    problems.extend(excerpt_problems(course))
    problems.extend(validate_checkpoints(course))
    return problems


def minute_warnings(course: Course) -> list[str]:
    """Written chapters whose computed minutes fall outside ±20 % of ``target_minutes`` (the
    band the course brief allows). A warning, not a problem: the depth decides, never padding."""
    out = []
    for c in course.chapters:
        if not c.available or not c.target_minutes:
            continue
        low, high = round(c.target_minutes * 0.8), round(c.target_minutes * 1.2)
        if not low <= c.minutes <= high:
            where = "长于" if c.minutes > high else "短于"
            out.append(f"{c.file}: ⚠️ {c.label}算出来读 {c.minutes} 分钟，{where}目标 {c.target_minutes} 分钟的 ±20%（{low}–{high}）")
    return out


def all_warnings(course: Course) -> list[str]:
    """Everything ``check`` warns about (⚠️, never counted as a problem): reading times out of
    their band, choice questions whose keys length or wording gives away (quiz/tells.py)."""
    from torchcourse.quiz.tells import quiz_warnings

    return minute_warnings(course) + quiz_warnings(course)


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
        "warnings": all_warnings(course),
    }


# -- the appendix's excerpts are real runs' ------------------------------------------------

def snippet_outputs(course: Course) -> list[tuple[str, str]]:
    """(snippet key, expected output as the runner compares it, whitespace flattened) for every
    snippet with an expected output, in course order."""
    out = []
    for ch in course.chapters:
        if not ch.available:
            continue
        for snip in ch.snippets:
            if snip.expected:
                out.append((snip.key, flat(normalize(snip.expected, side="expected"))))
    return out


def excerpt_sources(course: Course, excerpt: str, outputs: list[tuple[str, str]] | None = None) -> list[str]:
    """Keys of the snippets whose expected output holds ``excerpt`` (normalized like them)."""
    outputs = snippet_outputs(course) if outputs is None else outputs
    needle = flat(normalize(excerpt, side="expected"))
    if not needle:
        return []
    return [key for key, text in outputs if needle in text]


def excerpt_problems(course: Course) -> list[Problem]:
    """Appendix rows whose 报错原文 occurs in no snippet's expected output (after the runner's
    normalization, whitespace flattened): every excerpt must be a real run's."""
    problems = []
    outputs = None
    for ch in appendices(course):
        for row in appendix_rows(ch):
            if len(row.cells) != row.columns:
                continue  # appendix_problems reports the row
            excerpt = strip_code(row.cells[0])
            if not excerpt:
                continue
            if outputs is None:
                outputs = snippet_outputs(course)
            if not excerpt_sources(course, excerpt, outputs):
                short = excerpt if len(excerpt) <= 80 else excerpt[:77] + "..."
                problems.append(Problem(
                    ch.file, row.line,
                    f"报错原文 {short!r} occurs in no snippet's expected output: copy it from an output block "
                    "that verify --accept wrote (whitespace may differ, nothing else)",
                ))
    return problems
