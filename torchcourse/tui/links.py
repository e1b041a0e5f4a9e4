"""Links in chapter prose: course links become clickable, other links show their URL.

Link forms (content/README.md): ``[文字](02#anchor)`` a section of another chapter,
``[文字](#anchor)`` a section of this chapter, ``[文字](02)`` a chapter. Anything else
(``https://…``) is not followed by the app: it is shown as ``文字 (URL)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style

from torchcourse.course.links import COURSE_LINK_RE


@dataclass(frozen=True)
class Link:
    text: str  # the link text as shown
    href: str  # as written in the chapter
    chapter: str | None  # target chapter id; None = this chapter
    anchor: str | None  # target section anchor; None = the chapter's top


def course_link(text: str, href: str) -> Link | None:
    """The course target of ``href``, or None when it is not a course link (e.g. http…)."""
    m = COURSE_LINK_RE.match(href.strip())
    if m is None or not href.strip():
        return None
    return Link(text, href.strip(), m.group("chapter"), m.group("anchor"))


def click_action(href: str) -> str:
    return f"screen.follow_link({href!r})"


def _plain(children) -> str:
    return "".join(c.content for c in children if c.type in ("text", "code_inline", "softbreak"))


def prepare_links(parsed) -> list[Link]:
    """Walk Rich Markdown's parsed tokens (in place): keep course links, turn others into ``文字 (URL)``.

    Returns the course links in reading order.
    """
    from markdown_it.token import Token

    found: list[Link] = []
    for tok in parsed:
        children = tok.children
        if not children or not any(c.type == "link_open" for c in children):
            continue
        out = []
        stack: list[tuple[str, bool, int]] = []  # (href, is course link, index in out of the link's first child)
        for child in children:
            if child.type == "link_open":
                href = str(child.attrs.get("href", ""))
                link = course_link("", href)
                stack.append((href, link is not None, len(out) + (1 if link is not None else 0)))
                if link is not None:
                    out.append(child)
                continue
            if child.type == "link_close" and stack:
                href, is_course, start = stack.pop()
                if is_course:
                    link = course_link(_plain(out[start:]), href)
                    found.append(link)  # type: ignore[arg-type]
                    out.append(child)
                else:
                    out.append(Token("text", "", 0, content=f" ({href})"))
                continue
            out.append(child)
        tok.children = out
    return found


class ClickableLinks:
    """Renders a Rich renderable, turning its hyperlinked spans into ``@click`` actions of the screen."""

    def __init__(self, renderable) -> None:
        self.renderable = renderable

    def __rich_console__(self, console, options):
        meta_styles: dict[str, Style] = {}
        for seg in console.render(self.renderable, options):
            style = seg.style
            if style is not None and style.link:
                href = style.link
                extra = meta_styles.get(href)
                if extra is None:
                    extra = meta_styles[href] = Style.from_meta({"@click": click_action(href)})
                yield Segment(seg.text, style.update_link(None) + extra, seg.control)
            else:
                yield seg
