"""Milliseconds per pasted traceback for the error lookup over the full appendix (goal ≤ 50 ms).

The texts are the real runs of tests/data/lookup_variants.json (whole outputs, tracebacks
included). The entries are normalized once (the first call builds the course's index, timed
apart); every query after that is what a learner waits for.

    python benchmarks/bench_lookup.py [--content content] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from torchcourse.course import load_course
from torchcourse.lookup import error_index, lookup_error

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--content", default=str(REPO / "content"))
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    course = load_course(Path(args.content))
    texts = [c["output"] for c in json.loads((REPO / "tests" / "data" / "lookup_variants.json").read_text(encoding="utf-8"))]
    t0 = time.perf_counter()
    index = error_index(course)
    build = (time.perf_counter() - t0) * 1000
    times = []
    for _ in range(args.rounds):
        for text in texts:
            t = time.perf_counter()
            lookup_error(course, text)
            times.append((time.perf_counter() - t) * 1000)
    times.sort()
    print(f"{len(index.entries)} entries, index built once in {build:.1f} ms")
    print(f"{len(texts)} pasted outputs × {args.rounds}: median {statistics.median(times):.1f} ms, "
          f"p95 {times[int(len(times) * 0.95) - 1]:.1f} ms, max {times[-1]:.1f} ms per traceback (goal ≤ 50 ms)")


if __name__ == "__main__":
    main()
