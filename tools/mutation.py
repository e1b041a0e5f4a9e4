"""Mutation testing for torchcourse's core, one package at a time (a project tool, not in CI).

    python tools/mutation.py PACKAGE [--jobs 2] [--sample N] [--seed S] [--only TEXT] [--again LOG]
                                     [--confirm] [--agree] [--whole] [--list]

PACKAGE is one of the names in ``PACKAGES`` below (runner, progress, quiz, course, lookup, sandbox,
serve, reader). Each
names the source files (optionally only some of their functions) and, per file, its own test
files (the whole suite is far too slow to run per mutant on two cores). The script copies the
repository (without .git and .venv) to private temporary directories (one per job), then:

1. runs each file's test set once there, unmutated, with per-test coverage contexts
   (``tools/mutation_plugin.py``; Python subprocesses that inherit the environment are measured
   too): the baseline (it must pass) and the map line -> the node ids that execute it, cached in
   ``~/.cache/torchcourse-mutation/`` under a digest of the code, tests, content and the plugin;
2. per mutant, runs ``pytest -x -q`` on only the node ids that execute the mutated lines, niced
   (``nice -n 10``), in its own session, at most ``--jobs`` (1 or 2) at once. A mutant on lines no
   test executes survives at once ("not covered"). The file's whole test set runs instead for a
   mutant outside a function's body (it runs once, at import), on a line some run reached outside
   any test (an import, a thread between tests) and for the files in ``ALWAYS_WHOLE``.

Catalogue:

- operator swaps: ``+``/``-``, ``*``/``/``, ``//``/``*``, ``%``/``*``; ``<``/``<=``, ``>``/``>=``,
  ``==``/``!=``, ``in``/``not in``, ``is``/``is not``; ``and``/``or``
- constants: an int ``n`` becomes ``n + 1``, ``True``/``False`` swap, a float ``x`` becomes
  ``x * 2 + 1``
- negated conditions: the test of an ``if``/``while``/conditional expression becomes ``not (…)``;
  ``not x`` becomes ``x``
- deleted statements: a statement alone on its lines (a call, an assignment, an augmented
  assignment, ``return x``, ``raise``, ``del``) becomes ``pass``

A mutant is *killed* when the tests fail, *survived* when they pass, *timed-out* when they run
longer than ``timeout-factor`` x the selected tests' baseline time (collection included; never
less than ``--timeout-floor``): a loop that no longer ends, counted apart. The source text outside
the mutated node is untouched (line numbers stay). ``--confirm`` re-runs every mutant the
selected tests did not kill on the whole set (that verdict counts); ``--agree`` runs every chosen
mutant both ways and counts the agreeing verdicts (the check that the selection loses nothing).
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
RUNNER_CACHE_TESTS = ["tests/test_runner.py", "tests/test_runner_paths_and_cache.py", "-k", "cache or torch or timeouts_are_never or paths_and_cache"]
RUNNER_CHILD_TESTS = ["tests/test_runner.py", "tests/test_runner_paths_and_cache.py", "-k", "random_stream or warm_equals_cold or stdin or keyboard"]
# the mutation-kill files first: their state checks fail a mutant in seconds, and `-x` stops the
# run there before a test that can only wait for a write that never lands (a timeout, not a kill)
PROGRESS_TESTS = ["tests/test_progress_rules.py", "tests/test_progress_store.py", "tests/test_progress_courses.py",
                  "tests/test_progress_damaged_store.py", "tests/test_progress_processes.py"]
QUIZ_TESTS = ["tests/test_quiz_grading.py", "tests/test_quiz_bank.py", "tests/test_quiz_review.py", "tests/test_quiz_check.py",
              "tests/test_quiz_order.py", "tests/test_quiz_rules.py"]
COURSE_TESTS = ["tests/test_course_model.py", "tests/test_course_cache.py", "tests/test_author_mode.py", "tests/test_course_rules.py"]
LOOKUP_TESTS = ["tests/test_lookup.py", "tests/test_lookup_appendix.py", "tests/test_lookup_reports.py", "tests/test_lookup_answers.py"]
SANDBOX_TESTS = ["tests/test_sandbox.py", "tests/test_classroom_runner.py"]
SERVE_TESTS = ["tests/test_serve.py", "tests/test_serve_class.py", "tests/test_serve_class_runner.py"]
READER_TESTS = ["tests/test_tui_path.py", "tests/test_tui_resume.py", "tests/test_reader_keys.py", "tests/test_reader_paging.py"]
PACKAGES: dict[str, list[tuple[str, tuple[str, ...] | None, list[str]]]] = {
    "runner": [
        ("torchcourse/runner/normalize.py", None, ["tests/test_runner_normalize.py", "tests/test_output_control_characters.py::test_visible_forms_and_comparisons_unchanged", "tests/test_runner_paths_and_cache.py"]),
        ("torchcourse/runner/cache.py", None, RUNNER_CACHE_TESTS),
        ("torchcourse/runner/zygote.py", ("_prepare_snippet_process",), RUNNER_CHILD_TESTS),  # the warm child's set-up
    ],
    "progress": [
        ("torchcourse/progress/store.py", None, PROGRESS_TESTS),
        ("torchcourse/progress/reading.py", None, PROGRESS_TESTS),
        ("torchcourse/tui/writer.py", None, ["tests/test_progress_writer.py", "tests/test_progress_locked_store.py"]),
    ],
    "quiz": [(f"torchcourse/quiz/{n}.py", None, QUIZ_TESTS) for n in ("grading", "bank", "review", "order", "tells")],
    "course": [(f"torchcourse/course/{n}.py", None, COURSE_TESTS) for n in ("chapter", "links", "loader")],
    "lookup": [(f"torchcourse/lookup/{n}.py", None, LOOKUP_TESTS) for n in ("search", "errors")],
    # the class: what a learner's snippet can reach, who a request is, the class service
    "sandbox": [(f"torchcourse/runner/{n}.py", None, SANDBOX_TESTS) for n in ("sandbox", "tc_jail", "cgroups")],
    "serve": [(f"torchcourse/serve/{n}.py", None, SERVE_TESTS) for n in ("access", "users", "server", "classroom")],
    "reader": [(f"torchcourse/tui/reader/{n}.py", None, READER_TESTS) for n in ("place", "navigation")],
}
# run in the zygote's forked snippet processes, which outlive the test that started them: coverage
# cannot tell which test ran a line there, so their mutants always run the file's whole test set
ALWAYS_WHOLE = {"torchcourse/runner/zygote.py"}

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
    in_function: bool = True  # inside a function's body: runs when called (else at import, once)

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

    in_body = [False]

    def add(node: ast.AST, kind: str, new: str) -> None:
        start, end = _span(node)
        out.append(Mutant(rel, node.lineno, kind, start, end, new, in_body[0]))

    def visit(node: ast.AST, parent: ast.AST | None, inside: bool, infunc: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and functions is not None:
            inside = inside or node.name in functions
        if inside:
            in_body[0] = infunc
            mutate(node, parent)
        body = node.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) else None
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.JoinedStr):  # f-strings: their parts have no usable spans
                continue
            # a function's body runs when it is called; its decorators and defaults at import
            visit(child, node, inside, infunc or (child is body or (isinstance(body, list) and child in body)))

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
            out.append(Mutant(rel, node.lineno, f"deleted {type(node).__name__}", (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset), text, in_body[0]))

    for top in tree.body:
        visit(top, tree, functions is None, False)
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


PLUGIN_AUTOLOAD = False  # --plugins: let pytest load the installed plugins (snapshot, playwright, xdist)


def _env(copy: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": f"{copy}{os.pathsep}{copy / 'tools'}", "PYTHONDONTWRITEBYTECODE": "1", **extra}
    if not PLUGIN_AUTOLOAD:
        # the installed plugins import textual, syrupy and playwright at every start: half of a
        # one-test run on a loaded machine. The baseline runs the same way, so a test set that
        # needs a plugin fails there (run with --plugins), never silently per mutant.
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    for k in ("PYTEST_ADDOPTS", "COVERAGE_PROCESS_START", "COVERAGE_PROCESS_CONFIG", "TC_MUT_TEST"):
        if k not in extra:
            env.pop(k, None)
    return env


_RUNNING: set[subprocess.Popen] = set()  # the test runs in progress (their sessions are ended on a stop)
_STOPPING = False


def _end_session(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, 9)
        except ProcessLookupError:
            pass
        proc.wait()


def _run_tests(copy: Path, tests: list[str], timeout: float, extra: list[str] = (), env: dict[str, str] | None = None) -> tuple[str, float, int]:
    """Run pytest on TESTS in COPY, niced, in its own session: (verdict, seconds, return code)."""
    if _STOPPING:
        raise SystemExit(1)
    t0 = time.monotonic()
    proc = subprocess.Popen(["nice", "-n", "10", sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *extra, *tests],
                            cwd=copy, env=env or _env(copy), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    _RUNNING.add(proc)
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timed-out", time.monotonic() - t0, -1
    finally:
        # a timed-out run, or this script stopped (SIGTERM, Ctrl+C) mid-run: end the test run's own
        # session, its pytest and everything it started (a mutant can loop forever at full CPU)
        _end_session(proc)
        _RUNNING.discard(proc)
    if _STOPPING:
        raise SystemExit(1)
    # 0: all passed; 1: a test failed; 2: interrupted (a collection error: the mutant broke an import);
    # 3 internal error, 4 usage error (a node id not found), 5 no tests collected: the tool's fault
    if rc in (3, 4, 5):
        raise RuntimeError(f"pytest exited {rc} on {' '.join(tests)[:300]} (a bad test selection, not a verdict)")
    return ("survived" if rc == 0 else "killed"), time.monotonic() - t0, rc


WHOLE = "whole"  # a selection: the source file's whole test set


@dataclass
class Spec:
    """One source file's test set, its baseline and (with coverage) which tests run each line."""
    tests: tuple[str, ...]
    seconds: float = 0.0  # the whole set's baseline (with coverage when measured)
    collect: float = 0.0
    order: list[str] | None = None
    durations: dict[str, float] | None = None
    lines: dict[str, dict[int, list[str] | str]] | None = None  # rel file -> line -> node ids or WHOLE

    def select(self, m: Mutant, whole_only: bool) -> list[str] | str:
        """The node ids whose runs execute the mutated lines; WHOLE; or [] (no test executes them)."""
        if whole_only or self.lines is None or not m.in_function:
            return WHOLE
        by_line = self.lines.get(m.file, {})
        chosen: set[str] = set()
        for ln in range(m.start[0], m.end[0] + 1):
            sel = by_line.get(ln)
            if sel == WHOLE:
                return WHOLE
            chosen.update(sel or ())
        return [t for t in self.order if t in chosen]

    def timeout(self, sel: list[str] | str, factor: float, floor: float) -> float:
        if sel == WHOLE or self.durations is None:
            return max(floor, self.seconds * factor)
        return max(floor, (self.collect + sum(self.durations.get(t, 0.0) for t in sel)) * factor)


def _tree_key(extra: str) -> str:
    """A digest of what the coverage map depends on: the code, tests, content and the plugin."""
    import hashlib

    h = hashlib.sha256(extra.encode())
    h.update((REPO / "tools" / "mutation_plugin.py").read_bytes())
    for top in ("torchcourse", "tests", "content", "checkpoints"):
        for p in sorted((REPO / top).rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc":
                h.update(str(p.relative_to(REPO)).encode())
                h.update(p.read_bytes())
    return h.hexdigest()[:20]


def _measure(copy: Path, work: Path, spec: Spec, sources: list[str]) -> str | None:
    """The coverage run: SPEC's tests once in COPY with per-test contexts (tools/mutation_plugin.py),
    subprocesses included. Fills SPEC; returns an error text if the tests do not pass unmutated."""
    import json

    import coverage

    covdir = work / f"cov-{abs(hash(spec.tests))}"
    covdir.mkdir()
    rc_file = covdir / "coveragerc"
    include = "".join(f"\n    {copy / s}" for s in sources)
    rc_file.write_text(f"[run]\ndata_file = {covdir}/.coverage\nparallel = true\ninclude ={include}\n"
                       "context = ${TC_MUT_TEST-}\npatch =\n    fork\n    _exit\n", encoding="utf-8")
    out = covdir / "tests.json"
    env = _env(copy, COVERAGE_PROCESS_START=str(rc_file), TC_MUT_TEST="", TC_MUT_PLUGIN_OUT=str(out))
    status, secs, _ = _run_tests(copy, list(spec.tests), timeout=3 * 3600, extra=["-p", "mutation_plugin"], env=env)
    if status != "survived":
        failed = json.loads(out.read_text())["failed"] if out.exists() else []
        return f"{' '.join(spec.tests)} do not pass unmutated in the copy ({status}: {', '.join(failed) or 'see a run by hand'})"
    data_in = json.loads(out.read_text(encoding="utf-8"))
    spec.seconds, spec.collect, spec.order, spec.durations = secs, data_in["collect_seconds"], data_in["order"], data_in["durations"]
    fixtures = data_in["fixtures"]
    cov = coverage.Coverage(config_file=str(rc_file), data_file=str(covdir / ".coverage"))
    cov.combine(data_paths=[str(covdir)], keep=False)
    data = cov.get_data()
    known = set(spec.order)
    spec.lines = {}
    for measured in data.measured_files():
        try:
            rel = str(Path(measured).resolve().relative_to(copy.resolve()))
        except ValueError:
            continue
        per: dict[int, list[str] | str] = {}
        for line, contexts in (data.contexts_by_lineno(measured) or {}).items():
            ids: set[str] = set()
            whole = False
            for c in contexts:
                c = c.split("|")[-1]
                if c.startswith("fixture:"):  # a module or session fixture: every test using it
                    name = c[len("fixture:"):]
                    ids.update(t for t in spec.order if name in fixtures.get(t, ()))
                elif c in known:
                    ids.add(c)
                else:  # "" (an import, a thread between tests) or a context no test owns
                    whole = True
            per[line] = WHOLE if whole else sorted(ids)
        spec.lines[rel] = per
    return None


def _stop(signum, frame):  # SIGTERM (e.g. from `timeout`): unwind, so the finally blocks run
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    import json
    import queue
    import re
    import signal
    import threading
    from concurrent.futures import ThreadPoolExecutor

    signal.signal(signal.SIGTERM, _stop)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("package", choices=sorted(PACKAGES))
    ap.add_argument("--sample", type=int, default=0, help="run only N mutants, drawn with --seed (0: all)")
    ap.add_argument("--seed", type=int, default=38)
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--timeout-factor", type=float, default=3.0)
    ap.add_argument("--timeout-floor", type=float, default=30.0, help="no mutant's run is stopped before this many seconds")
    ap.add_argument("--jobs", type=int, default=1, help="mutants run at once, each in its own copy (at most 2 on this machine)")
    ap.add_argument("--file", help="only mutants of this source file (path as in PACKAGES)")
    ap.add_argument("--only", action="append", default=[], metavar="TEXT", help="only mutants whose label contains TEXT (repeatable)")
    ap.add_argument("--again", metavar="LOG", help="only the mutants a previous run's output (LOG) says survived or timed out")
    ap.add_argument("--skip", metavar="LOG", action="append", default=[], help="leave out the mutants a previous run's output (LOG) has a verdict for (a run stopped part-way, resumed)")
    ap.add_argument("--plugins", action="store_true", help="let pytest autoload the installed plugins (off: each run starts faster)")
    ap.add_argument("--reverse", action="store_true", help="run the chosen mutants last first (a second run of the same sample, from its end)")
    ap.add_argument("--whole", action="store_true", help="no coverage selection: every mutant runs its file's whole test set")
    ap.add_argument("--agree", action="store_true", help="run each chosen mutant both ways (selected tests, whole set) and report whether the verdicts agree")
    ap.add_argument("--confirm", action="store_true", help="re-run each mutant the selected tests did not kill on the whole set; that verdict counts")
    args = ap.parse_args(argv)
    global PLUGIN_AUTOLOAD
    PLUGIN_AUTOLOAD = args.plugins
    if args.jobs < 1 or args.jobs > 2:
        ap.error("--jobs is 1 or 2 (a 2-core machine shared with other engineers)")
    if not (args.whole or args.list):
        try:
            import coverage  # noqa: F401
        except ImportError:
            ap.error("the coverage selection needs coverage.py: pip install -e '.[mutation]' (or run with --whole)")

    mutants: list[tuple[Mutant, tuple[str, ...]]] = []
    whole_files = set()
    originals: dict[str, str] = {}  # the text the mutants were made from (the tree may change during a run)
    for rel, functions, tests in PACKAGES[args.package]:
        if args.file and rel != args.file:
            continue
        if rel in ALWAYS_WHOLE:
            whole_files.add(rel)
        originals[rel] = (REPO / rel).read_text(encoding="utf-8")
        mutants += [(m, tuple(tests)) for m in mutants_of(REPO / rel, rel, functions)]
    total = len(mutants)
    chosen = mutants
    if args.only:
        chosen = [mt for mt in chosen if any(o in mt[0].label() for o in args.only)]
    if args.again:
        again = set(re.findall(r"^\[\d+/\d+\] (.+?): (?:survived|timed-out)\b", Path(args.again).read_text(encoding="utf-8"), re.M))
        chosen = [mt for mt in chosen if mt[0].label() in again]
    if args.sample and args.sample < len(chosen):
        chosen = sorted(random.Random(args.seed).sample(chosen, args.sample), key=lambda mt: (mt[0].file, mt[0].line))
    for log in args.skip:  # after the sample: a stopped sample run resumes with the same sample
        done = set(re.findall(r"^\[\d+/\d+\] (.+?): (?:killed|survived|timed-out)\b", Path(log).read_text(encoding="utf-8"), re.M))
        chosen = [mt for mt in chosen if mt[0].label() not in done]
    if args.reverse:
        chosen.reverse()
    if args.list:
        for m, _ in chosen:
            print(f"{m.label()}  [{m.file}:{m.start[0]}:{m.start[1]} -> {m.new.strip()[:60]!r}]")
        print(f"{len(chosen)} of {total} mutants")
        return 0
    if not chosen:
        print("no mutant chosen")
        return 0

    with tempfile.TemporaryDirectory(prefix="tc-mutation-") as tmp:
        work = Path(tmp)
        copies: queue.Queue[Path] = queue.Queue()
        for j in range(args.jobs):
            c = work / f"repo{j}"
            _copy_repo(c)
            copies.put(c)
        copy0 = work / "repo0"
        specs: dict[tuple[str, ...], Spec] = {}
        for _, tests in chosen:
            specs.setdefault(tests, Spec(tests))
        cache_dir = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "torchcourse-mutation"
        for tests, spec in specs.items():
            sources = sorted({m.file for m, t in chosen if t == tests})
            needs_map = not args.whole and any(s not in whole_files for s in sources)
            if needs_map:
                key = _tree_key(repr((tests, [rel for rel, _, t in PACKAGES[args.package] if tuple(t) == tests], args.plugins)))
                cached = cache_dir / f"{args.package}-{key}.json"
                all_sources = [rel for rel, _, t in PACKAGES[args.package] if tuple(t) == tests and rel not in whole_files]
                if cached.exists():
                    d = json.loads(cached.read_text(encoding="utf-8"))
                    spec.seconds, spec.collect, spec.order, spec.durations = d["seconds"], d["collect"], d["order"], d["durations"]
                    spec.lines = {f: {int(k): v for k, v in per.items()} for f, per in d["lines"].items()}
                    how = f"coverage map from {cached}"
                else:
                    err = _measure(copy0, work, spec, all_sources)
                    if err:
                        print(f"baseline: {err}; nothing measured", file=sys.stderr)
                        return 2
                    cache_dir.mkdir(parents=True, exist_ok=True)
                    cached.write_text(json.dumps({"seconds": spec.seconds, "collect": spec.collect, "order": spec.order,
                                                  "durations": spec.durations, "lines": spec.lines}), encoding="utf-8")
                    how = "measured with per-test coverage"
                print(f"baseline {' '.join(tests)}: {len(spec.order)} tests pass, {spec.seconds:.0f} s ({how})", flush=True)
            else:
                status, spec.seconds, _ = _run_tests(copy0, list(tests), timeout=3 * 3600)
                if status != "survived":
                    print(f"baseline: {' '.join(tests)} do not pass unmutated in the copy ({status}); nothing measured", file=sys.stderr)
                    return 2
                print(f"baseline {' '.join(tests)}: {spec.seconds:.0f} s (whole set per mutant)", flush=True)

        def run_one(m: Mutant, tests: tuple[str, ...], sel: list[str] | str) -> tuple[str, float]:
            spec = specs[tests]
            if sel == []:
                return "not covered", 0.0
            targets = list(tests) if sel == WHOLE else sel
            copy = copies.get()
            try:
                target = copy / m.file
                original = target.read_text(encoding="utf-8")
                target.write_text(apply(original, m), encoding="utf-8")
                try:
                    verdict, secs, _ = _run_tests(copy, targets, spec.timeout(sel, args.timeout_factor, args.timeout_floor))
                finally:
                    target.write_text(original, encoding="utf-8")
            finally:
                copies.put(copy)
            return verdict, secs

        print(f"{args.package}: running {len(chosen)} of {total} mutants, {args.jobs} at a time (nice -n 10)", flush=True)
        counts = {"killed": 0, "survived": 0, "not covered": 0, "timed-out": 0}
        agree = [0, 0]
        not_killed: list[tuple[Mutant, str]] = []
        lock = threading.Lock()
        done = [0]

        def task(mt: tuple[Mutant, tuple[str, ...]]) -> None:
            m, tests = mt
            try:
                compile(apply(originals[m.file], m), m.file, "exec")
            except SyntaxError:
                with lock:
                    done[0] += 1
                    print(f"[{done[0]}/{len(chosen)}] {m.label()}: not valid Python, skipped", flush=True)
                return
            sel = specs[tests].select(m, args.whole or m.file in whole_files)
            verdict, secs = run_one(m, tests, sel)
            how = "whole set" if sel == WHOLE else f"{len(sel)} tests"
            note = ""
            if args.agree or (args.confirm and verdict != "killed" and sel != WHOLE):
                whole_verdict, wsecs = run_one(m, tests, WHOLE)
                if args.agree:
                    same = (verdict == "killed") == (whole_verdict == "killed")
                    with lock:
                        agree[0] += same
                        agree[1] += 1
                    note = f"; whole set: {whole_verdict} ({wsecs:.0f} s) {'agree' if same else 'DISAGREE'}"
                else:
                    note = f"; {verdict} on {how}, confirmed on the whole set"
                    verdict, secs, how = whole_verdict, wsecs, "whole set"
            with lock:
                done[0] += 1
                counts[verdict] += 1
                if verdict != "killed":
                    not_killed.append((m, verdict))
                shown = "survived (not covered)" if verdict == "not covered" else verdict
                print(f"[{done[0]}/{len(chosen)}] {m.label()}: {shown} ({secs:.0f} s, {how}{note})", flush=True)

        pool = ThreadPoolExecutor(max_workers=args.jobs)
        try:
            for f in [pool.submit(task, mt) for mt in chosen]:
                f.result()
        except BaseException:
            # stopped (SIGTERM, Ctrl+C) or a tool error: no new run starts, the running ones'
            # sessions are ended, and the copies are removed on the way out
            global _STOPPING
            _STOPPING = True
            for proc in list(_RUNNING):
                _end_session(proc)
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown()
        run = sum(counts.values())
        score = 100.0 * counts["killed"] / run if run else 0.0
        print(f"{args.package}: killed {counts['killed']} / survived {counts['survived'] + counts['not covered']}"
              f" (not covered {counts['not covered']}) / timed-out {counts['timed-out']} of {run} run"
              f" ({total} in the catalogue); killed {score:.1f} %")
        if args.agree:
            print(f"selected tests vs whole set: {agree[0]}/{agree[1]} verdicts agree (killed or not)")
        for m, verdict in sorted(not_killed, key=lambda mv: (mv[0].file, mv[0].start)):
            print(f"  {verdict}: {m.label()} [{m.file}:{m.start[0]}:{m.start[1]}] -> {m.new.strip()[:80]!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
