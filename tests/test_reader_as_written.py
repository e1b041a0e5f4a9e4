"""The reader shows chapter prose as the chapter writes it: a section title reads as the table of
contents lists it (``__setattr__`` is not bold ``setattr``). Pilot and the reader's own prose
widget on the shipped course."""

from __future__ import annotations

import io

from rich.console import Console

from torchcourse import paths
from torchcourse.course import load_course
from torchcourse.tui.reader.blocks import Prose
from torchcourse.tui.segments import Segment, course_segments

from tui_support import build_app, open_loaded_reader, run_app, screen_text, sync, wait_for

SHIPPED = paths.shipped_content_dir()
SIZE = (100, 30)


def shown(widget: Prose, width: int = 100) -> str:
    """The text a prose widget paints at ``width`` (its Rich renderable rendered)."""
    console = Console(file=io.StringIO(), width=width, color_system=None, legacy_windows=False)
    lines = console.render_lines(widget.content, console.options, pad=False)
    return "\n".join("".join(seg.text for seg in line) for line in lines)


class TestSectionTitlesReadAsWritten:
    @sync
    async def test_dunder_titles_of_05_are_painted_as_the_toc_lists_them(self, tmp_path):
        """Walk: 05's 「赋值被拦了下来：__setattr__ 的分流」 showed 「…：setattr 的分流」, setattr in bold."""
        app, store = build_app(tmp_path / "p.sqlite3", course_root=SHIPPED)
        async with run_app(app, store, size=SIZE) as pilot:
            await pilot.pause()
            app.open_chapter("05")
            screen = await open_loaded_reader(pilot, app, "05")
            for anchor in ("setattr-routing", "getattr", "missing-super"):
                title = next(s.title for s in screen.chapter.sections if s.anchor == anchor)
                assert "__" in title
                app.jump_to("05", anchor=anchor)
                await wait_for(pilot, lambda: not any(w.group == "jump" and not w.is_finished for w in app.workers),
                               what="the jump made")
                bold = title.replace("__", "")  # what the walk saw: the underscores taken for bold
                await wait_for(pilot, lambda: title in screen_text(app), what=f"{title!r} painted",
                               fail=lambda: bold in screen_text(app))

    def test_every_shipped_section_title_is_shown_as_the_toc_lists_it(self):
        course = load_course(SHIPPED)
        wrong = []
        for chapter in course.chapters:
            if not chapter.available:
                continue
            titles = {s.anchor: s.title for s in chapter.sections}
            for index in range(len(chapter.parts)):
                for seg in course_segments(course, chapter, index):
                    if seg.kind != "prose" or seg.anchor not in titles:
                        continue
                    text = " ".join(shown(Prose(seg), width=200).split())
                    if titles[seg.anchor] not in text:
                        wrong.append((chapter.id, titles[seg.anchor], text[:80]))
        assert not wrong, wrong

    def test_the_appendix_links_that_quote_a_title_show_it_as_written(self):
        """The appendix's 「05 §取值：__getattr__ 是最后一站」 read 「…：getattr 是最后一站」."""
        course = load_course(SHIPPED)
        appendix = next(c for c in course.chapters if c.id == "A")
        titles = {(s.anchor): s.title for s in course.chapter("05").sections}
        quoted = []
        for index in range(len(appendix.parts)):
            for seg in course_segments(course, appendix, index):
                if seg.kind == "snippet":
                    continue
                widget = Prose(seg)
                text = " ".join(shown(widget, width=400).split())
                for link in widget.links:
                    if link.chapter == "05" and "__" in titles.get(link.anchor, ""):
                        quoted.append(link.text)
                        assert titles[link.anchor] in text, (link.text, text[:200])
        assert quoted


class TestALinkAfterChineseReadsWithASpace:
    """Walk: 05 showed 「细节在06 章」 and 「见06 章」 (written 「细节在[06 章](06)」) where the other
    references read 「见 06 章」: a link touching a Chinese character reads as the spaced source does."""

    @staticmethod
    def painted(markdown: str) -> str:
        return shown(Prose(Segment("prose", markdown, 1, 1)))

    def test_a_chapter_link_glued_to_chinese_reads_as_the_spaced_one(self):
        glued = "字段的细节在[06 章](06)，改名见[07 章](07#x)里的表。"
        spaced = "字段的细节在 [06 章](06)，改名见 [07 章](07#x)里的表。"
        assert self.painted(glued) == self.painted(spaced)

    def test_a_link_whose_text_is_chinese_or_after_punctuation_gets_no_space(self):
        text = "见[下文](#x)，前缀（[`module.`](#y)），第[06 章](06)末尾。"
        assert self.painted(text) == self.painted(text.replace("第[06 章](06)", "第 [06 章](06)"))
        assert self.painted("见[下文](#x)。") == self.painted("见下文。")
