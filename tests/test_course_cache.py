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


def _settle(root: Path, seconds_ago: float = 3600) -> None:
    """Date every file of the course back, as if written an hour ago (no test waits for time)."""
    import os
    import time

    when = time.time() - seconds_ago
    for p in root.rglob("*"):
        if p.is_file():
            os.utime(p, (when, when))


def test_whole_course_snapshot_is_served_only_while_no_file_changed(tmp_path):
    root = tmp_path / "course"
    shutil.copytree(Path(__file__).parent / "fixtures" / "tuicourse", root)
    cache = tmp_path / "cache"
    fresh = load_course(root)
    for p in root.rglob("*"):  # written just now
        if p.is_file():
            import os

            os.utime(p, None)
    # files written a moment ago are not trusted by their timestamps: no snapshot yet
    assert _shape(load_course(root, cache_dir=cache)) == _shape(fresh)
    assert not list((cache / "course").glob("*.pickle"))
    _settle(root)
    first = load_course(root, cache_dir=cache)
    assert list((cache / "course").glob("*.pickle")), "a settled course was not snapshotted"
    served = load_course(root, cache_dir=cache)
    assert _shape(served) == _shape(first) == _shape(fresh)
    # the same number of bytes, a new text: the snapshot is not served
    chapter = next(c for c in fresh.chapters if c.available and c.snippets)
    text = chapter.file.read_text(encoding="utf-8")
    old_id = chapter.snippets[0].id
    new_id = ("z" * len(old_id)) if old_id != "z" * len(old_id) else ("y" * len(old_id))
    chapter.file.write_text(text.replace(f"{{#{old_id}", f"{{#{new_id}", 1), encoding="utf-8")
    assert load_course(root, cache_dir=cache).chapter(chapter.id).snippets[0].id == new_id
    # a corrupt snapshot is ignored
    _settle(root)
    load_course(root, cache_dir=cache)
    for entry in (cache / "course").glob("*.pickle"):
        entry.write_bytes(b"\x80\x05 not a pickle")
    assert load_course(root, cache_dir=cache).chapter(chapter.id).snippets[0].id == new_id


def test_snapshot_notices_a_checkpoint_file_appearing(tmp_path):
    root = tmp_path / "course"
    shutil.copytree(Path(__file__).parent / "fixtures" / "tuicourse", root)
    cache = tmp_path / "cache"
    course = load_course(root)
    chapter = next(c for c in course.chapters if c.checkpoint is not None)
    chapter.checkpoint.rename(chapter.checkpoint.with_suffix(".gone"))
    _settle(root)
    missing = load_course(root, cache_dir=cache)
    assert any("找不到检查点文件" in p.message for p in missing.problems)
    chapter.checkpoint.with_suffix(".gone").rename(chapter.checkpoint)
    assert not any("找不到检查点文件" in p.message for p in load_course(root, cache_dir=cache).problems)


def test_lazy_load_parses_a_chapter_on_first_use_and_reports_its_problems_then(tmp_path):
    """The app's first start (empty cache) leaves the chapters' blocks for later: the home screen
    needs only titles and minutes. The course is the same once used, and a broken chapter's
    problem arrives when it is parsed."""
    from torchcourse.course import parse_pending

    root = tmp_path / "course"
    shutil.copytree(Path(__file__).parent / "fixtures" / "tuicourse", root)
    broken = [c for c in load_course(root).chapters if c.available and c.snippets][-1]
    text = broken.file.read_text(encoding="utf-8")
    broken.file.write_text(text + "\n```python {#never-closed}\nprint(1)\n", encoding="utf-8")
    eager = load_course(root)
    assert any("一直没有关闭" in p.message for p in eager.problems)

    lazy = load_course(root, cache_dir=tmp_path / "cache", lazy=True)
    assert not any(c.parsed for c in lazy.chapters if c.available)
    assert [(c.id, c.minutes, c.reading_chars) for c in lazy.chapters] == [(c.id, c.minutes, c.reading_chars) for c in eager.chapters]
    assert not any("一直没有关闭" in p.message for p in lazy.problems)  # not parsed yet
    first = next(c for c in lazy.chapters if c.available)
    assert first.id != broken.id
    assert [s.id for s in first.snippets] == [s.id for s in eager.chapter(first.id).snippets]  # parsed on use
    assert first.parsed
    assert parse_pending(lazy) >= 1  # the rest, the broken chapter among them
    assert _shape(lazy) == _shape(eager)
    # what was parsed lazily went to the chapter cache: the next load finds it there
    again = load_course(root, cache_dir=tmp_path / "cache", lazy=True)
    assert all(c.parsed for c in again.chapters)
    assert _shape(again) == _shape(eager)


def test_parse_pending_keeps_the_snapshot_for_the_next_start(tmp_path):
    from torchcourse.course import parse_pending

    root = tmp_path / "course"
    shutil.copytree(Path(__file__).parent / "fixtures" / "tuicourse", root)
    _settle(root)
    lazy = load_course(root, cache_dir=tmp_path / "cache", lazy=True)
    assert not list((tmp_path / "cache" / "course").glob("*.pickle"))  # not all parsed yet
    parse_pending(lazy)
    assert list((tmp_path / "cache" / "course").glob("*.pickle"))
    assert _shape(load_course(root, cache_dir=tmp_path / "cache", lazy=True)) == _shape(load_course(root))


def _from_four_threads(get) -> list:
    """What ``get()`` returned to each of four threads started together."""
    import threading

    seen = []
    threads = [threading.Thread(target=lambda: seen.append(get())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return seen


def test_lazy_chapter_is_parsed_once_when_two_threads_ask(tmp_path):
    root = tmp_path / "course"
    shutil.copytree(Path(__file__).parent / "fixtures" / "tuicourse", root)
    lazy = load_course(root, cache_dir=tmp_path / "cache", lazy=True)
    chapter = next(c for c in lazy.chapters if c.available and c.snippets)
    seen = _from_four_threads(lambda: chapter.snippets)
    assert len(seen) == 4 and all(s is seen[0] for s in seen)
    assert len(lazy.problems) == len(load_course(root).problems)


def test_snapshot_unpickles_a_chapters_blocks_on_their_first_use_only(tmp_path):
    root = tmp_path / "course"
    shutil.copytree(Path(__file__).parent / "fixtures" / "tuicourse", root)
    _settle(root)
    eager = load_course(root)
    load_course(root, cache_dir=tmp_path / "cache")  # writes the snapshot
    served = load_course(root, cache_dir=tmp_path / "cache", lazy=True)
    # the home screen's fields are there; the blocks and the text wait for their first use
    assert not any(c.parsed for c in served.chapters if c.available)
    chapter = served.chapter(next(c.id for c in eager.chapters if c.available and c.snippets))
    assert "snippets" not in chapter.__dict__ and "source" not in chapter.__dict__
    assert (chapter.title, chapter.minutes, chapter.reading_chars) == (
        eager.chapter(chapter.id).title, eager.chapter(chapter.id).minutes, eager.chapter(chapter.id).reading_chars)
    seen = _from_four_threads(lambda: chapter.snippets)
    assert len(seen) == 4 and all(s is seen[0] for s in seen)  # unpickled once
    assert chapter.parsed and chapter.source == eager.chapter(chapter.id).source
    assert _shape(served) == _shape(eager)
    # a course served this way snapshots again like any other, its pending chapters included
    again = load_course(root, cache_dir=tmp_path / "cache", lazy=True)
    snapshot = next((tmp_path / "cache" / "course").glob("*.pickle"))
    snapshot.unlink()
    from torchcourse.course.loader import _save_snapshot

    _save_snapshot(root, tmp_path / "cache", again)
    assert snapshot.is_file()
    assert _shape(load_course(root, cache_dir=tmp_path / "cache", lazy=True)) == _shape(eager)
