"""The one authoritative list of keys of the app, with Chinese descriptions.

Screens build their ``BINDINGS`` from here and the help screen (``?``) renders this table, so
the footer, the help screen and chapter 00 of the course never disagree. Chapter 00 may quote
``key_table()``.
"""

from __future__ import annotations

from typing import NamedTuple

from textual.binding import Binding


class Key(NamedTuple):  # immutable, and cheaper to define at start-up than a frozen dataclass
    key: str  # Textual key name(s), comma separated
    action: str  # action name on the screen/app
    label: str  # short label for the footer
    description: str  # one line for the help screen
    scope: str  # "全局" | "首页" | "阅读" | "改代码" (the other SCOPES come from their screens' bindings)
    show: bool = True  # shown in the footer
    priority: bool = False
    display: str | None = None  # how the key is written for people


SCOPES = ("全局", "首页", "阅读", "改代码", "测验", "报错反查", "u 的确认框")

KEYS: tuple[Key, ...] = (
    # global
    Key("question_mark", "help", "帮助", "显示所有按键（就是这一页）", "全局", display="?"),
    Key("slash", "search", "搜索", "搜索整套教程的正文（中文也行），回车跳过去", "全局", show=False, display="/"),
    Key("e", "lookup", "报错反查", "粘贴一段报错原文，找到讲它的那一节（阅读页里 e 是改代码，反查用 Ctrl+P）", "全局", show=False),
    Key("v", "review", "复习", "做今天到期的复习题（首页的「📝 复习」一行显示今天到期几题）", "全局", show=False),
    Key("ctrl+p", "command_palette", "命令", "命令面板：按名字打开章节、切换路线、反查报错", "全局", show=False, display="Ctrl+P"),
    Key("escape", "back", "返回", "返回：跳转（搜索、报错反查、链接、目录、测验结果的回看）之后回到跳之前的地方，否则阅读页回到首页；对话框里是关闭", "全局", show=False, display="Esc"),
    Key("q", "quit", "退出", "退出（进度随时已保存）；在对话框（帮助、目录、链接列表…）里 q 只关闭对话框", "全局"),
    Key("ctrl+c", "quit", "退出", "同样是退出，进度不会丢（浏览器里 Ctrl+C 是复制：按住 Shift 拖动选中文字；退出按 q）", "全局", show=False, priority=True, display="Ctrl+C"),
    # home
    Key("c", "continue", "继续", "回到上次停下的地方继续读（退出时屏幕顶上那一行；章节改过就回到最近的断点）", "首页"),
    Key("r", "choose_route", "选路线", "选择学习路线（换路线不会丢任何进度）", "首页"),
    Key("enter", "open_chapter", "打开", "打开选中的章节", "首页", display="Enter"),
    Key("m", "chapter_quiz", "测验", "章节地图里选中那一章的检查点测验", "首页"),
    # reader
    Key("t", "toc", "目录", "本章目录：小节和断点，回车跳过去", "阅读"),
    Key("n", "next_part", "下一段", "跳到下一个断点 🛑（记下读到哪里；跳过的段不算读过的分钟）；搜索之后 n 是下一处匹配（匹配处标黄，Esc 退回后取消）", "阅读"),
    Key("N", "prev_hit", "上一处", "搜索之后：上一处匹配（n 是下一处；Esc 回到搜索前的地方）", "阅读", show=False, display="Shift+N"),
    Key("g", "top", "开头", "回到本章开头（像 less；Home 也行）", "阅读", show=False),
    Key("G", "bottom", "结尾", "到本章结尾（像 less；End 也行）", "阅读", show=False, display="Shift+G"),
    Key("s", "stop_here", "停在这里", "停在这里，保存并回到首页（Esc、q 也会记下读到的那一行；只打开、没往下读就离开，这一章仍算未开始）", "阅读"),
    Key("right_square_bracket", "next_chapter", "下一章", "按当前路线打开下一章", "阅读", display="]"),
    Key("left_square_bracket", "prev_chapter", "上一章", "按当前路线打开上一章", "阅读", show=False, display="["),
    Key("tab", "next_snippet", "下个代码块", "选中正在读的地方之后的下一个代码块", "阅读", show=False, display="Tab"),
    Key("shift+tab", "prev_snippet", "上个代码块", "选中上一个代码块", "阅读", show=False, display="Shift+Tab"),
    Key("x", "run_snippet", "运行", "运行屏幕上选中的代码块（没选就是屏幕上第一个），并和预期输出对比", "阅读"),
    Key("X", "rerun_fresh", "重新运行", "重新运行这个代码块：不用缓存的结果，在全新的解释器里跑（结果行写明是哪种）", "阅读", show=False, display="Shift+X"),
    Key("a", "run_all", "全部运行", "依次运行本章所有代码块，最后给出汇总", "阅读"),
    Key("z", "cancel_run", "取消运行", "取消正在运行的代码块", "阅读", show=False),
    Key("e", "edit_snippet", "改代码", "在原处改选中（或屏幕上第一个）代码块：Ctrl+R 运行并和书上的输出对比，Esc 保存并退出；改过的代码块会标出来", "阅读", show=False),
    Key("o", "toggle_frames", "调用栈", "展开（再按收起）代码块实际输出里报错的完整调用栈：平时所有 File …, line N 帧一起折成一行 “  ...”", "阅读", show=False),
    Key("p", "toggle_proof", "证明", "展开（再按收起）选中的或屏幕上第一个折起来的证明：「🔎 证明」一行折着撑起上面那句话的代码块，展开后看到代码和预期输出，x 运行它", "阅读", show=False),
    Key("u", "restore_snippet", "恢复原文", "把改过的代码块恢复成书上的原文（先确认）", "阅读", show=False),
    Key("m", "quiz", "测验", "本章的检查点测验（没通过的可以只重做答错的题；j、k 像 less 和 vim 一样滚动，不会打开测验）", "阅读"),
    # scrolling like less / vim: none of these opens a dialog
    Key("space", "page_down", "下一页", "向下翻一页（像 less）", "阅读", show=False, display="空格"),
    Key("b", "page_up", "上一页", "向上翻一页（像 less）", "阅读", show=False),
    Key("j", "line_down", "下一行", "向下一行（像 less、vim）", "阅读", show=False),
    Key("k", "line_up", "上一行", "向上一行（像 less、vim）", "阅读", show=False),
    Key("l", "links", "链接", "列出这一屏的链接，回车打开（也可以用鼠标直接点链接）", "阅读", show=False),
    Key("R", "reload_chapter", "重新载入", "本章文件在磁盘上改过时（作者在另一个终端里编辑），重新载入它，停在同一行", "阅读", show=False, display="Shift+R"),
    # the snippet editor (e in the reader)
    Key("ctrl+r", "run_edited", "运行", "保存并运行改过的代码，结果和书上的预期输出并排、不同的行标出来", "改代码", display="Ctrl+R"),
    Key("escape", "leave_editor", "退出", "保存改动并关掉编辑器（回到阅读）", "改代码", display="Esc"),
    Key("ctrl+z", "undo", "撤销", "撤销（Ctrl+Y 重做）；Shift+方向键选择，Tab 缩进", "改代码", show=False, display="Ctrl+Z"),
)


# Global keys that the home screen also shows in its footer (the reader's footer has no room).
# v (复习) is not among them: home shows it on its own 「📝 复习 (v)」 line.
HOME_FOOTER_EXTRA = ("search", "lookup")


def display_key(k: Key) -> str:
    return k.display or k.key


def bindings(scope: str) -> list[Binding]:
    """Textual bindings of one scope, built from :data:`KEYS`."""
    out = []
    for k in KEYS:
        if k.scope != scope or k.action in ("focus_next",):
            continue
        out.append(
            Binding(k.key, k.action, k.label, show=k.show, priority=k.priority, key_display=k.display)
        )
    if scope == "首页":
        for k in KEYS:
            if k.action in HOME_FOOTER_EXTRA:
                out.append(Binding(k.key, f"app.{k.action}", k.label, key_display=k.display))
    return out


# What the keys of the screens whose bindings live with them do, by action (``pick`` or the
# whole action string ``self_grade(True)``). :func:`key_table` reads those screens' real
# BINDINGS, so a key added there shows up in the help (with its footer label until it is
# worded here), and one removed there leaves it (review-00 F6).
QUIZ_WORDS = {
    "pick": "选这个编号的选项（多选题按几个就勾几个，再按一次取消）",
    "cursor": "在选项间移动",
    "toggle": "勾选或取消光标所在的选项",
    "submit": "提交答案（填空题在输入框里写好再回车）",
    "reveal": "开放题：看参考答案",
    "reveal_enter": "开放题：看参考答案",
    "self_grade(True)": "开放题看过参考答案后自评：我答对了",
    "self_grade(False)": "开放题看过参考答案后自评：没答对",
    "next": "看完解析，下一题",
    "results": "最后一题之后：看结果",
    "choose": "上次没做完时：选接着做还是重新开始",
    "goto_missed": "结果页：打开答错那题讲的小节",
    "back": "返回",
    "page": "滚动题目",
    "leave": "离开测验（答过的题已记下）",
}
LOOKUP_WORDS = {
    "dismiss_dialog": "关闭报错反查",
    "first": "有结果时跳到最相关的那一节（像回车）",
}
# keys the paste box handles itself (torchcourse/tui/screens/lookup.py PasteBox), not bindings
LOOKUP_BOX_ROWS = (
    ("Enter", "有结果时跳到最相关的那一节；还没有结果时换行"),
    ("Shift+Enter", "换行（终端分得出 Shift+Enter 时）"),
    ("Tab", "到结果列表挑别的候选（↑↓ 选，回车跳过去）"),
)
RESTORE_WORDS = {
    "answer(True)": "恢复成书上的原文（改动丢掉）",
    "answer(False)": "不恢复，保留你的改动",
}
_KEY_NAMES = {
    "up": "↑", "down": "↓", "pageup": "PgUp", "pagedown": "PgDn", "escape": "Esc", "enter": "Enter",
    "space": "空格", "tab": "Tab", "shift+enter": "Shift+Enter", "question_mark": "?",
}


def key_name(key: str) -> str:
    """A Textual key name as the help writes it (``ctrl+j`` → ``Ctrl+J``)."""
    if key in _KEY_NAMES:
        return _KEY_NAMES[key]
    if "+" in key:
        *mods, last = key.split("+")
        return "+".join([*(m.capitalize() for m in mods), last.upper() if len(last) == 1 else last.capitalize()])
    return key


def binding_rows(scope: str, bindings, words: dict[str, str], skip: tuple[str, ...] = ()) -> list[tuple[str, str, str]]:
    """One help row per key of ``bindings`` (a screen's BINDINGS), keys that do the same thing on
    one row (1-9 for the digits); ``skip``: keys not to list (a text box types them)."""
    by_key: dict[str, list[str]] = {}
    for b in bindings:
        word = words.get(b.action) or words.get(b.action.split("(")[0]) or b.description
        for key in (k.strip() for k in b.key.split(",")):
            if key in skip:
                continue
            said = by_key.setdefault(key, [])
            if word not in said:
                said.append(word)
    by_words: dict[tuple[str, ...], list[str]] = {}
    for key, said in by_key.items():
        by_words.setdefault(tuple(said), []).append(key)
    rows = []
    for said, group in by_words.items():
        if len(group) > 1 and all(k.isdigit() for k in group):
            shown = f"{min(group)}-{max(group)}"
        else:
            shown = " ".join(key_name(k) for k in group)
        rows.append((scope, shown, "；".join(said)))
    return rows


def key_table() -> list[tuple[str, str, str]]:
    """(scope, key as written, description) for every key, in help-screen order: :data:`KEYS`,
    then the quiz's, the error lookup's and the restore confirmation's, read from their screens."""
    rows = [(k.scope, display_key(k), k.description) for k in KEYS]
    rows.insert(next(i for i, r in enumerate(rows) if r[0] == "阅读") + 5, ("阅读", "↑ ↓ PgUp PgDn Home End", "滚动正文（空格、b 翻页，j、k 一行，像 less）"))
    rows.insert(next(i for i, r in enumerate(rows) if r[0] == "首页") + 3, ("首页", "↑ ↓ Tab", "↑↓ 在一个列表里移动（路线列表到底就停住），Tab 换到下一个列表"))
    from torchcourse.tui.bindings import LOOKUP_BINDINGS, QUIZ_BINDINGS, RESTORE_BINDINGS

    rows += binding_rows("测验", QUIZ_BINDINGS, QUIZ_WORDS)
    rows += [("报错反查", key, words) for key, words in LOOKUP_BOX_ROWS]
    rows += binding_rows("报错反查", LOOKUP_BINDINGS, LOOKUP_WORDS, skip=("q",))  # the box types q
    rows += binding_rows("u 的确认框", RESTORE_BINDINGS, RESTORE_WORDS)
    return rows


def key_for(action: str) -> str:
    for k in KEYS:
        if k.action == action:
            return display_key(k)
    raise KeyError(action)
