"""Plain data classes of the course model. No I/O here, no Textual, no torch.

They are written out rather than made with the dataclass decorator: defining a dataclass
compiles its ``__init__``, ``__repr__`` and ``__eq__`` when the module is imported (about 1.2 ms a
class here, 10 ms for this module), and every start of the app pays that before its first frame.
:class:`_Record` gives them what the decorator did: a repr and equality over ``_fields``, and
:meth:`_Record.replace` for ``dataclasses.replace``.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


def chapter_label(chapter_id: str, kind: str = "chapter") -> str:
    """A chapter's name as the learner reads it: ``第 01 章``, or ``附录 A`` for the appendix."""
    return f"附录 {chapter_id}" if kind == "appendix" else f"第 {chapter_id} 章"


def route_steps(chapter_ids, kinds) -> list[str]:
    """A route's chapters as its chain names them: ``["02", "03", "04", "附录 A"]`` (``kinds``: id ->
    kind). The appendix is named: a bare ``A`` at the end of ``02 → 03 → 04 → A`` reads like route A."""
    return [chapter_label(c, "appendix") if kinds.get(c) == "appendix" else c for c in chapter_ids]


class Problem(NamedTuple):
    """One validation problem, printed as ``file:line: message``."""

    file: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


class _Record:
    """Repr, equality and ``replace`` over the fields named in ``_fields`` (in ``__init__``'s order)."""

    _fields: tuple[str, ...] = ()
    __hash__ = None  # mutable, like a dataclass with eq: not a dict key

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({inner})"

    def __eq__(self, other: object):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self._fields)

    def replace(self, **changes):
        """A copy with ``changes`` (as ``dataclasses.replace``): unknown names are an error."""
        unknown = set(changes) - set(self._fields)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {', '.join(sorted(unknown))}")
        return type(self)(**{name: changes.get(name, getattr(self, name)) for name in self._fields})


class Snippet(_Record):
    """A runnable ```python block and the ```output block that follows it."""

    _fields = ("id", "chapter_id", "code", "expected", "line", "expected_line", "part", "section",
               "gpu", "norun", "cold", "proof", "timeout", "raises", "bad_attrs", "exit_code", "alternatives")

    def __init__(self, id: str, chapter_id: str, code: str, expected: str | None, line: int,
                 expected_line: int | None = None, part: int = 0, section: str | None = None,
                 gpu: bool = False, norun: bool = False, cold: bool = False, proof: bool = False,
                 timeout: float | None = None, raises: str | None = None,
                 bad_attrs: tuple[str, ...] = (), exit_code: int | None = None,
                 alternatives: tuple = ()) -> None:
        self.id = id
        self.chapter_id = chapter_id
        self.code = code
        self.expected = expected
        self.line = line  # 1-based line of the opening fence in the chapter file
        self.expected_line = expected_line  # 1-based line of the output fence, if any
        self.part = part  # which part (0-based) of the chapter it sits in
        self.section = section  # anchor of the enclosing section
        self.gpu = gpu
        self.norun = norun
        self.cold = cold
        self.proof = proof  # the folded run that backs the claim above it; no reading time
        self.timeout = timeout
        self.raises = raises  # the exception the snippet is meant to end with (``raises=RuntimeError``)
        self.bad_attrs = bad_attrs  # fence attributes that could not be understood: never run it
        self.exit_code = exit_code  # ``exit=N``: the snippet is meant to end with exit status N
        # ```output {torch==2.15.0} blocks after the reference one: what it prints on other
        # recorded releases (torchcourse.course.releases.OutputAlternative)
        self.alternatives = tuple(alternatives)

    @property
    def key(self) -> str:
        """``CHAPTER:SNIPPET``, the name used on the command line."""
        return f"{self.chapter_id}:{self.id}"

    @property
    def runnable(self) -> bool:
        return not self.norun


class Section(_Record):
    _fields = ("anchor", "title", "level", "line", "part")

    def __init__(self, anchor: str, title: str, level: int, line: int, part: int) -> None:
        self.anchor = anchor
        self.title = title
        self.level = level
        self.line = line
        self.part = part


class Callout(_Record):
    _fields = ("kind", "line", "part")

    def __init__(self, kind: str, line: int, part: int) -> None:
        self.kind = kind  # "star" (⭐) or "warn" (⚠️)
        self.line = line
        self.part = part


class Part(_Record):
    """The text between two break points. ``index`` 0 is the chapter's opening part."""

    _fields = ("index", "text", "start_line", "end_line", "break_label")

    def __init__(self, index: int, text: str, start_line: int, end_line: int,
                 break_label: str | None = None) -> None:
        self.index = index
        self.text = text
        self.start_line = start_line  # 1-based, inclusive
        self.end_line = end_line  # 1-based, inclusive
        self.break_label = break_label  # label of the break point that ends this part, if any


# what a lazy load leaves for later: a chapter not yet parsed, or one served from the course's
# snapshot whose blocks are unpickled on first use
LAZY_FIELDS = ("source", "parts", "sections", "snippets", "callouts")


class Chapter(_Record):
    _fields = ("id", "title", "promise", "file", "kind", "available", "target_minutes", "checkpoint",
               "source", "parts", "sections", "snippets", "callouts", "reading_chars", "minutes", "planned")

    def __init__(self, id: str, title: str, promise: str, file: Path, kind: str = "chapter",
                 available: bool = True, target_minutes: int | None = None,
                 checkpoint: Path | None = None, source: str = "", parts: list[Part] | None = None,
                 sections: list[Section] | None = None, snippets: list[Snippet] | None = None,
                 callouts: list[Callout] | None = None, reading_chars: int = 0,
                 minutes: int = 0, planned: bool = False) -> None:
        self.id = id
        self.title = title
        self.promise = promise
        self.file = file
        self.kind = kind  # "chapter" or "appendix"
        self.available = available
        self.target_minutes = target_minutes
        self.checkpoint = checkpoint
        self.source = source
        self.parts = [] if parts is None else parts
        self.sections = [] if sections is None else sections
        self.snippets = [] if snippets is None else snippets
        self.callouts = [] if callouts is None else callouts
        self.reading_chars = reading_chars
        self.minutes = minutes
        # ``planned = true`` in course.toml: not written yet on purpose (``available`` is also
        # False for a chapter whose file is missing or unreadable, which is a problem)
        self.planned = planned

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


class Route(_Record):
    _fields = ("id", "name", "audience", "chapters", "minutes", "default")

    def __init__(self, id: str, name: str, audience: str, chapters: list[str], minutes: int = 0,
                 default: bool = False) -> None:
        self.id = id
        self.name = name
        self.audience = audience
        self.chapters = chapters
        self.minutes = minutes
        self.default = default  # ``default = true`` in course.toml: a new learner's route


class Course(_Record):
    # ``memo`` (derived data remembered by other modules, e.g. loaded checkpoints) is neither
    # shown nor compared
    _fields = ("title", "root", "chars_per_minute", "chapters", "routes", "checkpoints_dir", "problems", "id",
               "preload", "not_covered", "data", "recorded")

    def __init__(self, title: str, root: Path, chars_per_minute: int, chapters: list[Chapter],
                 routes: list[Route], checkpoints_dir: Path, problems: list[Problem] | None = None,
                 id: str = "", memo: dict | None = None, preload: tuple[str, ...] = ("torch",),
                 not_covered: str = "", data: tuple[str, ...] = (),
                 recorded: dict[str, tuple[str, ...]] | None = None) -> None:
        self.title = title
        self.root = root
        self.chars_per_minute = chars_per_minute
        self.chapters = chapters
        self.routes = routes
        self.checkpoints_dir = checkpoints_dir
        self.problems = [] if problems is None else problems
        self.id = id  # the course's identity (``id`` in course.toml): progress is kept under it
        self.memo = {} if memo is None else memo
        # ``preload`` in course.toml: the modules the warm runner imports once before forking
        # each snippet (and that ``doctor`` checks); ``not_covered``: what the error lookup says
        # after "this course does not cover it" (empty: a wording that names no other course)
        self.preload = tuple(preload)
        self.not_covered = not_covered
        # ``data`` in course.toml: files (absolute paths) copied into every snippet's run directory
        self.data = tuple(data)
        # ``[recorded]`` in course.toml: module -> the releases its outputs are recorded on, the
        # reference release first (torchcourse.course.releases)
        self.recorded = {} if recorded is None else dict(recorded)

    def chapter(self, chapter_id: str) -> Chapter | None:
        for c in self.chapters:
            if c.id == chapter_id:
                return c
        return None

    def route_steps(self, route: Route) -> list[str]:
        """``["02", "03", "04", "附录 A"]``: see :func:`route_steps`."""
        return route_steps(route.chapters, {c.id: c.kind for c in self.chapters})

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

    @property
    def default_route(self) -> Route | None:
        """A learner who never chose a route follows this one (app and CLI alike): the route
        marked ``default = true`` in course.toml, else the first route."""
        return next((r for r in self.routes if getattr(r, "default", False)), self.routes[0] if self.routes else None)

    def current_route(self, chosen: str | None) -> Route | None:
        """The route a learner follows: the one chosen (``chosen``, the stored id), else the
        :attr:`default_route`."""
        route = self.route(chosen) if chosen else None
        return route if route is not None else self.default_route

    def snippet(self, key: str) -> Snippet | None:
        """Find ``CHAPTER:SNIPPET``."""
        chapter_id, _, snippet_id = key.partition(":")
        chapter = self.chapter(chapter_id)
        return chapter.snippet(snippet_id) if chapter else None

    def all_snippets(self) -> list[Snippet]:
        return [s for c in self.chapters if c.available for s in c.snippets]
