"""Reading credit: how many of a chapter's computed minutes the learner has really read.

A part (the text between two break points 🛑) counts as read once the reader has seen it read:
about 90% of its rows have been on screen in views that rested a moment, or the learner stayed
in it a third of its computed minutes (:data:`SEEN_SHARE`, :data:`DWELL_SHARE`). Reaching a
break with ``n`` credits nothing: it moves 继续, not the minutes. The store keeps the parts read
(``parts_read``); the home screen and ``torchcourse progress`` both count minutes from them here.
Never imports textual.
"""

from __future__ import annotations

SEEN_SHARE = 0.9  # of a part's rows on screen (in views that rested MIN_LOOK_S)
DWELL_SHARE = 1 / 3  # of a part's computed minutes spent with it on screen
MIN_LOOK_S = 1.0  # a view shown for less (a jump, a held key) shows nothing read
IDLE_CAP_S = 300.0  # time without any scrolling beyond this is not reading


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


HOW_IT_COUNTS = (
    "已读的分钟数按段计：一段（两个 🛑 之间）读过，才算进它的分钟数——"
    "它约九成的行在屏幕上停留过（翻着读过去），或者在这一段里待够了它预计时间的三分之一。"
    "按 n 跳到断点只记下读到哪里，不算读过。"
)
