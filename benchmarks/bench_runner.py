"""Snippet-runner figures, measured in one run (issues #3 and #24). Prints, each with the load average:

1. a trivial torch snippet, warm vs cold, end to end in the driver (``Runner.run`` wall time, the
   way the reader and ``verify`` call it) — goal: warm overhead ≤ 10 ms and ≥ 100× faster than
   cold — and where the warm run's time goes: temp dir + file, request → pid (handed to a spare
   forked ahead), the snippet process (the snippet's own code measured inside it; its start,
   interpreter shutdown, the supervisor's tree check and the status), the shadowing check, handing
   the run directory to the background remover, normalization + verdict, and a cache write;
2. ``verify --jobs 2 --no-cache`` (warm) and ``verify --jobs 2 --no-cache --cold`` over the whole
   course: wall seconds and wall / (Σ the snippets' own run times + 1 s) — goal ≤ 1.5 each;
3. peak resident memory of the driver (the verify process) vs 100 MB, and torch not imported there;
4. with ``--tests``: the test suite's own wall time (``python -m pytest -q``).

Usage: python benchmarks/bench_runner.py [--repeat N] [--content DIR | --synthetic] [--no-verify]
       [--no-cold-verify] [--tests]
``--synthetic`` generates a course 4× the shipped one from the shipped chapters (benchmarks/synthetic.py)
and measures on it. This process is itself a driver: it never imports torch.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from torchcourse import paths  # noqa: E402
from torchcourse.course import load_course  # noqa: E402
from torchcourse.course.model import Snippet  # noqa: E402
from torchcourse.runner import Runner  # noqa: E402
from torchcourse.runner import core  # noqa: E402
from torchcourse.runner.cache import RunCache  # noqa: E402
from torchcourse.runner.normalize import normalize  # noqa: E402

TRIVIAL = "import torch\nprint(torch.ones(3) * 2)\n"
# the same code, timing itself inside the snippet process (from its first line to its last)
TIMED = ("import time as _t\n_t0 = _t.perf_counter()\n" + TRIVIAL
         + "import sys as _s\n_s.stderr.write('OWN %.6f\\n' % (_t.perf_counter() - _t0))\n")

# A learner presses x now and then: between two runs the zygote has forked its next spare
# supervisor + snippet process (verify, back to back, is measured by part 2).
PAUSE = 0.3

# Runs the real CLI, then reports its own peak RSS (VmHWM) on stderr as the last line.
VERIFY_WRAPPER = """
import sys, atexit
sys.path.insert(0, {root!r})
def report():
    for line in open('/proc/self/status'):
        if line.startswith('VmHWM:'):
            sys.stderr.write('VMHWM_KB ' + line.split()[1] + '\\n')
atexit.register(report)
from torchcourse.cli import main
code = main({argv!r})
sys.stderr.write('TORCH_IN_DRIVER ' + str('torch' in sys.modules) + '\\n')
sys.exit(code)
"""


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def ms(x: float) -> str:
    return f"{x * 1000:6.1f} ms"


def bench_warm_vs_cold(repeat: int) -> dict:
    snip = Snippet(id="trivial", chapter_id="bench", code=TRIVIAL, expected="tensor([2., 2., 2.])", line=1)
    timed = Snippet(id="timed", chapter_id="bench", code=TIMED, expected=None, line=1)
    runner = Runner(cache_dir=None, warm=True)
    try:
        runner.run(snip, use_cache=False)  # starts the zygote; not counted
        runner.run(snip, use_cache=False)
        warm, cold, warm_inner, own, over = [], [], [], [], []
        for _ in range(repeat):
            time.sleep(PAUSE)
            t0 = time.perf_counter()
            w = runner.run(timed, use_cache=False)  # the trivial code, timing itself inside
            e2e = time.perf_counter() - t0
            mine = next(float(x.split()[1]) for x in w.actual.splitlines() if x.startswith("OWN "))
            assert "tensor([2., 2., 2.])" in w.actual, w
            warm.append(e2e)
            own.append(mine)
            over.append(e2e - mine)  # everything but the snippet's own code, in the same run
            warm_inner.append(w.seconds)
            t0 = time.perf_counter()
            c = runner.run(snip, cold=True, use_cache=False)
            cold.append(time.perf_counter() - t0)
            assert c.status == "match", c
        parts = breakdown(runner, repeat)
    finally:
        runner.close()
    med = statistics.median
    return {"warm": med(warm), "warm_inner": med(warm_inner), "cold": med(cold), "own": med(own), "overhead": med(over), "parts": parts}


def breakdown(runner: Runner, repeat: int) -> dict:
    """The warm path of ``Runner.run`` step by step (same calls, timed between them)."""
    snip = Snippet(id="timed", chapter_id="bench", code=TIMED, expected=None, line=1)
    cache_dir = tempfile.mkdtemp(prefix="tc-bench-cache-")
    cache = RunCache(Path(cache_dir))
    rows: dict[str, list[float]] = {}

    def add(name: str, seconds: float) -> None:
        rows.setdefault(name, []).append(seconds)

    z = runner.zygote()
    for i in range(repeat * 2):
        time.sleep(PAUSE)
        marks = {}
        t0 = time.perf_counter()
        base = core._new_base()  # as Runner.run does
        run_dir = os.path.join(base, "run")
        os.mkdir(run_dir)
        core._write_snippet(run_dir, snip.code)
        t1 = time.perf_counter()
        held: list = []  # as Runner.run: the connection is closed once the result is made
        raw = z.run(run_dir, timeout=60.0, cancel=None, on_start=lambda pid: marks.setdefault("pid", time.perf_counter()),
                    on_end=lambda pid: marks.setdefault("end", time.perf_counter()), cleanup_dir=base, held=held)
        t2 = time.perf_counter()
        core._shadows(run_dir, z.preloaded())
        t3 = time.perf_counter()
        core._remove_later(base)  # as Runner.run does: a background thread removes it
        t4 = time.perf_counter()
        text = raw.output.decode("utf-8", errors="replace")
        own = 0.0
        for line in text.splitlines():
            if line.startswith("OWN "):
                own = float(line.split()[1])
        actual = normalize(text, side="actual", run_dir=run_dir)
        runner._verdict(snip, actual, raw.seconds, raw.returncode, raw.signal, raw.truncated, raw.outcome, cached=False)
        t5 = time.perf_counter()
        # a run with the cache on writes on a miss: a key not written before (code of its own)
        key = cache.key(f"{snip.code}# {i}\n", {**runner.fingerprint(), "mode": "warm"})
        cache.put(key, {"actual": actual, "seconds": raw.seconds, "returncode": raw.returncode, "signal": raw.signal, "truncated": raw.truncated, "mode": "warm"})
        t6 = time.perf_counter()
        for sock in held:
            sock.close()
        add("temp dir + snippet file", t1 - t0)
        add("connect + send + reply (request → pid; spare forked ahead)", marks["pid"] - t1)
        add("snippet process: its own code (measured inside)", own)
        add("pid → status, less own code: start, exit, tree check, status", (marks["end"] - marks["pid"]) - own)
        add("pipe close after the status (connection held)", t2 - marks["end"])
        add("shadowing check", t3 - t2)
        add("hand the run directory to the remover thread", t4 - t3)
        add("decode + normalize + verdict", t5 - t4)
        add("cache write (a run with the cache on, on a miss)", t6 - t5)
        add("total (cache write included)", t6 - t0)
    shutil.rmtree(cache_dir, ignore_errors=True)
    t0 = time.perf_counter()
    core.drain_removals()
    rows["(off the critical path: removing the run directories, per run)"] = [(time.perf_counter() - t0) / (repeat * 2)]
    return {k: statistics.median(v) for k, v in rows.items()}


def bench_verify(content: Path, cold: bool) -> dict:
    course = load_course(content)
    n = len(list(course.all_snippets()))
    argv = ["--content", str(content), "verify", "--jobs", "2", "--no-cache", "--json"] + (["--cold"] if cold else [])
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, TORCHCOURSE_HOME=home)
        env.pop("TORCHCOURSE_CONTENT", None)
        before = load()
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-c", VERIFY_WRAPPER.format(root=str(ROOT), argv=argv)], capture_output=True, text=True, env=env, cwd=ROOT)
        wall = time.monotonic() - t0
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        raise SystemExit(f"verify printed no JSON (exit {proc.returncode}): {proc.stderr[-2000:]}")
    own = sum(r["seconds"] for r in data["results"])
    rss_kb = torch_flag = None
    for line in proc.stderr.splitlines():
        if line.startswith("VMHWM_KB "):
            rss_kb = int(line.split()[1])
        if line.startswith("TORCH_IN_DRIVER "):
            torch_flag = line.split()[1]
    return {"wall": wall, "own": own, "snippets": n, "rss_mb": (rss_kb or 0) / 1024, "torch_in_driver": torch_flag,
            "summary": (data["passed"], data["failed"], data["skipped"]), "load_before": before, "load_after": load()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--content", type=Path, help="course root (default: the shipped course)")
    ap.add_argument("--synthetic", action="store_true", help="generate and use a course 4x the shipped one")
    ap.add_argument("--no-verify", action="store_true", help="skip both verify runs")
    ap.add_argument("--no-cold-verify", action="store_true", help="skip the --cold verify run")
    ap.add_argument("--tests", action="store_true", help="also time the whole test suite (python -m pytest -q)")
    args = ap.parse_args()
    content = args.content or paths.shipped_content_dir()
    if args.synthetic:
        from synthetic import make_course

        content = make_course(Path(tempfile.mkdtemp(prefix="tc-x4-")))
    print(f"start: {load()}; python {sys.version.split()[0]}; content {content}")

    r = bench_warm_vs_cold(args.repeat)
    warm, cold = r["warm"], r["cold"]
    own = r["own"]
    overhead = r["overhead"]
    print(f"1. trivial torch snippet, end to end in the driver (Runner.run, medians of {args.repeat}): "
          f"warm {warm * 1000:.1f} ms (runner's own clock {r['warm_inner'] * 1000:.1f} ms), cold {cold * 1000:.0f} ms")
    print(f"   warm overhead (end to end − the snippet's own code, per run; own code median {own * 1000:.1f} ms) = {overhead * 1000:.1f} ms  "
          f"(goal ≤ 10 ms)  {'OK' if overhead <= 0.010 else 'MISSED'}")
    print(f"   ratio cold/warm = {cold / warm:.1f}x  (goal ≥ 100x)  {'OK' if cold / warm >= 100 else 'MISSED'}")
    print("   where a warm run's time goes (separate runs, medians, the steps of Runner.run timed between them):")
    for name, sec in r["parts"].items():
        print(f"     {name:<62} {ms(sec)}")
    print(f"   ({load()})")

    if not args.no_verify:
        for cold_mode in (False, True):
            if cold_mode and args.no_cold_verify:
                continue
            v = bench_verify(Path(content), cold_mode)
            ratio = v["wall"] / (v["own"] + 1.0)
            flag = " --cold" if cold_mode else ""
            print(f"2. verify --jobs 2 --no-cache{flag} over {v['snippets']} snippets: wall {v['wall']:.1f} s, "
                  f"Σ own times {v['own']:.1f} s; passed/failed/skipped = {v['summary']}")
            print(f"   ratio wall/(Σ+1 s) = {ratio:.2f}  (goal ≤ 1.5)  {'OK' if ratio <= 1.5 else 'MISSED'}   "
                  f"[{v['load_before']} → {v['load_after']}]")
            if not cold_mode:
                r3 = v["rss_mb"] / 100.0
                print(f"3. driver (verify process) peak RSS {v['rss_mb']:.1f} MB; torch imported in driver: {v['torch_in_driver']}")
                print(f"   ratio RSS/100 MB = {r3:.2f}  (goal < 1.0)  {'OK' if r3 < 1.0 else 'MISSED'}")
    if args.tests:
        before = load()
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True)
        wall = time.monotonic() - t0
        tail = (proc.stdout.strip().splitlines() or ["?"])[-1]
        print(f"4. test suite wall time {wall:.0f} s ({wall / 60:.1f} min; goal: .ci/run < 30 min): {tail}   [{before} → {load()}]")
    print(f"end: {load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
