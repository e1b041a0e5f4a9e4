"""What the classroom sandbox costs (issue 36), measured in one run on this machine:

* a warm run's latency (run() call to result) through a plain Runner, a SandboxRunner, and the
  classroom service's client (socket + fair queue + sandbox); medians of N runs each;
* the memory of the running service: RSS and PSS (shared pages counted once) of its whole
  process tree (service, bwrap, the zygote with torch, its spare), idle after the runs.

    python benchmarks/bench_sandbox.py [--runs 20]

Ends with one line: ``sandbox: warm run +X ms over unsandboxed (Y ms vs Z ms), client W ms, service RSS R MB / PSS P MB``.
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

from torchcourse.course.model import Snippet  # noqa: E402
from torchcourse.runner import Runner  # noqa: E402
from torchcourse.runner.classroom import ClassroomClient  # noqa: E402
from torchcourse.runner.sandbox import SandboxRunner, sandbox_problem  # noqa: E402
from torchcourse.runner.tc_supervise import descendants  # noqa: E402

SNIP = Snippet(id="b", chapter_id="bench", code="import torch\nprint(torch.ones(2, 3).sum().item())\n", expected="6.0", line=1)


def latencies(run, n: int) -> list[float]:
    assert run().status == "match"  # warm-up (starts the zygote)
    out = []
    for _ in range(n):
        time.sleep(0.1)  # the spare is forked (see main)
        t = time.perf_counter()
        res = run()
        out.append(time.perf_counter() - t)
        assert res.status == "match", res
    return out


def memory(pid: int) -> tuple[float, float]:
    rss = pss = 0
    for p in [pid, *descendants(pid)]:
        try:
            with open(f"/proc/{p}/smaps_rollup") as fh:
                for line in fh:
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1])
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1])
        except OSError:
            continue
    return rss / 1024, pss / 1024


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    problem = sandbox_problem()
    if problem:
        print(f"sandbox unavailable: {problem}")
        return 2
    # interleaved (plain, sandboxed, plain, …) so that the load of a shared machine drifts on both alike
    plain, sb = Runner(cache_dir=None), SandboxRunner(cache_dir=None)
    try:
        a, b = [], []
        for r in (plain, sb):
            assert r.run(SNIP, use_cache=False).status == "match"  # warm-up (starts the zygote)
        for _ in range(args.runs):
            for r, out in ((plain, a), (sb, b)):
                # a pause as between two learners' runs: each zygote has forked its spare (it
                # waits for 30 ms of quiet), as in a class where each learner runs every 20-40 s
                time.sleep(0.1)
                t = time.perf_counter()
                res = r.run(SNIP, use_cache=False)
                out.append(time.perf_counter() - t)
                assert res.status == "match", res
    finally:
        plain.close()
        sb.close()
    with tempfile.TemporaryDirectory() as tmp:
        sock = os.path.join(tmp, "class.sock")
        svc = subprocess.Popen([sys.executable, "-m", "torchcourse.runner.classroom", "--socket", sock, "--lifeline"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT, text=True)
        try:
            assert json.loads(svc.stdout.readline())["ok"]
            client = ClassroomClient(sock, "bench")
            c = latencies(lambda: client.run(SNIP, use_cache=False), args.runs)
            time.sleep(1.0)  # the spare is forked once the runs are over
            rss, pss = memory(svc.pid)
        finally:
            svc.terminate()
            svc.wait(30)
    ma, mb, mc = (statistics.median(x) * 1000 for x in (a, b, c))
    print(f"warm run, median of {args.runs}: unsandboxed {ma:.1f} ms · sandboxed {mb:.1f} ms · through the classroom client {mc:.1f} ms")
    print(f"p95: unsandboxed {sorted(a)[int(0.95 * len(a)) - 1] * 1000:.1f} ms · sandboxed {sorted(b)[int(0.95 * len(b)) - 1] * 1000:.1f} ms · client {sorted(c)[int(0.95 * len(c)) - 1] * 1000:.1f} ms")
    print(f"sandbox: warm run +{mb - ma:.1f} ms over unsandboxed ({mb:.1f} ms vs {ma:.1f} ms), client {mc:.1f} ms, service RSS {rss:.0f} MB / PSS {pss:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
