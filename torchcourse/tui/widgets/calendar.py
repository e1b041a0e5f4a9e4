"""A check-in calendar: the last weeks as a grid of days, shaded by activity, plus the streak."""

from __future__ import annotations

from datetime import date, timedelta
from itertools import groupby

from textual.content import Content
from textual.widgets import Static

WEEKS = 12
# glyphs carry the level even without colour (NO_COLOR terminals)
LEVELS = ("·", "░", "▒", "▓", "█")
LEVEL_STYLES = ("$text-muted", "$success 40%", "$success 60%", "$success 80%", "$success")
ROW_NAMES = "一二三四五六日"


def level(count: int) -> int:
    if count <= 0:
        return 0
    if count <= 2:
        return 1
    if count <= 5:
        return 2
    if count <= 10:
        return 3
    return 4


def calendar_lines(activity: dict[date, int], today: date, weeks: int = WEEKS) -> list[list[tuple[str, int]]]:
    """Rows Monday..Sunday, columns oldest..this week; each cell (glyph, level); future days blank."""
    start = today - timedelta(days=today.weekday()) - timedelta(weeks=weeks - 1)
    rows: list[list[tuple[str, int]]] = []
    for wd in range(7):
        row = []
        for w in range(weeks):
            day = start + timedelta(weeks=w, days=wd)
            if day > today:
                row.append((" ", -1))
            else:
                lv = level(activity.get(day, 0))
                row.append((LEVELS[lv], lv))
        rows.append(row)
    return rows


class CheckinCalendar(Static):
    HEIGHT = 9  # title, seven weekdays, the summary line

    def __init__(self, activity: dict[date, int], streak: int, today: date, **kwargs) -> None:
        self.activity = activity
        self.streak = streak
        self.today = today
        super().__init__(self.render_calendar(), **kwargs)  # content from the start: no relayout on mount

    def set_activity(self, activity: dict[date, int], streak: int, today: date) -> None:
        self.activity, self.streak, self.today = activity, streak, today
        self.update(self.render_calendar())

    def _active_days(self) -> int:
        return sum(1 for d, n in self.activity.items() if n > 0 and (self.today - d).days < WEEKS * 7)

    def _title(self) -> str:
        return f"打卡 · 连续 {self.streak} 天" + (" 🔥" if self.streak else "")

    def streak_line(self) -> Content:
        """The calendar in one line, for terminals too narrow for the grid beside the summary."""
        return Content.assemble((self._title(), "bold"), (f" · 近 {WEEKS} 周有 {self._active_days()} 天在学", "$text-muted"))

    def render_calendar(self) -> Content:
        active = self._active_days()
        lines = [Content.styled(self._title(), "bold")]
        for name, row in zip(ROW_NAMES, calendar_lines(self.activity, self.today)):
            # one span per run of days at the same level (a style per cell made the grid the
            # costliest widget of the home screen's first frame to render)
            spans: list[tuple[str, str] | str] = [name + " "]
            for lv, run in groupby(row, key=lambda cell: cell[1]):
                text = "".join(glyph + " " for glyph, _lv in run)
                spans.append((text, LEVEL_STYLES[lv]) if lv >= 0 else text)
            lines.append(Content.assemble(*spans))
        lines.append(Content.styled(f"近 {WEEKS} 周有 {active} 天在学", "$text-muted"))
        return Content("\n").join(lines)
