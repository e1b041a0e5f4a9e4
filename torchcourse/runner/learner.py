"""``torchcourse run CHAPTER:SNIPPET --file PATH``: a learner's own file, run as the snippet would be.

For learners who prefer their own editor to the reader's (``e``): the file's text replaces the
snippet's code and runs under exactly the snippet's conditions (warm runner unless ``--cold`` or
the snippet is ``cold``/``gpu``, a fresh empty temporary directory as the working directory, the
snippet's timeout and the output cap); the output is compared with the snippet's expected output.
Never imports torch.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def cmd_run_file(args) -> int:
    from torchcourse.commandline import course_or_exit, snippet_or_exit
    from torchcourse.runner.cli import ICONS, _runner, s_file, side_by_side
    from torchcourse.paths import os_reason
    from torchcourse.runner.normalize import normalize, visible

    if ":" not in args.snippet:  # the form is named before the file is read
        snippet_or_exit(None, args.snippet)
    path = Path(args.file)
    try:
        code = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"torchcourse run: 读不了 --file {path}：{os_reason(exc)}", file=sys.stderr)
        return 2
    course = course_or_exit(args)
    book = snippet_or_exit(course, args.snippet)
    if book.norun:
        print(f"torchcourse run: {book.key} 只供阅读（norun），没有可对比的输出，不运行。", file=sys.stderr)
        return 2
    snip = book.replace(code=code)
    runner = _runner(args, warm=not args.cold, course_id=course.id, preload=course.preload, data=course.data,
                     recorded=course.recorded)
    try:
        res = runner.run(snip, cold=args.cold, use_cache=False)
    finally:
        runner.close()
    columns = shutil.get_terminal_size((80, 24)).columns
    shown = res.expected if res.expected is not None else book.expected  # the installed release's record
    expected = normalize(shown, side="expected") if shown is not None else "（没有期望输出）"
    actual = res.actual if res.status != "skipped" else "（未运行）"
    print(f"{path} 代替 {book.key}（{s_file(course, book)}:{book.line}）运行：同样的运行器、空的临时目录、超时 {book.timeout or 60:g} 秒")
    print(side_by_side("书上的预期输出 expected", visible(expected), "你的文件的输出 actual", visible(actual), columns))
    print("─" * max(10, min(columns - 1, 100)))
    same = "和书上的预期输出相同" if res.status == "match" else "和书上的不同——这是你的代码的输出，不是书的错误" if res.status == "mismatch" else ""
    print(f"✏️ 你的代码 · {ICONS.get(res.status, res.status)}  {same}  {res.seconds:.3f}s  {res.message}".rstrip())
    if res.diff:
        print(visible(res.diff))
    return 0 if res.status in ("match", "skipped") else 1
