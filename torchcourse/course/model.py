"""Plain data classes of the course model. No I/O here, no Textual, no torch."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


def chapter_label(chapter_id: str, kind: str = "chapter") -> str:
    """A chapter's name as the learner reads it: ``第 01 章``, or ``附录 A`` for the appendix."""
    return f"附录 {chapter_id}" if kind == "appendix" else f"第 {chapter_id} 章"


@dataclass(frozen=True)
class Problem:
    """One validation problem, printed as ``file:line: message``."""

    file: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@dataclass
class Snippet:
    """A runnable ```python block and the ```output block that follows it."""

    id: str
    chapter_id: str
    code: str
    expected: str | None
    line: int  # 1-based line of the opening fence in the chapter file
    expected_line: int | None = None  # 1-based line of the output fence, if any
    part: int = 0  # which part (0-based) of the chapter it sits in
    section: str | None = None  # anchor of the enclosing section
    gpu: bool = False
    norun: bool = False
    cold: bool = False
    timeout: float | None = None
    raises: str | None = None  # the exception the snippet is meant to end with (``raises=RuntimeError``)
    bad_attrs: tuple[str, ...] = ()  # fence attributes that could not be understood: never run it

    @property
    def key(self) -> str:
        """``CHAPTER:SNIPPET``, the name used on the command line."""
        return f"{self.chapter_id}:{self.id}"

    @property
    def runnable(self) -> bool:
        return not self.norun


@dataclass
class Section:
    anchor: str
    title: str
    level: int
    line: int
    part: int


@dataclass
class Callout:
    kind: str  # "star" (⭐) or "warn" (⚠️)
    line: int
    part: int


@dataclass
class Part:
    """The text between two break points. ``index`` 0 is the chapter's opening part."""

    index: int
    text: str
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    break_label: str | None = None  # label of the break point that ends this part, if any


LAZY_FIELDS = ("parts", "sections", "snippets", "callouts")  # what a lazy load leaves for later


@dataclass
class Chapter:
    id: str
    title: str
    promise: str
    file: Path
    kind: str = "chapter"  # "chapter" or "appendix"
    available: bool = True
    target_minutes: int | None = None
    checkpoint: Path | None = None
    source: str = ""
    parts: list[Part] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    snippets: list[Snippet] = field(default_factory=list)
    callouts: list[Callout] = field(default_factory=list)
    reading_chars: int = 0
    minutes: int = 0

    def __getattr__(self, name: str):
        # Only reached for an attribute not set: the parsed fields of a chapter loaded lazily
        # (``load_course(..., lazy=True)``) are parsed on their first use.
        parse_later = self.__dict__.get("_parse_later") if name in LAZY_FIELDS else None
        if parse_later is not None:
            parse_later(self)  # once, under a lock: another thread asking waits for it
        if name in LAZY_FIELDS and name in self.__dict__:
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def parsed(self) -> bool:
        """False while a lazily loaded chapter's blocks are still to be parsed."""
        return "_parse_later" not in self.__dict__

    @property
    def label(self) -> str:
        return chapter_label(self.id, self.kind)

    @property
    def break_points(self) -> int:
        """Number of break points (🛑) in the chapter, the final one included."""
        return sum(1 for p in self.parts if p.break_label is not None)

    def part_at(self, line: int) -> int | None:
        """Index of the part holding 1-based source ``line`` (a break marker belongs to the part it ends)."""
        for p in self.parts:
            if p.start_line <= line <= p.end_line:
                return p.index
        return None

    def snippet(self, snippet_id: str) -> Snippet | None:
        for s in self.snippets:
            if s.id == snippet_id:
                return s
        return None

    def section(self, anchor: str) -> Section | None:
        for s in self.sections:
            if s.anchor == anchor:
                return s
        return None

    def anchor_line(self, anchor: str) -> int | None:
        """The 1-based line a link ``#anchor`` leads to: a section's heading, else a snippet's fence."""
        sec = self.section(anchor)
        if sec is not None:
            return sec.line
        snip = self.snippet(anchor)
        return snip.line if snip is not None else None


@dataclass
class Route:
    id: str
    name: str
    audience: str
    chapters: list[str]
    minutes: int = 0


@dataclass
class Course:
    title: str
    root: Path
    chars_per_minute: int
    chapters: list[Chapter]
    routes: list[Route]
    checkpoints_dir: Path
    problems: list[Problem] = field(default_factory=list)
    id: str = ""  # the course's identity (``id`` in course.toml): progress is kept under it
    # derived data remembered by other modules (e.g. loaded checkpoints), never compared
    memo: dict = field(default_factory=dict, repr=False, compare=False)

    def chapter(self, chapter_id: str) -> Chapter | None:
        for c in self.chapters:
            if c.id == chapter_id:
                return c
        return None

    def chapter_label(self, chapter_id: str) -> str:
        """``第 01 章`` / ``附录 A`` for an id, also one no longer in the course."""
        chapter = self.chapter(chapter_id)
        return chapter.label if chapter is not None else chapter_label(chapter_id)

    def find_chapter(self, text: str) -> Chapter | None:
        """The chapter a learner meant on the command line: the exact id, then the id in any
        case, then a number without its zero (``1`` → ``01``)."""
        text = text.strip()
        found = self.chapter(text)
        if found is None:
            found = next((c for c in self.chapters if c.id.lower() == text.lower()), None)
        if found is None and text.isdigit():
            found = next((c for c in self.chapters if c.id.isdigit() and int(c.id) == int(text)), None)
        return found

    def route(self, route_id: str) -> Route | None:
        for r in self.routes:
            if r.id == route_id:
                return r
        return None

    DEFAULT_ROUTE = "D"  # a learner who never chose a route follows this one (app and CLI alike)

    def current_route(self, chosen: str | None) -> Route | None:
        """The route a learner follows: the one chosen (``chosen``, the stored id), else the
        default route :attr:`DEFAULT_ROUTE` (else the last one)."""
        route = self.route(chosen) if chosen else None
        if route is None:
            route = self.route(self.DEFAULT_ROUTE) or (self.routes[-1] if self.routes else None)
        return route

    def snippet(self, key: str) -> Snippet | None:
        """Find ``CHAPTER:SNIPPET``."""
        chapter_id, _, snippet_id = key.partition(":")
        chapter = self.chapter(chapter_id)
        return chapter.snippet(snippet_id) if chapter else None

    def all_snippets(self) -> list[Snippet]:
        return [s for c in self.chapters if c.available for s in c.snippets]
