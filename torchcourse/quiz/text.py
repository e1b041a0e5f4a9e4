"""Quiz text as written: prompts, choices, references and explanations are Markdown, but a name
like ``__init__`` or ``Module.__setattr__`` means itself, never bold ``init`` (issue 49: both
quiz screens showed real error texts as ``Module.init() call``). Underscores are never emphasis
in quiz text (authors write ``**bold**``); inline code keeps its characters. Used by the app's
quiz screen and ``torchcourse quiz``; :func:`render_problems` is ``check``'s warning. Never
imports textual."""

from __future__ import annotations

import re

_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")


def _outside_code(text: str, fn) -> str:
    """Apply ``fn`` to the text outside fenced blocks and inline code spans."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.strip().startswith("```"):
            fenced = not fenced
            out.append(line)
            continue
        if fenced:
            out.append(line)
            continue
        pieces, last = [], 0
        for m in _CODE_SPAN.finditer(line):
            pieces.append(fn(line[last:m.start()]))
            pieces.append(m.group(0))
            last = m.end()
        pieces.append(fn(line[last:]))
        out.append("".join(pieces))
    return "\n".join(out)


def quiz_markdown(text: str) -> str:
    """The Markdown a quiz field is shown with: every ``_`` outside code escaped (``\\_``), so
    that ``__init__`` renders as written."""
    return _outside_code(text or "", lambda s: s.replace("\\_", "_").replace("_", "\\_"))


def plain_text(text: str) -> str:
    """A quiz field for a plain terminal: ``**总是**`` reads ``总是``; inline code keeps its
    backticks (they mark code); underscores stay as written; fenced blocks lose their fences."""
    lines = [ln for ln in (text or "").split("\n") if not ln.strip().startswith("```")]
    return _outside_code("\n".join(lines), lambda s: _BOLD.sub(r"\1", s))


def inline_spans(text: str) -> list[tuple[str, str]]:
    """(kind, text) pieces of a one-line field (a choice): "code" for inline code (without its
    backticks), "bold" for ``**…**``, "text" otherwise; underscores as written."""
    out: list[tuple[str, str]] = []
    last = 0
    for m in _CODE_SPAN.finditer(text):
        out.extend(_bold_spans(text[last:m.start()]))
        out.append(("code", m.group(2).strip() if m.group(1) == "``" else m.group(2)))
        last = m.end()
    out.extend(_bold_spans(text[last:]))
    return [p for p in out if p[1]]


def _bold_spans(text: str) -> list[tuple[str, str]]:
    out, last = [], 0
    for m in _BOLD.finditer(text):
        out.append(("text", text[last:m.start()]))
        out.append(("bold", m.group(1)))
        last = m.end()
    out.append(("text", text[last:]))
    return out


def render_problems(text: str) -> list[str]:
    """Why a quiz field would not read as written: an unclosed inline code span, a single
    ``*`` or ``_`` pair Markdown would turn into italics (the Chinese words say what to fix)."""
    problems = []
    stripped = _outside_code(text or "", lambda s: s)
    for line in stripped.split("\n"):
        if line.strip().startswith("```"):
            continue
        rest = _CODE_SPAN.sub("", line)
        if "`" in rest:
            problems.append(f"反引号没有配对（行内代码没闭合）：{line.strip()[:40]}")
        rest = _BOLD.sub("", rest)
        if re.search(r"(?<![\w*])\*(?=\S)[^*]+?(?<=\S)\*(?![\w*])", rest):
            problems.append(f"单个 * 包起来的字会显示成斜体、* 号消失：{line.strip()[:40]}")
    return problems


__all__ = ["quiz_markdown", "plain_text", "inline_spans", "render_problems"]
