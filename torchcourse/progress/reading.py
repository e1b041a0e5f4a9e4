"""Reading credit: how many of a chapter's computed minutes the learner has really read.

A page counts as read once it has stayed on screen as long as a reader at the course's pace
(``chars_per_minute``, 170 字/分 for the shipped course: the pace of the ⏱ badges, times
:data:`PACE_FACTOR`: a fluent reader's pace) needs for the text it shows, code and output counted at :data:`CODE_WEIGHT`; a part (the text between two
break points 🛑) counts once :data:`SEEN_SHARE` of it was read so (``torchcourse.tui.readcredit``
does the counting). Reaching a break with ``n`` credits nothing: it moves 继续, not the minutes.
The store keeps the parts read (``parts_read``); the home screen and ``torchcourse progress``
both count minutes from them here. Never imports textual.
"""

from __future__ import annotations

SEEN_SHARE = 0.9  # of a part's (weighted) characters read
CODE_WEIGHT = 0.5  # a character of code or output takes half the time of one of prose
IDLE_CAP_S = 300.0  # time without any scrolling beyond this is not reading
# The ⏱ badges are counted at the course's pace (170 字/分: a careful first reading); a fluent
# reader pages through prose faster (walk M2: a whole route read at a normal pace got 0 minutes).
# A page counts once it stayed on screen as long as PACE_FACTOR times that pace needs: paging at
# a plausible reading speed earns the minutes, skipping (n, a held PgDn, a jump) still does not.
PACE_FACTOR = 2.5


def reading_pace(cpm: int) -> int:
    """The pace a page must be held at to count as read (字/分), from the course's ``cpm``."""
    return round(cpm * PACE_FACTOR)


def block_chars(kind: str, text: str, expected: str | None = None) -> float:
    """A block's characters as the reading credit counts them (the ⏱ badge's count: no
    whitespace), code and its expected output at :data:`CODE_WEIGHT`."""
    from torchcourse.course.chapter import reading_chars

    if kind == "snippet":
        return CODE_WEIGHT * (reading_chars(text) + reading_chars(expected or ""))
    return float(reading_chars(text))


def part_shares(chapter) -> list[float]:
    """Each part's share of the chapter's ⏱ characters (parts differ a lot in length)."""
    cached = getattr(chapter, "_part_shares", None)
    if cached is not None:
        return cached
    from torchcourse.course.chapter import reading_chars

    sizes = [reading_chars(p.text) for p in chapter.parts]
    total = sum(sizes)
    shares = [s / total for s in sizes] if total else [0.0] * len(sizes)
    try:
        chapter._part_shares = shares
    except AttributeError:
        pass
    return shares


def part_seconds(chapter, index: int) -> float:
    """The computed reading time of one part, in seconds."""
    shares = part_shares(chapter)
    return chapter.minutes * 60 * shares[index] if 0 <= index < len(shares) else 0.0


def minutes_read(chapter, parts: set[int] | None) -> float:
    """Computed minutes of the chapter's parts that were read (parts gone since are ignored)."""
    if not parts or not chapter.available:
        return 0.0
    shares = part_shares(chapter)
    return chapter.minutes * sum(shares[i] for i in parts if 0 <= i < len(shares))


HOW_IT_COUNTS = (  # .format(cpm=reading_pace(the course's chars_per_minute), est=chars_per_minute)
    "⏱ 和总分钟数按每分钟 {est} 字估算（仔细读第一遍的速度）。"
    "已读的分钟数按页计：一页在屏幕上停留的时间，够按每分钟 {cpm} 字（流畅读的速度）读完它上面的字（代码和输出按一半算），"
    "这一页才算读过；停一半就算读了一半，下一页或下次回来接着算。一段（两个 🛑 之间）九成读过，"
    "它的分钟数才记进「已读」。快速翻过、按 n 跳到断点只记下读到哪里，不算读过；跳转（搜索、链接）也不算。"
    "读完并通过检查点测验、已完成的章，按全章的分钟数算。"
)


def home_note(cpm: int, planned: bool = False) -> str:
    """What the home's 已读 minutes mean, in a few words beside them (walk L8); ``cpm``: the pace
    a page is held at (:func:`reading_pace`); ``planned``: the total counts unwritten chapters
    at their target."""
    est = round(cpm / PACE_FACTOR)
    return f"（⏱ 按 {est} 字/分估；已读按 {cpm} 字/分：停够的页才算" + ("；未写的章按目标计）" if planned else "）")
