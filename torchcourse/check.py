"""The whole-course check behind ``torchcourse check`` (and the app's problem count).

It gathers the problems of every part — the content model's own (chapters, links, the appendix
table) and the quiz bank's (checkpoints) — so it lives above those parts, not inside the model.
"""

from __future__ import annotations

import re

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
    problems.extend(uncovered_error_problems(course))
    problems.extend(variant_problems(course))
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
        "warnings": minute_warnings(course),
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


# -- every error a snippet ends in has a row ------------------------------------------------

_TB_HEAD = "Traceback (most recent call last):"
_CHAIN_RE = re.compile(r"^(?:The above exception was the direct cause|During handling of the above exception)", re.M)


def snippet_errors(expected: str) -> list[str]:
    """The exceptions a snippet's output shows, as normalized tracebacks: for each
    ``Traceback (most recent call last):`` block, its message from the first unindented line to the
    end of the block (the next traceback, a chain line, or the end of the output)."""
    text = normalize(expected, side="expected")
    out = []
    for block in text.split(_TB_HEAD)[1:]:
        block = _CHAIN_RE.split(block)[0]
        lines = block.split("\n")
        start = next((i for i, ln in enumerate(lines) if ln.strip() and not ln.startswith((" ", "\t"))), None)
        if start is None:
            continue
        message = flat("\n".join(lines[start:]))
        if message:
            out.append(message)
    return out


def uncovered_error_problems(course: Course) -> list[Problem]:
    """Snippets whose output ends in an exception that no row of the appendix quotes: the error
    lookup could not answer a learner who pastes it (only checked when the course has an appendix)."""
    apps = appendices(course)
    if not apps:
        return []
    excerpts = [flat(normalize(strip_code(r.cells[0]), side="expected")) for ch in apps for r in appendix_rows(ch)
                if len(r.cells) == r.columns and strip_code(r.cells[0])]
    excerpts = [x for x in excerpts if x]
    problems = []
    for ch in course.chapters:
        if not ch.available:
            continue
        for snip in ch.snippets:
            if not snip.expected or _TB_HEAD not in snip.expected:
                continue
            for message in snippet_errors(snip.expected):
                if not any(x in message for x in excerpts):
                    short = message if len(message) <= 90 else message[:87] + "..."
                    problems.append(Problem(
                        ch.file, snip.line,
                        f"snippet {snip.key} ends in an error that no row of {apps[0].file.name} quotes: {short!r} "
                        "(add a row whose 报错原文 is a stable part of it)",
                    ))
    return problems


# -- the matching-only wordings beside the appendix -----------------------------------------

_VARIANT_SOURCE_RE = re.compile(r"^(?:torch/[\w./-]+|https://\S+)$")


def variant_problems(course: Course) -> list[Problem]:
    """The variants file (``A-variants.toml`` beside the appendix): each ``[[variant]]`` names an
    existing row by its exact 报错原文, holds a wording that is not already the row's, and says where
    it comes from (``torch/…`` — a template in the installed torch — or a report's ``https://`` link)."""
    apps = appendices(course)
    if not apps:
        return []
    from pathlib import Path

    import tomllib

    path = Path(course.root) / "A-variants.toml"
    if not path.is_file():
        return []
    raw = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        return [Problem(path, int(m.group(1)) if m else 1, f"not valid TOML: {exc}")]
    rows = {strip_code(r.cells[0]) for ch in apps for r in appendix_rows(ch) if len(r.cells) == r.columns}
    starts = [i for i, ln in enumerate(raw.splitlines(), start=1) if ln.strip() == "[[variant]]"]
    items = data.get("variant", [])
    extra = sorted(set(data) - {"variant"})
    problems = [Problem(path, 1, f"unknown top-level keys: {', '.join(extra)} (only [[variant]] tables)")] if extra else []
    if not isinstance(items, list):
        return problems + [Problem(path, 1, "expected [[variant]] tables")]
    for k, item in enumerate(items):
        line = starts[k] if k < len(starts) else 1
        if not isinstance(item, dict):
            problems.append(Problem(path, line, "a [[variant]] must be a table"))
            continue
        missing = [f for f in ("row", "text", "source") if not isinstance(item.get(f), str) or not item[f].strip()]
        if missing:
            problems.append(Problem(path, line, f"[[variant]] needs {', '.join(missing)} (non-empty strings)"))
            continue
        unknown = sorted(set(item) - {"row", "text", "source"})
        if unknown:
            problems.append(Problem(path, line, f"[[variant]] has unknown keys: {', '.join(unknown)}"))
        if item["row"].strip() not in rows:
            problems.append(Problem(path, line, f"row {item['row'][:60]!r} is no 报错原文 of {apps[0].file.name} (copy it exactly)"))
        if not _VARIANT_SOURCE_RE.match(item["source"].strip()):
            problems.append(Problem(path, line, f"source {item['source']!r} must be torch/<path> (a template in the installed torch) or an https:// link to the report that quotes it"))
        if " ".join(item["text"].split()) in " ".join(item["row"].split()):
            problems.append(Problem(path, line, "text is already part of the row's own 报错原文: no variant needed"))
    return problems
