"""``torchcourse quiz CHAPTER``: take a checkpoint quiz in the plain terminal.

Answers are read from stdin one line per question, so it is scriptable::

    printf '2\\n1 3\\nupper\\n6\\n2\\ny\\n' | torchcourse quiz 01

- single / predict with choices: a number (``2``; letters ``B`` work too);
- multi: every right number (``1 3`` or ``1,3``);
- fill / predict with accept: the text;
- open: the reference answer is printed first, then ``y`` (I had it) or ``n`` (at a real
  terminal an Enter reveals the reference first; piped input gives just the y/n line);
- ``?`` on any question: "I don't know" (graded wrong).

Choices count from 1 here, in the order shown (the quiz files count ``answer`` from 0). The
choices are shown in a fresh order each attempt; ``--seed N`` gives the same order on every
run (a script then knows which number is which). A quiz left before its end (end of input)
is continued with ``--resume``. At a terminal a line that
does not answer is asked again; from piped input the quiz stops at that line (exit 1, naming
the line) so that no later line answers the wrong question.

A predict question really runs its snippet after the guess and prints the real output.
Every answer is stored when given; end of input stops the quiz cleanly with what was
answered stored. Exit status: 0 after a quiz (whatever the score), 2 when the chapter named has no quiz
(unknown, unwritten, no checkpoint: a usage error, like ``run``/``verify``), 1 when the
progress store cannot be opened.
"""

from __future__ import annotations

import re
import sys
from typing import Callable, TextIO

from torchcourse.progress.store import StoreError
from torchcourse.course.model import Snippet
from torchcourse.quiz.grading import parse_choices
from torchcourse.quiz.review import review_rule
from torchcourse.quiz.session import QuizError, QuizSession, chapter_label, run_output

RULE = "─" * 48
DONT_KNOW = {"?", "？"}
YES = {"y", "yes", "是", "对", "会", "1"}
NO = {"n", "no", "否", "错", "不会", "0"} | DONT_KNOW


class _EOF(Exception):
    pass


class _Refused(Exception):
    """Piped input gave a line that does not answer the question: stop rather than let every
    later line answer the wrong question."""

    def __init__(self, line_no: int, text: str, why: str):
        super().__init__(why)
        self.line_no, self.text, self.why = line_no, text, why


class TerminalQuiz:
    """The plain-terminal quiz loop over a :class:`QuizSession`."""

    def __init__(
        self,
        session: QuizSession,
        inp: TextIO,
        out: TextIO,
        run_snippet: Callable[[Snippet], tuple[str, str | None]] | None = None,
        echo: bool | None = None,
    ):
        self.session = session
        self.inp = inp
        self.out = out
        self.run_snippet = run_snippet
        # piped input is not echoed by a terminal: echo it so the transcript reads right
        self.echo = (not _isatty(inp)) if echo is None else echo
        self.line_no = 0  # input lines read so far (named when a piped line is refused)

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def refuse(self, typed: str, why: str) -> None:
        """A line that does not answer: at a terminal say why and ask again; piped, stop."""
        if self.echo:
            raise _Refused(self.line_no, typed, why)
        self.say(why)

    def ask(self, prompt: str) -> str:
        self.out.write(prompt)
        self.out.flush()
        line = self.inp.readline()
        if line != "":
            self.line_no += 1
        if line == "":
            if self.echo:
                self.out.write("\n")
            raise _EOF
        line = line.rstrip("\r\n")
        if self.echo:
            self.out.write(line + "\n")
            self.out.flush()
        return line

    # -- one question ---------------------------------------------------------------------

    def run(self) -> int:
        s = self.session
        course = s.course
        if s.chapter_id is not None:
            chapter = course.chapter(s.chapter_id)
            self.say(f"✅ {chapter_label(course, s.chapter_id)}检查点：{chapter.title if chapter else ''}（共 {s.total} 题）")
        else:
            self.say(f"🔁 复习：今天到期的 {s.total} 题")
        if s.earlier:
            self.say(f"接着上次的测验：前 {s.earlier} 题已作答（计入得分），从第 {s.index + 1} 题继续。")
        self.say("单选输入序号（选项从 1 数起）；多选输入全部正确的序号，如 1 3；填空直接输入答案；不会就输入 ?")
        stopped = False
        try:
            while not s.done:
                self.question()
        except _EOF:
            stopped = True
        except _Refused as exc:
            self.say(f"\n🚫 输入第 {exc.line_no} 行“{exc.text}”回答不了第 {s.index + 1} 题：{exc.why}")
            self.say("测验在这里停下，免得后面每一行都答错题；前面的作答已保存。改好这一行再重新输入。")
            self.summary(True)
            return 1
        self.summary(stopped)
        return 1 if s.unsaved else 0

    def question(self) -> None:
        s = self.session
        chapter_id, q = s.current  # type: ignore[misc]
        self.say()
        self.say(RULE)
        where = f"{chapter_label(s.course, chapter_id)} · " if s.chapter_id is None else ""
        self.say(f"第 {s.index + 1}/{s.total} 题 · {where}{q.kind_name}")
        self.say(plain_markdown(q.prompt.rstrip()))
        snippet = s.snippet_for(chapter_id, q)
        if snippet is not None:
            self.say(f"\n片段 {snippet.key}：")
            for line in snippet.code.rstrip("\n").splitlines():
                self.say(f"    {line}")
        if q.has_choices:
            for i, c in enumerate(s.shown_choices(chapter_id, q)):
                self.say(f"  {i + 1}) {c}")

        if q.kind == "open":
            if not self.echo:  # at a terminal: a pause to think before the reveal
                self.ask("\n先想好你的答案，按回车看参考答案……")
            else:
                self.say("\n先想好你的答案。")
            self.say("参考答案：")
            self.say(_indent(plain_markdown(q.reference or "")))
            while True:
                typed = self.ask("你答对了吗？(y/n)：").strip().lower()
                if typed in YES or typed in NO:
                    result = s.answer(typed in YES)
                    break
                self.refuse(typed, "请输入 y（答对了）或 n（没答对）。")
        elif q.has_choices:
            n = len(q.choices)
            hint = f"输入全部正确选项的序号（1–{n}，如 1 3）：" if q.multiple else f"输入序号（1–{n}）："
            while True:
                typed = self.ask(hint).strip()
                if typed in DONT_KNOW:
                    result = s.answer(typed)
                    break
                picked = parse_choices(typed, n, multiple=q.multiple)
                if picked is not None:
                    result = s.answer(picked)  # shown positions: the session maps them to the file's
                    break
                if q.multiple:
                    self.refuse(typed, f"看不懂“{typed}”：请输入 1–{n} 之间的序号，用空格或逗号隔开，不要重复。")
                else:
                    self.refuse(typed, f"看不懂“{typed}”：请输入 1–{n} 之间的一个序号（从 1 数起）。")
        else:
            while True:
                typed = self.ask("你的答案：")
                if typed.strip():
                    result = s.answer(typed)
                    break
                self.refuse(typed, "答案是空的：请输入答案，不会就输入 ?")

        if result.save_error:
            self.say(f"⚠️ 这道题的作答没有保存：{result.save_error}")
            self.say(f"   答案先记在内存里（共 {len(s.unsaved)} 题未保存），下一题和结束时会再试。")
        if result.grade.correct:
            self.say("✓ 正确")
        elif q.kind == "open":
            self.say("✗ 没答对（自评）")
        else:
            self.say(f"✗ 不对。正确答案：{result.correct_text}")
        if snippet is not None:
            self.show_run(snippet)
        self.say(f"解释：{plain_markdown(q.explain.strip())}")
        self.say(f"出处：{s.where(result)}")

    def show_run(self, snippet: Snippet) -> None:
        if self.run_snippet is None:
            text, note = snippet.expected or "", "（没有运行：这是书中记录的输出）"
        else:
            self.say(f"正在运行片段 {snippet.key} ……")
            text, note = self.run_snippet(snippet)
        self.say("实际输出：" + (f" {note}" if note else ""))
        self.say(_indent(text.rstrip("\n") or "（没有输出）"))

    # -- the end --------------------------------------------------------------------------

    def summary(self, stopped: bool) -> None:
        s = self.session
        self.say()
        self.say("═" * 48)
        try:
            s.save()
        except StoreError as exc:
            self.say(f"⚠️ 还有 {len(s.unsaved)} 题的作答没能保存：{exc}")
        if stopped and s.answered:
            self.say(f"输入结束：已保存 {s.answered - len(s.unsaved)}/{s.total} 题的作答。")
        if s.answered:
            pct = round(100 * s.score / s.answered)
            if s.answered < s.total:  # one denominator per line: this time's answers, said as such
                self.say(f"本次得分：答了 {s.answered} 题，对 {s.score} 题（{pct}%）；还有 {s.total - s.answered} 题没答。")
            else:
                self.say(f"得分：{s.score}/{s.answered}（{pct}%）")
        else:
            self.say("没有作答任何题目：这次不算一次测验，什么都没有记下。")
        if s.missed:
            self.say("答错的题：")
            for r in s.missed:
                self.say(f"  ✗ {_first_line(r.question.prompt)}")
                self.say(f"    回看：{s.where(r)}")
            self.say(review_rule())
        if s.unsaved:
            self.say("这些作答没有记进进度，本章是否完成这次没有计算；进度库能写入后重新测一次即可。")
            return
        try:
            self._completion()
        except StoreError as exc:
            self.say(f"⚠️ 读写进度时出错，本章是否完成这次没有计算：{exc}")

    def _completion(self) -> None:
        s = self.session
        completed = s.finish()
        if s.chapter_id is not None:
            course = s.course
            chapter = course.chapter(s.chapter_id)
            if s.chapter_id in completed:
                self.say(f"🎉 {chapter_label(course, s.chapter_id)}已完成。")
            elif chapter is not None:
                from torchcourse.quiz.completion import PASS_RATIO, latest_attempt

                right, total = latest_attempt(course, s.store, s.chapter_id)
                progress = s.store.chapter_progress(s.chapter_id)
                if s.answered and total and right < PASS_RATIO * total:
                    self.say(f"整份检查点按每题最近一次作答算：{total} 题里对 {right} 题（没答的算错），达到 80% 才算通过：回看上面的小节后再测一次（torchcourse quiz {s.chapter_id}；只重做答错的题加 --wrong）。")
                if progress.furthest_break < chapter.break_points:
                    self.say(f"本章还有断点没读到（{progress.furthest_break}/{chapter.break_points}）：读完全章才算完成。")


def plain_markdown(text: str) -> str:
    """Quiz Markdown for a plain terminal (:func:`torchcourse.quiz.text.plain_text`): ``**总是**``
    reads ``总是``, ``__init__`` stays ``__init__``, inline code keeps its backticks."""
    from torchcourse.quiz.text import plain_text

    return plain_text(text)


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" for line in text.splitlines()) or "    "


def _first_line(text: str, width: int = 40) -> str:
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    return line if len(line) <= width else line[: width - 1] + "…"


class _LazyRunner:
    """The snippet runner for predict questions: warmed up in the background as the quiz
    starts (when it has predict questions), so the first run does not wait for ``import torch``."""

    def __init__(self, course_id: str, preload: tuple[str, ...] | None = None, data: tuple[str, ...] = ()):
        self.course_id = course_id
        self.preload = preload  # course.toml ``preload``: what the warm runner imports first
        self.data = data  # course.toml ``data``: files copied into every run directory
        self.runner = None
        self.error: Exception | None = None

    def _make(self):
        if self.runner is None and self.error is None:
            try:
                from torchcourse import paths
                from torchcourse.runner import Runner

                self.runner = Runner(cache_dir=paths.run_cache_dir(self.course_id), warm=True, preload=self.preload, data=self.data)
            except Exception as exc:  # noqa: BLE001 - the quiz goes on without running
                self.error = exc
        return self.runner

    def warm_up(self) -> None:
        runner = self._make()
        if runner is not None:
            import threading

            threading.Thread(target=runner.start, name="quiz-runner-warmup", daemon=True).start()

    def __call__(self, snippet: Snippet) -> tuple[str, str | None]:
        runner = self._make()
        if runner is None:
            return snippet.expected or "", f"（没能启动运行器：{self.error}；下面是书中记录的输出）"
        try:
            result = runner.run(snippet)
        except Exception as exc:  # noqa: BLE001
            return snippet.expected or "", f"（运行失败：{exc}；下面是书中记录的输出）"
        return run_output(result)

    def close(self) -> None:
        if self.runner is not None:
            self.runner.close()


def _session(course, store, args) -> QuizSession:
    """A fresh attempt, or with --resume the one left half-way (a note when there is none)."""
    from torchcourse.quiz.session import resumable

    seed = getattr(args, "seed", None)
    chapter = course.find_chapter(args.chapter)
    left = None
    # piped input without --resume starts afresh anyway: no need to read (or wait for) the store
    if chapter is not None and chapter.available and (getattr(args, "resume", False) or _isatty(sys.stdin)):
        try:
            left = resumable(course, store, chapter.id)
        except StoreError as exc:
            print(f"读不到上次的测验（{exc}）：这次从第 1 题开始。", file=sys.stderr)
    if getattr(args, "resume", False):
        if left is not None:
            return QuizSession.for_chapter(course, store, args.chapter, resume=left)
        print("没有做到一半的测验可以接着做：这次从第 1 题开始。", file=sys.stderr)
    elif left is not None:
        print(
            f"上次的测验停在第 {left.next_number}/{left.total} 题（已答 {left.answered} 题）；"
            f"要从第 {left.next_number} 题继续，请加 --resume。这次重新开始。",
            file=sys.stderr,
        )
    session = QuizSession.for_chapter(course, store, args.chapter, seed=seed)
    if getattr(args, "wrong", False):
        # a retake of what was missed (walk M4): the score counts each question's latest answer,
        # so the ones right last time keep counting
        from torchcourse.quiz.session import limit_to_wrong

        whole = len(session.items)
        asked = limit_to_wrong(session, store)
        if not asked:
            print("最近一次作答里没有答错的题：这次做全部题目。", file=sys.stderr)
        else:
            print(f"只重做上次答错或没答的 {asked} 题（共 {whole} 题）。", file=sys.stderr)
    return session


def cmd_quiz(args) -> int:
    from torchcourse.commandline import course_or_exit
    from torchcourse.progress.cli import open_or_report

    course = course_or_exit(args)
    store = open_or_report("torchcourse quiz", course_id=course.id)
    if store is None:
        return 1
    runner = _LazyRunner(course.id, course.preload, course.data)
    try:
        try:
            session = _session(course, store, args)
        except QuizError as exc:
            print(f"torchcourse quiz: {exc}", file=sys.stderr)
            return 2  # the chapter named cannot be quizzed: a usage error, as for run/verify
        if any(q.kind == "predict" for _, q in session.items):
            runner.warm_up()
        return TerminalQuiz(session, sys.stdin, sys.stdout, run_snippet=runner).run()
    finally:
        runner.close()
        store.close()


__all__ = ["cmd_quiz", "TerminalQuiz"]
