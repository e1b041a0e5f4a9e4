"""改一改再跑: a snippet's code editor, opened in place by ``e`` in the reader.

Textual's ``TextArea`` (a code editor with line numbers, undo, selection, indentation) with
tree-sitter Python highlighting. Importing ``TextArea`` and tree-sitter costs tens of
milliseconds, so nothing here imports them at module level and the reader imports this module
only when the learner first presses ``e`` (``tests/test_snippet_edit.py`` checks that neither
is loaded before).

The edited code runs through the app's runner exactly like the book's snippet (a fresh process
forked from the warm runner, an empty temporary directory, the timeout and the output cap):
the screen runs ``snippet.replace(code=edited)``. Its result is shown next to the
book's expected output with the differing lines marked, and the verdict says the code was
changed, so a different output never reads as a failure of the book.
"""

from __future__ import annotations

import difflib

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Static

from torchcourse.tui.bindings import RESTORE_BINDINGS

EDIT_MARK = "✏️ 已改动（u 恢复原文）"
GPU_EDIT_NOTE = "这段代码需要 GPU：可以改，但没有 GPU 的机器上不会运行（会显示「未实跑」）"
EDITOR_HELP = "Ctrl+R 运行 · Esc 保存并退出 · Ctrl+Z 撤销"

_code_area_class = None


def code_area_class():
    """``CodeArea``: TextArea with Ctrl+R (run) and Esc (leave); built on first use."""
    global _code_area_class
    if _code_area_class is None:
        from textual import events
        from textual.widgets import TextArea

        from torchcourse.tui import keys

        class CodeArea(TextArea):
            BINDINGS = [b for b in keys.bindings("改代码") if b.action != "undo"]  # TextArea has its own undo

            async def _on_key(self, event: events.Key) -> None:
                if event.key == "escape":  # TextArea would move the focus on; here Esc leaves
                    event.stop()
                    event.prevent_default()
                    editor = self.parent
                    if isinstance(editor, SnippetEditor):
                        editor.leave()
                    return
                await super()._on_key(event)

            def action_run_edited(self) -> None:
                editor = self.parent
                if isinstance(editor, SnippetEditor):
                    editor.run()

            def action_leave_editor(self) -> None:
                editor = self.parent
                if isinstance(editor, SnippetEditor):
                    editor.leave()

        _code_area_class = CodeArea
    return _code_area_class


class SnippetEditor(Vertical):
    """The editor pane inside a :class:`SnippetView`, in place of its highlighted code."""

    DEFAULT_CSS = """
    SnippetEditor {
        height: auto;
    }
    SnippetEditor .editor-help {
        height: auto;
        color: $text-accent;
    }
    SnippetEditor .editor-note {
        height: auto;
        color: $text-warning;
    }
    SnippetEditor TextArea {
        height: auto;
        max-height: 16;
        min-height: 3;
    }
    """

    class RunEdited(Message):
        """Ctrl+R: keep the code and run it."""

        def __init__(self, editor: "SnippetEditor", code: str) -> None:
            super().__init__()
            self.editor = editor
            self.code = code

    class Left(Message):
        """Esc: keep the code and close the editor."""

        def __init__(self, editor: "SnippetEditor", code: str) -> None:
            super().__init__()
            self.editor = editor
            self.code = code

    def __init__(self, view, code: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.view = view
        self.initial = code
        # set by close_editor: Textual removes a widget in steps (its children first, then
        # itself), so for a few frames a closed editor is still in the snippet, empty
        self.closing = False

    def compose(self) -> ComposeResult:
        yield Static(f"✏️ 改代码 #{self.view.snippet.id}：{EDITOR_HELP}", classes="editor-help")
        if self.view.snippet.gpu:
            yield Static(GPU_EDIT_NOTE, classes="editor-note")
        yield code_area_class().code_editor(self.initial, language="python", tab_behavior="indent", soft_wrap=False, classes="editor-area")

    @property
    def area(self):
        return self.query_one(".editor-area")

    @property
    def code(self) -> str:
        return self.area.text

    def focus_area(self) -> None:
        """Put the cursor in the code; an editor just mounted and not composed yet has no text
        area (``on_mount`` focuses it then)."""
        found = self.query(".editor-area")
        if found and not self.closing:
            found.first().focus()

    def on_mount(self) -> None:
        self.focus_area()

    def run(self) -> None:
        self.post_message(self.RunEdited(self, self.code))

    def leave(self) -> None:
        self.post_message(self.Left(self, self.code))


def open_editor(view, code: str) -> SnippetEditor:
    """Mount the editor in ``view`` in place of its code block (which is hidden, not removed)."""
    editor = SnippetEditor(view, code, classes="snippet-editor")
    code_block = view.query_one(".code")
    code_block.display = False
    view.mount(editor, after=code_block)
    return editor


def live_editor(view) -> SnippetEditor | None:
    """The editor open in ``view``: never one that ``close_editor`` is removing (``u`` then
    ``e`` found that one, already empty, and its missing text area crashed the app)."""
    return next((editor for editor in view.query(SnippetEditor) if not editor.closing), None)


def close_editor(view) -> None:
    for editor in view.query(SnippetEditor):
        if not editor.closing:
            editor.closing = True
            editor.remove()
    found = view.query(".code")
    if found:
        found.first().display = True


# -- the result of an edited run -------------------------------------------------------------

EDITED_VERDICTS = {
    "match": "✏️ 代码已改动 · ✅ 输出仍和书上的预期输出相同",
    "mismatch": "✏️ 代码已改动 · 输出和书上的不同（标 + 的行是新的，标 - 的行书上有而这次没有）——这是你的改动造成的，不是书的错误",
    "error": "✏️ 代码已改动 · 💥 没能运行",
    "timeout": "✏️ 代码已改动 · ⏱️ 超时，已终止",
    "skipped": "✏️ 代码已改动 · 🗓️ 未运行",
    "cancelled": "✏️ 代码已改动 · ⏹️ 已取消",
}


def edited_verdict(result) -> str:
    status = getattr(result, "status", "error")
    head = EDITED_VERDICTS.get(status, f"✏️ 代码已改动 · {status}")
    from torchcourse.tui.widgets.runwords import learner_words

    message = learner_words(getattr(result, "message", "") or "")  # as the book's runs say it (review-00)
    if status in ("error", "skipped") and message:
        head = f"{head}：{message}"
        if status == "skipped" and "GPU" in message:
            head += "（这台机器没有可用的 GPU）"
    elif status == "mismatch" and message:
        head = f"{head}。{message}"
    seconds = getattr(result, "seconds", None)
    if status in ("match", "mismatch") and seconds is not None:
        head += f"（{seconds:.2f} 秒）"
    if getattr(result, "truncated", False):
        head += "（输出超过 1 MB 或 20,000 行，已截断并停止运行）"
    return head


# a marked line keeps its background on every row it wraps to, so a continuation row is as
# clearly removed / added as the row with the - / + (walk L4)
REMOVED = "$text-error on $error-muted"
ADDED = "$text-success on $success-muted"


def marked_pair(expected: str | None, actual: str, *, frames: bool = False) -> tuple[Content, Content]:
    """Expected and actual output, line by line, with the differing lines marked (- / +);
    ``frames``: the run has traceback frames that ``o`` expands (the head says so)."""
    from torchcourse.runner.normalize import normalize

    exp = normalize(expected, side="expected").rstrip("\n") if expected else ""
    exp_lines = exp.split("\n") if exp else []
    act_lines = actual.rstrip("\n").split("\n") if actual.strip() else []
    left: list[Content] = []
    right: list[Content] = []
    matcher = difflib.SequenceMatcher(None, exp_lines, act_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for line in exp_lines[i1:i2]:
            left.append(Content("  " + line) if tag == "equal" else Content.styled("- " + line, REMOVED))
        for line in act_lines[j1:j2]:
            right.append(Content("  " + line) if tag == "equal" else Content.styled("+ " + line, ADDED))
    head_l = Content.styled("书上的预期输出\n", "bold $text-muted")
    head_r = Content.styled("改动后的实际输出（o 展开调用栈）\n" if frames else "改动后的实际输出\n", "bold $text-muted")
    body_l = Content("\n").join(left) if left else Content("（书上没有记录预期输出）")
    body_r = Content("\n").join(right) if right else Content("（没有输出）")
    return head_l + body_l, head_r + body_r


# -- confirmation before the book's version comes back -----------------------------------------


class ConfirmRestore(ModalScreen[bool]):
    """"把 #id 恢复成书上的原文？" — y / Enter restores, n / Esc keeps the edit."""

    DEFAULT_CSS = """
    ConfirmRestore {
        align: center middle;
    }
    ConfirmRestore > Vertical {
        width: 70;
        max-width: 95%;
        height: auto;
        border: thick $warning;
        background: $surface;
        padding: 1 2;
    }
    ConfirmRestore .confirm-keys {
        margin: 1 0 0 0;
        height: auto;
        color: $text-accent;
    }
    """
    BINDINGS = RESTORE_BINDINGS

    def __init__(self, snippet_id: str) -> None:
        super().__init__()
        self.snippet_id = snippet_id

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"把代码块 #{self.snippet_id} 恢复成书上的原文？你改过的代码会被删掉，无法找回。")
            with Horizontal(classes="confirm-keys"):
                yield Static("y / Enter 恢复    n / Esc 不恢复")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
