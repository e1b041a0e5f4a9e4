"""Mutation testing for torchcourse's core, one package at a time (a project tool, not in CI).

    python tools/mutation.py PACKAGE [--sample N] [--seed S] [--list] [--timeout-factor F]

PACKAGE is one of the names in ``PACKAGES`` below (runner, progress, quiz, course, lookup). Each
names the source files (optionally only some of their functions) and, per file, its own test
files (the whole suite is far too slow to run per mutant on two cores). The script copies the repository (without .git and .venv) to a private temporary
directory, checks that the package's tests pass there unmutated (the baseline, whose time sets
the per-mutant timeout), then applies one mutation at a time from a fixed catalogue to that
copy and runs those test files with ``pytest -x``:

- operator swaps: ``+``/``-``, ``*``/``/``, ``//``/``*``, ``%``/``*``; ``<``/``<=``, ``>``/``>=``,
  ``==``/``!=``, ``in``/``not in``, ``is``/``is not``; ``and``/``or``
- constants: an int ``n`` becomes ``n + 1``, ``True``/``False`` swap, a float ``x`` becomes
  ``x * 2 + 1``
- negated conditions: the test of an ``if``/``while``/conditional expression becomes ``not (…)``;
  ``not x`` becomes ``x``
- deleted statements: a statement alone on its lines (a call, an assignment, an augmented
  assignment, ``return x``, ``raise``, ``del``) becomes ``pass``

A mutant is *killed* when the tests fail, *survived* when they pass, *timed-out* when they run
longer than ``timeout-factor`` x the baseline (a loop that no longer ends: counted apart). The
source text outside the mutated node is untouched (line numbers stay). Prints one line per
mutant and the counts; the survivors' locations are what docs/mutation.md explains or a new test
kills. ``--sample N`` runs N mutants drawn with ``--seed`` (the full set may not fit on a loaded
machine); the counts say how many of how many were run.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# package -> [(source file, functions or None for the whole file, that file's own tests)]
RUNNER_CACHE_TESTS = ["tests/test_runner.py", "-k", "cache or torch or timeouts_are_never"]
RUNNER_CHILD_TESTS = ["tests/test_runner.py", "-k", "random_stream or warm_equals_cold or stdin or keyboard"]
PROGRESS_TESTS = ["tests/test_progress_store.py", "tests/test_progress_courses.py", "tests/test_hostile_store.py"]
QUIZ_TESTS = ["tests/test_quiz_grading.py", "tests/test_quiz_bank.py", "tests/test_quiz_review.py"]
COURSE_TESTS = ["tests/test_course_model.py", "tests/test_course_cache.py", "tests/test_author_mode.py"]
LOOKUP_TESTS = ["tests/test_lookup.py", "tests/test_lookup_appendix.py"]
PACKAGES: dict[str, list[tuple[str, tuple[str, ...] | None, list[str]]]] = {
    "runner": [
        ("torchcourse/runner/normalize.py", None, ["tests/test_runner_normalize.py", "tests/test_hostile_output.py::test_visible_forms_and_comparisons_unchanged"]),
        ("torchcourse/runner/cache.py", None, RUNNER_CACHE_TESTS),
        ("torchcourse/runner/zygote.py", ("_prepare_snippet_process",), RUNNER_CHILD_TESTS),  # the warm child's set-up
    ],
    "progress": [
        ("torchcourse/progress/store.py", None, PROGRESS_TESTS),
        ("torchcourse/progress/reading.py", None, PROGRESS_TESTS),
        ("torchcourse/tui/writer.py", None, ["tests/test_hostile_writes.py"]),
    ],
    "quiz": [(f"torchcourse/quiz/{n}.py", None, QUIZ_TESTS) for n in ("grading", "bank", "review")],
    "course": [(f"torchcourse/course/{n}.py", None, COURSE_TESTS) for n in ("chapter", "links", "loader")],
    "lookup": [(f"torchcourse/lookup/{n}.py", None, LOOKUP_TESTS) for n in ("search", "errors")],
}

BINOP_SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Mult, ast.Mod: ast.Mult}
CMP_SWAP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
            ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
DELETABLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Raise, ast.Delete)


@dataclass
class Mutant:
    file: str
    line: int
    kind: str
    start: tuple[int, int]  # (line, col) of the replaced text, 1-based line
    end: tuple[int, int]
    new: str

    def label(self) -> str:
        return f"{self.file}:{self.line} {self.kind}"


def _is_docstring(node: ast.AST, parent: ast.AST | None) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            and parent is not None and getattr(parent, "body", [None])[0] is node)


def _span(node: ast.AST) -> tuple[tuple[int, int], tuple[int, int]]:
    return (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)


def _expr(node: ast.AST) -> str:
    return "(" + ast.unparse(node) + ")"


def mutants_of(path: Path, rel: str, functions: tuple[str, ...] | None) -> list[Mutant]:
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    tree = ast.parse(source)
    out: list[Mutant] = []

    def alone(stmt: ast.stmt) -> bool:
        """The statement fills its lines (nothing else before or after it on them)."""
        first, last = lines[stmt.lineno - 1], lines[stmt.end_lineno - 1]
        return first[: stmt.col_offset].strip() == "" and last[stmt.end_col_offset:].strip() in ("", ";") and not last[stmt.end_col_offset:].strip()

    def add(node: ast.AST, kind: str, new: str) -> None:
        start, end = _span(node)
        out.append(Mutant(rel, node.lineno, kind, start, end, new))

    def visit(node: ast.AST, parent: ast.AST | None, inside: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and functions is not None:
            inside = inside or node.name in functions
        if inside:
            mutate(node, parent)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.JoinedStr):  # f-strings: their parts have no usable spans
                continue
            visit(child, node, inside)

    def mutate(node: ast.AST, parent: ast.AST | None) -> None:
        if isinstance(node, ast.BinOp) and type(node.op) in BINOP_SWAP:
            new = ast.BinOp(node.left, BINOP_SWAP[type(node.op)](), node.right)
            add(node, f"{type(node.op).__name__}->{type(new.op).__name__}", _expr(new))
        elif isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in CMP_SWAP:
                    ops = list(node.ops)
                    ops[i] = CMP_SWAP[type(op)]()
                    add(node, f"{type(op).__name__}->{type(ops[i]).__name__}", _expr(ast.Compare(node.left, ops, node.comparators)))
        elif isinstance(node, ast.BoolOp):
            other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            add(node, f"{type(node.op).__name__}->{type(other).__name__}", _expr(ast.BoolOp(other, node.values)))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            add(node, "not x->x", _expr(node.operand))
        elif isinstance(node, ast.Constant) and not isinstance(parent, ast.Expr):
            v = node.value
            if isinstance(v, bool):
                add(node, f"{v}->{not v}", repr(not v))
            elif isinstance(v, int):
                add(node, f"{v}->{v + 1}", repr(v + 1))
            elif isinstance(v, float):
                add(node, f"{v}->{v * 2 + 1}", repr(v * 2 + 1))
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            test = node.test
            add(test, "negated condition", "(not " + _expr(test) + ")")
        if isinstance(node, DELETABLE) and not _is_docstring(node, parent) and alone(node):
            indent = lines[node.lineno - 1][: node.col_offset]
            # keep the line count: 'pass' then empty lines; 'return x' becomes 'return None'-like pass
            text = "pass" + "\n" * (node.end_lineno - node.lineno)
            out.append(Mutant(rel, node.lineno, f"deleted {type(node).__name__}", (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset), text))

    for top in tree.body:
        visit(top, tree, functions is None)
    return out


def apply(source: str, m: Mutant) -> str:
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln))

    def pos(lc: tuple[int, int]) -> int:
        line, col = lc
        # col_offset is in UTF-8 bytes
        text = lines[line - 1].encode("utf-8")[:col].decode("utf-8")
        return offsets[line - 1] + len(text)

    return source[: pos(m.start)] + m.new + source[pos(m.end):]


def _copy_repo(dest: Path) -> None:
    ignore = shutil.ignore_patterns(".git", ".venv", "__pycache__", ".pytest_cache", "*.pyc", "mutants")
    shutil.copytree(REPO, dest, ignore=ignore, symlinks=True)


def _run_tests(copy: Path, tests: list[str], timeout: float) -> tuple[str, float]:
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
                            cwd=copy, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timed-out", time.monotonic() - t0
    finally:
        # a timed-out run, or this script stopped (SIGTERM, Ctrl+C) mid-run: end the test run's own
        # session, its pytest and everything it started (a mutant can loop forever at full CPU)
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, 9)
            except ProcessLookupError:
                pass
            proc.wait()
    return ("survived" if rc == 0 else "killed"), time.monotonic() - t0


def _stop(signum, frame):  # SIGTERM (e.g. from `timeout`): unwind, so the finally blocks run
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    import signal

    signal.signal(signal.SIGTERM, _stop)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("package", choices=sorted(PACKAGES))
    ap.add_argument("--sample", type=int, default=0, help="run only N mutants, drawn with --seed (0: all)")
    ap.add_argument("--seed", type=int, default=38)
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--timeout-factor", type=float, default=3.0)
    ap.add_argument("--file", help="only mutants of this source file (path as in PACKAGES)")
    ap.add_argument("--again", metavar="LOG", help="only the mutants a previous run's output (LOG) says survived or timed out")
    args = ap.parse_args(argv)

    mutants: list[tuple[Mutant, list[str]]] = []
    for rel, functions, tests in PACKAGES[args.package]:
        if args.file and rel != args.file:
            continue
        mutants += [(m, tests) for m in mutants_of(REPO / rel, rel, functions)]
    total = len(mutants)
    chosen = mutants
    if args.again:
        import re

        again = set(re.findall(r"^\[\d+/\d+\] (.+): (?:survived|timed-out) \(", Path(args.again).read_text(encoding="utf-8"), re.M))
        chosen = [mt for mt in mutants if mt[0].label() in again]
    elif args.sample and args.sample < total:
        chosen = sorted(random.Random(args.seed).sample(mutants, args.sample), key=lambda mt: (mt[0].file, mt[0].line))
    if args.list:
        for m, _ in chosen:
            print(m.label())
        print(f"{len(chosen)} of {total} mutants")
        return 0

    with tempfile.TemporaryDirectory(prefix="tc-mutation-") as tmp:
        copy = Path(tmp) / "repo"
        _copy_repo(copy)
        timeouts: dict[tuple[str, ...], float] = {}
        for tests in {tuple(t) for _, t in chosen}:
            status, base = _run_tests(copy, list(tests), timeout=3600)
            if status != "survived":
                print(f"baseline: {' '.join(tests)} do not pass unmutated in the copy ({status}); nothing measured", file=sys.stderr)
                return 2
            timeouts[tests] = max(60.0, base * args.timeout_factor)
            print(f"baseline {' '.join(tests)}: {base:.0f} s (timeout {timeouts[tests]:.0f} s)", flush=True)
        print(f"{args.package}: running {len(chosen)} of {total} mutants", flush=True)
        counts = {"killed": 0, "survived": 0, "timed-out": 0}
        survivors: list[Mutant] = []
        for i, (m, tests) in enumerate(chosen, 1):
            target = copy / m.file
            original = target.read_text(encoding="utf-8")
            mutated = apply(original, m)
            try:
                compile(mutated, m.file, "exec")
            except SyntaxError:
                print(f"[{i}/{len(chosen)}] {m.label()}: not valid Python, skipped", flush=True)
                continue
            target.write_text(mutated, encoding="utf-8")
            try:
                result, secs = _run_tests(copy, tests, timeouts[tuple(tests)])
            finally:
                target.write_text(original, encoding="utf-8")
            counts[result] += 1
            if result != "killed":
                survivors.append(m)
            print(f"[{i}/{len(chosen)}] {m.label()}: {result} ({secs:.0f} s)", flush=True)
        run = sum(counts.values())
        score = 100.0 * counts["killed"] / run if run else 0.0
        print(f"{args.package}: killed {counts['killed']} / survived {counts['survived']} / timed-out {counts['timed-out']}"
              f" of {run} run ({total} in the catalogue); killed {score:.1f} %")
        for m in survivors:
            print(f"  not killed: {m.label()} -> {m.new.strip()[:80]!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
