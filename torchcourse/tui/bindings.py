"""Key bindings of the screens whose keys the help screen (``?``) lists, kept here, below every
screen: ``keys.key_table`` reads them without importing the screens (which import ``keys``)."""

from __future__ import annotations

from textual.binding import Binding

DIALOG_BINDINGS = [Binding("escape", "dismiss_dialog", "关闭", key_display="Esc"), Binding("q", "dismiss_dialog", "关闭", show=False)]
# the error lookup is a dialog whose box types q (the help lists the dialog keys but q)
LOOKUP_BINDINGS = DIALOG_BINDINGS + [Binding("ctrl+j", "first", "跳到第一条", show=False)]
# the editor's "restore the book's code?" confirmation (u)
RESTORE_BINDINGS = [
    Binding("y,enter", "answer(True)", "恢复", show=False),
    Binding("n,escape,q", "answer(False)", "不恢复", show=False),
]


def _number_bindings() -> list[Binding]:
    out = [Binding("1", "pick(0)", "选择", key_display="1-9")]
    out += [Binding(str(i + 1), f"pick({i})", "选择", show=False) for i in range(1, 9)]
    return out


# Enter has one binding per phase (check_action enables one): the footer names what it does now
QUIZ_BINDINGS = [
    *_number_bindings(),
    Binding("up", "cursor(-1)", "上", show=False),
    Binding("down", "cursor(1)", "下", show=False),
    Binding("space", "toggle", "勾选", key_display="空格"),
    Binding("r", "reveal", "看参考答案"),
    Binding("y", "self_grade(True)", "我答对了"),
    Binding("n", "self_grade(False)", "没答对"),
    Binding("enter", "submit", "提交", key_display="回车"),
    Binding("enter", "reveal_enter", "看参考答案", key_display="回车", show=False),
    Binding("enter", "next", "下一题", key_display="回车"),
    Binding("enter", "results", "看结果", key_display="回车"),
    Binding("enter", "choose", "选择", key_display="回车"),
    Binding("enter", "goto_missed", "回看小节", key_display="回车"),
    Binding("enter", "back", "返回", key_display="回车"),
    Binding("pagedown", "page(1)", "翻页", key_display="PgDn", show=False),
    Binding("pageup", "page(-1)", "上翻", key_display="PgUp", show=False),
    Binding("escape", "leave", "离开测验", key_display="Esc"),
]
