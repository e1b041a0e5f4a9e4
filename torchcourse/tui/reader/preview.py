"""The preview loop: an author edits a chapter in one terminal and reads it in another.

While the reader shows a chapter, its file's stamp (size, mtime, inode) is compared once a second;
when it changed, the reader offers (once per change) to reload it: ``R`` re-reads the file in
place (:func:`torchcourse.course.loader.reload_chapter`: the same chapter object, its problems
replaced) and opens it again at the same reading line — the line the block at the top of the view
starts on, moved by the lines the author inserted or deleted above it.

May call: the course model (``chapter_stamp``, ``reload_chapter``) and the host screen's Textual
API (``app.open_chapter``, ``notify``, timers) and its ``chapter`` and ``current_place``. Never the
screen module, layout or the other parts (``tests/test_layers.py``).
"""

from __future__ import annotations

import difflib

from torchcourse.course.loader import chapter_stamp, reload_chapter

CHECK_EVERY_S = 1.0
OFFER = "📝 这一章的文件刚改过：按 Shift+R 重新载入（停在同一行）"
GONE = "📝 这一章的文件 {file} 不见了（删掉或移走了）：屏幕上是它原来的内容；放回去后按 Shift+R 重新载入"


def moved_line(old: str, new: str, line: int) -> int:
    """Where 1-based ``line`` of ``old`` is in ``new``: the same line when it survived, else the
    start of whatever replaced it (lines inserted or deleted above shift it)."""
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    i = line - 1
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if i1 <= i < i2 or (i1 == i2 == i):
            if tag == "equal":
                return j1 + (i - i1) + 1
            return j1 + 1
    return max(1, len(new.splitlines()))


class Preview:
    """Watches the open chapter's file and reloads it on ``R`` (see the module docstring)."""

    def __init__(self, screen) -> None:
        self.screen = screen  # the host: its Textual API, chapter and current_place
        self.chapter = screen.chapter
        self.stamp = None  # the file as this reader shows it
        self.offered = None  # the stamp the offer was made for (one offer per change)

    def start(self) -> None:
        self.stamp = chapter_stamp(self.chapter)
        self.screen.set_interval(CHECK_EVERY_S, self.check, name="preview")

    def changed(self) -> bool:
        now = chapter_stamp(self.chapter)
        return now is not None and now != self.stamp

    def check(self) -> None:
        now = chapter_stamp(self.chapter)
        if now is None and self.stamp is not None and self.offered != "gone":
            self.offered = "gone"  # deleted or moved away (an atomic save reappears within the second)
            self.screen.notify(GONE.format(file=self.chapter.file.name), severity="warning", timeout=20)
            return
        if now is None or now == self.stamp or now == self.offered:
            return
        self.offered = now
        self.screen.notify(OFFER, timeout=20)

    def reload(self) -> None:
        """``R``: the chapter read again from its file, and opened again at the same reading line."""
        if chapter_stamp(self.chapter) is None and self.stamp is not None:
            self.screen.notify(GONE.format(file=self.chapter.file.name), severity="warning")
            return
        if not self.changed():
            self.screen.notify("这一章的文件没有改过，不用重新载入。")
            return
        app = self.screen.app
        place = self.screen.current_place()
        self.screen.save_place()
        old = self.chapter.source
        found = reload_chapter(app.course, self.chapter.id)
        if found is None:
            self.screen.notify("读不出这一章的文件（正在保存？）；稍后再按 Shift+R。", severity="warning")
            return
        part, line, offset = place if place is not None else (0, None, 0)
        if line is not None:
            line, offset = moved_line(old, self.chapter.source, line), offset
            part = self.chapter.part_at(line) or 0
        app.open_chapter(self.chapter.id, part=part, line=line, offset=offset)
        if found:
            app.notify(f"🔄 已重新载入。这一章有 {len(found)} 处问题（torchcourse check 列出全部），第一处：{found[0]}", severity="warning", timeout=20)
        else:
            app.notify("🔄 已重新载入，停在原来那一行。")
