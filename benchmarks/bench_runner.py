"""Snippet-runner figures, measured in one run (issue #3). Prints three ratios:

1. warm vs cold on a trivial torch snippet (goal: warm at least 20x faster);
2. ``verify --jobs 2 --no-cache`` wall time over all shipped snippets vs (sum of the snippets'
   own run times + 1 s) (goal: at most 1.5);
3. peak resident memory of the process that drives the runner (the verify process) vs 100 MB
   (goal: below 1.0).

Usage: python benchmarks/bench_runner.py [--repeat N]
This process is itself a driver: it never imports torch.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from torchcourse import paths  # noqa: E402
from torchcourse.course import load_course  # noqa: E402
from torchcourse.course.model import Snippet  # noqa: E402
from torchcourse.runner import Runner  # noqa: E402

TRIVIAL = "import torch\nprint(torch.ones(3) * 2)\n"

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
code = main(['verify', '--jobs', '2', '--no-cache', '--json'])
sys.stderr.write('TORCH_IN_DRIVER ' + str('torch' in sys.modules) + '\\n')
sys.exit(code)
"""


def bench_warm_vs_cold(repeat: int) -> tuple[float, float]:
    snip = Snippet(id="trivial", chapter_id="bench", code=TRIVIAL, expected="tensor([2., 2., 2.])", line=1)
    runner = Runner(cache_dir=None, warm=True)
    try:
        runner.run(snip, use_cache=False)  # starts the zygote; not counted
        warm, cold = [], []
        for _ in range(repeat):
            w = runner.run(snip, use_cache=False)
            c = runner.run(snip, cold=True, use_cache=False)
            assert w.status == c.status == "match", (w, c)
            warm.append(w.seconds)
            cold.append(c.seconds)
    finally:
        runner.close()
    return statistics.median(warm), statistics.median(cold)


def bench_verify() -> dict:
    course = load_course(paths.shipped_content_dir())
    n = len([s for s in course.all_snippets()])
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, TORCHCOURSE_HOME=home)
        env.pop("TORCHCOURSE_CONTENT", None)
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-c", VERIFY_WRAPPER.format(root=str(ROOT))], capture_output=True, text=True, env=env, cwd=ROOT)
        wall = time.monotonic() - t0
    data = json.loads(proc.stdout)
    own = sum(r["seconds"] for r in data["results"])
    rss_kb = torch_flag = None
    for line in proc.stderr.splitlines():
        if line.startswith("VMHWM_KB "):
            rss_kb = int(line.split()[1])
        if line.startswith("TORCH_IN_DRIVER "):
            torch_flag = line.split()[1]
    return {"wall": wall, "own": own, "snippets": n, "rss_mb": (rss_kb or 0) / 1024, "torch_in_driver": torch_flag, "summary": (data["passed"], data["failed"], data["skipped"])}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    warm, cold = bench_warm_vs_cold(args.repeat)
    v = bench_verify()
    r1 = cold / warm
    r2 = v["wall"] / (v["own"] + 1.0)
    r3 = v["rss_mb"] / 100.0
    print(f"1. trivial torch snippet: warm {warm * 1000:.1f} ms, cold {cold * 1000:.0f} ms (medians of {args.repeat})")
    print(f"   ratio cold/warm = {r1:.1f}x  (goal >= 20x)  {'OK' if r1 >= 20 else 'MISSED'}")
    print(f"2. verify --jobs 2 --no-cache over {v['snippets']} shipped snippets: wall {v['wall']:.2f} s, "
          f"sum of own times {v['own']:.2f} s; passed/failed/skipped = {v['summary']}")
    print(f"   ratio wall/(sum+1s) = {r2:.2f}  (goal <= 1.5)  {'OK' if r2 <= 1.5 else 'MISSED'}")
    print(f"3. driver (verify process) peak RSS {v['rss_mb']:.1f} MB; torch imported in driver: {v['torch_in_driver']}")
    print(f"   ratio RSS/100 MB = {r3:.2f}  (goal < 1.0)  {'OK' if r3 < 1.0 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
