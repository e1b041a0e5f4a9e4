"""`torchcourse run`, `verify` and `doctor`. Never imports torch (snippets run elsewhere)."""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time
from pathlib import Path

from torchcourse import paths
from torchcourse.commandline import chapter_or_exit, course_or_exit, snippet_or_exit
from torchcourse.runner.normalize import visible
from torchcourse.textwidth import char_width, display_width, fit

ICONS = {
    "match": "✅ 一致",
    "mismatch": "❌ 不一致",
    "error": "💥 出错",
    "timeout": "⏱️ 超时",
    "skipped": "🗓️ 未实跑",
    "cancelled": "⏹️ 已取消",
}


def _runner(args, warm: bool, course_id: str, *, preload=None, hash_seed: str | None = None, data=(), recorded=None):
    from torchcourse.runner import Runner

    cache = None if getattr(args, "no_cache", False) else paths.run_cache_dir(course_id)
    return Runner(cache_dir=cache, warm=warm, preload=preload, hash_seed=hash_seed, python=python_or_exit(args), data=data,
                  recorded=recorded)


def python_or_exit(args) -> str | None:
    """``--python PATH``: the interpreter snippets run with (None: this one). A path that is not
    an executable file ends the command with a message naming it."""
    import os

    path = getattr(args, "python", None)
    if not path:
        return None
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        print(f"torchcourse: --python {path} 不是一个可以运行的 Python 解释器（要虚拟环境里的 bin/python）", file=sys.stderr)
        raise SystemExit(2)
    return os.path.abspath(path)


def _select(course, wanted: list[str]):
    """(chapters, snippets) to verify: every written chapter when none is named; ``CH`` names a
    chapter, ``CH:ID`` one snippet of it (``verify --accept 01:seeded-random`` rewrites one block)."""
    chapters, snippets = [], []
    if not wanted:
        chapters = [c for c in course.chapters if c.available]
        return chapters, [s for ch in chapters for s in ch.snippets]
    for item in wanted:
        if ":" in item:
            snip = snippet_or_exit(course, item, "verify")
            ch = course.chapter(snip.chapter_id)
            if snip not in snippets:
                snippets.append(snip)
        else:
            ch = chapter_or_exit(course, item, "verify")
            snippets.extend(s for s in ch.snippets if s not in snippets)
        if ch not in chapters:
            chapters.append(ch)
    return chapters, snippets


def _unreadable_chapters(course) -> list[str]:
    """Chapters that are neither written nor planned (their file is missing or cannot be read):
    a verify of the whole course fails on them instead of passing without them."""
    return [f"{c.label}（{c.file}）" for c in course.chapters if not c.available and not c.planned]


def _preload_note(course) -> str:
    names = "、".join(course.preload)
    if not names:
        return "⏳ 正在启动预热运行器（之后每段代码从它分叉）……"
    return f"⏳ 正在启动预热运行器（它先 import {names} 一次，之后每段代码从它分叉）……"


class _Progress:
    """A live line on a TTY (bar, the snippets running now and their elapsed time, redrawn a few
    times a second), plain result lines otherwise (plus a note when a snippet runs long)."""

    SLOW_NOTE_S = 10.0

    def __init__(self, total: int, stream, tty: bool, quiet_lines: bool, accepting: bool = False):
        self.accepting = accepting
        self.total = total
        self.done = 0
        self.stream = stream
        self.tty = tty
        self.quiet_lines = quiet_lines
        self.start = time.monotonic()
        self.running: dict[str, float] = {}  # snippet key -> start time
        self.noted: set[str] = set()
        self.status = ""  # shown when nothing runs yet (the warm runner starting)
        self.last = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker = None
        if total:
            self._ticker = threading.Thread(target=self._tick, name="verify-progress", daemon=True)
            self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(0.25):
            with self._lock:
                if self.tty:
                    self._draw()
                elif not self.quiet_lines:
                    now = time.monotonic()
                    for key, t0 in self.running.items():
                        if now - t0 >= self.SLOW_NOTE_S and key not in self.noted:
                            self.noted.add(key)
                            self.stream.write(f"⏳ {key} 已运行 {now - t0:.0f}s，仍在等待……\n")
                            self.stream.flush()

    def _draw(self) -> None:
        columns = shutil.get_terminal_size((80, 24)).columns
        width = max(10, min(30, columns - 60))
        filled = int(width * self.done / max(1, self.total))
        bar = "█" * filled + "░" * (width - filled)
        now = time.monotonic()
        if self.running:
            live = "  ".join(f"▶ {k} {now - t0:.1f}s" for k, t0 in list(self.running.items())[:2])
        else:
            live = self.status or self.last
        # one terminal row, redrawn in place: a wider line wraps and each redraw would stack (walk L4)
        line = fit(f"[{bar}] {self.done}/{self.total} {live}", max(1, columns - 1))
        self.stream.write(f"\r\x1b[2K{line}")
        self.stream.flush()

    def note(self, text: str) -> None:
        """A status before any snippet runs (e.g. the warm runner starting)."""
        with self._lock:
            self.status = text
            if self.tty:
                self._draw()
            elif not self.quiet_lines:
                self.stream.write(text + "\n")
                self.stream.flush()

    def started(self, snippet) -> None:
        with self._lock:
            self.status = ""  # snippets run now: the start-up note is over
            self.running[snippet.key] = time.monotonic()

    def update(self, snippet, res) -> None:
        with self._lock:
            self.running.pop(snippet.key, None)
            self.done += 1
            icon = ICONS.get(res.status, res.status)
            if self.accepting and res.status == "mismatch" and not res.raise_problem:
                icon = "📝 待写入"  # verify --accept is about to write it (after a second run)
            label = f"{icon} {snippet.key}  {res.seconds:.2f}s" + (" (缓存)" if res.cached else "")
            self.last = label
            if self.tty:
                self._draw()
                if self.done == self.total:
                    self.stream.write("\n")
                    self.stream.flush()
            elif not self.quiet_lines:
                self.stream.write(f"[{self.done}/{self.total}] {label}\n")
                self.stream.flush()

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(1)


def cmd_verify(args) -> int:
    from torchcourse.runner import run_many

    course = course_or_exit(args)
    wanted = list(getattr(args, "chapters", []) or [])
    chapters, snippets = _select(course, wanted)
    unreadable = [] if wanted else _unreadable_chapters(course)
    as_json = bool(getattr(args, "json", False))
    accept = bool(getattr(args, "accept", False))
    cold = bool(getattr(args, "cold", False))
    stream = sys.stderr if as_json else sys.stdout
    if accept:
        blocking = _accept_blockers(course, chapters)
        if blocking:
            print(f"torchcourse verify --accept：这些章节还有 {len(blocking)} 处问题，先修好（torchcourse check），再写入输出：", file=sys.stderr)
            for p in blocking:
                print(f"  {p}", file=sys.stderr)
            return 1
    progress = _Progress(len(snippets), stream, stream.isatty(), quiet_lines=as_json, accepting=accept)
    runner = _runner(args, warm=not cold, course_id=course.id, preload=course.preload, data=course.data, recorded=course.recorded)
    try:
        if not cold and any(s.runnable and not s.cold and not s.gpu for s in snippets):
            progress.note(_preload_note(course))
            runner.start()
        results = run_many(
            runner, snippets, jobs=max(1, int(getattr(args, "jobs", 2) or 1)), cold=cold,
            use_cache=not (getattr(args, "no_cache", False) or getattr(args, "drift", False)),
            on_start=lambda i, s: progress.started(s), on_result=lambda i, s, r: progress.update(s, r),
        )
    finally:
        progress.close()
        runner.close()

    if getattr(args, "drift", False):
        return _drift_report(course, args, snippets, results)
    accepted: set[int] = set()
    if accept:
        code = _accept(course, chapters, snippets, results, runner_args=args, cold=cold, as_json=as_json, accepted=accepted)
        if code:
            return code
    passed = failed = skipped = 0
    rows = []
    for i, (s, r) in enumerate(zip(snippets, results)):
        status = "match" if i in accepted else r.status
        if status == "match":
            passed += 1
        elif status == "skipped":
            skipped += 1
        else:
            failed += 1
        row = {"chapter": s.chapter_id, "id": s.id, "status": status, "seconds": round(r.seconds, 4)}
        if r.recorded_as:
            row["recorded_as"] = r.recorded_as  # compared with this release's alternative block
        if r.release_note and status != "match":
            row["release_note"] = r.release_note
        rows.append(row)
        if accept and i not in accepted and r.expected is None and status == "mismatch" and not r.raise_problem:
            continue  # a new block accept refused: the refusal above says why
        if not as_json and status not in ("match", "skipped"):
            print(f"\n{ICONS.get(status, status)}  {s.key}  ({s_file(course, s)}:{s.line})  {r.message}".rstrip())
            if r.diff:
                print(visible(r.diff))
            elif status in ("timeout", "error") and r.actual:
                print(visible(r.actual[-2000:]))
    for where in unreadable:
        failed += 1
        rows.append({"chapter": where, "id": None, "status": "error", "seconds": 0.0})
        if not as_json:
            print(f"\n{ICONS['error']}  {where} 读不出来，它的代码块一个也没验证（torchcourse check 说明原因；还没写的章在 course.toml 里标 planned = true）")
    if as_json:
        print(json.dumps({"results": rows, "passed": passed, "failed": failed, "skipped": skipped}, ensure_ascii=False, indent=2))
    else:
        print(verify_summary(passed, failed, skipped))
    return 1 if failed else 0


def _drift_report(course, args, snippets, results) -> int:
    """``verify --drift``: per snippet, ``same`` (prints the reference output), ``differs,
    recorded`` (differs from the reference, matches this release's alternative block) or
    ``differs, new`` (with the diff against the reference), for a maintainer triaging a release."""
    from torchcourse.runner.cache import module_versions
    from torchcourse.runner.normalize import unified_diff

    python = python_or_exit(args) or sys.executable
    versions = module_versions(python, tuple(dict.fromkeys((*course.recorded, *course.preload))))
    print("drift: " + python + "  " + "  ".join(f"{m} {v}" for m, v in versions.items())
          + ("  (recorded: " + "; ".join(f"{m} {', '.join(r)}" for m, r in course.recorded.items()) + ")" if course.recorded else ""))
    counts = {"same": 0, "differs, recorded": 0, "differs, new": 0, "not compared": 0}
    for s, r in zip(snippets, results):
        if r.status in ("skipped", "cancelled") or (r.status in ("error", "timeout") and r.reference_match is None):
            kind = "not compared"
            print(f"{kind:<18} {s.key}  {r.status} {r.message}".rstrip())
        elif r.reference_match and not r.raise_problem:
            kind = "same"
            print(f"{kind:<18} {s.key}")
        elif r.recorded_as and r.status == "match":
            kind = "differs, recorded"
            print(f"{kind:<18} {s.key}  ({r.recorded_as})")
        else:
            kind = "differs, new"
            print(f"{kind:<18} {s.key}  ({s_file(course, s)}:{s.line})  {r.raise_problem}".rstrip())
            print(visible(unified_diff(s.expected or "", r.actual, course.preload)))
        counts[kind] += 1
    print(" · ".join(f"{k} {v}" for k, v in counts.items()))
    return 1 if counts["differs, new"] else 0


def verify_summary(passed: int, failed: int, skipped: int) -> str:
    """verify's last line: ``一致 4 个 · 不一致 0 个 · 跳过 2 个``."""
    return f"一致 {passed} 个 · 不一致 {failed} 个 · 跳过 {skipped} 个"


def _accept_blockers(course, chapters) -> list:
    """Problems of the chapters concerned that make writing outputs unsafe: every problem in their
    files except a missing output block (which ``--accept`` is there to fill)."""
    files = {ch.file for ch in chapters}
    return [p for p in course.problems if p.file in files and "后面没有 ```output 块" not in p.message]


def _gpu_origin(runner_args) -> str:
    """What machine a gpu snippet's accepted output came from: torch build, device, date."""
    import datetime
    import subprocess

    from torchcourse.runner import execute

    code = "import torch; print(torch.__version__, '·', torch.cuda.get_device_name(0))"
    try:
        out = subprocess.run([execute.default_python(), "-c", code], capture_output=True, text=True, timeout=120, env=execute.snippet_env())
        what = out.stdout.strip() or "未知设备"
    except (OSError, subprocess.SubprocessError):
        what = "未知设备"
    return f"{what} · {datetime.date.today().isoformat()}"


def _accept(course, chapters, snippets, results, *, runner_args, cold: bool, as_json: bool, accepted: set) -> int:
    """Write real outputs into the chapter files; refuse broken or unrepeatable runs.

    A run is written only when it ended as the snippet declares (``raises=``), and when a second,
    uncached run in the other mode (cold after warm, warm after cold) printed the same text.
    """
    from torchcourse.runner import run_many
    from torchcourse.runner.accept import rewrite_outputs
    from torchcourse.runner.normalize import normalize, unified_diff

    refused: list[str] = []
    todo_idx = []
    for i, (s, r) in enumerate(zip(snippets, results)):
        if s.norun or r.status not in ("match", "mismatch"):
            continue
        if r.raise_problem:
            refused.append(f"{s.key}（{s_file(course, s)}:{s.line}）：{r.raise_problem}")
        elif r.status == "mismatch" and (too_big := _too_big(r)):
            refused.append(f"{s.key}（{s_file(course, s)}:{s.line}）：{too_big}")
        elif r.status == "mismatch" and (wild := _wildcard_in(r.actual)):
            refused.append(f"{s.key}（{s_file(course, s)}:{s.line}）：{wild}")
        elif r.status == "mismatch":
            todo_idx.append(i)
    if todo_idx:
        # the second run: the other mode, and another hash seed (set order, hash(): see the guide)
        again = _runner(runner_args, warm=cold, course_id=course.id, preload=course.preload, hash_seed=SECOND_HASH_SEED, data=course.data,
                        recorded=course.recorded)
        try:
            second = run_many(again, [snippets[i] for i in todo_idx], jobs=max(1, int(getattr(runner_args, "jobs", 2) or 1)), cold=not cold, use_cache=False)
        finally:
            again.close()
        keep = []
        for i, r2 in zip(todo_idx, second):
            s, r1 = snippets[i], results[i]
            if r2.status not in ("match", "mismatch") or r2.actual != r1.actual:
                first, other = ("热启动", "全新解释器") if not cold else ("全新解释器", "热启动")
                diff = unified_diff(r1.actual, r2.actual).replace("期望 expected", first).replace("实际 actual", other)
                refused.append(f"{s.key}（{s_file(course, s)}:{s.line}）：两次运行的输出不同（{first} / {other}，第二次 PYTHONHASHSEED={SECOND_HASH_SEED}），输出不确定的代码块不能写入——先固定随机种子，去掉时间、地址，集合（set）和 hash() 的顺序排好序再打印。\n{visible(diff) or r2.message}")
            else:
                keep.append(i)
        todo_idx = keep
    changes = 0
    off = _off_reference(course, runner_args)
    if off and todo_idx:
        return _accept_alternatives(course, chapters, snippets, results, todo_idx, off, refused=refused, as_json=as_json, accepted=accepted)
    for ch in chapters:
        rows = [(snippets[i], results[i]) for i in todo_idx if snippets[i].chapter_id == ch.id]
        if not rows:
            continue
        try:
            origin = _gpu_origin(runner_args) if any(s.gpu for s, _ in rows) else None
            n = rewrite_outputs(ch.file, [(s, r.actual) for s, r in rows], gpu_origin=origin)
        except OSError as exc:
            print(f"torchcourse verify --accept：写不进 {ch.file}：{paths.os_reason(exc)}", file=sys.stderr)
            return 2
        except ValueError as exc:
            print(f"torchcourse verify --accept：{exc}", file=sys.stderr)
            return 2
        accepted.update(i for i in todo_idx if snippets[i].chapter_id == ch.id)
        changes += n
        if not as_json:
            for s, r in rows:
                diff = unified_diff(normalize(s.expected or "", side="expected"), r.actual).split("\n")
                shown = diff[2:14] + (["  …"] if len(diff) > 14 else [])
                print(f"📝 {s.key}（{s_file(course, s)}:{s.line}）" + ("新写入" if s.expected is None else "已改写"))
                for ln in shown:
                    print(f"    {visible(ln)}")
            print(f"📝 {ch.file}: 写入了 {n} 个 output 块")
    if refused:
        stream = sys.stderr
        print(f"\n🚫 拒绝写入 {len(refused)} 个代码块：", file=stream)
        for r in refused:
            print(f"  • {r}", file=stream)
    if changes:
        _appendix_after_accept(course)
        if not as_json:
            _machine_warnings_after_accept(course, [snippets[i] for i in todo_idx])
    return 0


def _machine_warnings_after_accept(course, written) -> None:
    """The ⚠️ of check for outputs that depend on the machine (clock, directory order, versions),
    said now: the two runs of accept agreed here, which proves nothing about a learner's machine."""
    from torchcourse.check import machine_dependence

    for s in written:
        for reason in machine_dependence(s.code):
            print(f"{s_file(course, s)}:{s.line}: ⚠️ 代码块 #{s.id} {reason}")
def _off_reference(course, args) -> tuple[str, str, str] | None:
    """(module, reference release, installed version) when the snippet interpreter's release of a
    recorded module is not the reference one, else None."""
    if not course.recorded:
        return None
    from torchcourse.course.releases import off_reference
    from torchcourse.runner.cache import module_versions

    off = off_reference(course.recorded, module_versions(python_or_exit(args) or sys.executable, tuple(course.recorded)))
    return off[0] if off else None


def _print_refused(refused: list[str]) -> None:
    if refused:
        print(f"\n🚫 拒绝写入 {len(refused)} 个代码块：", file=sys.stderr)
        for r in refused:
            print(f"  • {r}", file=sys.stderr)


def _accept_alternatives(course, chapters, snippets, results, todo_idx, off, *, refused, as_json: bool, accepted: set) -> int:
    """verify --accept under a release that is not the reference: write the snippet's output
    alternative for that release (```output {torch==2.15.0}), never the reference block; an
    output equal to the reference removes that release from the alternatives; consecutive
    releases printing the same share one block."""
    from torchcourse.course.releases import regroup, same_release
    from torchcourse.runner.accept import rewrite_alternatives
    from torchcourse.runner.normalize import compare, normalize, unified_diff

    module, reference, have = off
    releases = course.recorded[module]
    if not any(same_release(r, have) for r in releases):
        print(f"torchcourse verify --accept：这里的 {module} 是 {have}，不在 course.toml 的 [recorded] {module} = {list(releases)} 里：先把这个版本加进去，再写入它的输出。", file=sys.stderr)
        return 1

    def same(a: str, b: str) -> bool:  # as the comparison sees them: a library's line number is no difference
        return compare(a, normalize(b, side="expected"), course.preload) and compare(b, normalize(a, side="expected"), course.preload)

    for ch in chapters:
        rows = []
        for i in todo_idx:
            s, r = snippets[i], results[i]
            if s.chapter_id != ch.id:
                continue
            if s.expected is None:
                refused.append(f"{s.key}（{s_file(course, s)}:{s.line}）：还没有参考输出块；先在参考版本 {module} {reference} 上运行 verify --accept 写它")
                continue
            text = None if compare(s.expected, r.actual, course.preload) else r.actual
            rows.append((i, s, r, text, regroup(s.alternatives, module, releases, have, text, same=same)))
        if not rows:
            continue
        try:
            n = rewrite_alternatives(ch.file, [(s, module, blocks) for _, s, _, _, blocks in rows])
        except OSError as exc:
            print(f"torchcourse verify --accept：写不进 {ch.file}：{paths.os_reason(exc)}", file=sys.stderr)
            return 2
        except ValueError as exc:
            print(f"torchcourse verify --accept：{exc}", file=sys.stderr)
            return 2
        accepted.update(i for i, *_ in rows)
        if not as_json:
            for _, s, r, text, _ in rows:
                if text is None:
                    print(f"📝 {s.key}（{s_file(course, s)}:{s.line}）在 {module} {have} 上和参考输出一致：不需要这个版本的备选块")
                    continue
                diff = unified_diff(s.expected, r.actual, course.preload).split("\n")
                print(f"📝 {s.key}（{s_file(course, s)}:{s.line}）写入 {module} {have} 的备选输出（和参考版本 {reference} 的差异）：")
                for ln in diff[2:14] + (["  …"] if len(diff) > 14 else []):
                    print(f"    {visible(ln)}")
            print(f"📝 {ch.file}: 改写了 {n} 个代码块的 {module} 备选输出")
    _print_refused(refused)
    return 0


SECOND_HASH_SEED = "1"  # the first run has the fixed PYTHONHASHSEED=0 of every run
ACCEPT_MAX_LINES = 400  # the longest output block accept writes; a longer one is refused
ACCEPT_MAX_CHARS = 40_000


def _wildcard_in(actual: str) -> str:
    """Why a real output cannot be written as it is: a line that is exactly ``...`` or text holding
    ``<<...>>`` would be a wildcard in the expected block, and the snippet would test nothing."""
    from torchcourse.runner.normalize import INLINE_WILDCARD, LINE_WILDCARD

    for n, ln in enumerate(actual.split("\n"), start=1):
        if ln == LINE_WILDCARD or INLINE_WILDCARD in ln:
            what = "恰好是 ..." if ln == LINE_WILDCARD else "含有 <<...>>"
            return (f"输出第 {n} 行{what}：写进期望输出块它就成了通配符（匹配任何内容），从此这个代码块什么也不检查。"
                    f"请改一下打印的内容（例如打印 … 或「（省略）」），再写入")
    return ""


def _too_big(res) -> str:
    """Why an output is too big to write into a chapter (cut by the runner, or over the cap)."""
    if res.truncated:
        return "输出超过 1 MB 或 20,000 行，运行器截断并停止了它：截断的输出不是真实输出，不能写入。请让代码块少打印一些（只打印形状、前几行或摘要）"
    lines = res.actual.count("\n") + 1
    if lines > ACCEPT_MAX_LINES or len(res.actual) > ACCEPT_MAX_CHARS:
        return (f"输出有 {lines} 行、{len(res.actual)} 个字符，超过 verify --accept 写入的上限（{ACCEPT_MAX_LINES} 行或 "
                f"{ACCEPT_MAX_CHARS} 个字符）：读者读不完这么长的输出。请让代码块少打印一些（只打印形状、前几行或摘要）")
    return ""


def _appendix_after_accept(course) -> None:
    """After writing outputs: the appendix rows whose 报错原文 no output prints any more (L2), so the
    author learns it now rather than at the next check."""
    try:
        from torchcourse.check import excerpt_problems
        from torchcourse.course import load_course

        fresh = load_course(course.root)
        broken = excerpt_problems(fresh)
    except Exception:  # noqa: BLE001 - a hint only; check reports it in any case
        return
    if broken:
        print(f"\n⚠️ 写入后附录里有 {len(broken)} 条报错原文不再出现在任何代码块的输出里（torchcourse check 也会报）：", file=sys.stderr)
        for p in broken:
            print(f"  {p}", file=sys.stderr)


def s_file(course, snippet) -> str:
    ch = course.chapter(snippet.chapter_id)
    try:
        return str(ch.file.relative_to(Path.cwd()))
    except ValueError:
        return str(ch.file)


# -- run -----------------------------------------------------------------------------------

def _wrap(line: str, width: int) -> list[str]:
    out, cur, w = [], "", 0
    for ch in line:
        cw = char_width(ch)
        if w + cw > width:
            out.append(cur)
            cur, w = "", 0
        cur += ch
        w += cw
    out.append(cur)
    return out


def side_by_side(left_title: str, left: str, right_title: str, right: str, columns: int) -> str:
    """Two columns when the terminal is wide enough (>= 100), stacked otherwise."""
    if columns < 100:
        rule = "─" * max(10, columns - 1)
        return "\n".join([f"── {left_title} ", left, rule, f"── {right_title} ", right])
    col = (columns - 3) // 2
    lrows = [r for ln in left.split("\n") for r in _wrap(ln, col)]
    rrows = [r for ln in right.split("\n") for r in _wrap(ln, col)]
    out = [left_title + " " * (col - display_width(left_title)) + " │ " + right_title, "─" * col + "─┼─" + "─" * col]
    for i in range(max(len(lrows), len(rrows))):
        a = lrows[i] if i < len(lrows) else ""
        b = rrows[i] if i < len(rrows) else ""
        out.append(a + " " * (col - display_width(a)) + " │ " + b)
    return "\n".join(ln.rstrip() for ln in out)


def cmd_run(args) -> int:
    if ":" not in args.snippet:  # the form is named before the course is loaded
        snippet_or_exit(None, args.snippet)
    course = course_or_exit(args)
    snip = snippet_or_exit(course, args.snippet)
    runner = _runner(args, warm=not args.cold, course_id=course.id, preload=course.preload, data=course.data, recorded=course.recorded)
    try:
        res = runner.run(snip, cold=args.cold, use_cache=not args.no_cache)
    finally:
        runner.close()
    from torchcourse.runner.normalize import normalize

    # outputs are shown with their control characters made visible: a snippet printing ESC c or
    # SO must not reset or garble the terminal (comparisons used the text as it is)
    columns = shutil.get_terminal_size((80, 24)).columns
    book = res.expected if res.expected is not None else snip.expected
    expected = normalize(book, side="expected") if book is not None else "（没有期望输出）"
    actual = res.actual if res.status not in ("skipped",) else "（未运行）"
    print(f"{snip.key}  ({s_file(course, snip)}:{snip.line})")
    title = f"期望输出 expected（书里 {res.recorded_as} 的记录）" if res.recorded_as else "期望输出 expected"
    print(side_by_side(title, visible(expected), "实际输出 actual", visible(actual), columns))
    print("─" * max(10, min(columns - 1, 100)))
    extra = "（缓存）" if res.cached else ""
    print(f"{ICONS.get(res.status, res.status)}  {res.seconds:.3f}s{extra}  {res.message}".rstrip())
    if res.diff:
        print(visible(res.diff))
    if getattr(res, "frames", ""):  # walk L6: the real frames, where the comparison shows "  ..."
        print("完整的调用栈（上面对照时，每层 File …, line N 折成了一行 “  ...”）：")
        print(visible(res.frames))
    return 0 if res.status in ("match", "skipped") else 1


# -- doctor --------------------------------------------------------------------------------

def _course_quietly(args):
    """The course (for its ``preload``), or None when it cannot be loaded: doctor still runs."""
    try:
        from torchcourse.course import load_course

        return load_course(paths.content_dir(getattr(args, "content", None)))
    except Exception:  # noqa: BLE001
        return None


def _module_version(name: str) -> str | None:
    """The installed version of the distribution behind module ``name`` (no import), or None when
    the module cannot be found. "已安装" when it has no version metadata."""
    import importlib.util
    from importlib.metadata import PackageNotFoundError, version

    top = name.split(".")[0]
    try:
        if importlib.util.find_spec(top) is None:
            return None
    except (ImportError, ValueError):
        return None
    try:
        return version(top)
    except PackageNotFoundError:
        return "已安装"


def _recorded_line(installed: str, releases: tuple[str, ...]) -> str:
    """doctor's line for one preloaded module: installed vs the releases outputs are recorded on."""
    from torchcourse.course.releases import same_release

    if not releases:
        return f"✅ {installed}（course.toml 没有为它记录版本）"
    listed = "、".join(releases)
    if same_release(installed, releases[0]):
        return f"✅ {installed}（已安装）· 书里的输出记录于 {listed}（参考版本 {releases[0]}）"
    if any(same_release(installed, r) for r in releases):
        return f"✅ {installed}（已安装）· 书里的输出记录于 {listed}（参考版本 {releases[0]}；你这个版本的不同输出书里也记录了）"
    return f"⚠️ {installed}（已安装）· 书里的输出记录于 {listed}（参考版本 {releases[0]}）：你的版本没有记录，输出可能不同"


def cmd_doctor(args) -> int:
    import platform
    import statistics

    from torchcourse.course.model import Snippet
    from torchcourse.runner import Runner
    from torchcourse.runner.cache import torch_version
    from torchcourse.runner.core import TORCH_PIN

    ok = True
    course = _course_quietly(args)
    preload = course.preload if course is not None else ("torch",)
    print(f"Python      {platform.python_version()}  ({sys.executable})")
    tv = torch_version(sys.executable)
    missing = False
    print(f"preload     {'、'.join(preload) or '（无）'}（course.toml 的 preload：预热运行器先导入它们）")
    recorded = course.recorded if course is not None else {"torch": (TORCH_PIN,)}
    for name in preload:  # what the course's course.toml says the warm runner imports
        releases = recorded.get(name) or ((TORCH_PIN,) if name == "torch" and course is None else ())
        if name == "torch":
            if tv == "none":
                print(f"torch       ❌ 未安装 — pip install torch=={releases[0] if releases else TORCH_PIN}")
                ok = False
            else:
                print(f"torch       {_recorded_line(tv, releases)}")
            continue
        version = _module_version(name)
        if version is None:
            print(f"{name:<11} ❌ 未安装 — pip install {name.split('.')[0]}（课程的 course.toml 要预先导入它）")
            ok, missing = False, True
        else:
            print(f"{name:<11} {_recorded_line(version, releases)}")
    if tv == "none" and "torch" in preload:
        missing = True
    runner = Runner(cache_dir=None, warm=True, preload=preload)
    try:
        if "torch" in preload:  # a course without torch never imports it, not even here
            print(f"CUDA        {'✅ 可用' if runner.gpu_available() else '— 不可用（GPU 代码片段不会实跑）'}")
        print(f"数据目录    {paths.data_dir()}")
        print(f"缓存目录    {paths.cache_dir()}")
        print(f"课程目录    {paths.content_dir(getattr(args, 'content', None))}")
        if not missing:
            t0 = time.monotonic()
            if "torch" in preload:
                snip = Snippet(id="doctor", chapter_id="doctor", code="import torch\nprint(torch.ones(2).sum().item())\n", expected="2.0", line=1)
            else:
                code = "".join(f"import {name}\n" for name in preload) + "print('ok')\n"
                snip = Snippet(id="doctor", chapter_id="doctor", code=code, expected="ok", line=1)
            first = runner.run(snip, use_cache=False)
            boot = time.monotonic() - t0
            if first.status != "match":
                print(f"预热运行器  ❌ {first.status} {first.message}\n{first.actual}")
                ok = False
            else:
                lat = []
                for _ in range(5):
                    t = time.monotonic()
                    runner.run(snip, use_cache=False)
                    lat.append(time.monotonic() - t)
                cold = runner.run(snip, cold=True, use_cache=False)
                print(f"预热运行器  ✅ 启动 {boot:.2f}s，每段 {statistics.median(lat) * 1000:.0f} ms（冷启动 {cold.seconds:.2f}s）")
    finally:
        runner.close()
    from torchcourse.serve.cli import checks as serve_checks

    for fine, line in serve_checks():
        print(line)
        ok = ok and fine
    from torchcourse.serve.hub import hub_lines

    for line in hub_lines():
        print(line)
    return 0 if ok else 1


# -- run --sandbox -------------------------------------------------------------------------

def cmd_run_sandbox(args) -> int:
    """``torchcourse run --sandbox FILE``: FILE alone, in the classroom's sandbox (the same one the
    shared runner forks every learner's run into), its output and a verdict. Never a traceback of
    ours: the file's own exceptions are its output."""
    from torchcourse.course.model import Snippet
    from torchcourse.runner import execute
    from torchcourse.runner.core import _exit_message, effective_timeout
    from torchcourse.runner.sandbox import DEFAULT_FSIZE, DEFAULT_MEM, DEFAULT_NPROC, SandboxRunner, sandbox_problem

    path = Path(args.sandbox)
    try:
        code = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"torchcourse run --sandbox: 读不了 {path}：{paths.os_reason(exc)}", file=sys.stderr)
        return 2
    problem = sandbox_problem()
    if problem:
        print(f"torchcourse run --sandbox: 沙箱用不了——{problem}", file=sys.stderr)
        return 2
    course = _course_quietly(args)
    preload = course.preload if course is not None else ("torch",)
    snip = Snippet(id="sandbox", chapter_id="file", code=code, expected=None, line=1)
    print(f"🔒 在沙箱里运行 {path}：系统和 Python 只读，只能写它自己的运行目录，没有网络，看不到任何数据目录；"
          f"内存 {DEFAULT_MEM >> 30} GB、最多 {DEFAULT_NPROC} 个进程、单个文件 {DEFAULT_FSIZE >> 20} MB、输出 1 MB、超时 60 秒")
    import os

    home = {"TORCHCOURSE_HOME": os.environ["TORCHCOURSE_HOME"]} if os.environ.get("TORCHCOURSE_HOME") else {}
    runner = SandboxRunner(cache_dir=None, warm=not args.cold, preload=preload, env=home, data=course.data if course is not None else ())
    try:
        res = runner.run(snip, cold=args.cold, use_cache=False)
    finally:
        runner.close()
    columns = shutil.get_terminal_size((80, 24)).columns
    print("─" * max(10, min(columns - 1, 100)))
    if res.actual:
        print(visible(res.actual))
        print("─" * max(10, min(columns - 1, 100)))
    if res.status == "error":
        print(res.message)
        return 1
    if res.status == "timeout":
        print(f"⏱️ 超时：运行超过 {effective_timeout(snip):g} 秒，已终止")
        return 1
    if res.status == "cancelled":
        print("⏹️ 已取消")
        return 1
    if res.truncated:  # the run was stopped at the cap: its exit says nothing of the snippet
        print(execute.TRUNCATION_NOTICE.replace("⚠️ [torchcourse] ", "✂️ ") + f"  {res.seconds:.3f}s")
        return 1
    if res.signal is not None:
        verdict = _exit_message(None, res.signal)
    elif res.returncode:
        verdict = f"↩️ 运行结束，退出码 {res.returncode}" + (f"（最后抛出 {res.raised}）" if res.raised else "")
    else:
        verdict = "✅ 运行结束，退出码 0"
    print(verdict + f"  {res.seconds:.3f}s")
    return 0 if res.returncode == 0 else 1
