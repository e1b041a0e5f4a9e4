"""What the quiz screen draws: choices in the order this attempt shows them, the verdict, the
real output of a predict snippet, the summary — and scrolling the part that matters into view.

Pure rendering: these functions take a question, a result or a session and return Rich
renderables or strings; :mod:`torchcourse.tui.screens.quiz` puts them in its widgets.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.geometry import Region
from textual.widgets.option_list import Option

from torchcourse.quiz.review import review_rule

# the quiz screen's phases: what it shows, so what each key does
RESUME = "resume"  # a chapter quiz left half-way: continue or start again
ANSWER = "answer"  # choosing / typing / thinking (open, before the reveal)
JUDGE = "judge"  # open: reference shown, waiting for y / n
FEEDBACK = "feedback"  # verdict and explanation shown; Enter goes on
SUMMARY = "summary"  # score and missed questions
EMPTY = "empty"  # nothing to ask (no due reviews, or the quiz could not start)


class HangingChoices:
    """The choices of a question: each wrapped line of a choice starts under its text, not under
    its ``❯ (•) 1)`` marker (a two-column grid). ``str()`` is the plain text, one choice a line."""

    def __init__(self, rows: list[tuple[Text, Text]]) -> None:
        self.rows = rows

    def __str__(self) -> str:
        return "\n".join(mark.plain + body.plain for mark, body in self.rows)

    def _grid(self):
        from rich.table import Table

        grid = Table.grid()
        grid.add_column(no_wrap=True)
        grid.add_column(ratio=1)
        for mark, body in self.rows:
            grid.add_row(mark, body)
        return grid

    def __rich_console__(self, console, options):
        yield self._grid()

    def __rich_measure__(self, console, options):
        from rich.measure import Measurement

        return Measurement.get(console, options, self._grid())


def choice_rows(question, order: list[int], picked: set[int], cursor: int | None, graded: bool) -> HangingChoices:
    """The choices numbered as shown: ``order`` is the file indexes in shown order; ``picked``
    and ``cursor`` are shown positions. ``graded``: mark the keys ✓ and a wrong pick ✗."""
    right = {order.index(i) for i in question.answer_indexes if i in order}
    rows: list[tuple[Text, Text]] = []
    for pos, index in enumerate(order):
        chosen = pos in picked
        if question.multiple:
            mark = "[x]" if chosen else "[ ]"
        else:
            mark = "(•)" if chosen else "( )"
        pointer = "❯ " if (not graded and pos == cursor) else "  "
        style = suffix = ""
        if graded:
            if pos in right:
                style, suffix = "bold green", "  ✓"
            elif chosen:
                style, suffix = "bold red", "  ✗"
            else:
                style = "dim"
        elif chosen:
            style = "bold"
        full = Style.parse(style) if style else Style()
        if not graded:  # a click on the choice picks it (multi: toggles), as the number key does
            full += Style.from_meta({"@click": f"screen.pick({pos})"})
        rows.append((Text(f"{pointer}{mark} {pos + 1}) ", style=full), choice_text(question.choices[index] + suffix, full)))
    return HangingChoices(rows)


def choice_text(text: str, style="") -> Text:
    """A choice rendered like prose: inline code styled as code without its backticks, ``**…**``
    bold, ``__init__`` as written (walk M5)."""
    from torchcourse.quiz.text import inline_spans

    out = Text(style=style)
    for kind, piece in inline_spans(text):
        out.append(piece, style="bold" if kind == "bold" else "bold #e5c07b" if kind == "code" else "")
    return out


def answer_hint(question) -> str:
    """What to do on a question that has just opened."""
    if question.kind == "predict" and question.has_choices:
        return "选出你预测的输出：按数字键选择（↑↓ 移动），回车提交；提交后给你看这段代码在本机的真实输出。"
    if question.has_choices:
        if question.multiple:
            return "多选：按数字键或空格勾选/取消所有正确的选项，回车提交。"
        return "单选：按数字键选择（↑↓ 移动），回车提交。"
    if question.kind == "open":
        return "简答：先在心里（或纸上）答一遍，再按 r 或回车看参考答案，然后自己评分。"
    if question.kind == "fill":
        return "输入答案后按回车。大小写、空格、全角半角都不计较。"
    return "写下你预测的输出，按回车提交；提交后给你看这段代码在本机的真实输出。"


def verdict(result) -> tuple[Text, bool]:
    """(the verdict line, whether it reads as right)."""
    q = result.question
    if result.grade.correct:
        # an open question is graded by the learner: say what was recorded, not a judgement
        return Text("已记为答对" if q.kind == "open" else "✓ 正确", style="bold green"), True
    if q.kind == "open":
        return Text("已记为答错", style="bold red"), False
    line = Text("✗ 不对。正确答案：", style="bold red")
    line.append_text(choice_text(result.correct_text))  # like the choices: code without backticks
    return line, False


def next_hint(last: bool, predict_running: bool = False) -> str:
    go = "按回车看结果。" if last else "按回车进入下一题。"
    return go + ("（真实输出还在路上，不用等。）" if predict_running else "")


def run_text(text: str, note: str | None, seconds: float | None = None) -> Text:
    head = "实际输出"
    if seconds:
        head += f"（{seconds:.2f} 秒）"
    body = Text(head + "：" + (f" {note}" if note else "") + "\n", style="bold")
    body.append(text.rstrip("\n") or "（没有输出）", style="")
    return body


def summary_lines(session, pass_ratio: float, chapter_quiz: bool) -> list[str]:
    s = session
    carried = getattr(s, "carried", 0)  # right last time, not asked again: they count
    right, total = s.score + carried, s.total + carried
    lines = [f"得分：{right}/{total}（{round(100 * right / total) if total else 0}%）"]
    if carried:
        lines.append(f"（这次只重做了答错的 {s.total} 题，答对 {s.score} 题；其余 {carried} 题按上次的作答算。）")
    if s.earlier:
        lines.append(f"（含上次离开前答的 {s.earlier} 题，每题只算一次。）")
    if chapter_quiz and total and right < pass_ratio * total:
        lines.append(f"达到 {round(pass_ratio * 100)}% 才算通过本章检查点，还要再答对 {missing(right, total, pass_ratio)} 题："
                     "回看下面的小节后再测一次（再打开测验可以只重做答错的题）。")
    if s.missed or carried:  # a retake's fixes come back too: say so before the learner is surprised
        lines.append(review_rule())
    lines.append("")
    if s.missed:  # the list of them is below
        lines.append("答错的题：选中一题按回车，跳到讲它的小节；Esc 返回。")
    else:
        lines.append("全部答对！按回车或 Esc 返回。")
    return lines


def missed_options(session) -> list[Option]:
    return [
        Option(Text(f"✗ {first_line(r.question.prompt)}\n   回看：{session.where(r)}"), id=str(i))
        for i, r in enumerate(session.missed)
    ]


def missing(right: int, total: int, pass_ratio: float) -> int:
    """How many more right answers reach the pass mark."""
    import math

    return max(0, math.ceil(pass_ratio * total - 1e-9) - right)


def retake_text(right: int, total: int, wrong: int, pass_ratio: float) -> str:
    return (
        f"上次的检查点没有通过：{total} 题答对 {right} 题，达到 {round(pass_ratio * 100)}% 要再答对 "
        f"{missing(right, total, pass_ratio)} 题。\n"
        f"只重做答错的 {wrong} 题：上次答对的 {total - wrong} 题按上次的作答计入得分；重做全部：从第 1 题答起。\n"
        f"↑↓ 选一项，回车确定；Esc 离开。"
    )


def resume_text(offer) -> str:
    return (
        f"上次这份测验做到一半就离开了：{offer.total} 题里已答 {offer.answered} 题。\n"
        f"接着做，已答的题计入得分、只算一次；重新开始，选项重新打乱，从第 1 题答起。\n"
        f"↑↓ 选一项，回车确定；Esc 离开。"
    )


def first_line(text: str, width: int = 60) -> str:
    line = next((ln.strip().strip("`") for ln in text.strip().splitlines() if ln.strip()), "")
    line = line.replace("**", "").replace("`", "")  # the list shows plain text, not Markdown marks
    return line if len(line) <= width else line[: width - 1] + "…"


def reveal(scroll, first, last) -> None:
    """Scroll ``scroll`` (a VerticalScroll) the least that shows the widgets from ``first`` to
    ``last`` (children of it, in order, hidden ones skipped). Taller than the window: its top
    part is shown, so the first of them (the options, the verdict) is never cut off."""
    shown = [w for w in (first, last) if w is not None and w.display]
    if not shown:
        return
    top = min(w.virtual_region_with_margin.y for w in shown)
    bottom = max(w.virtual_region_with_margin.bottom for w in shown)
    scroll.scroll_to_region(Region(0, top, 1, max(1, bottom - top)), animate=False, immediate=True, force=True)


__all__ = [
    "RESUME", "ANSWER", "JUDGE", "FEEDBACK", "SUMMARY", "EMPTY",
    "HangingChoices", "choice_rows", "answer_hint", "verdict", "next_hint", "run_text",
    "summary_lines", "missed_options", "resume_text", "first_line", "reveal",
]
