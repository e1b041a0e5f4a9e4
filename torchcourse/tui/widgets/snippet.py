"""One runnable snippet: highlighted code, its expected output, a run button and the result."""

from __future__ import annotations


from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.highlight import highlight
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from torchcourse.runner.normalize import visible
from torchcourse.course.model import Snippet
from torchcourse.tui.widgets.runwords import learner_words
from torchcourse.tui.widgets.codeblock import CodeBlock

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
GPU_NOTE = "🗓️ 未实跑 — 需要 GPU"
INSTALL_HINT = "这台机器上没有 torch。请先安装：pip install torch==2.13.0"

VERDICTS = {
    "match": "✅ 一致：实际输出和预期输出相同",
    "mismatch": "❌ 不一致：实际输出和预期输出不同（差异见下）",
    "error": "💥 没能运行",
    "timeout": "⏱️ 超时，已终止",
    "skipped": GPU_NOTE,
    "cancelled": "⏹️ 已取消",
}


def is_missing_torch(result) -> bool:
    text = f"{getattr(result, 'message', '') or ''}\n{getattr(result, 'actual', '') or ''}"
    return "No module named 'torch'" in text or "torch is not installed" in text.lower() or "未安装 torch" in text


def verdict_text(result) -> str:
    status = getattr(result, "status", "error")
    head = VERDICTS.get(status, status)
    if status in ("error", "mismatch") and is_missing_torch(result):
        return f"💥 {INSTALL_HINT}"
    if status == "error" and getattr(result, "message", None):
        head = f"{head}：{learner_words(result.message)}"
    elif status == "timeout" and str(getattr(result, "message", "") or "").startswith("⏱️"):
        head = result.message  # the runner's own: it names the limit (运行超过 60 秒) and timeout=N
    elif status == "mismatch" and getattr(result, "raise_problem", ""):
        head = f"{head}：{learner_words(result.raise_problem)}"  # an undeclared exception or exit status: the diff may be empty
    if status == "mismatch" and getattr(result, "release_note", ""):
        head = f"{head}。{result.release_note}"  # the book was recorded on another release
    tail = []
    if getattr(result, "cached", False):
        tail.append("缓存结果，X 重新运行")
    elif status in ("match", "mismatch") and getattr(result, "seconds", None) is not None:
        tail.append(f"{result.seconds:.2f} 秒")
        mode = getattr(result, "mode", None)
        if mode:
            tail.append("全新解释器" if mode == "cold" else "预热进程")
    if getattr(result, "truncated", False):
        tail.append("输出超过 1 MB 或 20,000 行，已截断并停止运行")
    return head + (f"（{'，'.join(tail)}）" if tail else "")


class SnippetHead(Static):
    """"▶ 运行 (x)" (clickable) and the snippet's id and tags, in one line."""

    def __init__(self, runnable: bool, tags: str, **kwargs) -> None:
        super().__init__(self.make(runnable, tags), **kwargs)

    # the warm runner's state, shown after the run button (one value for every snippet)
    runner_note = ""

    @classmethod
    def make(cls, runnable: bool, tags: str) -> Content:
        markup = "[@click=run][reverse] ▶ 运行 (x) [/reverse][/] " if runnable else ""
        note = f" · {cls.runner_note}" if runnable and cls.runner_note else ""
        return Content.from_markup(markup) + Content.styled(tags + note, "$text-muted")

    def action_run(self) -> None:
        view = self.parent
        if isinstance(view, SnippetView):
            view.focus()
            view.request_run()


class ProofLine(Static):
    """A proof snippet's one line (``{#id proof}``): 🔎 证明：… (按 p 展开); a click opens or folds it."""

    def action_toggle(self) -> None:
        view = self.parent
        if isinstance(view, SnippetView):
            view.focus()
            view.toggle_proof()


def proof_summary(snippet: Snippet, width: int = 36) -> str:
    """What a folded proof says of itself: its first comment line, else its first line of code."""
    lines = [ln.strip() for ln in snippet.code.splitlines() if ln.strip()]
    comment = next((ln.lstrip("#").strip() for ln in lines if ln.startswith("#") and ln.lstrip("#").strip()), None)
    text = comment or (lines[0] if lines else f"#{snippet.id}")
    return text if len(text) <= width else text[: width - 1] + "…"


RAN = ("match", "mismatch", "error", "timeout")  # statuses of a run that printed something


def _frames_of(result, status: str) -> str:
    """The run's traceback with its real frames (what ``o`` expands), "" when it has none."""
    frames = getattr(result, "frames", "") if status in RAN else ""
    return frames if isinstance(frames, str) else ""


class SnippetView(Vertical, can_focus=True):
    """A snippet of a chapter. Posts :class:`RunRequested`; the screen runs it and calls ``show_*``."""

    class RunRequested(Message):
        def __init__(self, view: "SnippetView") -> None:
            super().__init__()
            self.view = view

        @property
        def snippet(self) -> Snippet:
            return self.view.snippet

    class QueuePlace(Message, bubble=False):
        """The class runner's queue moved (posted from the runner's thread: never waits)."""

        def __init__(self, place: int) -> None:
            super().__init__()
            self.place = place

    def on_snippet_view_queue_place(self, message: "SnippetView.QueuePlace") -> None:
        self.show_queued(message.place)

    state: reactive[str] = reactive("idle")  # idle | running | done

    def __init__(self, snippet: Snippet, **kwargs) -> None:
        super().__init__(**kwargs)
        self.snippet = snippet
        self.edited_code: str | None = None  # the learner's version (``e``), set before mounting
        self.result = None
        self._frame = 0
        self._timer = None
        self._pair: tuple[Static, Static] | None = None  # (expected, actual) once it ran
        self._lines: dict[str, Static] = {}  # the verdict / diff lines once mounted
        self._actual_text: str | Content = ""  # the actual output as compared (tracebacks' frames as ``  ...``); an edited run's marked panel (Content)
        self._frames = ""  # the same with the real frames (walk L6), "" when there are none
        self.frames_shown = False  # ``o`` shows the frames in the actual panel
        if snippet.gpu:
            self.add_class("-gpu")
        if snippet.norun:
            self.add_class("-norun")
        self.folded = bool(getattr(snippet, "proof", False))  # a proof starts folded under its claim
        if self.folded:
            self.add_class("-proof", "-folded")

    def _tags(self) -> str:
        s = self.snippet
        tags = [f"#{s.id}"]
        if self.edited_code is not None:
            from torchcourse.tui.widgets.editor import EDIT_MARK

            tags.append(EDIT_MARK)
        if s.gpu:
            tags.append(GPU_NOTE)
        if s.norun:
            tags.append("仅展示，不运行")
        return " · ".join(tags)

    @property
    def code(self) -> str:
        """The code shown and run: the learner's edit, or the book's."""
        return self.snippet.code if self.edited_code is None else self.edited_code

    def effective_snippet(self) -> Snippet:
        if self.edited_code is None:
            return self.snippet
        return self.snippet.replace(code=self.edited_code)

    def refresh_head(self) -> None:
        """Repaint the run line (the runner's state changed)."""
        for head in self.query(SnippetHead):
            head.update(SnippetHead.make(self.snippet.runnable, self._tags()))

    def set_edited(self, code: str | None) -> None:
        """Show ``code`` as the learner's version (None: the book's again) and mark the block."""
        self.edited_code = None if code is None or code == self.snippet.code else code
        self.set_class(self.edited_code is not None, "-edited")
        self.query_one(SnippetHead).update(SnippetHead.make(self.snippet.runnable, self._tags()))
        self.query_one(".code", CodeBlock).set_code(highlight(self.code.rstrip("\n"), language="python"))

    def _proof_line(self) -> Content:
        if self.folded:
            text = f"🔎 证明：{proof_summary(self.snippet)}（按 p 展开）"
        else:
            text = "🔎 证明（按 p 收起）"
        return Content.from_markup("[@click=toggle]$text[/]", text=text)

    def toggle_proof(self) -> bool:
        """``p``: open or fold a proof snippet; False when this snippet is not a proof."""
        if not getattr(self.snippet, "proof", False):
            return False
        self.folded = not self.folded
        self.set_class(self.folded, "-folded")
        for line in self.query(ProofLine):
            line.update(self._proof_line())
        return True

    def compose(self) -> ComposeResult:
        s = self.snippet
        self.set_class(self.edited_code is not None, "-edited")
        if getattr(s, "proof", False):
            yield ProofLine(self._proof_line(), classes="proof-line")
        yield SnippetHead(s.runnable, self._tags(), classes="snip-head")
        yield CodeBlock(highlight(self.code.rstrip("\n"), language="python"), classes="code")  # long lines: ↪
        if s.expected is not None:
            yield CodeBlock(self._expected_content(), classes="out expected")

    def _book_output(self) -> tuple[str | None, str]:
        """The book's output for the torch (and other recorded modules) installed here: the
        alternative recorded for this release, else the reference one, labelled off reference."""
        course = getattr(self.app, "course", None) if self.is_attached else None
        recorded = getattr(course, "recorded", None)
        if not recorded or self.snippet.expected is None:
            return self.snippet.expected, ""
        import sys

        from torchcourse.course.releases import book_output
        from torchcourse.runner.cache import module_versions

        return book_output(self.snippet, recorded, module_versions(sys.executable, tuple(recorded)))

    def _expected_content(self) -> Content:
        text, label = self._book_output()
        expected = visible(text.rstrip("\n")) if text else "（没有记录预期输出）"
        head = f"预期输出（{label}）\n" if label else "预期输出\n"
        return Content.assemble((head, "bold $text-muted"), expected)

    def _outputs(self) -> Static:
        """On the first run the expected block becomes a pair: expected | actual (stacked when narrow)."""
        if self._pair is not None:  # kept: a mount is not queryable until it is processed
            return self._pair[1]
        old = self.query(".expected")
        actual = CodeBlock(Content(""), classes="out actual")  # long lines: ↪ (an edited run's + lines too)
        expected = CodeBlock(self._expected_content(), classes="out expected")
        pair = Horizontal(expected, actual, classes="outputs")
        self._pair = (expected, actual)
        if old:
            self.mount(pair, after=old.first())
            old.first().remove()
        else:
            self.mount(pair)
        return actual

    def clear_result(self) -> None:
        """Back to the book's block as before any run: the expected output alone, no verdict
        (walk L3: after ``u`` the edited run's panel and verdict stayed under the book's code)."""
        if self.state == "running":
            return
        if self._pair is not None:
            pair = self._pair[0].parent
            self._pair = None
            expected = Static(self._expected_content(), classes="out expected")
            if pair is not None and pair.parent is self:
                self.mount(expected, after=pair)
                pair.remove()
        for widget in self._lines.values():
            widget.remove()
        self._lines.clear()
        self.result, self._actual_text, self._frames, self.frames_shown = None, "", "", False
        self.remove_class("-done", "-match", "-mismatch", "-error", "-stacked")
        self.state = "idle"

    def _actual_content(self) -> Content:
        """The actual panel: the output as compared, or (``o``) with its traceback's real frames."""
        edited = getattr(self.result, "edited", False)  # the learner's code: its marked panel
        if self._frames and self.frames_shown:
            head = "改动后的实际输出" if edited else "实际输出"
            return Content.assemble((f"{head} · 完整调用栈（o 收起）\n", "bold $text-muted"), visible(self._frames.rstrip("\n")))
        if edited:
            return self._actual_text
        head = "实际输出（o 展开调用栈）\n" if self._frames else "实际输出\n"
        return Content.assemble((head, "bold $text-muted"), self._actual_text)

    def toggle_frames(self) -> bool:
        """``o``: show or fold the real traceback frames; False when this run has none."""
        if not self._frames or self._pair is None or self.state != "done":
            return False
        self.frames_shown = not self.frames_shown
        self._pair[1].update(self._actual_content())
        self.fit_outputs()
        return True

    # -- side by side, or stacked ---------------------------------------------------------

    def fit_outputs(self) -> None:
        """Expected and actual side by side only while every line of both fits its column;
        otherwise stacked (full width each), so a table never wraps into the other column's
        rows (walk M3). Called after each update of the pair and when the snippet is resized."""
        if self._pair is None:
            return
        width = self.content_size.width or self.app.size.width - 6
        # two 1fr columns: the actual one has a 1-cell left margin, each a 1-cell padding per side
        column = (width - 1) // 2 - 2
        longest = max(_widest_line(w.content) for w in self._pair)
        self.set_class(longest > column, "-stacked")

    def on_resize(self) -> None:
        self.fit_outputs()

    def _line(self, cls: str) -> Static:
        """The verdict / diff line, mounted on first use (fewer widgets until a run)."""
        widget = self._lines.get(cls)
        if widget is None:
            widget = self._lines[cls] = Static("", classes=cls)
            self.mount(widget)
        return widget

    def on_click(self) -> None:
        self.focus()

    def request_run(self) -> None:
        if self.snippet.runnable and self.state != "running":
            if self.folded:  # a folded proof opens to show its run
                self.toggle_proof()
            self.post_message(self.RunRequested(self))

    # -- called by the screen -------------------------------------------------------------

    queue_place = 0  # K >= 1: the run is K-th in the class runner's queue (K - 1 runs start before it)

    def show_queued(self, place: int) -> None:
        """The class runner's queue moved: 排队中，前面还有 K-1 个 while K >= 1; 0: it runs now."""
        if self.state == "running":
            self.queue_place = max(0, int(place))
            self._tick()

    def show_running(self) -> None:
        self.queue_place = 0
        self._outputs()
        self.fit_outputs()
        self.state = "running"
        self.result = None
        self.remove_class("-match", "-mismatch", "-error", "-done")
        self.add_class("-running")
        self._frame = 0
        self._tick()
        if self._timer is None:
            self._timer = self.set_interval(0.1, self._tick)

    def _tick(self) -> None:
        self._frame = (self._frame + 1) % len(SPINNER)
        if self.queue_place > 0:
            ahead = self.queue_place - 1
            self._line("verdict").update(f"⏳ 排队中，前面还有 {ahead} 个（z 取消）" if ahead else "⏳ 排队中，马上轮到你（z 取消）")
        else:
            self._line("verdict").update(f"{SPINNER[self._frame]} 运行中…（z 取消）")

    def show_result(self, result) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.result = result
        self.state = "done"
        status = getattr(result, "status", "error")
        self.remove_class("-running", "-match", "-mismatch", "-error")
        self.add_class("-done", "-match" if status == "match" else "-mismatch" if status == "mismatch" else "-error")
        actual = getattr(result, "actual", None)
        if getattr(result, "edited", False):  # the learner's code: marked lines, "code was changed"
            from torchcourse.tui.widgets.editor import edited_verdict, marked_pair

            ran = status in RAN
            shown = actual if ran and actual else ""
            frames = _frames_of(result, status)
            left, right = marked_pair(self._book_output()[0], shown, frames=bool(frames))
            # ``o`` expands this run's own frames, never an earlier (book) run's (review-00 F1)
            self._actual_text, self._frames, self.frames_shown = right, frames, False
            self._outputs().update(self._actual_content())
            self._pair[0].update(left)
            self.fit_outputs()
            self._line("verdict").update(Content(edited_verdict(result)))
            if "diff" in self._lines:
                self._line("diff").update("")
                self._line("diff").remove_class("-shown")
            return
        if self._pair is not None:  # after an edited run, the book's plain expected block
            self._pair[0].update(self._expected_content())
        if status in RAN and actual is not None:
            text = visible(actual.rstrip("\n")) or "（没有输出）"  # ESC, SO, C1… never reach the terminal
        elif status == "skipped":
            text = GPU_NOTE
        else:
            text = "（没有输出）"
        self._actual_text, self._frames, self.frames_shown = text, _frames_of(result, status), False
        self._outputs().update(self._actual_content())
        self.fit_outputs()
        self._line("verdict").update(Content(verdict_text(result)))
        diff = getattr(result, "diff", None) if status == "mismatch" else None
        if diff:
            self._line("diff").update(_diff_content(diff))
            self._line("diff").add_class("-shown")
        elif "diff" in self._lines:
            self._line("diff").update("")
            self._line("diff").remove_class("-shown")


def _widest_line(content) -> int:
    """Cells of the widest line of a Static's content (CJK characters take two)."""
    from rich.cells import cell_len

    plain = content.plain if isinstance(content, Content) else str(content)
    return max((cell_len(line) for line in plain.split("\n")), default=0)


def _diff_content(diff: str) -> Content:
    parts = []
    for line in visible(diff).rstrip("\n").splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            parts.append(Content.styled(line, "$text-success"))
        elif line.startswith("-") and not line.startswith("---"):
            parts.append(Content.styled(line, "$text-error"))
        else:
            parts.append(Content(line))
    return Content("\n").join(parts)
