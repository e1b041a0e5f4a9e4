"""The parsed-chapter cache the app uses: same course as a fresh parse, never stale, never fatal."""

from __future__ import annotations

import shutil
from pathlib import Path

from torchcourse import paths
from torchcourse.course import load_course


def _shape(course):
    return [
        (c.id, c.minutes, c.reading_chars, [(s.id, s.code, s.expected, s.line) for s in c.snippets],
         [(p.start_line, p.end_line, p.break_label) for p in c.parts], [s.anchor for s in c.sections])
        for c in course.chapters
    ], [str(p) for p in course.problems]


def test_cached_course_equals_fresh_parse(tmp_path):
    fresh = load_course(paths.shipped_content_dir())
    first = load_course(paths.shipped_content_dir(), cache_dir=tmp_path)
    assert list((tmp_path / "chapters").glob("*.pickle")), "nothing was cached"
    second = load_course(paths.shipped_content_dir(), cache_dir=tmp_path)
    assert _shape(first) == _shape(fresh) == _shape(second)


def test_edited_chapter_is_parsed_again_and_corrupt_entries_are_ignored(tmp_path):
    root = tmp_path / "course"
    shutil.copytree(Path(__file__).parent / "fixtures" / "tuicourse", root)
    cache = tmp_path / "cache"
    before = load_course(root, cache_dir=cache)
    chapter = next(c for c in before.chapters if c.available and c.snippets)
    text = chapter.file.read_text(encoding="utf-8")
    chapter.file.write_text(text.replace(f"{{#{chapter.snippets[0].id}", "{#renamed-snippet", 1), encoding="utf-8")
    after = load_course(root, cache_dir=cache)
    assert after.chapter(chapter.id).snippets[0].id == "renamed-snippet"
    for entry in (cache / "chapters").glob("*.pickle"):
        entry.write_bytes(b"not a pickle")
    again = load_course(root, cache_dir=cache)
    assert _shape(again) == _shape(load_course(root))
