"""Schema versions of the progress database and the migrations between them.

The version lives in ``PRAGMA user_version``. ``MIGRATIONS[n]`` takes a database at version
``n`` to version ``n + 1``; a brand-new file (version 0) runs every step, so the migration
path is exercised on every fresh install, not only on upgrades.

- v1 (torchcourse 0.1 pre-release): settings, per-chapter furthest break + completed flag,
  quiz answers.
- v2: ``completed_at``; snippet runs; a log of break points reached (for the check-in
  calendar); indexes used to de-duplicate imports.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

CURRENT_VERSION = 2

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


def _statements(sql: str) -> list[str]:
    return [s.strip() for s in sql.split(";") if s.strip()]


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {0: _v0_to_v1, 1: _v1_to_v2}
assert len(MIGRATIONS) == CURRENT_VERSION
