"""Schema versions of the progress database and the migrations between them.

The version lives in ``PRAGMA user_version``. ``MIGRATIONS[n]`` takes a database at version
``n`` to version ``n + 1``; a brand-new file (version 0) runs every step, so the migration
path is exercised on every fresh install, not only on upgrades.

- v1 (torchcourse 0.1 pre-release): settings, per-chapter furthest break + completed flag,
  quiz answers.
- v2: ``completed_at``; snippet runs; a log of break points reached (for the check-in
  calendar); indexes used to de-duplicate imports.
- v3: every row belongs to a course (``course_id``, the ``id`` of its ``course.toml``), so two
  courses sharing one data directory never see each other's progress. Rows written before v3
  belong to the shipped course (:data:`SHIPPED_COURSE_ID`).
- v4: ``snippet_edits``: the learner's own version of a snippet (edited in the reader), one row
  per course, chapter and snippet id; deleting the row restores the book's version.
- v5: ``parts_read``: the parts (text between two break points, 0-based) of a chapter the
  learner really read — scrolled through or stayed long enough in (the reader decides). The
  minutes read are counted from these rows, not from the furthest break, which ``n`` reaches
  in a second. Back-filled from what v4 counted as read: every part before the furthest break
  reached, and all parts of a completed chapter, each at the time its break was first reached.
- v6: ``quiz_attempts``: one row per attempt at a chapter's checkpoint quiz (the seed its
  choice order is drawn from, when it started and finished), so a quiz left half-way resumes
  at its next unanswered question. ``answers`` gain ``attempt_id`` (NULL for answers given
  before v6 and in review) and ``shown``: the order the choices were shown in, as the file's
  indexes from 0 joined by ``,`` (NULL when not known or not a choice question). Existing rows
  are kept as they are.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

CURRENT_VERSION = 6
SHIPPED_COURSE_ID = "torchcourse"  # the ``id`` in the shipped content/course.toml

V1_SQL = """
CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE chapters (
    chapter_id     TEXT PRIMARY KEY,
    furthest_break INTEGER NOT NULL DEFAULT 0,
    completed      INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE answers (
    id          INTEGER PRIMARY KEY,
    chapter_id  TEXT NOT NULL,
    question_id TEXT NOT NULL,
    answer      TEXT NOT NULL,
    correct     INTEGER NOT NULL,
    at          TEXT NOT NULL
);
"""

V1_TO_V2_SQL = """
ALTER TABLE chapters ADD COLUMN completed_at TEXT;
CREATE TABLE runs (
    id         INTEGER PRIMARY KEY,
    chapter_id TEXT NOT NULL,
    snippet_id TEXT NOT NULL,
    verdict    TEXT NOT NULL,
    at         TEXT NOT NULL
);
CREATE TABLE breaks (
    id          INTEGER PRIMARY KEY,
    chapter_id  TEXT NOT NULL,
    break_index INTEGER NOT NULL,
    at          TEXT NOT NULL
);
CREATE INDEX answers_key ON answers (chapter_id, question_id, at);
CREATE INDEX runs_key ON runs (chapter_id, snippet_id, at);
CREATE INDEX breaks_key ON breaks (chapter_id, break_index, at);
"""


def _v0_to_v1(conn: sqlite3.Connection) -> None:
    for stmt in _statements(V1_SQL):
        conn.execute(stmt)


def _v1_to_v2(conn: sqlite3.Connection) -> None:
    for stmt in _statements(V1_TO_V2_SQL):
        conn.execute(stmt)
    # v1 had no completion time: keep the flag, leave the time unknown.
    # v1 stored the last position as one "chapter:part" setting; v2 keeps two keys.
    row = conn.execute("SELECT value FROM settings WHERE key = 'position'").fetchone()
    if row is not None:
        chapter_id, _, part = row[0].rpartition(":")
        if chapter_id and part.isdigit():
            conn.execute("INSERT OR REPLACE INTO settings VALUES ('position_chapter', ?)", (chapter_id,))
            conn.execute("INSERT OR REPLACE INTO settings VALUES ('position_part', ?)", (part,))
        conn.execute("DELETE FROM settings WHERE key = 'position'")


V2_TO_V3_SQL = f"""
CREATE TABLE settings_v3 (
    course_id TEXT NOT NULL,
    key       TEXT NOT NULL,
    value     TEXT NOT NULL,
    PRIMARY KEY (course_id, key)
);
INSERT INTO settings_v3 SELECT '{SHIPPED_COURSE_ID}', key, value FROM settings;
DROP TABLE settings;
ALTER TABLE settings_v3 RENAME TO settings;
CREATE TABLE chapters_v3 (
    course_id      TEXT NOT NULL,
    chapter_id     TEXT NOT NULL,
    furthest_break INTEGER NOT NULL DEFAULT 0,
    completed      INTEGER NOT NULL DEFAULT 0,
    completed_at   TEXT,
    PRIMARY KEY (course_id, chapter_id)
);
INSERT INTO chapters_v3 SELECT '{SHIPPED_COURSE_ID}', chapter_id, furthest_break, completed, completed_at FROM chapters;
DROP TABLE chapters;
ALTER TABLE chapters_v3 RENAME TO chapters;
ALTER TABLE answers ADD COLUMN course_id TEXT NOT NULL DEFAULT '{SHIPPED_COURSE_ID}';
ALTER TABLE runs ADD COLUMN course_id TEXT NOT NULL DEFAULT '{SHIPPED_COURSE_ID}';
ALTER TABLE breaks ADD COLUMN course_id TEXT NOT NULL DEFAULT '{SHIPPED_COURSE_ID}';
DROP INDEX answers_key;
DROP INDEX runs_key;
DROP INDEX breaks_key;
CREATE INDEX answers_key ON answers (course_id, chapter_id, question_id, at);
CREATE INDEX runs_key ON runs (course_id, chapter_id, snippet_id, at);
CREATE INDEX breaks_key ON breaks (course_id, chapter_id, break_index, at)
"""


def _v2_to_v3(conn: sqlite3.Connection) -> None:
    for stmt in _statements(V2_TO_V3_SQL):
        conn.execute(stmt)


V3_TO_V4_SQL = """
CREATE TABLE snippet_edits (
    course_id  TEXT NOT NULL,
    chapter_id TEXT NOT NULL,
    snippet_id TEXT NOT NULL,
    code       TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (course_id, chapter_id, snippet_id)
)
"""


def _v3_to_v4(conn: sqlite3.Connection) -> None:
    for stmt in _statements(V3_TO_V4_SQL):
        conn.execute(stmt)


V4_TO_V5_SQL = """
CREATE TABLE parts_read (
    course_id  TEXT NOT NULL,
    chapter_id TEXT NOT NULL,
    part_index INTEGER NOT NULL,
    at         TEXT NOT NULL,
    PRIMARY KEY (course_id, chapter_id, part_index)
)
"""


def backfill_parts(furthest_break: int, completed: bool) -> range:
    """Parts counted as read for a chapter known only by its furthest break and completed flag
    (a v4 database, an export file without ``parts_read``): the parts before that break; all of
    them, the tail after the last break included, for a completed chapter."""
    return range(min(max(0, furthest_break), 10_000) + (1 if completed else 0))  # (past the last break: a large number)


def _v4_to_v5(conn: sqlite3.Connection) -> None:
    for stmt in _statements(V4_TO_V5_SQL):
        conn.execute(stmt)
    rows = conn.execute("SELECT course_id, chapter_id, furthest_break, completed, completed_at FROM chapters").fetchall()
    for course_id, chapter_id, furthest, completed, completed_at in rows:
        firsts = dict(
            conn.execute(
                "SELECT break_index, min(at) FROM breaks WHERE course_id = ? AND chapter_id = ? GROUP BY break_index",
                (course_id, chapter_id),
            ).fetchall()
        )
        fallback = completed_at or max(firsts.values(), default=None) or "1970-01-01T00:00:00.000000+00:00"
        for part in backfill_parts(int(furthest), bool(completed)):
            conn.execute(
                "INSERT OR IGNORE INTO parts_read (course_id, chapter_id, part_index, at) VALUES (?, ?, ?, ?)",
                (course_id, chapter_id, part, firsts.get(part + 1) or fallback),
            )


V5_TO_V6_SQL = """
CREATE TABLE quiz_attempts (
    id          INTEGER PRIMARY KEY,
    course_id   TEXT NOT NULL,
    chapter_id  TEXT NOT NULL,
    seed        INTEGER NOT NULL,
    started_at  TEXT NOT NULL,
    finished_at TEXT
);
CREATE INDEX quiz_attempts_key ON quiz_attempts (course_id, chapter_id, finished_at);
ALTER TABLE answers ADD COLUMN attempt_id INTEGER;
ALTER TABLE answers ADD COLUMN shown TEXT
"""


def _v5_to_v6(conn: sqlite3.Connection) -> None:
    for stmt in _statements(V5_TO_V6_SQL):
        conn.execute(stmt)


def _statements(sql: str) -> list[str]:
    return [s.strip() for s in sql.split(";") if s.strip()]


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {0: _v0_to_v1, 1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4, 4: _v4_to_v5, 5: _v5_to_v6}
assert len(MIGRATIONS) == CURRENT_VERSION
