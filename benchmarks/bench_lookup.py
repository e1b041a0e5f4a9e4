"""The error lookup over the full appendix: how often it is right, and how long a learner waits.

Scores, each measured in this run:

- real reports (tests/data/real_reports.txt: error texts as pasted in public GitHub threads):
  in scope, the right section as the answer (a sure hit, first); out of scope, no hit at all;
- the three errors the course does not cover and must never answer with a row (a user's own
  matmul shape mismatch, a loss's batch-size mismatch, cuDNN): how many of their pastes got a row;
- runs of other code (tests/data/lookup_variants.json): the right section first for the whole
  pasted output, and for the final message alone.

Times: milliseconds per paste (the entries are normalized once, timed apart), the worst of a set
of hostile pastes (a megabyte of noise, a 20,000-frame traceback, one 200,000-character line),
and the wall time of ``torchcourse why -`` as a learner runs it (a new process each time; goal
≤ 1 s on a 2-core machine).

    python benchmarks/bench_lookup.py [--content content] [--rounds 3] [--cli 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from torchcourse.course import load_course  # noqa: E402
from torchcourse.lookup import error_index, errors_in_output, lookup_error  # noqa: E402
from tests.test_lookup_reports import NEVER, load_reports  # noqa: E402


def hostile() -> list[str]:
    rnd = random.Random(0)
    noise = "".join(rnd.choice("abcdefghij klmnop\n0123456789.:()[]'\"") for _ in range(1_000_000))
    frames = "Traceback (most recent call last):\n" + '  File "/x/y.py", line 1, in f\n    g()\n' * 20_000
    frames += "RuntimeError: view size is not compatible with input tensor's size and stride\n"
    line = "RuntimeError: " + "mat1 and mat2 " * 14_000
    errors = "\n".join(f"ValueError: thing {i} went wrong: expected {i} got {i + 1}" for i in range(30_000))
    return [noise, frames, line, errors, "中" * 300_000]


def timed(course, text: str) -> tuple[float, list]:
    t = time.perf_counter()
    hits = lookup_error(course, text)
    return (time.perf_counter() - t) * 1000, hits


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--content", default=str(REPO / "content"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cli", type=int, default=3, help="runs of `torchcourse why -` per paste kind")
    args = ap.parse_args()
    course = load_course(Path(args.content))
    t0 = time.perf_counter()
    index = error_index(course)
    build = (time.perf_counter() - t0) * 1000
    print(f"{len(index.entries)} entries ({len(index.faces)} wordings), index built once in {build:.1f} ms")

    reports = load_reports()
    inside = [r for r in reports if r["label"] != "-"]
    outside = [r for r in reports if r["label"] == "-"]
    right = near_right = chapter_right = 0
    times = []
    for r in inside:
        ms, hits = timed(course, r["text"])
        times.append(ms)
        if hits and hits[0].sure and hits[0].entry.link == r["label"]:
            right += 1
        if hits and hits[0].entry.link == r["label"]:
            near_right += 1
        if hits and hits[0].sure and hits[0].entry.chapter_id == r["label"].split("#")[0]:
            chapter_right += 1
    none = no_sure = 0
    for r in outside:
        ms, hits = timed(course, r["text"])
        times.append(ms)
        none += not hits
        no_sure += not any(h.sure for h in hits)
    print(f"real reports, in scope ({len(inside)}): right section as the answer {right}/{len(inside)} "
          f"({100 * right / len(inside):.1f} %); first incl. near matches {near_right}; right chapter {chapter_right}")
    print(f"real reports, out of scope ({len(outside)}): no hit {none}/{len(outside)}; no sure hit {no_sure}/{len(outside)}")
    never_total = never_rows = 0
    for pattern in NEVER.values():
        for r in reports:
            if pattern.search(r["text"]):
                never_total += 1
                never_rows += bool(lookup_error(course, r["text"]))
    print(f"matmul shapes / loss batch size / cuDNN pastes answered with a row: {never_rows}/{never_total}")
    check = load_reports(REPO / "tests" / "data" / "real_reports_check.txt")
    c_in = [r for r in check if r["label"] != "-"]
    c_right = sum(1 for r in c_in if (h := lookup_error(course, r["text"])) and h[0].sure and h[0].entry.link == r["label"])
    c_none = sum(1 for r in check if r["label"] == "-" and not lookup_error(course, r["text"]))
    print(f"second set of real reports (real_reports_check.txt): in scope {c_right}/{len(c_in)}, "
          f"out of scope no hit {c_none}/{len(check) - len(c_in)}")

    variants = json.loads((REPO / "tests" / "data" / "lookup_variants.json").read_text(encoding="utf-8"))
    whole = alone = 0
    for c in variants:
        out = c["output"]
        ms, hits = timed(course, out)
        times.append(ms)
        whole += bool(hits) and hits[0].entry.link == c["link"]
        tbs = ("\n" + out).split("\nTraceback (most recent call last):")
        if len(tbs) > 1:
            tb = tbs[1] if "direct cause of the following exception" in out else tbs[-1]
            first = errors_in_output(tb)[0].split(":", 1)[0]
            line = tb[tb.index(first):].split("\nThe above exception was the direct cause")[0].strip()
        else:
            line = errors_in_output(out)[-1]
        hits = lookup_error(course, line)
        alone += bool(hits) and hits[0].entry.link == c["link"]
    print(f"runs of other code ({len(variants)}): right section first {whole}/{len(variants)} whole output, "
          f"{alone}/{len(variants)} final message alone")

    for _ in range(args.rounds - 1):
        for r in reports:
            times.append(timed(course, r["text"])[0])
    times.sort()
    print(f"{len(times)} lookups: median {statistics.median(times):.1f} ms, p95 {times[int(len(times) * 0.95) - 1]:.1f} ms, "
          f"max {times[-1]:.1f} ms per paste")
    worst = max(timed(course, t)[0] for t in hostile())
    print(f"hostile pastes (1 MB noise, 20,000 frames, a 200,000-character line, 30,000 error lines, 300,000 CJK): worst {worst:.0f} ms")

    if args.cli:
        env = dict(os.environ, PYTHONPATH=str(REPO))
        walls = []
        pastes = [reports[0]["text"], max((r["text"] for r in reports), key=len), hostile()[1]]
        for text in pastes:
            for _ in range(args.cli):
                t = time.perf_counter()
                subprocess.run([sys.executable, "-m", "torchcourse", "--content", args.content, "why", "-"], input=text,
                               capture_output=True, text=True, env=env, timeout=120)
                walls.append(time.perf_counter() - t)
        print(f"`torchcourse why -` wall time, {len(walls)} runs (a new process each): median {statistics.median(walls):.2f} s, "
              f"max {max(walls):.2f} s (goal ≤ 1 s)")


if __name__ == "__main__":
    main()
